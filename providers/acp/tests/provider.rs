//! The provider against the scripted fake agent: answers, host tools over MCP with the request
//! context, permissions, file requests, sessions, cancel and drop, and every way an agent fails.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use patchbay_acp::{AcpProvider, FileAccess};
use patchbay_core::context::{Approval, ApprovalHandler, ApprovalRequest, Session};
use patchbay_core::tool::ToolStatus;
use patchbay_core::{
    ErrorKind, Event, ExecutedBy, FinishReason, FnTool, Message, Provider, Signal, ToolContext, ToolResult, ToolSet,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::support::{Fake, call, none_left};

fn text(t: &str) -> Value {
    json!({ "update": { "sessionUpdate": "agent_message_chunk", "content": { "type": "text", "text": t } } })
}

fn end(reason: &str) -> Value {
    json!({ "end": { "stop_reason": reason, "usage": { "inputTokens": 12, "outputTokens": 3, "totalTokens": 15 } } })
}

#[derive(Deserialize, schemars::JsonSchema)]
struct CityInput {
    /// The city.
    city: String,
}

/// `get_weather`, answering with the `project_id` of the call's context.
fn weather() -> ToolSet {
    ToolSet::new().with(FnTool::new(
        "get_weather",
        "Current weather for a city.",
        |input: CityInput, cx: ToolContext| async move {
            let project = cx.metadata.get("project_id").cloned().unwrap_or_default();
            ToolResult::text(format!("Sunny in {} (project {project}).", input.city))
        },
    ))
}

#[tokio::test]
async fn a_text_answer_streams_with_its_session_usage_and_finish() {
    let fake = Fake::new(&json!({ "prompts": [[text("Hello "), text("there."), end("end_turn")]] }));
    let provider = fake.provider();
    let run = call(
        &*provider,
        &[Message::user("Hi")],
        &ToolSet::new(),
        &fake.context(),
        &Signal::new(),
    )
    .await;
    assert!(run.error.is_none(), "{:?}", run.error);
    assert_eq!(run.text(), "Hello there.");
    assert_eq!(run.session().as_deref(), Some("sess_1"));
    let Some(Event::Finish { reason, usage, .. }) = run.events.last() else {
        panic!("{:?}", run.events)
    };
    assert_eq!(*reason, FinishReason::Stop);
    assert_eq!((usage.input, usage.output), (Some(12), Some(3)));
    patchbay_core::validate::validate(run.events.iter().map(Ok)).unwrap_or_else(|v| panic!("{v:?}"));
    let prompt = &fake.received("session/prompt")[0]["params"]["prompt"];
    assert_eq!(prompt, &json!([{ "type": "text", "text": "Hi" }]));
    let new = &fake.received("session/new")[0]["params"];
    assert_eq!(new["cwd"], json!(fake.work()));
    assert!(
        none_left(fake.dir.path()).await.is_empty(),
        "the agent outlived its turn"
    );
}

#[tokio::test]
async fn a_host_tool_runs_over_mcp_with_the_request_context() {
    let fake = Fake::new(&json!({ "prompts": [[
        text("Let me look. "),
        { "call_tool": { "id": "c1", "server": "host", "name": "get_weather", "input": { "city": "Paris" } } },
        text("It is sunny."),
        end("end_turn"),
    ]] }));
    let provider = fake.provider();
    let context = fake.context().with_metadata("project_id", "p-42");
    let run = call(
        &*provider,
        &[Message::user("Weather?")],
        &weather(),
        &context,
        &Signal::new(),
    )
    .await;
    assert!(run.error.is_none(), "{:?}", run.error);
    let call = run.events.iter().find_map(|e| match e {
        Event::ToolCall {
            name,
            input,
            executed_by,
            ..
        } => Some((name.clone(), input.clone(), *executed_by)),
        _ => None,
    });
    assert_eq!(
        call,
        Some(("get_weather".into(), json!({ "city": "Paris" }), ExecutedBy::Host))
    );
    let result = run.events.iter().find_map(|e| match e {
        Event::ToolResult { result, .. } => Some(result.clone()),
        _ => None,
    });
    assert_eq!(result, Some(ToolResult::text("Sunny in Paris (project p-42).")));
    assert!(
        run.events
            .iter()
            .any(|e| matches!(e, Event::StepFinished { step: 0, .. }))
    );
    patchbay_core::validate::validate(run.events.iter().map(Ok)).unwrap_or_else(|v| panic!("{v:?}"));
    let servers = &fake.received("session/new")[0]["params"]["mcpServers"];
    assert_eq!(servers[0]["name"], "host");
    assert_eq!(servers[0]["type"], "http");
    assert!(
        servers[0]["url"]
            .as_str()
            .is_some_and(|url| url.starts_with("http://127.0.0.1:")),
        "{servers}"
    );
}

struct Recorded {
    asked: Mutex<Vec<ApprovalRequest>>,
    allow: bool,
}

#[async_trait]
impl ApprovalHandler for Recorded {
    async fn approve(&self, request: &ApprovalRequest, _cx: &ToolContext) -> Approval {
        if let Ok(mut asked) = self.asked.lock() {
            asked.push(request.clone());
        }
        if self.allow {
            Approval::Allow
        } else {
            Approval::Deny { message: "no".into() }
        }
    }
}

fn permission_script() -> Value {
    json!({ "prompts": [[
        { "update": { "sessionUpdate": "tool_call", "toolCallId": "c1", "title": "get_weather", "kind": "fetch",
                      "status": "pending", "rawInput": { "city": "Oslo" } } },
        { "permission": { "tool_call_id": "c1", "options": [
            { "optionId": "yes", "name": "Allow", "kind": "allow_once" },
            { "optionId": "no", "name": "Reject", "kind": "reject_once" } ] } },
        { "call_tool": { "id": "c1", "server": "host", "name": "get_weather", "input": { "city": "Oslo" } } },
        end("end_turn"),
    ]] })
}

#[tokio::test]
async fn a_permission_request_goes_to_the_approval_handler_once() {
    for allow in [true, false] {
        let fake = Fake::new(&permission_script());
        let handler = Arc::new(Recorded {
            asked: Mutex::default(),
            allow,
        });
        let context = fake.context().with_approval(handler.clone());
        let run = call(
            &*fake.provider(),
            &[Message::user("Oslo?")],
            &weather(),
            &context,
            &Signal::new(),
        )
        .await;
        assert!(run.error.is_none(), "{:?}", run.error);
        let asked = handler.asked.lock().map(|a| a.clone()).unwrap_or_default();
        assert_eq!(asked.len(), 1);
        assert_eq!(
            (asked[0].tool_use_id.as_str(), &asked[0].input),
            ("c1", &json!({ "city": "Oslo" }))
        );
        let answer = fake
            .log()
            .into_iter()
            .find(|m| m.get("result").is_some() || m["method"].is_null());
        let _ = answer;
        let result = run.events.iter().find_map(|e| match e {
            Event::ToolResult { result, .. } => Some(result.status),
            _ => None,
        });
        let expected = if allow {
            ToolStatus::Completed
        } else {
            ToolStatus::Failed
        };
        assert_eq!(result, Some(expected), "allow {allow}: {:?}", run.events);
        patchbay_core::validate::validate(run.events.iter().map(Ok)).unwrap_or_else(|v| panic!("{v:?}"));
    }
}

#[tokio::test]
async fn without_a_handler_permissions_are_rejected_unless_configured() {
    let fake = Fake::new(&permission_script());
    let run = call(
        &*fake.provider(),
        &[Message::user("Oslo?")],
        &weather(),
        &fake.context(),
        &Signal::new(),
    )
    .await;
    let status = run.events.iter().find_map(|e| match e {
        Event::ToolResult { result, .. } => Some(result.status),
        _ => None,
    });
    assert_eq!(status, Some(ToolStatus::Failed));
    let fake = Fake::new(&permission_script());
    let provider = AcpProvider::new(fake.config().with_unattended(patchbay_acp::Unattended::Allow))
        .unwrap_or_else(|e| panic!("{e}"));
    let run = call(
        &provider,
        &[Message::user("Oslo?")],
        &weather(),
        &fake.context(),
        &Signal::new(),
    )
    .await;
    let status = run.events.iter().find_map(|e| match e {
        Event::ToolResult { result, .. } => Some(result.status),
        _ => None,
    });
    assert_eq!(status, Some(ToolStatus::Completed));
}

#[tokio::test]
async fn file_requests_are_served_inside_the_working_directory_only() {
    let fake = Fake::new(&json!({ "prompts": [[
        { "write_file": { "path": "PLACEHOLDER/notes.txt", "content": "one\ntwo\n" } },
        { "read_file": { "path": "PLACEHOLDER/notes.txt", "line": 2 } },
        { "read_file": { "path": "/etc/hostname" } },
        { "write_file": { "path": "PLACEHOLDER/../escape.txt", "content": "x" } },
        end("end_turn"),
    ]] }));
    let script = std::fs::read_to_string(fake.dir.path().join("script.json")).unwrap_or_default();
    let work = fake.work().to_string_lossy().into_owned();
    std::fs::write(
        fake.dir.path().join("script.json"),
        script.replace("PLACEHOLDER", &work),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let run = call(
        &*fake.provider(),
        &[Message::user("Files")],
        &ToolSet::new(),
        &fake.context(),
        &Signal::new(),
    )
    .await;
    let text = run.text();
    assert!(text.starts_with("wroteread: two\n"), "{text}");
    assert!(text.contains("error -32602"), "{text}");
    assert!(!fake.dir.path().join("escape.txt").exists());
    assert_eq!(
        std::fs::read_to_string(fake.work().join("notes.txt")).ok().as_deref(),
        Some("one\ntwo\n")
    );
    let capabilities = &fake.received("initialize")[0]["params"]["clientCapabilities"];
    assert_eq!(
        capabilities["fs"],
        json!({ "readTextFile": true, "writeTextFile": true })
    );

    let fake = Fake::new(&json!({ "prompts": [[ { "read_file": { "path": "/etc/hostname" } }, end("end_turn") ]] }));
    let provider = AcpProvider::new(fake.config().with_file_access(FileAccess::Off)).unwrap_or_else(|e| panic!("{e}"));
    let run = call(
        &provider,
        &[Message::user("Files")],
        &ToolSet::new(),
        &fake.context(),
        &Signal::new(),
    )
    .await;
    assert!(run.text().contains("error -32601"), "{}", run.text());
}

#[tokio::test]
async fn cancel_mid_turn_sends_session_cancel_and_leaves_no_process() {
    let fake =
        Fake::new(&json!({ "prompts": [[ text("Thinking"), { "sleep_ms": 30000 }, text("never"), end("end_turn") ]] }));
    let provider = fake.provider();
    let signal = Signal::new();
    let mut stream = provider
        .create_response(
            &[Message::user("Go")],
            &ToolSet::new(),
            "m",
            &signal,
            Some(&fake.context()),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut error = None;
    while let Some(item) = tokio::time::timeout(Duration::from_secs(20), stream.next())
        .await
        .ok()
        .flatten()
    {
        match item {
            Ok(Event::TextDelta { .. }) => signal.cancel(),
            Ok(_) => {}
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    assert_eq!(error.map(|e| e.kind()), Some(ErrorKind::Cancelled));
    assert_eq!(fake.received("session/cancel").len(), 1);
    drop(stream);
    assert!(
        none_left(fake.dir.path()).await.is_empty(),
        "the agent outlived its cancel"
    );
}

#[tokio::test]
async fn dropping_the_stream_mid_turn_leaves_no_process() {
    let fake = Fake::new(&json!({ "prompts": [[ text("Working"), { "sleep_ms": 30000 }, end("end_turn") ]] }));
    let provider = fake.provider();
    let mut stream = provider
        .create_response(
            &[Message::user("Go")],
            &ToolSet::new(),
            "m",
            &Signal::new(),
            Some(&fake.context()),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    while let Some(Ok(event)) = stream.next().await {
        if matches!(event, Event::TextDelta { .. }) {
            break;
        }
    }
    assert!(
        !crate::support::running_with(fake.dir.path()).is_empty(),
        "the agent should be running"
    );
    drop(stream);
    assert!(
        none_left(fake.dir.path()).await.is_empty(),
        "the agent outlived its dropped stream"
    );
}

#[tokio::test]
async fn a_crashed_agent_is_a_process_error_with_its_stderr() {
    let fake = Fake::new(&json!({ "prompts": [[ text("Half"), { "exit": 3 } ]] }));
    let run = call(
        &*fake.provider(),
        &[Message::user("Go")],
        &ToolSet::new(),
        &fake.context(),
        &Signal::new(),
    )
    .await;
    let error = run.error.unwrap_or_else(|| panic!("no error: {:?}", run.events));
    assert_eq!(error.kind(), ErrorKind::Process, "{error}");
    assert!(error.to_string().contains("exit status: 3"), "{error}");
    assert_eq!(
        run.events
            .iter()
            .filter(|e| matches!(e, Event::TextDelta { .. }))
            .count(),
        1
    );
}

#[tokio::test]
async fn a_missing_agent_and_a_refusing_agent_are_typed_errors() {
    let provider = AcpProvider::new(patchbay_acp::AcpConfig::command(
        "/nonexistent/agent",
        Vec::<String>::new(),
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let run = call(
        &provider,
        &[Message::user("Hi")],
        &ToolSet::new(),
        &Default::default(),
        &Signal::new(),
    )
    .await;
    assert_eq!(run.error.map(|e| e.kind()), Some(ErrorKind::Config));

    let fake = Fake::new(&json!({ "prompts": [[ { "error": { "code": -32000, "message": "log in first" } } ]] }));
    let run = call(
        &*fake.provider(),
        &[Message::user("Hi")],
        &ToolSet::new(),
        &fake.context(),
        &Signal::new(),
    )
    .await;
    let error = run.error.unwrap_or_else(|| panic!("no error"));
    assert_eq!(error.kind(), ErrorKind::Auth, "{error}");
    assert!(error.to_string().contains("log in first"), "{error}");
}

#[tokio::test]
async fn a_huge_line_is_a_typed_error_not_a_buffer() {
    let fake = Fake::new(
        &json!({ "prompts": [[ text("x"), { "raw_repeat": { "byte": "a", "count": 3_000_000 } }, end("end_turn") ]] }),
    );
    let provider = AcpProvider::new(fake.config().with_max_line_bytes(1 << 20)).unwrap_or_else(|e| panic!("{e}"));
    let run = call(
        &provider,
        &[Message::user("Go")],
        &ToolSet::new(),
        &fake.context(),
        &Signal::new(),
    )
    .await;
    let error = run.error.unwrap_or_else(|| panic!("no error: {:?}", run.events));
    assert_eq!(error.kind(), ErrorKind::Protocol, "{error}");
    assert!(error.to_string().contains("exceeded the limit"), "{error}");
    assert!(none_left(fake.dir.path()).await.is_empty());
}

#[tokio::test]
async fn a_line_that_is_not_json_does_not_end_the_turn() {
    let fake = Fake::new(&json!({ "prompts": [[ text("a"), { "raw": "not json {" }, text("b"), end("end_turn") ]] }));
    let run = call(
        &*fake.provider(),
        &[Message::user("Go")],
        &ToolSet::new(),
        &fake.context(),
        &Signal::new(),
    )
    .await;
    assert!(run.error.is_none(), "{:?}", run.error);
    assert_eq!(run.text(), "ab");
}

#[tokio::test]
async fn a_new_session_gets_the_history_as_text_and_a_known_one_is_loaded() {
    let history = [
        Message::user("My name is Ada."),
        Message::assistant("Hello Ada."),
        Message::user("Who am I?"),
    ];
    let fake = Fake::new(&json!({ "load_session": true, "prompts": [[ end("end_turn") ], [ end("end_turn") ]] }));
    let provider = fake.provider();
    let run = call(&*provider, &history, &ToolSet::new(), &fake.context(), &Signal::new()).await;
    assert!(
        run.warnings().contains(&"history_flattened".to_owned()),
        "{:?}",
        run.warnings()
    );
    let prompt = fake.received("session/prompt")[0]["params"]["prompt"].clone();
    assert!(
        prompt[0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("User: My name is Ada.")),
        "{prompt}"
    );
    let session = run.session().unwrap_or_default();

    let context = fake.context().with_session(Session::Resume { id: session.clone() });
    let run = call(&*provider, &history, &ToolSet::new(), &context, &Signal::new()).await;
    assert!(run.error.is_none(), "{:?}", run.error);
    assert_eq!(run.session(), Some(session.clone()));
    let load = &fake.received("session/load")[0]["params"];
    assert_eq!(load["sessionId"], json!(session));
    let prompt = fake.received("session/prompt")[1]["params"]["prompt"].clone();
    assert_eq!(prompt, json!([{ "type": "text", "text": "Who am I?" }]));
}

#[tokio::test]
async fn a_kept_alive_agent_takes_its_sessions_next_turn() {
    let fake = Fake::new(&json!({ "prompts": [[ text("one"), end("end_turn") ], [ text("two"), end("end_turn") ]] }));
    let provider = AcpProvider::new(fake.config().with_keep_alive(Some(Duration::from_secs(30))))
        .unwrap_or_else(|e| panic!("{e}"));
    let run = call(
        &provider,
        &[Message::user("1")],
        &ToolSet::new(),
        &fake.context(),
        &Signal::new(),
    )
    .await;
    assert_eq!(provider.idle_processes(), 1);
    let context = fake.context().with_session(Session::Resume {
        id: run.session().unwrap_or_default(),
    });
    let run = call(
        &provider,
        &[Message::user("2")],
        &ToolSet::new(),
        &context,
        &Signal::new(),
    )
    .await;
    assert_eq!(run.text(), "two");
    assert_eq!(
        fake.received("initialize").len(),
        1,
        "the second turn started a new agent"
    );
    assert!(fake.received("session/load").is_empty());
    drop(provider);
    assert!(
        none_left(fake.dir.path()).await.is_empty(),
        "a dropped pool left its agent"
    );
}

/// Answers every permission request with `Approval::Pause`.
struct Pausing;

#[async_trait]
impl ApprovalHandler for Pausing {
    async fn approve(&self, _request: &ApprovalRequest, _cx: &ToolContext) -> Approval {
        Approval::Pause
    }
}

/// No hook at all: only its presence matters.
struct NoopHooks;

impl patchbay_core::hooks::Hooks for NoopHooks {}

#[tokio::test]
async fn a_pause_rejects_because_an_acp_permission_cannot_wait_for_a_later_call() {
    let fake = Fake::new(&permission_script());
    let context = fake.context().with_approval(Arc::new(Pausing));
    let run = call(
        &*fake.provider(),
        &[Message::user("Oslo?")],
        &weather(),
        &context,
        &Signal::new(),
    )
    .await;
    assert!(run.error.is_none(), "{:?}", run.error);
    let status = run.events.iter().find_map(|e| match e {
        Event::ToolResult { result, .. } => Some(result.status),
        _ => None,
    });
    assert_eq!(status, Some(ToolStatus::Failed), "rejected, not run: {:?}", run.events);
}

#[tokio::test]
async fn hooks_are_reported_as_unsupported() {
    let fake = Fake::new(&json!({ "prompts": [[text("Hi."), end("end_turn")]] }));
    let context = fake.context().with_hooks(Arc::new(NoopHooks));
    let run = call(
        &*fake.provider(),
        &[Message::user("Hi")],
        &ToolSet::new(),
        &context,
        &Signal::new(),
    )
    .await;
    assert!(run.error.is_none(), "{:?}", run.error);
    let warned = run.events.iter().any(|e| {
        matches!(e, Event::Started { warnings, .. }
            if warnings.iter().any(|w| w.code == patchbay_core::Warning::UNSUPPORTED_OPTION && w.message.contains("hooks")))
    });
    assert!(warned, "{:?}", run.events.first());
}
