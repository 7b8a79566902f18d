//! The real Claude Code CLI against the Anthropic mock: sessions, approvals, cancel by pid,
//! failures, host tools over HTTP. Trials of the `conformance` binary: without the CLI they show
//! as ignored with the reason, and fail when CI=true.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use patchbay_claude_agent::{ClaudeAgentConfig, ClaudeAgentProvider, HostTools};
use patchbay_conformance::mock::anthropic::AnthropicWire;
use patchbay_conformance::mock::{MockServer, Serve};
use patchbay_conformance::{Recording, text_of};
use patchbay_core::{
    ErrorKind, Event, ExecutedBy, FnTool, Message, Provider, ProviderError, RequestContext, Signal, ToolContext,
    ToolResult, ToolSet, async_trait, context::Approval, context::ApprovalHandler, context::ApprovalRequest,
    context::Session, tool::ToolStatus,
};
use patchbay_scripted::{End, Part, Response, Turn};
use serde_json::{Value, json};

use crate::support;

/// The real CLI against the Anthropic mock serving `turns`, with a temporary home (shared by
/// the real trials of hooks and pauses).
pub(crate) struct Real {
    pub(crate) server: MockServer,
    pub(crate) home: tempfile::TempDir,
    pub(crate) config: ClaudeAgentConfig,
}

pub(crate) async fn real(turns: Vec<Serve>) -> Real {
    let cli = support::real_cli().path().to_path_buf();
    let server = MockServer::builder(AnthropicWire)
        .serve(turns)
        .start()
        .await
        .unwrap_or_else(|e| panic!("mock: {e}"));
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let config = support::offline(&cli, &server.url(), home.path());
    Real { server, home, config }
}

/// A turn that answers `text`.
pub(crate) fn text(text: &str) -> Serve {
    Serve::Turn(Turn::Respond(Response::new(vec![Part::text(text)]).with_usage(10, 5)))
}

/// A turn that calls tool `name`.
pub(crate) fn tool(id: &str, name: &str, input: Value) -> Serve {
    Serve::Turn(Turn::Respond(
        Response::new(vec![Part::tool_call(id, name, input)])
            .with_end(End::Finish {
                reason: patchbay_core::FinishReason::ToolUse,
            })
            .with_usage(10, 5),
    ))
}

/// One call with model `claude-test`, collected.
async fn collect(
    provider: &dyn Provider,
    messages: &[Message],
    tools: &ToolSet,
    context: Option<&RequestContext>,
) -> (Vec<Event>, Option<ProviderError>) {
    let Recording { events, error } =
        Recording::call(provider, messages, tools, "claude-test", &Signal::new(), context).await;
    (events, error)
}

fn session_of(events: &[Event]) -> Option<String> {
    events.iter().find_map(|e| match e {
        Event::Started { session_id, .. } => session_id.clone(),
        _ => None,
    })
}

fn request_text(body: &Value) -> String {
    body["messages"].to_string()
}

pub(crate) async fn resume_keeps_history_and_fork_gets_a_new_id() {
    let real = real(vec![
        text("First answer."),
        text("Second answer."),
        text("Forked answer."),
    ])
    .await;
    let provider = ClaudeAgentProvider::new(real.config.clone()).unwrap_or_else(|e| panic!("{e}"));
    let (events, error) = collect(&provider, &[Message::user("first question")], &ToolSet::new(), None).await;
    assert!(error.is_none(), "{error:?}");
    let session = session_of(&events).unwrap_or_else(|| panic!("no session id"));

    let resume = RequestContext::new().with_session(Session::Resume { id: session.clone() });
    let (events, error) = collect(
        &provider,
        &[Message::user("second question")],
        &ToolSet::new(),
        Some(&resume),
    )
    .await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(
        session_of(&events).as_deref(),
        Some(session.as_str()),
        "resume keeps the id"
    );

    let fork = RequestContext::new().with_session(Session::Fork { from: session.clone() });
    let (events, error) = collect(
        &provider,
        &[Message::user("third question")],
        &ToolSet::new(),
        Some(&fork),
    )
    .await;
    assert!(error.is_none(), "{error:?}");
    let forked = session_of(&events).unwrap_or_default();
    assert!(!forked.is_empty() && forked != session, "fork gets a new id");

    let requests = real.server.requests();
    let posts: Vec<&Value> = requests
        .iter()
        .filter(|r| r.method == "POST")
        .map(|r| &r.body)
        .collect();
    assert_eq!(posts.len(), 3);
    let second = request_text(posts[1]);
    assert!(
        second.contains("first question") && second.contains("First answer."),
        "resume resent history"
    );
    let third = request_text(posts[2]);
    assert!(
        third.contains("second question") && third.contains("Second answer."),
        "fork copied history"
    );
}

