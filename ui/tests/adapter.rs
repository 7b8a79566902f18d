//! One test per row of the mapping table (README.md, "Events to chunks"), named after the row;
//! each snapshots the chunks written (`tests/snapshots/adapter`).

use patchbay_core::context::ApprovalRequest;
use patchbay_core::event::McpFailure;
use patchbay_core::source::{Location, Source, SourceTarget};
use patchbay_core::summary::DocumentRef;
use patchbay_core::{
    ErrorKind, Event, ExecutedBy, FinishReason, Message, Metrics, ProviderError, ToolResult, Usage, Warning,
};
use patchbay_ui::{ChatRequest, UiChunk, UiFinishReason, UiStream};
use serde_json::json;

use crate::settings;

fn started() -> Event {
    Event::Started {
        response_id: Some("resp_1".into()),
        model: "model-1".into(),
        session_id: None,
        warnings: vec![],
    }
}

fn text(index: usize, text: &str) -> Event {
    Event::TextDelta {
        index,
        text: text.into(),
    }
}

fn reasoning(index: usize, text: &str) -> Event {
    Event::ReasoningDelta {
        index,
        text: text.into(),
    }
}

fn call(id: &str, name: &str, executed_by: ExecutedBy) -> Event {
    Event::ToolCall {
        id: id.into(),
        name: name.into(),
        input: json!({ "city": "Paris" }),
        executed_by,
        signature: None,
    }
}

fn result(id: &str, result: ToolResult) -> Event {
    Event::ToolResult {
        id: id.into(),
        name: "get_weather".into(),
        result,
    }
}

fn finish(reason: FinishReason) -> Event {
    Event::Finish {
        reason,
        usage: Usage {
            input: Some(10),
            output: Some(5),
            ..Usage::default()
        },
        metrics: Metrics {
            total_ms: 7,
            events: 3,
            ..Metrics::default()
        },
    }
}

/// The chunks of these events, after `Started` (left out of the snapshot but where the row is
/// `Started` itself).
fn after_start(events: &[Event]) -> Vec<UiChunk> {
    let mut ui = UiStream::new().with_message_id("msg-1");
    ui.push(&started());
    events.iter().flat_map(|event| ui.push(event)).collect()
}

fn snapshot(name: &str, chunks: &[UiChunk]) {
    settings("adapter").bind(|| insta::assert_json_snapshot!(name, chunks));
}

#[test]
fn started_writes_start_with_the_message_id_and_metadata_then_start_step() {
    let mut ui = UiStream::new().with_message_id("msg-1");
    let chunks = ui.push(&Event::Started {
        response_id: Some("resp_1".into()),
        model: "model-1".into(),
        session_id: Some("session-1".into()),
        warnings: vec![Warning::new(Warning::UNSUPPORTED_OPTION, "top_k is ignored")],
    });
    snapshot("started", &chunks);
}

#[test]
fn any_event_before_started_writes_start_first() {
    let mut ui = UiStream::new().with_id_generator(|| "generated".into());
    let chunks = ui.push(&text(0, "Hi"));
    assert!(matches!(&chunks[0], UiChunk::Start { message_id: Some(id), message_metadata: None } if id == "generated"));
    assert_eq!(chunks[1], UiChunk::StartStep);
}

#[test]
fn mcp_connected_writes_a_transient_data_mcp_part() {
    let chunks = after_start(&[Event::McpConnected {
        servers: vec!["docs".into()],
        failed: vec![McpFailure {
            name: "crm".into(),
            error: "connection refused".into(),
        }],
    }]);
    snapshot("mcp_connected", &chunks);
}

#[test]
fn text_delta_opens_a_text_part_and_another_block_closes_it() {
    let chunks = after_start(&[text(0, "Hello"), text(0, " there."), text(1, "Second block.")]);
    snapshot("text_delta", &chunks);
}

