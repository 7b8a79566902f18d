//! The official MCP conformance suite's client scenarios, the `auth/...` ones included,
//! against the `mcp-client` example (a small client on patchbay's client set that signs in
//! with OAuth when the server asks). Each scenario is a trial needing the example and the
//! suite (`.ci/peers/mcp-conformance.sh`); the suite's verdict is checked against the strict
//! baseline `tests/mcp-conformance/client-baseline.yml`, and one more trial checks that every
//! client scenario the suite lists has a trial here.
//!
//! The example proposes MCP 2025-11-25 here (`--protocol 2025-11-25`): the suite's
//! `initialize` scenario checks that the client asks for the revision it was written for.

use std::path::{Path, PathBuf};
use std::process::Command;

use patchbay_conformance::peers::Peer;

/// Every client scenario of the suite 0.1.16 (`conformance list`), in its order.
pub(crate) const SCENARIOS: &[&str] = &[
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/client-credentials-jwt",
    "auth/client-credentials-basic",
    "auth/cross-app-access-complete-flow",
];

/// The client ID metadata document URL the suite's `auth/basic-cimd` expects.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

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
    let command = format!(
        "{} --protocol 2025-11-25 --client-metadata-url {CLIENT_METADATA_URL}",
        client.path().display()
    );
    let output = Command::new(suite.path())
        .args([
            "client",
            "--command",
            &command,
            "--scenario",
            scenario,
            "--timeout",
            "60000",
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
    // With a baseline the suite judges the checks alone; a client that crashed or hung in a
    // scenario it should pass fails here too.
    if !listed_in_baseline(scenario) {
        for sign in ["CLIENT EXITED WITH ERROR", "CLIENT TIMED OUT"] {
            assert!(!text.contains(sign), "client scenario `{scenario}`: {sign}:\n{text}");
        }
    }
}

fn listed_in_baseline(scenario: &str) -> bool {
    let text = std::fs::read_to_string(baseline()).expect("the baseline file");
    text.lines().any(|line| line.trim() == format!("- {scenario}"))
}

/// The suite lists no client scenario without a trial here (a new one would go untested).
pub(crate) fn every_client_scenario_of_the_suite_has_a_trial() {
    let output = Command::new(conformance_suite().path())
        .arg("list")
        .output()
        .expect("the conformance suite runs");
    let text = String::from_utf8_lossy(&output.stdout);
    let listed: Vec<&str> = text
        .lines()
        .skip_while(|line| !line.starts_with("Client scenarios"))
        .filter_map(|line| line.trim().strip_prefix("- "))
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    assert_eq!(
        listed, SCENARIOS,
        "the suite's client scenarios changed; update SCENARIOS"
    );
}
