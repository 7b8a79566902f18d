//! A host killed with SIGKILL mid-turn leaves no CLI behind (setpriv's parent-death signal):
//! the fake CLI stalls like the real one waiting on the API, ignoring stdin EOF and SIGTERM, so
//! only the signal can end it. The host is this test binary run again (one `#[test]` below,
//! selected by an environment variable), so it can be killed.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use patchbay_claude_agent::{ClaudeAgentConfig, ClaudeAgentProvider};
use patchbay_core::kit::ParentDeathSignal;
use patchbay_core::{Event, Message, Provider, Signal, ToolSet};

use crate::support;

/// Set in the host process: the fake CLI's state directory.
const HOST_STATE: &str = "PATCHBAY_CLAUDE_TEST_HOST_STATE";
/// What the host prints once the CLI stalls mid-turn.
const CLI: &str = "cli pid ";

/// Whether a process is gone (absent, or a zombie waiting to be reaped).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next());
            matches!(state, Some("Z" | "X"))
        }
    }
}

/// The host's part of [`killed_host_leaves_no_cli`]: a call stalled mid-turn on a runtime
/// worker thread until the process is killed. Does nothing on its own.
#[test]
fn host_holds_a_stalled_call_until_killed() {
    let Some(state) = std::env::var_os(HOST_STATE) else {
        return;
    };
    let state = Path::new(&state).to_path_buf();
    let config = ClaudeAgentConfig::new()
        .with_cli_path(support::fake_cli())
        .with_env(
            "FAKE_CLAUDE_TRANSCRIPT",
            support::transcript("cancelled_mid_stream").display().to_string(),
        )
        .with_env("FAKE_CLAUDE_STATE", state.display().to_string())
        .with_env("FAKE_CLAUDE_MID_TURN", "1")
        .with_env("FAKE_CLAUDE_IGNORE_TERM", "1");
    let provider = ClaudeAgentProvider::new(config).unwrap_or_else(|e| panic!("{e}"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let (stalled, at_stall) = mpsc::channel();
    let _call = runtime.spawn(async move {
        let signal = Signal::new();
        let mut stream = provider
            .create_response(&[Message::user("think")], &ToolSet::new(), "m", &signal, None)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let mut text = String::new();
        while text != "Let me think about that" {
            match stream.next().await {
                Some(Ok(Event::TextDelta { text: delta, .. })) => text.push_str(&delta),
                Some(Ok(_)) => {}
                other => panic!("the turn ended before stalling: {other:?}"),
            }
        }
        let _ = stalled.send(());
        // Hold the stream (and so the CLI) until the process is killed.
        std::future::pending::<()>().await;
        drop((stream, provider));
    });
    at_stall
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("the call never stalled: {e}"));
    match support::fake_starts(&state)[..] {
        [pid] => println!("{CLI}{pid}"),
        ref other => panic!("expected one CLI, found {other:?}"),
    }
    loop {
        std::thread::sleep(Duration::from_secs(60));
    }
}

#[test]
fn killed_host_leaves_no_cli() {
    if ParentDeathSignal::detect().setpriv().is_none() {
        eprintln!("skipped: no setpriv on PATH (the CLI is then started directly)");
        return;
    }
    let state = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut host = Command::new(std::env::current_exe().unwrap_or_else(|e| panic!("{e}")))
        .args([
            "--exact",
            "host_death::host_holds_a_stalled_call_until_killed",
            "--nocapture",
        ])
        .env(HOST_STATE, state.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let stdout = host.stdout.take().unwrap_or_else(|| panic!("stdout piped"));
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(pid) = line.strip_prefix(CLI).and_then(|pid| pid.parse::<i32>().ok()) {
                let _ = sender.send(pid);
            }
        }
    });
    let Ok(cli) = receiver.recv_timeout(Duration::from_secs(60)) else {
        let _ = host.kill();
        panic!("the host printed no CLI pid: {:?}", host.wait());
    };
    assert!(!gone(cli));

    host.kill().unwrap_or_else(|e| panic!("{e}")); // SIGKILL: no Drop stops the CLI
    let _ = host.wait();
    let killed = Instant::now();
    while !gone(cli) && killed.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let cli_gone = gone(cli);
    // Clean up either way (the CLI leads its own process group).
    let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(cli), nix::sys::signal::Signal::SIGKILL);
    assert!(cli_gone, "the CLI {cli} still runs 10 s after its host was killed");
}
