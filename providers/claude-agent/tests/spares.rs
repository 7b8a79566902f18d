//! Spare CLIs (`spares`) on the fake CLI: a new session whose launch matches takes a spare (no
//! `initialize` round trip, no start) and a replacement starts; resumes, forks, fixed ids, host
//! tools and other launches do not take one; a spare that died or aged is not handed out, one
//! that dies at its turn gives way to the call's own CLI; and no spare outlives its provider,
//! also when one is still starting.
//!
//! The fake CLI writes `argv-<pid>.json` once per process start and takes a transcript segment
//! only when a user message arrives, so a spare idle before its first turn consumes nothing.

use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
use nix::unistd::Pid;
use patchbay_claude_agent::{ClaudeAgentConfig, ClaudeAgentProvider};
use patchbay_conformance::{Recording, text_of};
use patchbay_core::{
    Event, FnTool, Message, ProviderError, RequestContext, Signal, ToolContext, ToolResult, ToolSet, context::Session,
};
use serde_json::{Value, json};

use crate::support;

/// How long a spare may take to start, or a stopped process to go (far above what it takes).
const WITHIN: Duration = Duration::from_secs(10);

/// The recorded `text_only` turn with `Hello!` replaced by `greeting`, without the in-process
/// MCP requests the recording made (these calls have no host tools).
fn segment(greeting: &str) -> String {
    let text = std::fs::read_to_string(support::transcript("text_only")).unwrap_or_else(|e| panic!("{e}"));
    let mut out = String::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let value: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}"));
        let mcp = value["request"]["subtype"] == "mcp_message"
            || (value["type"] == "control_response" && value["response"]["request_id"] != "patchbay_init");
        if !mcp {
            out.push_str(&line.replace("Hello!", greeting));
            out.push('\n');
        }
    }
    out
}

struct Fake {
    state: tempfile::TempDir,
    provider: ClaudeAgentProvider,
}

fn fake(greetings: &[&str], config: impl FnOnce(ClaudeAgentConfig) -> ClaudeAgentConfig) -> Fake {
    let state = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let transcript = state.path().join("transcript.jsonl");
    let text: String = greetings.iter().map(|g| segment(g)).collect();
    std::fs::write(&transcript, text).unwrap_or_else(|e| panic!("{e}"));
    let base = ClaudeAgentConfig::new()
        .with_cli_path(support::fake_cli())
        .with_env("FAKE_CLAUDE_TRANSCRIPT", transcript.display().to_string())
        .with_env("FAKE_CLAUDE_STATE", state.path().display().to_string())
        .with_spares(1)
        .with_stop_grace(Duration::from_millis(300));
    let provider = ClaudeAgentProvider::new(config(base)).unwrap_or_else(|e| panic!("{e}"));
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

    /// The pids that read a user message.
    fn served(&self) -> Vec<i32> {
        self.starts()
            .into_iter()
            .filter(|&pid| self.stdin(pid).iter().any(|m| m["type"] == "user"))
            .collect()
    }

    async fn turn(
        &self,
        context: &RequestContext,
        tools: &ToolSet,
        model: &str,
    ) -> (Vec<Event>, Option<ProviderError>) {
        let Recording { events, error } = Recording::call(
            &self.provider,
            &[Message::user("hi")],
            tools,
            model,
            &Signal::new(),
            Some(context),
        )
        .await;
        (events, error)
    }

    /// A new session's turn with model `m` and no tools: its text.
    async fn new_session(&self) -> String {
        let (events, error) = self.turn(&RequestContext::new(), &ToolSet::new(), "m").await;
        assert!(error.is_none(), "{error:?}");
        text_of(&events)
    }

    /// The started CLIs still up that read no user message: the spares (ready or starting).
    fn idle(&self) -> Vec<i32> {
        self.starts()
            .into_iter()
            .filter(|&pid| !reaped(pid) && self.stdin(pid).iter().all(|m| m["type"] != "user"))
            .collect()
    }

    /// The one spare (waits until there is exactly one idle CLI).
    async fn spare(&self) -> i32 {
        let deadline = Instant::now() + WITHIN;
        while self.idle().len() != 1 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let idle = self.idle();
        assert_eq!(idle.len(), 1, "one spare: {idle:?}");
        idle[0]
    }

    /// Wait until `count` spares are ready and `starts` CLIs were started.
    async fn settled(&self, count: usize, starts: usize) {
        let deadline = Instant::now() + WITHIN;
        while (self.provider.spare_processes(), self.starts().len()) != (count, starts) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(
            (self.provider.spare_processes(), self.starts().len()),
            (count, starts),
            "(spares ready, CLIs started)"
        );
    }
}