struct Decide(Approval);

#[async_trait]
impl ApprovalHandler for Decide {
    async fn approve(&self, _request: &ApprovalRequest, _cx: &ToolContext) -> Approval {
        self.0.clone()
    }
}

async fn approval_run(approval: Approval) -> (Vec<Event>, Option<ProviderError>, PathBuf, Real, tempfile::TempDir) {
    let workdir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let file = workdir.path().join("note.txt");
    let input = json!({ "file_path": file.display().to_string(), "content": "hi" });
    let real = real(vec![tool("toolu_w1", "Write", input), text("Done.")]).await;
    let provider = ClaudeAgentProvider::new(real.config.clone()).unwrap_or_else(|e| panic!("{e}"));
    let context = RequestContext::new()
        .with_working_dir(workdir.path())
        .with_approval(Arc::new(Decide(approval)));
    let (events, error) = collect(
        &provider,
        &[Message::user("write a note")],
        &ToolSet::new(),
        Some(&context),
    )
    .await;
    (events, error, file, real, workdir)
}

fn tool_result(events: &[Event], name: &str) -> Option<ToolResult> {
    events.iter().find_map(|e| match e {
        Event::ToolResult { name: n, result, .. } if n == name => Some(result.clone()),
        _ => None,
    })
}

pub(crate) async fn approval_allow_runs_the_cli_tool() {
    let (events, error, file, _real, _dir) = approval_run(Approval::Allow).await;
    assert!(error.is_none(), "{error:?}");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ToolCall { name, executed_by: ExecutedBy::Provider, .. } if name == "Write"))
    );
    assert_eq!(
        tool_result(&events, "Write").map(|r| r.status),
        Some(ToolStatus::Completed)
    );
    assert_eq!(std::fs::read_to_string(&file).ok().as_deref(), Some("hi"));
}

pub(crate) async fn approval_deny_reaches_the_model_with_its_message() {
    let deny = Approval::Deny {
        message: "writing notes is not allowed".into(),
    };
    let (events, error, file, real, _dir) = approval_run(deny).await;
    assert!(error.is_none(), "{error:?}");
    assert!(!file.exists(), "the tool did not run");
    assert_eq!(tool_result(&events, "Write").map(|r| r.is_error()), Some(true));
    let requests = real.server.requests();
    let last = requests
        .iter()
        .rev()
        .find(|r| r.method == "POST")
        .map(|r| request_text(&r.body))
        .unwrap_or_default();
    assert!(
        last.contains("writing notes is not allowed"),
        "the deny message went back to the model"
    );
}

/// Pids of processes whose environment names this CLI home (our CLI and anything it started).
fn pids_with_home(home: &Path) -> Vec<i32> {
    let needle = format!("CLAUDE_CONFIG_DIR={}", home.display());
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        if let Ok(environ) = std::fs::read(entry.path().join("environ"))
            && environ.split(|b| *b == 0).any(|kv| kv == needle.as_bytes())
        {
            pids.push(pid);
        }
    }
    pids
}

/// The CLIs among [`pids_with_home`]: those whose parent is not itself one of them (a CLI may
/// start short-lived children of its own, which inherit its environment).
fn clis_with_home(home: &Path) -> Vec<i32> {
    let all = pids_with_home(home);
    let parent = |pid: i32| -> Option<i32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // `pid (comm) state ppid ...`: comm may hold spaces, so read after its closing `)`.
        stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
    };
    all.iter()
        .copied()
        .filter(|pid| parent(*pid).is_none_or(|ppid| !all.contains(&ppid)))
        .collect()
}

