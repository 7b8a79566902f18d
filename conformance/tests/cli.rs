//! The real Claude Code CLI against the mock Messages server speaking [`AnthropicWire`]: the
//! mock must satisfy the program the agent-runtime provider drives. A `harness = false` binary
//! of peers trials: ignored with the reason when the CLI is not installed (failed in CI).

use std::process::Stdio;
use std::time::Duration;

use patchbay_conformance::mock::MockServer;
use patchbay_conformance::mock::anthropic::AnthropicWire;
use patchbay_conformance::peers::{self, claude_code_cli, claude_code_offline_env};
use patchbay_scripted::{Script, Turn};

fn main() {
    let claude = claude_code_cli();
    peers::run(vec![peers::async_trial(
        "the_claude_code_cli_reads_the_mock_wire",
        &[&claude],
        the_claude_code_cli_reads_the_mock_wire,
    )])
}

async fn the_claude_code_cli_reads_the_mock_wire() {
    let claude = claude_code_cli().path().to_path_buf();
    let script = Script::new(vec![Turn::text("Hello from the mock wire!")]).repeating();
    let server = MockServer::builder(AnthropicWire)
        .script(&script)
        .start()
        .await
        .expect("mock starts");
    let home = tempfile::tempdir().expect("temp dir");
    let mut command = tokio::process::Command::new(claude);
    command
        .args(["-p", "Say hello.", "--output-format", "stream-json", "--verbose"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(claude_code_offline_env(&server.url(), home.path()))
        .current_dir(home.path())
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("the CLI finishes within a minute")
        .expect("the CLI runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let result = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|line| line["type"] == "result");
    let Some(result) = result else {
        panic!(
            "no result line; stdout:\n{stdout}\nstderr:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    assert_eq!(result["is_error"], false, "{result}");
    assert_eq!(result["result"], "Hello from the mock wire!", "{result}");
    let requests = server.requests();
    assert!(
        requests.iter().any(|r| r.path.starts_with("/v1/messages")),
        "{:?}",
        requests.iter().map(|r| &r.path).collect::<Vec<_>>()
    );
}
