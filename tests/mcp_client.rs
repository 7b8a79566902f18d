//! The official MCP conformance suite's client scenarios against the `mcp-client` example (a
//! small client on patchbay's client set). Each scenario is a trial needing the example and
//! the suite (`.ci/peers/mcp-conformance.sh`); the suite's verdict is checked against the
//! strict baseline `tests/mcp-conformance/client-baseline.yml`.
//!
//! The example proposes MCP 2025-11-25 here (`--protocol 2025-11-25`): the suite's
//! `initialize` scenario checks that the client asks for the revision it was written for.

use std::path::{Path, PathBuf};
use std::process::Command;

use patchbay_conformance::peers::Peer;

/// The client scenarios of the suite that need no authorization server. The `auth/...`
/// scenarios come with OAuth support: add them here (and to the baseline with reasons).
pub(crate) const SCENARIOS: &[&str] = &[
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
];

/// The example binary, built by `cargo test --features mcp` next to this test's binary.
pub(crate) fn mcp_client_binary() -> Peer {
    let exe = std::env::current_exe().unwrap_or_default();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap_or(Path::new("."));
    Peer::at(
        "the mcp-client example",
        profile_dir.join("examples/mcp-client"),
        "build it with `cargo build --features mcp --example mcp-client` (`cargo test --all-features` builds it)",
    )
}

/// The suite's wrapper, installed by `.ci/peers/mcp-conformance.sh`.
pub(crate) fn conformance_suite() -> Peer {
    Peer::installed(
        "the MCP conformance suite",
        "mcp-conformance/conformance",
        ".ci/peers/mcp-conformance.sh",
    )
}

fn baseline() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-conformance/client-baseline.yml")
}

/// Run client scenario `scenario` and require the suite's verdict (against the baseline) to pass.
pub(crate) fn scenario_passes(scenario: &str) {
    let client = mcp_client_binary();
    let suite = conformance_suite();
    let output_dir = tempfile::tempdir().expect("a temporary folder");
    let command = format!("{} --protocol 2025-11-25", client.path().display());
    let output = Command::new(suite.path())
        .args([
            "client",
            "--command",
            &command,
            "--scenario",
            scenario,
            "--expected-failures",
        ])
        .arg(baseline())
        .arg("--output-dir")
        .arg(output_dir.path())
        .output()
        .expect("the conformance suite runs");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "client scenario `{scenario}` does not match the baseline ({}):\n{text}",
        output.status
    );
}
