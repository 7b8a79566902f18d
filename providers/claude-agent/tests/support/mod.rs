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

/// Pids of every fake CLI started with `FAKE_CLAUDE_STATE=state`, in start order (each writes
/// its `argv-<pid>.json` there).
pub fn fake_starts(state: &std::path::Path) -> Vec<i32> {
    let mut starts: Vec<(std::time::SystemTime, i32)> = std::fs::read_dir(state)
        .map(|dir| dir.filter_map(Result::ok).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let pid = name.strip_prefix("argv-")?.strip_suffix(".json")?.parse().ok()?;
            Some((entry.metadata().ok()?.modified().ok()?, pid))
        })
        .collect();
    starts.sort();
    starts.into_iter().map(|(_, pid)| pid).collect()
}

/// The messages the fake CLI `pid` read from its stdin (`stdin-<pid>.jsonl` in `state`).
pub fn fake_stdin(state: &std::path::Path, pid: i32) -> Vec<serde_json::Value> {
    std::fs::read_to_string(state.join(format!("stdin-{pid}.jsonl")))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}