#[test]
fn reasoning_delta_opens_a_reasoning_part_closed_by_the_text_that_follows() {
    let chunks = after_start(&[reasoning(0, "Think"), reasoning(0, "ing."), text(1, "Answer.")]);
    snapshot("reasoning_delta", &chunks);
}

#[test]
fn reasoning_signature_goes_to_its_parts_provider_metadata() {
    let signature = |index: usize, signature: &str| Event::ReasoningSignature {
        index,
        signature: signature.into(),
    };
    // On its reasoning part; on a text part of its block (Gemini); alone (an empty reasoning part).
    let chunks = after_start(&[
        reasoning(0, "Hmm."),
        signature(0, "sig-reasoning"),
        text(1, "Signed text."),
        signature(1, "sig-text"),
        signature(2, "sig-alone"),
        text(3, "Done."),
    ]);
    snapshot("reasoning_signature", &chunks);
}

#[test]
fn redacted_reasoning_writes_an_empty_reasoning_part_with_its_data() {
    let chunks = after_start(&[Event::RedactedReasoning {
        index: 0,
        data: "opaque-bytes".into(),
    }]);
    snapshot("redacted_reasoning", &chunks);
}

#[test]
fn tool_call_start_delta_and_call_write_tool_input_start_delta_and_available() {
    let chunks = after_start(&[
        text(0, "Checking."),
        Event::ToolCallStart {
            id: "call_1".into(),
            name: "get_weather".into(),
        },
        Event::ToolCallDelta {
            id: "call_1".into(),
            partial_json: "{\"city\": \"Par".into(),
        },
        Event::ToolCallDelta {
            id: "call_1".into(),
            partial_json: "is\"}".into(),
        },
        call("call_1", "get_weather", ExecutedBy::Host),
    ]);
    snapshot("tool_call_streamed", &chunks);
}

#[test]
fn tool_call_without_a_start_writes_input_start_and_available() {
    let chunks = after_start(&[call("call_1", "get_weather", ExecutedBy::Host)]);
    snapshot("tool_call_without_start", &chunks);
}

#[test]
fn provider_executed_call_and_result_are_marked_provider_executed() {
    let mut signed = call("srvtoolu_1", "web_search", ExecutedBy::Provider);
    if let Event::ToolCall { signature, .. } = &mut signed {
        *signature = Some("sig-call".into());
    }
    let chunks = after_start(&[signed, result("srvtoolu_1", ToolResult::text("3 results"))]);
    snapshot("provider_executed", &chunks);
}

#[test]
fn dynamic_tools_write_dynamic_tool_parts() {
    let mut ui = UiStream::new().with_message_id("msg-1").with_dynamic_tools(true);
    let chunks = ui.push(&call("call_1", "get_weather", ExecutedBy::Host));
    assert!(chunks.iter().any(|chunk| matches!(
        chunk,
        UiChunk::ToolInputAvailable {
            dynamic: Some(true),
            ..
        }
    )));
}

#[test]
fn tool_result_completed_writes_output_available_with_the_whole_result() {
    let done = ToolResult::text("Sunny, 21°C.").with_documents([DocumentRef::new("d1").with_title("Forecast")]);
    let chunks = after_start(&[call("call_1", "get_weather", ExecutedBy::Host), result("call_1", done)]);
    snapshot("tool_result_completed", &chunks);
}

#[test]
fn tool_result_failed_writes_output_error_with_its_text() {
    let chunks = after_start(&[
        call("call_1", "get_weather", ExecutedBy::Host),
        result("call_1", ToolResult::error("the tool exploded")),
    ]);
    snapshot("tool_result_failed", &chunks);
}

#[test]
fn tool_result_denied_writes_output_denied() {
    let chunks = after_start(&[
        call("call_1", "get_weather", ExecutedBy::Host),
        result("call_1", ToolResult::denied("not allowed")),
    ]);
    snapshot("tool_result_denied", &chunks);
}

