//! The official MCP conformance suite's server scenarios against `mcp-serve --conformance`:
//! every scenario of the pinned suite (`--suite all`) must pass, or sit in
//! `tests/mcp-conformance-baseline.yml` with its reason (the suite itself fails a listed
//! scenario that passes).
//!
//! The orchestrator's `/mcp` runs the same suite in its own `peers` test binary
//! (`orchestrator/tests/peers/conformance.rs`, baseline `conformance-baseline.yml` beside it):
//! the suite sends no `Authorization` header, so it goes through a loopback proxy that adds
//! the orchestrator's token, and the scenarios that need the reference tools here are listed.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use patchbay_conformance::peers::Peer;

/// The suite's CLI, installed by `.ci/peers/mcp-conformance.sh`.
pub(crate) fn suite() -> Peer {
    Peer::installed(
        "the MCP conformance suite",
        "mcp-conformance/conformance",
        ".ci/peers/mcp-conformance.sh",
    )
}

fn stop(mut child: Child) {
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

pub(crate) fn every_server_scenario_passes_against_mcp_serve_conformance() {
    let baseline = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-conformance-baseline.yml");
    let results = tempfile::tempdir().expect("a temp dir");
    let (server, url) = crate::mcp_serve::start_mcp_serve(&["--conformance"], Stdio::null());
    let output = Command::new(suite().path())
        .args(["server", "--url", &url, "--suite", "all", "--expected-failures"])
        .arg(&baseline)
        .arg("-o")
        .arg(results.path())
        .current_dir(results.path())
        .output()
        .expect("the suite runs");
    stop(server);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "conformance server --url {url} failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    // The run really ran the scenarios (a suite that found none would pass too).
    assert!(stdout.contains("✓ tools-call-elicitation"), "{stdout}");
    assert!(stdout.contains("=== SUMMARY ==="), "{stdout}");
}
