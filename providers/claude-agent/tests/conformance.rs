//! The shared conformance scenarios, twice:
//! - `claude-agent::*`: the real Claude Code CLI against the Anthropic mock (tool scenarios go
//!   through host tools: the script asks for `mcp__host__<tool>`, the provider maps names back);
//! - `claude-agent-replay::*`: the fake CLI (`tests/fake-claude`) replaying the transcripts the
//!   real CLI wrote (`tests/transcripts/<scenario>.jsonl`), so they run without the CLI.
//!
//!
//! Also the real CLI's own tests (`real.rs`: sessions, approvals, cancel, failures, host tools).
//! Without the CLI every real trial shows as ignored with the reason (it fails under CI).
//!
//! Set `PATCHBAY_CLAUDE_RECORD_DIR` to record new transcripts from the real runs (then scrub
//! them with `tests/transcripts/scrub.py`).

#[path = "support/mod.rs"]
mod support;

mod isolation;
mod real;
mod real_hooks;
mod real_pause;

use std::path::PathBuf;
use std::sync::Arc;

use patchbay_claude_agent::{ClaudeAgentConfig, ClaudeAgentProvider, DEFAULT_HOST_SERVER};
use patchbay_conformance::mock::MockServer;
use patchbay_conformance::mock::anthropic::{AnthropicToolOutputWire, AnthropicWire};
use patchbay_conformance::peers;
use patchbay_conformance::{Fixture, Target, trials};
use patchbay_core::ProviderError;
use patchbay_scripted::{Part, Script, Turn};

const BASELINE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance-baseline.toml");

/// The script with tool names as the CLI knows them.
fn cli_script(script: &Script) -> Script {
    let mut script = script.clone();
    for turn in &mut script.turns {
        if let Turn::Respond(response) = turn {
            for part in &mut response.parts {
                if let Part::ToolCall { name, .. } = part {
                    *name = format!("mcp__{DEFAULT_HOST_SERVER}__{name}");
                }
            }
        }
    }
    script
}

fn real_cli_target(cli: PathBuf) -> Target {
    Target::new("claude-agent", move |case| {
        let script = cli_script(&case.scenario.script);
        let cli = cli.clone();
        let name = case.scenario.name;
        let structured = case.scenario.output_schema.is_some();
        async move {
            // With `--json-schema` the model answers through the CLI's own output tool.
            let server = if structured {
                MockServer::builder(AnthropicToolOutputWire::new(
                    patchbay_claude_agent::translate::OUTPUT_TOOL,
                ))
                .script(&script)
                .start()
                .await
            } else {
                MockServer::builder(AnthropicWire).script(&script).start().await
            }
            .map_err(|e| ProviderError::config(format!("mock server: {e}")))?;
            let home = tempfile::tempdir().map_err(|e| ProviderError::config(format!("temp dir: {e}")))?;
            let mut config = support::offline(&cli, &server.url(), home.path()).with_session_markers(false);
            if let Some(dir) = std::env::var_os("PATCHBAY_CLAUDE_RECORD_DIR") {
                let path = std::path::Path::new(&dir).join(format!("{name}.jsonl"));
                let _ = std::fs::remove_file(&path);
                config = config.with_record_stdout(path);
            }
            let provider = Arc::new(ClaudeAgentProvider::new(config)?);
            Ok(Fixture::new(provider).with_guard((server, home)))
        }
    })
    .with_baseline_file(BASELINE)
}

fn replay() -> Target {
    Target::new("claude-agent-replay", move |case| {
        let name = case.scenario.name;
        async move {
            let state = tempfile::tempdir().map_err(|e| ProviderError::config(format!("temp dir: {e}")))?;
            let config = ClaudeAgentConfig::new()
                .with_cli_path(support::fake_cli())
                .with_env(
                    "FAKE_CLAUDE_TRANSCRIPT",
                    support::transcript(name).display().to_string(),
                )
                .with_env("FAKE_CLAUDE_STATE", state.path().display().to_string())
                .with_session_markers(false);
            let provider = Arc::new(ClaudeAgentProvider::new(config)?);
            Ok(Fixture::new(provider).with_guard(state))
        }
    })
    .with_baseline_file(BASELINE)
}

/// One async trial per test function of `real.rs`, needing the CLI.
macro_rules! real_trials {
    ($cli:expr => $($test:ident),+ $(,)?) => {
        real_trials![$cli => real: $($test),+]
    };
    ($cli:expr => $module:ident: $($test:ident),+ $(,)?) => {
        vec![$(peers::async_trial(
            concat!(stringify!($module), "::", stringify!($test)),
            &[$cli],
            $module::$test,
        )),+]
    };
}

fn main() {
    let cli = support::real_cli();
    let mut all = trials(&replay());
    all.extend(peers::requiring(
        &[&cli],
        trials(&real_cli_target(cli.path().to_path_buf())),
    ));
    all.extend(real_trials![&cli =>
        resume_keeps_history_and_fork_gets_a_new_id,
        approval_allow_runs_the_cli_tool,
        approval_deny_reaches_the_model_with_its_message,
        cancel_mid_turn_ends_promptly_and_leaves_no_process,
        dropping_the_stream_mid_turn_leaves_no_process,
        a_dead_mock_is_a_transport_error_and_a_broken_one_a_typed_error,
        host_tools_over_http_get_the_context_and_keep_metadata,
        a_kept_alive_cli_serves_the_next_turn_of_its_session,
        a_spare_serves_the_next_new_session_and_goes_with_the_provider,
    ]);
    all.extend(real_trials![&cli => real_hooks:
        a_before_tool_hook_denies_a_host_tool_and_the_cli_reports_it,
        a_before_tool_hook_rewrites_the_input_and_after_tool_replaces_the_result,
        prompt_and_stop_hooks_add_context_and_send_the_model_back,
        a_blocked_prompt_ends_the_run_without_a_model_call,
        a_defined_subagent_reports_typed_messages,
    ]);
    all.extend(real_trials![&cli => real_pause:
        a_paused_write_runs_after_the_person_allows_it,
        a_paused_write_denied_later_reaches_the_model_as_a_denial,
    ]);
    all.push(peers::async_trial(
        "isolation::the_machines_settings_and_claude_md_apply_only_when_asked",
        &[&cli],
        isolation::the_machines_settings_and_claude_md_apply_only_when_asked,
    ));
    peers::run(all)
}