/// Whether `pid` is gone and reaped (no zombie left: `/proc/<pid>` no longer exists).
fn reaped(pid: i32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

async fn reaped_within(pid: i32) -> bool {
    let deadline = Instant::now() + WITHIN;
    while !reaped(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    reaped(pid)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_session_takes_the_spare_and_a_replacement_starts() {
    let fake = fake(&["One!", "Two!", "Three!"], |c| c);
    assert_eq!(
        fake.provider.spare_processes(),
        0,
        "spares follow the first new session"
    );
    assert!(fake.new_session().await.starts_with("One!"));
    fake.settled(1, 2).await;
    let spare = fake.spare().await;
    let before = fake.stdin(spare);
    assert_eq!(before.len(), 1, "a spare is sent `initialize` only: {before:?}");
    assert_eq!(before[0]["request"]["subtype"], "initialize");

    assert!(
        fake.new_session().await.starts_with("Two!"),
        "the spare took no segment early"
    );
    let stdin = fake.stdin(spare);
    let inits = stdin.iter().filter(|m| m["request"]["subtype"] == "initialize").count();
    let users = stdin.iter().filter(|m| m["type"] == "user").count();
    assert_eq!(
        (inits, users),
        (1, 1),
        "the spare served the turn without a second `initialize`"
    );
    assert!(
        reaped_within(spare).await,
        "the used spare {spare} was stopped after its turn"
    );
    fake.settled(1, 3).await;

    assert!(fake.new_session().await.starts_with("Three!"));
    assert_eq!(fake.served(), fake.starts()[..3].to_vec(), "each turn on its own CLI");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resumes_forks_fixed_ids_and_host_tools_do_not_take_the_spare() {
    let fake = fake(&["One!", "Other!"], |c| c);
    assert!(fake.new_session().await.starts_with("One!"));
    fake.settled(1, 2).await;
    let spare = fake.spare().await;
    let id = "33333333-3333-4333-8333-333333333333";
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Input {}
    let tools = ToolSet::new().with(FnTool::new("echo", "Echo.", |_: Input, _: ToolContext| async {
        ToolResult::text("x")
    }));
    let calls = [
        (
            RequestContext::new().with_session(Session::Resume { id: id.into() }),
            ToolSet::new(),
        ),
        (
            RequestContext::new().with_session(Session::Fork { from: id.into() }),
            ToolSet::new(),
        ),
        (
            RequestContext::new().with_session(Session::New { id: Some(id.into()) }),
            ToolSet::new(),
        ),
        (RequestContext::new(), tools),
    ];
    for (i, (context, tools)) in calls.iter().enumerate() {
        let (_, error) = fake.turn(context, tools, "m").await;
        assert!(error.is_none(), "call {i}: {error:?}");
        assert_eq!(fake.starts().len(), 3 + i, "call {i} started its own CLI");
        assert_eq!(fake.provider.spare_processes(), 1, "call {i} left the spare");
    }
    assert!(
        fake.stdin(spare).iter().all(|m| m["type"] != "user"),
        "the spare served none of them"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_session_with_another_launch_replaces_the_spare() {
    let workdir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let fake = fake(&["One!"], |c| c);
    assert!(fake.new_session().await.starts_with("One!"));
    fake.settled(1, 2).await;
    let mut starts = 2;
    let others = [
        (RequestContext::new(), "other-model"),
        (RequestContext::new().with_system("Be brief."), "other-model"),
        (
            RequestContext::new()
                .with_system("Be brief.")
                .with_working_dir(workdir.path()),
            "other-model",
        ),
    ];
    for (i, (context, model)) in others.iter().enumerate() {
        let spare = fake.spare().await;
        let (_, error) = fake.turn(context, &ToolSet::new(), model).await;
        assert!(error.is_none(), "launch {i}: {error:?}");
        assert!(
            fake.stdin(spare).iter().all(|m| m["type"] != "user"),
            "launch {i}: a spare of another launch served it"
        );
        assert!(
            reaped_within(spare).await,
            "launch {i}: the old launch's spare {spare} was stopped"
        );
        starts += 2;
        fake.settled(1, starts).await;
    }
    // The spare follows the latest launch: the same call again takes it.
    let spare = fake.spare().await;
    let (_, error) = fake.turn(&others[2].0, &ToolSet::new(), "other-model").await;
    assert!(error.is_none(), "{error:?}");
    assert!(
        fake.stdin(spare).iter().any(|m| m["type"] == "user"),
        "the matching spare served it"
    );
    let argv = std::fs::read_to_string(fake.state.path().join(format!("argv-{spare}.json"))).unwrap_or_default();
    let argv: Value = serde_json::from_str(&argv).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        argv["cwd"],
        json!(workdir.path().canonicalize().ok()),
        "started in the call's cwd"
    );
    let prompt = argv["argv"]
        .as_array()
        .and_then(|a| {
            a.iter()
                .position(|x| x == "--system-prompt-file")
                .and_then(|i| a.get(i + 1))
        })
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_default();
    assert!(
        prompt.contains("patchbay-claude-spare-"),
        "the spare's own files: {prompt}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spare_that_died_is_not_handed_out() {
    let fake = fake(&["One!", "Cold!"], |c| c);
    assert!(fake.new_session().await.starts_with("One!"));
    fake.settled(1, 2).await;
    let spare = fake.spare().await;
    nix::sys::signal::kill(Pid::from_raw(spare), nix::sys::signal::Signal::SIGKILL)
        .unwrap_or_else(|e| panic!("kill {spare}: {e}"));
    // Dead as its parent (this process, where the provider runs) sees it: waitable, not yet
    // reaped (WNOWAIT), or already reaped. A `Z` in /proc is not enough: the fake CLI is a
    // Python process with two threads, and its leader shows as a zombie while the other thread
    // is still exiting, when waitpid does not report it yet.
    let deadline = Instant::now() + WITHIN;
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT | WaitPidFlag::WNOHANG;
    while matches!(waitid(Id::Pid(Pid::from_raw(spare)), flags), Ok(WaitStatus::StillAlive))
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    assert!(fake.new_session().await.starts_with("Cold!"), "a cold start, no error");
    let served = fake.served();
    assert_eq!(served.len(), 2, "{served:?}");
    assert!(!served.contains(&spare), "a fresh CLI served it, not the dead spare");
    assert!(reaped_within(spare).await, "the dead spare {spare} was reaped");
    fake.settled(1, 4).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spare_that_dies_at_its_turn_is_replaced_by_the_calls_own_cli() {
    let scratch = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let die = scratch.path().join("die");
    let path = die.display().to_string();
    let fake = fake(&["One!", "Cold!"], |c| c.with_env("FAKE_CLAUDE_DIE_FILE", path));
    assert!(fake.new_session().await.starts_with("One!"));
    fake.settled(1, 2).await;
    let first = fake.served();
    let spare = fake.spare().await;
    // Alive when handed out; it exits (code 1, nothing printed) once it reads the user turn.
    std::fs::write(&die, "").unwrap_or_else(|e| panic!("{e}"));

    assert!(
        fake.new_session().await.starts_with("Cold!"),
        "the call's own CLI served it, no error"
    );
    assert!(!die.exists(), "the spare read the turn and died");
    let served = fake.served();
    assert_eq!(served.len(), 3, "first, the spare, the call's own: {served:?}");
    assert!(served.contains(&spare), "the spare was handed the turn: {served:?}");
    // (Start order is not pid or spawn order: a spare starts beside the first session's CLI.)
    let own: Vec<i32> = served
        .into_iter()
        .filter(|pid| *pid != spare && !first.contains(pid))
        .collect();
    assert_eq!(own.len(), 1, "{own:?}");
    let types: Vec<Value> = fake.stdin(own[0]).iter().map(|m| m["type"].clone()).collect();
    assert_eq!(
        types,
        ["control_request", "user"],
        "the call's own CLI was initialized, then got the turn"
    );
    assert!(reaped_within(spare).await, "the dead spare {spare} was reaped");
    fake.settled(1, 4).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unused_spare_is_replaced_after_its_max_age() {
    let fake = fake(&["One!"], |c| c.with_spare_max_age(Some(Duration::from_millis(800))));
    assert!(fake.new_session().await.starts_with("One!"));
    fake.settled(1, 2).await;
    let first = fake.spare().await;
    assert!(reaped_within(first).await, "the aged spare {first} was stopped");
    fake.settled(1, 3).await;
    let fresh = fake.spare().await;
    assert_ne!(fresh, first);
    let stdin = fake.stdin(fresh);
    assert_eq!(stdin.len(), 1, "a fresh spare, initialized only: {stdin:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_provider_stops_and_reaps_every_spare() {
    let fake = fake(&["One!"], |c| c.with_spares(2));
    assert!(fake.new_session().await.starts_with("One!"));
    fake.settled(2, 3).await;
    let pids = fake.starts();
    let Fake { state, provider } = fake;
    drop(provider);
    for pid in pids {
        assert!(reaped_within(pid).await, "CLI {pid} outlived its provider");
    }
    drop(state);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_provider_while_a_spare_starts_leaves_no_process() {
    let slow = tempfile::NamedTempFile::new().unwrap_or_else(|e| panic!("{e}"));
    let delay = slow.path().display().to_string();
    let fake = fake(&["One!", "Two!"], |c| c.with_env("FAKE_CLAUDE_INIT_DELAY_FILE", delay));
    assert!(fake.new_session().await.starts_with("One!"));
    fake.settled(1, 2).await;
    // The spare serves the next turn; its replacement answers `initialize` only after 2 s.
    std::fs::write(slow.path(), "2").unwrap_or_else(|e| panic!("{e}"));
    assert!(fake.new_session().await.starts_with("Two!"));
    let deadline = Instant::now() + WITHIN;
    while fake.starts().len() < 3 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let starting = fake.spare().await;
    assert_eq!(fake.provider.spare_processes(), 0, "the replacement is still starting");
    let pids = fake.starts();
    assert_eq!(pids.len(), 3);
    let Fake { state, provider } = fake;
    drop(provider);
    assert!(
        reaped_within(starting).await,
        "the starting spare {starting} outlived its provider"
    );
    for pid in pids {
        assert!(reaped_within(pid).await, "CLI {pid} outlived its provider");
    }
    // Nothing started after the drop either.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = std::fs::read_dir(state.path())
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with("argv-"))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(after, 3, "no spare started after the provider was dropped");
}