/// How long until no process names this CLI home, checked every 5 ms up to `limit`.
async fn time_to_gone(home: &Path, since: Instant, limit: Duration) -> Option<Duration> {
    loop {
        if pids_with_home(home).is_empty() {
            return Some(since.elapsed());
        }
        if since.elapsed() > limit {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A run stalled mid-turn (the mock sends a first text and then nothing), its CLI found by its
/// environment.
async fn stalled(
    real: &Real,
    provider: &ClaudeAgentProvider,
    signal: &Signal,
) -> (patchbay_core::EventStream, Vec<i32>) {
    let mut stream = provider
        .create_response(&[Message::user("think")], &ToolSet::new(), "claude-test", signal, None)
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
    let pids = pids_with_home(real.home.path());
    assert!(!pids.is_empty(), "the CLI was found by its environment");
    (stream, pids)
}

fn stall() -> Serve {
    Serve::Turn(Turn::Respond(
        Response::new(vec![Part::text("Let me think about that")]).with_end(End::Stall),
    ))
}

/// Within a second, with the default `stop_grace` of 2 s: the CLI ignores stdin EOF mid-turn,
/// so only the interrupt (or SIGTERM after `cancel_grace`) ends it in time.
const GONE_WITHIN: Duration = Duration::from_secs(1);

pub(crate) async fn cancel_mid_turn_ends_promptly_and_leaves_no_process() {
    let real = real(vec![stall()]).await;
    let provider = ClaudeAgentProvider::new(real.config.clone()).unwrap_or_else(|e| panic!("{e}"));
    let signal = Signal::new();
    let (mut stream, pids) = stalled(&real, &provider, &signal).await;
    let cancelled_at = Instant::now();
    signal.cancel();
    let error = match stream.next().await {
        Some(Err(error)) => error,
        other => panic!("expected the cancel error, got {other:?}"),
    };
    assert_eq!(error.kind(), ErrorKind::Cancelled);
    assert!(
        cancelled_at.elapsed() < Duration::from_millis(200),
        "the stream ended promptly"
    );
    let gone = time_to_gone(real.home.path(), cancelled_at, GONE_WITHIN).await;
    eprintln!("cancelled real CLI gone after {gone:?}");
    assert!(
        gone.is_some(),
        "{:?} of {pids:?} still there {GONE_WITHIN:?} after the cancel",
        pids_with_home(real.home.path())
    );
}

pub(crate) async fn dropping_the_stream_mid_turn_leaves_no_process() {
    let real = real(vec![stall()]).await;
    let provider = ClaudeAgentProvider::new(real.config.clone()).unwrap_or_else(|e| panic!("{e}"));
    let (stream, pids) = stalled(&real, &provider, &Signal::new()).await;
    let dropped_at = Instant::now();
    drop(stream);
    let gone = time_to_gone(real.home.path(), dropped_at, GONE_WITHIN).await;
    eprintln!("dropped real CLI gone after {gone:?}");
    assert!(
        gone.is_some(),
        "{:?} of {pids:?} still there {GONE_WITHIN:?} after the drop",
        pids_with_home(real.home.path())
    );
}

pub(crate) async fn a_dead_mock_is_a_transport_error_and_a_broken_one_a_typed_error() {
    let real = real(Vec::new()).await;
    real.server.shutdown();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let provider = ClaudeAgentProvider::new(real.config.clone()).unwrap_or_else(|e| panic!("{e}"));
    let (events, error) = collect(&provider, &[Message::user("hi")], &ToolSet::new(), None).await;
    assert!(events.is_empty(), "{events:?}");
    let error = error.unwrap_or_else(|| panic!("no error"));
    assert_eq!(error.kind(), ErrorKind::Transport, "{error}");

    let garbage = Serve::Raw {
        status: 200,
        headers: vec![("content-type".into(), "text/event-stream".into())],
        body: "event: message_start\ndata: {not json\n\n".into(),
        end: patchbay_conformance::mock::RawEnd::Reset,
    };
    let broken = self::real(vec![garbage]).await;
    let provider = ClaudeAgentProvider::new(broken.config.clone()).unwrap_or_else(|e| panic!("{e}"));
    let (_, error) = collect(&provider, &[Message::user("hi")], &ToolSet::new(), None).await;
    let error = error.unwrap_or_else(|| panic!("no error"));
    assert!(
        matches!(
            error.kind(),
            ErrorKind::Server | ErrorKind::Transport | ErrorKind::Protocol
        ),
        "{error}"
    );
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct City {
    city: String,
}

pub(crate) async fn host_tools_over_http_get_the_context_and_keep_metadata() {
    let real = real(vec![
        tool("toolu_h1", "mcp__host__get_weather", json!({"city": "Oslo"})),
        text("Cold in Oslo."),
    ])
    .await;
    let tools = ToolSet::new().with(FnTool::new(
        "get_weather",
        "Weather.",
        |input: City, cx: ToolContext| async move {
            ToolResult::text(format!("Cold in {}.", input.city))
                .with_metadata(json!({ "project": cx.metadata.get("project_id"), "documents": ["met.no"] }))
        },
    ));
    let provider = ClaudeAgentProvider::new(real.config.clone().with_host_tools(HostTools::Http))
        .unwrap_or_else(|e| panic!("{e}"));
    let context = RequestContext::new().with_metadata("project_id", "p7");
    let (events, error) = collect(&provider, &[Message::user("weather?")], &tools, Some(&context)).await;
    assert!(error.is_none(), "{error:?}");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ToolCall { name, executed_by: ExecutedBy::Host, .. } if name == "get_weather"))
    );
    let result = tool_result(&events, "get_weather").unwrap_or_else(|| panic!("no result"));
    assert_eq!(
        result.metadata,
        Some(json!({ "project": "p7", "documents": ["met.no"] }))
    );
    assert_eq!(result.text_content(), "Cold in Oslo.");
}

pub(crate) async fn a_kept_alive_cli_serves_the_next_turn_of_its_session() {
    let real = real(vec![text("One."), text("Two."), text("Three.")]).await;
    let provider = ClaudeAgentProvider::new(real.config.clone().with_keep_alive(Duration::from_secs(30)))
        .unwrap_or_else(|e| panic!("{e}"));
    let (events, error) = collect(&provider, &[Message::user("first")], &ToolSet::new(), None).await;
    assert!(error.is_none(), "{error:?}");
    let session = session_of(&events).unwrap_or_else(|| panic!("no session"));
    assert_eq!(provider.idle_processes(), 1);
    let pids = clis_with_home(real.home.path());
    for (i, prompt) in ["second", "third"].into_iter().enumerate() {
        let resume = RequestContext::new().with_session(Session::Resume { id: session.clone() });
        let (events, error) = collect(&provider, &[Message::user(prompt)], &ToolSet::new(), Some(&resume)).await;
        assert!(error.is_none(), "turn {i}: {error:?}");
        assert_eq!(session_of(&events).as_deref(), Some(session.as_str()));
        assert_eq!(text_of(&events), ["Two.", "Three."][i]);
    }
    assert_eq!(
        clis_with_home(real.home.path()),
        pids,
        "the same process served every turn"
    );
    let last = real
        .server
        .requests()
        .into_iter()
        .rev()
        .find(|r| r.method == "POST")
        .map(|r| request_text(&r.body));
    assert!(last.unwrap_or_default().contains("first"), "history kept");
    drop(provider);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pids_with_home(real.home.path()).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        pids_with_home(real.home.path()).is_empty(),
        "dropping the provider stops idle CLIs"
    );
}

