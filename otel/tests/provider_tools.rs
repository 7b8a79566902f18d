//! Tools the provider runs itself (a server tool, an agent runtime's own tools) have an
//! `execute_tool` span under their model call, from their `ToolCall` to their `ToolResult`.

use std::path::Path;

use opentelemetry::trace::Status;
use opentelemetry_sdk::trace::SpanData;
use patchbay_claude_agent::{ClaudeAgentConfig, ClaudeAgentProvider};
use patchbay_conformance::Recording;
use patchbay_conformance::mock::anthropic::AnthropicWire;
use patchbay_conformance::mock::{MockServer, Serve};
use patchbay_core::{Event, ExecutedBy, Message, Signal, ToolSet};
use serde_json::Value;

use crate::support::{Memory, anthropic, attribute, names, run, serial, span};

/// A recorded Anthropic stream with one `web_search` server tool call and its result (one JSON
/// event per line), as SSE.
fn web_search_stream() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/fixtures/anthropic/ai/anthropic-web-search-tool.1.chunks.txt");
    let chunks = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut body = String::new();
    for line in chunks.lines().filter(|l| !l.trim().is_empty()) {
        let event: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        let kind = event["type"].as_str().unwrap_or_default();
        body.push_str(&format!("event: {kind}\ndata: {line}\n\n"));
    }
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_tool_has_an_execute_tool_span_under_its_model_call() {
    let _serial = serial().await;
    let server = MockServer::builder(AnthropicWire)
        .serve([Serve::sse(web_search_stream())])
        .start()
        .await
        .expect("mock starts");
    let memory = Memory::new();
    let text = memory
        .record(run(anthropic(server.url()), "claude-test"))
        .await
        .expect("the run succeeds");
    assert!(!text.is_empty());

    let spans = memory.finished_spans();
    let chat = span(&spans, "chat claude-test");
    let tools: Vec<_> = spans.iter().filter(|s| s.name.starts_with("execute_tool")).collect();
    assert_eq!(
        tools.len(),
        1,
        "one span, not one more from the agent run: {:?}",
        names(&spans)
    );
    let tool = tools[0];
    assert_eq!(tool.name, "execute_tool web_search");
    assert_eq!(
        tool.parent_span_id,
        chat.span_context.span_id(),
        "a child of its model call"
    );
    assert_eq!(
        attribute(tool, "gen_ai.tool.call.id").as_deref(),
        Some("srvtoolu_01Bj5uzzLcYG5hfueSLcDH8k")
    );
    assert_eq!(attribute(tool, "gen_ai.tool.type").as_deref(), Some("extension"));
    assert_eq!(attribute(tool, "patchbay.tool.status").as_deref(), Some("completed"));
    assert!(tool.start_time <= tool.end_time && tool.end_time <= chat.end_time);
    assert_eq!(attribute(tool, "gen_ai.tool.call.arguments"), None, "content is off");
}

/// claude-agent's fake CLI replaying a turn in which the CLI runs its own `Write` tool (call
/// `t1`), with the extra variables `env`; the turn's events, its error, and the spans.
async fn claude_cli_writes(env: &[(&str, &str)]) -> (Recording, Vec<SpanData>) {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../providers/claude-agent/tests");
    let state = tempfile::tempdir().expect("temp dir");
    let mut config = ClaudeAgentConfig::new()
        .with_cli_path(crate_dir.join("fake-claude"))
        .with_env(
            "FAKE_CLAUDE_TRANSCRIPT",
            crate_dir
                .join("transcripts/approval_synthetic.jsonl")
                .display()
                .to_string(),
        )
        .with_env("FAKE_CLAUDE_STATE", state.path().display().to_string());
    for (key, value) in env {
        config = config.with_env(*key, *value);
    }
    let provider = ClaudeAgentProvider::new(config).expect("config");
    let memory = Memory::new();
    let recording = memory
        .record(Recording::call(
            &provider,
            &[Message::user("write a.txt")],
            &ToolSet::new(),
            "m",
            &Signal::new(),
            None,
        ))
        .await;
    assert!(recording.events.iter().any(|e| matches!(
        e,
        Event::ToolCall { name, executed_by: ExecutedBy::Provider, .. } if name == "Write"
    )));
    (recording, memory.finished_spans())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_the_claude_cli_runs_itself_has_an_execute_tool_span_under_its_model_call() {
    let _serial = serial().await;
    let (recording, spans) = claude_cli_writes(&[]).await;
    assert!(recording.error.is_none(), "{:?}", recording.error);
    let chat = span(&spans, "chat m");
    let tool = span(&spans, "execute_tool Write");
    assert_eq!(tool.parent_span_id, chat.span_context.span_id(), "{:?}", names(&spans));
    assert_eq!(attribute(tool, "gen_ai.tool.call.id").as_deref(), Some("t1"));
    assert_eq!(attribute(tool, "gen_ai.tool.type").as_deref(), Some("extension"));
    assert_eq!(attribute(tool, "patchbay.tool.status").as_deref(), Some("completed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_run_tool_still_open_when_the_stream_fails_is_aborted() {
    let _serial = serial().await;
    // The CLI crashes after its permission request, before the tool's result.
    let (recording, spans) = claude_cli_writes(&[("FAKE_CLAUDE_EXIT_AFTER", "9")]).await;
    assert!(recording.error.is_some(), "the run fails");
    let tool = span(&spans, "execute_tool Write");
    assert_eq!(attribute(tool, "patchbay.tool.status").as_deref(), Some("aborted"));
    assert_eq!(attribute(tool, "error.type").as_deref(), Some("aborted"));
    assert!(matches!(tool.status, Status::Error { .. }), "{:?}", tool.status);
}
