//! The `patchbay-orchestrator` binary against real peers, installed by `.ci/peers/*.sh`: the
//! Claude Code CLI as a parent agent calling `start_agent_session` over MCP (against a mock of
//! the Messages API), the CLI as the runtime of a `claude-agent` run that is cancelled (no
//! process may outlive it), and the Python MCP SDK's client driving all seven tools. A
//! `harness = false` binary: a trial whose peer is missing shows as ignored with the reason,
//! and fails under CI.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cancel;
mod claude_cli;
mod python;
mod served;

use patchbay_conformance::peers::{self, Peer};

fn main() {
    let cli = peers::claude_code_cli();
    let python = Peer::installed("Python with the mcp SDK", "mcp/venv/bin/python", ".ci/peers/mcp.sh");
    let trials = vec![
        peers::async_trial(
            "claude_cli::the_cli_as_a_parent_gets_the_child_result_and_is_recorded_as_parent",
            &[&cli],
            claude_cli::the_cli_as_a_parent_gets_the_child_result_and_is_recorded_as_parent,
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
            "python::the_python_mcp_client_drives_all_seven_tools",
            &[&python],
            python::the_python_mcp_client_drives_all_seven_tools,
        ),
    ];
    peers::run(trials)
}
