//! The official MCP conformance suite's server scenarios against the orchestrator's `/mcp`, as
//! `tests/mcp_conformance.rs` (the root package's) runs them against `mcp-serve --conformance`:
//! every scenario of the pinned suite (`--suite all`) must pass, or sit in
//! `conformance-baseline.yml` beside this file with its reason (the suite itself fails a
//! listed scenario that passes). The suite cannot send the orchestrator's token, so it talks
//! to a [`TokenProxy`] that adds it; the orchestrator's token check stays on (checked here).

use std::path::Path;
use std::time::Duration;

use crate::served::Served;
use crate::token_proxy::TokenProxy;

/// The suite's CLI, installed by `.ci/peers/mcp-conformance.sh`.
pub(crate) fn suite() -> patchbay_conformance::peers::Peer {
    patchbay_conformance::peers::Peer::installed(
        "the MCP conformance suite",
        "mcp-conformance/conformance",
        ".ci/peers/mcp-conformance.sh",
    )
}

/// How long the whole suite may take (a few seconds on a quiet machine).
const SUITE_LIMIT: Duration = Duration::from_secs(300);

pub(crate) async fn every_server_scenario_passes_or_is_baselined_against_the_orchestrator() {
    let baseline = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/conformance-baseline.yml");
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    std::fs::create_dir_all(&results).unwrap();
    let served = Served::start(&dir.path().join("data"), None, &[], &dir.path().join("serve.log")).await;

    // The endpoint still refuses a request without the token: only the proxy lets the suite in.
    let client = patchbay_http::client_builder().no_proxy().build().unwrap();
    let refused = client
        .post(&served.mcp)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401, "{:?}", refused.text().await);

    let proxy = TokenProxy::start(&served.mcp, &served.token).await;
    let mut command = tokio::process::Command::new(suite().path());
    command
        .args(["server", "--url", proxy.url(), "--suite", "all", "--expected-failures"])
        .arg(&baseline)
        .arg("-o")
        .arg(&results)
        .current_dir(&results)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(SUITE_LIMIT, command.output())
        .await
        .unwrap_or_else(|_| panic!("the suite did not finish within {SUITE_LIMIT:?}"))
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", suite().path().display()));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "conformance server --url {} (the orchestrator's {} behind the token proxy) failed ({}):\n{stdout}\n{stderr}\norchestrator:\n{}",
        proxy.url(),
        served.mcp,
        output.status,
        served.stderr()
    );
    // The run really ran the scenarios (a suite that found none would pass too), through the
    // proxy (the generic ones pass only when the orchestrator answers).
    assert!(stdout.contains("=== SUMMARY ==="), "{stdout}");
    let generic = [
        "server-initialize",
        "logging-set-level",
        "ping",
        "completion-complete",
        "tools-list",
        "resources-list",
        "prompts-list",
    ];
    for scenario in generic {
        assert!(
            stdout.contains(&format!("✓ {scenario}:")),
            "{scenario} did not pass:\n{stdout}"
        );
    }
    drop(proxy);
    let (status, log) = served.terminate(Duration::from_secs(30)).await;
    assert!(status.is_some_and(|s| s.success()), "{status:?}\n{log}");
}
