//! The shared conformance scenarios through the real Claude Code CLI against the Anthropic mock:
//! tool scenarios go through host tools (the script asks for `mcp__host__<tool>`).

#[path = "support/mod.rs"]
mod support;

use std::sync::Arc;

use patchbay_claude_agent::{ClaudeAgentProvider, DEFAULT_HOST_SERVER};
use patchbay_conformance::mock::MockServer;
use patchbay_conformance::mock::anthropic::AnthropicWire;
use patchbay_conformance::{Fixture, Target, run_suite};
use patchbay_core::{Capabilities, ProviderError};
use patchbay_scripted::{Part, Script, Turn};

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

fn main() {
    let Some(cli) = support::real_cli("conformance") else {
        return;
    };
    let capabilities = Capabilities::none()
        .with_streaming()
        .with_reasoning()
        .with_runs_tools()
        .with_sessions();
    let target = Target::new("claude-agent", capabilities, move |scenario| {
        let script = cli_script(&scenario.script);
        let cli = cli.clone();
        let name = scenario.name;
        async move {
            let server = MockServer::builder(AnthropicWire)
                .script(&script)
                .start()
                .await
                .map_err(|e| ProviderError::config(format!("mock server: {e}")))?;
            let home = tempfile::tempdir().map_err(|e| ProviderError::config(format!("temp dir: {e}")))?;
            let mut config = support::offline(&cli, &server.url(), home.path()).with_session_markers(false);
            if let Some(dir) = std::env::var_os("PATCHBAY_CLAUDE_RECORD_DIR") {
                let path = std::path::Path::new(&dir).join(format!("{name}.jsonl"));
                let _ = std::fs::remove_file(&path);
                config = config.with_record_stdout(path);
            }
            let provider = Arc::new(ClaudeAgentProvider::new(config));
            Ok(Fixture::new(provider).with_guard((server, home)))
        }
    })
    .with_baseline_file(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance-baseline.toml"));
    run_suite(target)
}
