//! A CLI stopped mid-turn (cancelled, or its stream dropped) is gone promptly, with the default
//! graces: the fake CLI stalls like the real one waiting on the API (stdin EOF ignored, exits
//! on `interrupt` or SIGTERM), and a `stop_grace`-long wait (2 s) would fail these bounds.

use std::path::Path;
use std::time::{Duration, Instant};

use futures::StreamExt;
use patchbay_claude_agent::{ClaudeAgentConfig, ClaudeAgentProvider};
use patchbay_core::{ErrorKind, Event, EventStream, Message, Provider, Signal, ToolSet};
use serde_json::json;

use crate::support;

/// Well under the 2 s `stop_grace`, well over the 250 ms `cancel_grace` (twice, on a loaded
/// 2-core machine).
const GONE_WITHIN: Duration = Duration::from_secs(1);

/// The fake CLI stalling mid-turn; each start writes `argv-<pid>.json` into `state`.
fn config(state: &Path, stall: &str) -> ClaudeAgentConfig {
    ClaudeAgentConfig::new()
        .with_cli_path(support::fake_cli())
        .with_env(
            "FAKE_CLAUDE_TRANSCRIPT",
            support::transcript("cancelled_mid_stream").display().to_string(),
        )
        .with_env("FAKE_CLAUDE_STATE", state.display().to_string())
        .with_env(stall, "1")
}

/// Pids of every fake CLI started with this state directory.
fn pids(state: &Path) -> Vec<i32> {
    let mut pids: Vec<i32> = std::fs::read_dir(state)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_str()?.to_string();
            name.strip_prefix("argv-")?.strip_suffix(".json")?.parse().ok()
        })
        .collect();
    pids.sort_unstable();
    pids
}

/// Whether `pid` exists; a zombie does too, so this is false only once the CLI was reaped.
fn exists(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

/// How long until none of `pids` exists, or `None` if some still does after `limit`.
fn time_to_gone(pids: &[i32], since: Instant, limit: Duration) -> Option<Duration> {
    loop {
        if !pids.iter().any(|&pid| exists(pid)) {
            return Some(since.elapsed());
        }
        if since.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

async fn start(provider: &ClaudeAgentProvider, signal: &Signal) -> EventStream {
    provider
        .create_response(&[Message::user("think")], &ToolSet::new(), "m", signal, None)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Read until the stalled turn's last delta: the CLI is mid-turn then.
async fn until_stalled(stream: &mut EventStream) {
    let mut text = String::new();
    while text != "Let me think about that" {
        match stream.next().await {
            Some(Ok(Event::TextDelta { text: delta, .. })) => text.push_str(&delta),
            Some(Ok(_)) => {}
            other => panic!("the turn ended before stalling: {other:?}"),
        }
    }
}

/// Cancel a stalled run; returns when the cancel was asked for.
async fn cancel_mid_turn(provider: &ClaudeAgentProvider) -> Instant {
    let signal = Signal::new();
    let mut stream = start(provider, &signal).await;
    until_stalled(&mut stream).await;
    let at = Instant::now();
    signal.cancel();
    let error = match stream.next().await {
        Some(Err(error)) => error,
        other => panic!("expected the cancel error, got {other:?}"),
    };
    assert_eq!(error.kind(), ErrorKind::Cancelled);
    assert!(at.elapsed() < Duration::from_millis(200), "the error came at once");
    at
}

/// Drop a stalled run's stream; returns when it was dropped.
async fn drop_mid_turn(provider: &ClaudeAgentProvider) -> Instant {
    let mut stream = start(provider, &Signal::new()).await;
    until_stalled(&mut stream).await;
    let at = Instant::now();
    drop(stream);
    at
}

fn only_pid(state: &Path) -> i32 {
    match pids(state)[..] {
        [pid] => pid,
        ref other => panic!("expected one CLI, found {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_cli_does_not_linger_for_the_stop_grace() {
    let state = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let provider =
        ClaudeAgentProvider::new(config(state.path(), "FAKE_CLAUDE_MID_TURN")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(provider.config().stop_grace(), Duration::from_secs(2));
    let at = cancel_mid_turn(&provider).await;
    let pid = only_pid(state.path());
    let gone = time_to_gone(&[pid], at, GONE_WITHIN);
    eprintln!("cancelled fake CLI gone after {gone:?}");
    assert!(
        gone.is_some(),
        "CLI {pid} still exists {GONE_WITHIN:?} after the cancel"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_streams_cli_does_not_linger_for_the_stop_grace() {
    let state = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let provider =
        ClaudeAgentProvider::new(config(state.path(), "FAKE_CLAUDE_MID_TURN")).unwrap_or_else(|e| panic!("{e}"));
    let at = drop_mid_turn(&provider).await;
    let pid = only_pid(state.path());
    let gone = time_to_gone(&[pid], at, GONE_WITHIN);
    eprintln!("dropped fake CLI gone after {gone:?}");
    assert!(gone.is_some(), "CLI {pid} still exists {GONE_WITHIN:?} after the drop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cli_ignoring_the_interrupt_is_terminated_after_the_cancel_grace() {
    // FAKE_CLAUDE_HANG ignores `interrupt` and stdin EOF: only SIGTERM ends it.
    let state = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let provider = ClaudeAgentProvider::new(config(state.path(), "FAKE_CLAUDE_HANG")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(provider.config().cancel_grace(), Duration::from_millis(250));
    let at = cancel_mid_turn(&provider).await;
    let pid = only_pid(state.path());
    let gone = time_to_gone(&[pid], at, GONE_WITHIN);
    eprintln!("fake CLI ignoring the interrupt gone after {gone:?}");
    let gone = gone.unwrap_or_else(|| panic!("CLI {pid} still exists {GONE_WITHIN:?} after the cancel"));
    assert!(
        gone >= Duration::from_millis(240),
        "SIGTERM waited for the grace: {gone:?}"
    );

    let state = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let provider = ClaudeAgentProvider::new(config(state.path(), "FAKE_CLAUDE_HANG")).unwrap_or_else(|e| panic!("{e}"));
    let at = drop_mid_turn(&provider).await;
    let pid = only_pid(state.path());
    assert!(
        time_to_gone(&[pid], at, GONE_WITHIN).is_some(),
        "CLI {pid} still exists {GONE_WITHIN:?} after the drop"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_cancelled_and_dropped_runs_leave_no_cli_behind() {
    let state = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let provider =
        ClaudeAgentProvider::new(config(state.path(), "FAKE_CLAUDE_MID_TURN")).unwrap_or_else(|e| panic!("{e}"));
    let mut last = Instant::now();
    for i in 0..20 {
        last = if i % 2 == 0 {
            cancel_mid_turn(&provider).await
        } else {
            drop_mid_turn(&provider).await
        };
    }
    let pids = pids(state.path());
    assert_eq!(pids.len(), 20, "one CLI per run");
    let gone = time_to_gone(&pids, last, GONE_WITHIN);
    eprintln!("20 churned fake CLIs all gone {gone:?} after the last stop");
    let left: Vec<i32> = pids.iter().copied().filter(|&pid| exists(pid)).collect();
    assert!(gone.is_some(), "left behind: {left:?}");
}

#[test]
fn cancel_grace_ms_is_an_option() {
    let config = ClaudeAgentConfig::from_options(&json!({ "cancel_grace_ms": 100, "stop_grace_ms": 500 }))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.cancel_grace(), Duration::from_millis(100));
    assert_eq!(config.stop_grace(), Duration::from_millis(500));
}
