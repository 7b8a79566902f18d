//! Shared by the test binaries: where the real CLI is, and the offline configuration.
#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;

use patchbay_claude_agent::ClaudeAgentConfig;
use patchbay_conformance::peers::Peer;

/// The real Claude Code CLI, installed by `.ci/peers/claude.sh` under `$PATCHBAY_PEERS`.
pub fn real_cli() -> Peer {
    patchbay_conformance::peers::claude_code_cli()
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
