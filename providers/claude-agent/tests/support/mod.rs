//! Shared by the test binaries: where the real CLI is, and the offline configuration.
#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;

use patchbay_claude_agent::ClaudeAgentConfig;

/// The peers directory (`$PATCHBAY_PEERS`, default `<workspace>/target/peers`).
pub fn peers() -> PathBuf {
    std::env::var_os("PATCHBAY_PEERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/peers")))
}

/// The real CLI, if installed. Without it: `None` after printing why, or a panic when CI=true.
pub fn real_cli(test: &str) -> Option<PathBuf> {
    let path = peers().join("node_modules/.bin/claude");
    if path.exists() {
        return Some(path);
    }
    let why = format!(
        "{test}: the Claude Code CLI is not installed at {} (run .ci/peers/claude.sh)",
        path.display()
    );
    if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") {
        panic!("{why}");
    }
    eprintln!("skipping {why}");
    None
}

/// The offline configuration against a mock at `url`, with `home` as the CLI's home.
pub fn offline(cli: &std::path::Path, url: &str, home: &std::path::Path) -> ClaudeAgentConfig {
    ClaudeAgentConfig::new().with_cli_path(cli).offline(url, home)
}

/// The fake CLI script.
pub fn fake_cli() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fake-claude"))
}

/// A recorded transcript.
pub fn transcript(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/transcripts")).join(format!("{name}.jsonl"))
}