/// The real CLI before its first user message makes no API call and writes no session, so a
/// spare started ahead of demand serves a new session of its own: its id, the call's system
/// prompt, and the spare gone with the provider.
pub(crate) async fn a_spare_serves_the_next_new_session_and_goes_with_the_provider() {
    let real = real(vec![text("One."), text("Two.")]).await;
    let provider = ClaudeAgentProvider::new(real.config.clone().with_spares(1)).unwrap_or_else(|e| panic!("{e}"));
    let context = RequestContext::new().with_system("Answer in two words.");
    let (events, error) = collect(
        &provider,
        &[Message::user("zebra-question-one")],
        &ToolSet::new(),
        Some(&context),
    )
    .await;
    assert!(error.is_none(), "{error:?}");
    let first = session_of(&events).unwrap_or_else(|| panic!("no session"));
    let deadline = Instant::now() + Duration::from_secs(30);
    while provider.spare_processes() != 1 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        provider.spare_processes(),
        1,
        "a spare started and answered `initialize`"
    );
    let posts = |real: &Real| real.server.requests().iter().filter(|r| r.method == "POST").count();
    assert_eq!(posts(&real), 1, "the spare made no API call");
    let sessions = real.home.path().join("projects");
    let files = |dir: &Path| {
        walk(dir)
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .count()
    };
    assert_eq!(files(&sessions), 1, "the spare wrote no session");

    let stream = provider
        .create_response(
            &[Message::user("second")],
            &ToolSet::new(),
            "claude-test",
            &Signal::new(),
            Some(&context),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(provider.spare_processes(), 0, "the new session took the spare");
    let Recording { events, error } = Recording::collect(stream).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text_of(&events), "Two.");
    let second = session_of(&events).unwrap_or_default();
    assert!(!second.is_empty() && second != first, "a session of its own");
    assert_eq!(files(&sessions), 2, "the spare's session was written at its first turn");
    let last = real.server.requests().into_iter().rev().find(|r| r.method == "POST");
    let body = last.map(|r| r.body).unwrap_or_default();
    assert!(
        body["system"].to_string().contains("Answer in two words."),
        "the call's system prompt"
    );
    assert!(
        !request_text(&body).contains("zebra-question-one"),
        "no history of the other session: {}",
        request_text(&body)
    );

    let deadline = Instant::now() + Duration::from_secs(30);
    while provider.spare_processes() != 1 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(provider.spare_processes(), 1, "the taken spare was replaced");
    assert!(!pids_with_home(real.home.path()).is_empty());
    drop(provider);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pids_with_home(real.home.path()).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        pids_with_home(real.home.path()),
        Vec::<i32>::new(),
        "no spare outlived the provider"
    );
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
