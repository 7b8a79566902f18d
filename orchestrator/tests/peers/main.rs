//! The `patchbay-orchestrator` binary against real peers, installed by `.ci/peers/*.sh`: the
//! Claude Code CLI as a parent agent calling the orchestrator's tools over MCP (against a mock
//! of the Messages API), the CLI as the runtime of a `claude-agent` run that is cancelled (no
//! process may outlive it), the Python MCP SDK's client driving all nine tools, progress
//! notifications included, and the official MCP conformance suite's server scenarios against
//! `/mcp` (through a proxy that adds the token). A `harness = false` binary: a trial whose peer is missing shows as
//! ignored with the reason, and fails under CI.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cancel;
mod claude_cli;
mod conformance;
mod python;
mod recorder;
mod served;
mod token_proxy;

use patchbay_conformance::peers::{self, Peer};

fn main() {
    let cli = peers::claude_code_cli();
    let python = Peer::installed("Python with the mcp SDK", "mcp/venv/bin/python", ".ci/peers/mcp.sh");
    let suite = conformance::suite();
    let trials = vec![
        peers::async_trial(
            "claude_cli::the_cli_as_a_parent_starts_reads_events_and_cancels_over_mcp",
            &[&cli],
            claude_cli::the_cli_as_a_parent_starts_reads_events_and_cancels_over_mcp,
        ),
        peers::async_trial(
            "cancel::cancelling_a_claude_agent_run_leaves_no_cli_process",
            &[&cli],
            cancel::cancelling_a_claude_agent_run_leaves_no_cli_process,
        ),
        peers::async_trial(
            "cancel::deleting_a_claude_agent_session_leaves_no_cli_process",
            &[&cli],
            cancel::deleting_a_claude_agent_session_leaves_no_cli_process,
        ),
        peers::async_trial(
            "python::the_python_mcp_client_drives_all_nine_tools_and_gets_progress",
            &[&python],
            python::the_python_mcp_client_drives_all_nine_tools_and_gets_progress,
        ),
        peers::async_trial(
            "conformance::every_server_scenario_passes_or_is_baselined_against_the_orchestrator",
            &[&suite],
            conformance::every_server_scenario_passes_or_is_baselined_against_the_orchestrator,
        ),
        peers::async_trial(
            "token_proxy::the_proxy_adds_the_token_and_streams_an_sse_answer",
            &[],
            token_proxy::the_proxy_adds_the_token_and_streams_an_sse_answer,
        ),
    ];
    peers::run(trials)
}
