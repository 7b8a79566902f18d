//! The official MCP conformance suite's auth scenarios (`conformance client --scenario
//! auth/...`) against the `oauth-client` example, one trial each, with a strict baseline
//! (`conformance-auth-baseline.yml`): every 2025-11-25 and 2025-03-26 scenario must pass;
//! drafts and extensions pass or are listed with their reason.

use std::path::{Path, PathBuf};
use std::process::Command;

use libtest_mimic::Trial;
use patchbay_conformance::peers::{self, Peer};

/// Every auth scenario of the suite 0.1.16 (`conformance list`).
const AUTH_SCENARIOS: &[&str] = &[
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

pub(crate) fn suite_peer() -> Peer {
    Peer::installed(
        "the MCP conformance suite",
        "mcp-conformance/conformance",
        ".ci/peers/mcp-conformance.sh",
    )
}

/// The example binary, built by `cargo test` beside this test's `deps` folder.
fn example_peer() -> Peer {
    let exe = std::env::current_exe().unwrap_or_default();
    let debug = exe.parent().and_then(Path::parent).unwrap_or(Path::new("."));
    Peer::at(
        "the oauth-client example",
        debug.join("examples").join("oauth-client"),
        "cargo test -p patchbay-mcp builds it (or cargo build -p patchbay-mcp --example oauth-client)",
    )
}

fn baseline() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/conformance-auth-baseline.yml")
}

pub(crate) fn trials() -> Vec<Trial> {
    let suite = suite_peer();
    let example = example_peer();
    let mut trials: Vec<Trial> = AUTH_SCENARIOS
        .iter()
        .map(|scenario| {
            let (suite_path, example_path) = (suite.path().to_owned(), example.path().to_owned());
            let name = format!("conformance::{scenario}");
            peers::trial(name, &[&suite, &example], move || {
                run_scenario(&suite_path, &example_path, scenario)
            })
        })
        .collect();
    let suite_path = suite.path().to_owned();
    trials.push(peers::trial(
        "conformance::every_auth_scenario_of_the_suite_has_a_trial",
        &[&suite],
        move || every_auth_scenario_has_a_trial(&suite_path),
    ));
    trials
}

fn listed_in_baseline(scenario: &str) -> bool {
    let text = std::fs::read_to_string(baseline()).expect("the baseline file");
    text.lines().any(|line| line.trim() == format!("- {scenario}"))
}

fn run_scenario(suite: &Path, example: &Path, scenario: &str) {
    let command = format!("{} --client-metadata-url {CLIENT_METADATA_URL}", example.display());
    let output = Command::new(suite)
        .args([
            "client",
            "--command",
            &command,
            "--scenario",
            scenario,
            "--timeout",
            "60000",
        ])
        .arg("--expected-failures")
        .arg(baseline())
        .output()
        .expect("run the conformance suite");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "{scenario}: the suite reports an unexpected failure or a stale baseline entry:\n{text}"
    );
    // With a baseline the suite judges the checks alone; a client that crashed or hung in a
    // scenario that does not allow it fails here too.
    if !listed_in_baseline(scenario) {
        for sign in ["CLIENT EXITED WITH ERROR", "CLIENT TIMED OUT"] {
            assert!(!text.contains(sign), "{scenario}: {sign}:\n{text}");
        }
    }
}

fn every_auth_scenario_has_a_trial(suite: &Path) {
    let output = Command::new(suite)
        .arg("list")
        .output()
        .expect("run the conformance suite");
    let text = String::from_utf8_lossy(&output.stdout);
    let listed: Vec<&str> = text
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| name.starts_with("auth/"))
        .collect();
    assert_eq!(
        listed, AUTH_SCENARIOS,
        "the suite's auth scenarios changed; update AUTH_SCENARIOS"
    );
}