#[test]
fn tool_result_aborted_writes_output_error_aborted() {
    let chunks = after_start(&[
        Event::ToolCallStart {
            id: "call_1".into(),
            name: "get_weather".into(),
        },
        result("call_1", ToolResult::aborted()),
    ]);
    snapshot("tool_result_aborted", &chunks);
}

#[test]
fn opaque_writes_a_data_opaque_part() {
    let chunks = after_start(&[Event::Opaque {
        index: 2,
        provider: "anthropic".into(),
        data: json!({ "type": "container_upload", "file_id": "f1" }),
    }]);
    snapshot("opaque", &chunks);
}

#[test]
fn subagent_message_writes_a_data_subagent_part() {
    let chunks = after_start(&[Event::SubagentMessage {
        parent_tool_use_id: "task_1".into(),
        subagent: Some("researcher".into()),
        message: Message::assistant("Found three papers."),
    }]);
    snapshot("subagent_message", &chunks);
}

#[test]
fn tool_progress_writes_a_transient_data_progress_part_per_call() {
    let chunks = after_start(&[
        call("call_1", "index", ExecutedBy::Host),
        Event::ToolProgress {
            id: "call_1".into(),
            message: Some("indexing".into()),
            progress: Some(3.0),
            total: Some(10.0),
        },
    ]);
    snapshot("tool_progress", &chunks);
}

#[test]
fn log_writes_a_transient_data_log_part() {
    let chunks = after_start(&[Event::Log {
        source: "docs".into(),
        level: "warning".into(),
        logger: Some("index".into()),
        data: json!("slow disk"),
    }]);
    snapshot("log", &chunks);
}

#[test]
fn approval_requested_writes_a_tool_approval_request_per_call() {
    let request = |id: &str| ApprovalRequest {
        tool_use_id: id.into(),
        tool_name: "get_weather".into(),
        input: json!({ "city": "Paris" }),
    };
    // The first call was shown; the second only comes with the request.
    let chunks = after_start(&[
        call("call_1", "get_weather", ExecutedBy::Host),
        Event::ApprovalRequested {
            calls: vec![request("call_1"), request("call_2")],
        },
        finish(FinishReason::ToolUse),
    ]);
    snapshot("approval_requested", &chunks);
}

#[test]
fn source_with_a_url_writes_source_url() {
    let mut source = Source::url("1", 0, "https://example.com/a", "openai");
    source.title = Some("Example".into());
    source.cited_text = Some("a passage".into());
    let chunks = after_start(&[text(0, "Cited."), Event::Source(source)]);
    snapshot("source_url", &chunks);
}

#[test]
fn source_of_a_document_file_or_search_result_writes_source_document() {
    let source = |id: &str, target: SourceTarget, title: Option<&str>| {
        let mut source = Source::url(id, 0, "", "anthropic");
        source.target = target;
        source.title = title.map(str::to_owned);
        Event::Source(source)
    };
    let chunks = after_start(&[
        source(
            "1",
            SourceTarget::Document {
                document_index: Some(0),
                location: Some(Location::Pages { start: 1, end: 2 }),
            },
            Some("Annual report"),
        ),
        source(
            "2",
            SourceTarget::File {
                file_id: "file-1".into(),
                filename: Some("notes.md".into()),
            },
            None,
        ),
        source(
            "3",
            SourceTarget::SearchResult {
                source: "kb://article/7".into(),
                result_index: Some(0),
                location: None,
            },
            None,
        ),
    ]);
    snapshot("source_document", &chunks);
}

#[test]
fn usage_writes_message_metadata_with_usage() {
    let chunks = after_start(&[Event::Usage(Usage {
        input: Some(3),
        output: Some(1),
        ..Usage::default()
    })]);
    snapshot("usage", &chunks);
}

#[test]
fn step_finished_closes_parts_then_writes_finish_step_and_start_step() {
    let chunks = after_start(&[
        text(0, "Step one."),
        Event::StepFinished {
            step: 0,
            reason: FinishReason::ToolUse,
            usage: Usage::default(),
        },
        text(0, "Step two."),
    ]);
    snapshot("step_finished", &chunks);
}

