//! Kept-alive CLIs (`keep_alive`) on the fake CLI: a finished run's process serves the next
//! `Resume` of its session and nothing else, an idle one stops after the limit, a cancelled or
//! failed run's process is never parked, and dropping the provider leaves no process behind.
//!
//! The fake CLI writes `argv-<pid>.json` once per process start, so the number of those files
//! is the number of starts; it serves one transcript segment per user turn.

use std::time::{Duration, Instant};

use futures::StreamExt;
use patchbay_claude_agent::{ClaudeAgentConfig, ClaudeAgentProvider};
use patchbay_conformance::{Recording, text_of};
use patchbay_core::{
    ErrorKind, Event, Message, Provider, ProviderError, RequestContext, Signal, ToolSet, context::Session,
};
use serde_json::Value;

use crate::support;

const S1: &str = "11111111-1111-4111-8111-111111111111";
const S2: &str = "22222222-2222-4222-8222-222222222222";
/// Long enough that no test sees a parked CLI expire unless it asks for that.
const KEEP: Duration = Duration::from_secs(60);
/// How long a stopped process may take to go (far above the 300 ms grace periods).
const GONE_WITHIN: Duration = Duration::from_secs(5);

/// One recorded turn with its session id replaced by `session` and `Hello!` by `greeting`.
fn segment(name: &str, session: &str, greeting: &str) -> String {
    let text = std::fs::read_to_string(support::transcript(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    let recorded = text
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find_map(|line| line["session_id"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("{name} names no session"));
    text.replace(&recorded, session).replace("Hello!", greeting)
}

struct Fake {
    state: tempfile::TempDir,
    provider: ClaudeAgentProvider,
}

/// A provider on the fake CLI replaying `segments`, one per turn, keeping CLIs alive `keep`.
fn fake(segments: &[String], keep: Duration) -> Fake {
    let state = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let transcript = state.path().join("transcript.jsonl");
    std::fs::write(&transcript, segments.concat()).unwrap_or_else(|e| panic!("{e}"));
    let config = ClaudeAgentConfig::new()
        .with_cli_path(support::fake_cli())
        .with_env("FAKE_CLAUDE_TRANSCRIPT", transcript.display().to_string())
        .with_env("FAKE_CLAUDE_STATE", state.path().display().to_string())
        .with_keep_alive(keep)
        .with_stop_grace(Duration::from_millis(300));
    let provider = ClaudeAgentProvider::new(config).unwrap_or_else(|e| panic!("{e}"));
    Fake { state, provider }
}

impl Fake {
    /// Pids of every CLI started so far, in start order.
    fn starts(&self) -> Vec<i32> {
        support::fake_starts(self.state.path())
    }

    /// The messages the CLI `pid` read from stdin.
    fn stdin(&self, pid: i32) -> Vec<Value> {
        support::fake_stdin(self.state.path(), pid)
    }

    async fn turn(&self, session: Option<&str>, model: &str) -> (Vec<Event>, Option<ProviderError>) {
        let Recording { events, error } = Recording::collect(self.start(session, model, &Signal::new()).await).await;
        (events, error)
    }

    async fn start(&self, session: Option<&str>, model: &str, signal: &Signal) -> patchbay_core::EventStream {
        let mut context = RequestContext::new();
        if let Some(id) = session {
            context = context.with_session(Session::Resume { id: id.into() });
        }
        self.provider
            .create_response(&[Message::user("hi")], &ToolSet::new(), model, signal, Some(&context))
            .await
            .unwrap_or_else(|e| panic!("the call starts: {e}"))
    }
}

fn session_of(events: &[Event]) -> Option<String> {
    events.iter().find_map(|e| match e {
        Event::Started { session_id, .. } => session_id.clone(),
        _ => None,
    })
}

/// Whether `pid` is a live process (a zombie counts as gone once its other threads are: until
/// then `waitpid` does not report it, and the pool would still take it for alive).
fn alive(pid: i32) -> bool {
    let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat")).map(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    });
    let threads = std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, Iterator::count);
    match zombie {
        Ok(zombie) => !zombie || threads > 1,
        Err(_) => false,
    }
}

async fn gone(pid: i32) -> bool {
    let deadline = Instant::now() + GONE_WITHIN;
    while alive(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    !alive(pid)
}

async fn parked_within(fake: &Fake, count: usize, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while fake.provider.idle_processes() != count && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    fake.provider.idle_processes() == count
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_runs_cli_serves_the_next_resume_of_its_session() {
    let fake = fake(
        &[segment("text_only", S1, "Hello!"), segment("text_only", S1, "Again!")],
        KEEP,
    );
    let (first, error) = fake.turn(None, "m").await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(session_of(&first).as_deref(), Some(S1));
    assert_eq!(fake.provider.idle_processes(), 1, "parked for its session");

    let (second, error) = fake.turn(Some(S1), "m").await;
    assert!(error.is_none(), "{error:?}");
    assert!(text_of(&second).starts_with("Again!"), "{}", text_of(&second));
    assert_eq!(session_of(&second).as_deref(), Some(S1));
    let starts = fake.starts();
    assert_eq!(starts.len(), 1, "one CLI start for two turns: {starts:?}");
    let stdin = fake.stdin(starts[0]);
    let users = stdin.iter().filter(|m| m["type"] == "user").count();
    let inits = stdin.iter().filter(|m| m["request"]["subtype"] == "initialize").count();
    assert_eq!((users, inits), (2, 1), "the warm turn skips `initialize`");
    assert_eq!(fake.provider.idle_processes(), 1, "parked again after the warm turn");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_alive_cli_does_not_serve_another_session_or_another_model() {
    let fake = fake(
        &[
            segment("text_only", S1, "Hello!"),
            segment("text_only", S2, "Other!"),
            segment("text_only", S1, "Model!"),
        ],
        KEEP,
    );
    let (_, error) = fake.turn(None, "m").await;
    assert!(error.is_none(), "{error:?}");
    let first = fake.starts()[0];

    let (events, error) = fake.turn(Some(S2), "m").await;
    assert!(error.is_none(), "{error:?}");
    assert!(text_of(&events).starts_with("Other!"), "{}", text_of(&events));
    assert_eq!(fake.starts().len(), 2, "another session starts its own CLI");
    assert_eq!(fake.provider.idle_processes(), 2, "both sessions parked");
    assert!(alive(first), "the first session's CLI still waits");

    // The same session asked with another model: a CLI started differently cannot serve it.
    let (events, error) = fake.turn(Some(S1), "other-model").await;
    assert!(error.is_none(), "{error:?}");
    assert!(text_of(&events).starts_with("Model!"), "{}", text_of(&events));
    assert_eq!(fake.starts().len(), 3, "a different model starts a new CLI");
    assert_eq!(
        fake.provider.idle_processes(),
        2,
        "the new CLI replaced the old one for this session"
    );
    assert!(gone(first).await, "the replaced CLI {first} was stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_cli_is_stopped_after_the_keep_alive_limit() {
    let fake = fake(
        &[segment("text_only", S1, "Hello!"), segment("text_only", S1, "Fresh!")],
        Duration::from_millis(300),
    );
    let (_, error) = fake.turn(None, "m").await;
    assert!(error.is_none(), "{error:?}");
    let first = fake.starts()[0];
    assert!(
        parked_within(&fake, 0, GONE_WITHIN).await,
        "still parked after the limit"
    );
    assert!(gone(first).await, "the idle CLI {first} was stopped");

    let (events, error) = fake.turn(Some(S1), "m").await;
    assert!(error.is_none(), "{error:?}");
    assert!(text_of(&events).starts_with("Fresh!"), "{}", text_of(&events));
    assert_eq!(fake.starts().len(), 2, "the next turn starts a new CLI");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_runs_cli_is_stopped_not_parked() {
    let fake = fake(
        &[
            segment("text_only", S1, "Hello!"),
            segment("text_only", S1, "Again!"),
            segment("text_only", S1, "Fresh!"),
        ],
        KEEP,
    );
    let (_, error) = fake.turn(None, "m").await;
    assert!(error.is_none(), "{error:?}");
    let first = fake.starts()[0];

    // The warm turn on the parked CLI, cancelled at its first text.
    let signal = Signal::new();
    let mut stream = fake.start(Some(S1), "m", &signal).await;
    let mut ended = None;
    while let Some(item) = stream.next().await {
        match item {
            Ok(Event::TextDelta { .. }) => signal.cancel(),
            Ok(_) => {}
            Err(error) => {
                ended = Some(error);
                break;
            }
        }
    }
    assert_eq!(ended.map(|e| e.kind()), Some(ErrorKind::Cancelled));
    drop(stream);
    assert_eq!(fake.starts().len(), 1, "the cancelled turn ran on the parked CLI");
    assert_eq!(fake.provider.idle_processes(), 0, "a cancelled run is not parked");
    assert!(gone(first).await, "the cancelled run's CLI {first} was stopped");

    let (events, error) = fake.turn(Some(S1), "m").await;
    assert!(error.is_none(), "{error:?}");
    assert!(text_of(&events).starts_with("Fresh!"), "{}", text_of(&events));
    assert_eq!(fake.starts().len(), 2, "the next turn starts a new CLI");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_runs_cli_is_stopped_not_parked() {
    let fake = fake(
        &[
            segment("text_only", S1, "Hello!"),
            segment("error_mid_stream", S1, "Hello!"),
            segment("text_only", S1, "Fresh!"),
        ],
        KEEP,
    );
    let (_, error) = fake.turn(None, "m").await;
    assert!(error.is_none(), "{error:?}");
    let first = fake.starts()[0];

    let (_, error) = fake.turn(Some(S1), "m").await;
    assert!(error.is_some(), "the second turn fails mid-stream");
    assert_eq!(fake.starts().len(), 1, "the failed turn ran on the parked CLI");
    assert_eq!(fake.provider.idle_processes(), 0, "a failed run is not parked");
    assert!(gone(first).await, "the failed run's CLI {first} was stopped");

    let (events, error) = fake.turn(Some(S1), "m").await;
    assert!(error.is_none(), "{error:?}");
    assert!(text_of(&events).starts_with("Fresh!"), "{}", text_of(&events));
    assert_eq!(fake.starts().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_cli_that_died_is_replaced_by_a_fresh_one() {
    let fake = fake(
        &[segment("text_only", S1, "Hello!"), segment("text_only", S1, "Fresh!")],
        KEEP,
    );
    let (_, error) = fake.turn(None, "m").await;
    assert!(error.is_none(), "{error:?}");
    let first = fake.starts()[0];
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(first), nix::sys::signal::Signal::SIGKILL)
        .unwrap_or_else(|e| panic!("kill {first}: {e}"));
    assert!(gone(first).await, "{first} died");

    let (events, error) = fake.turn(Some(S1), "m").await;
    assert!(error.is_none(), "{error:?}");
    assert!(text_of(&events).starts_with("Fresh!"), "{}", text_of(&events));
    assert_eq!(fake.starts().len(), 2, "a dead CLI is not reused");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_provider_stops_every_idle_cli() {
    let fake = fake(
        &[segment("text_only", S1, "Hello!"), segment("text_only", S2, "Other!")],
        KEEP,
    );
    for session in [None, Some(S2)] {
        let (_, error) = fake.turn(session, "m").await;
        assert!(error.is_none(), "{error:?}");
    }
    assert_eq!(fake.provider.idle_processes(), 2);
    let pids = fake.starts();
    assert_eq!(pids.len(), 2);
    assert!(pids.iter().all(|&pid| alive(pid)), "parked CLIs wait: {pids:?}");

    let Fake { state, provider } = fake;
    drop(provider);
    for pid in pids {
        assert!(gone(pid).await, "CLI {pid} outlived its provider");
    }
    drop(state);
}