#[test]
fn finish_closes_parts_then_writes_finish_step_metadata_with_the_summary_and_finish() {
    let chunks = after_start(&[
        call("call_1", "get_weather", ExecutedBy::Host),
        result("call_1", ToolResult::text("Sunny.")),
        text(0, "It is sunny."),
        finish(FinishReason::Stop),
    ]);
    snapshot("finish", &chunks);
}

#[test]
fn finish_reasons_map_to_the_ai_sdks() {
    let cases = [
        (FinishReason::Stop, UiFinishReason::Stop),
        (FinishReason::Length, UiFinishReason::Length),
        (FinishReason::ToolUse, UiFinishReason::ToolCalls),
        (FinishReason::ContentFilter, UiFinishReason::ContentFilter),
        (FinishReason::Refusal, UiFinishReason::ContentFilter),
        (FinishReason::Cancelled, UiFinishReason::Other),
        (FinishReason::Other("max_steps".into()), UiFinishReason::Other),
    ];
    for (reason, expected) in cases {
        assert_eq!(UiFinishReason::from(&reason), expected, "{reason:?}");
    }
}

#[test]
fn nothing_is_written_after_finish() {
    let mut ui = UiStream::new();
    ui.push(&finish(FinishReason::Stop));
    assert!(ui.push(&text(0, "late")).is_empty());
    assert!(ui.error(&ProviderError::protocol("late")).is_empty());
    assert!(ui.end().is_empty());
}

#[test]
fn error_closes_parts_then_writes_error_with_its_display() {
    let mut ui = UiStream::new().with_message_id("msg-1");
    ui.push(&started());
    ui.push(&text(0, "Partial"));
    let error = ProviderError::new(ErrorKind::Overloaded, "Overloaded").with_status(529);
    let chunks = ui.error(&error);
    assert_eq!(
        chunks.last(),
        Some(&UiChunk::Error {
            error_text: error.to_string()
        })
    );
    snapshot("error", &chunks);
}

#[test]
fn error_text_can_hide_the_details() {
    let mut ui = UiStream::new().with_error_text(|_| "Something went wrong.".into());
    let chunks = ui.error(&ProviderError::protocol("secret detail"));
    assert_eq!(
        chunks.last(),
        Some(&UiChunk::Error {
            error_text: "Something went wrong.".into()
        })
    );
}

#[test]
fn cancelled_error_writes_abort() {
    let mut ui = UiStream::new().with_message_id("msg-1");
    ui.push(&started());
    let chunks = ui.error(&ProviderError::cancelled());
    snapshot("cancelled", &chunks);
}

#[test]
fn stream_without_finish_or_error_ends_interrupted() {
    let mut ui = UiStream::new().with_message_id("msg-1");
    ui.push(&started());
    ui.push(&text(0, "Cut"));
    snapshot("interrupted", &ui.end());
}

#[test]
fn continuing_a_message_skips_start_step_and_the_calls_it_shows() {
    let body = json!({ "id": "c", "messages": [
        { "id": "u1", "role": "user", "parts": [{ "type": "text", "text": "Weather?" }] },
        { "id": "msg-a", "role": "assistant", "parts": [
            { "type": "step-start" },
            { "type": "tool-get_weather", "toolCallId": "call_1", "state": "approval-responded",
              "input": { "city": "Paris" }, "approval": { "id": "call_1", "approved": true } }
        ] }
    ] });
    let request = ChatRequest::from_json(body.to_string().as_bytes()).expect("a request");
    let mut ui = UiStream::new().continuing(request.last_assistant().expect("the assistant's"));
    let mut chunks = ui.push(&started());
    chunks.extend(ui.push(&call("call_1", "get_weather", ExecutedBy::Host)));
    chunks.extend(ui.push(&result("call_1", ToolResult::text("Sunny."))));
    snapshot("continuing", &chunks);
}
