#![allow(clippy::unwrap_used)]

use patchbay_core::kit::{ContentBuilder, Framing, Recording, Wire, translate};
use patchbay_core::source::SourceTarget;
use patchbay_core::tool::{ExecutedBy, ToolStatus};
use patchbay_core::{ContentBlock, ErrorKind, Event, FinishReason, Message};
use serde_json::{Value, json};

use super::Translator;

/// A body of SSE frames as the API sends them (`event:` then `data:`), numbered.
fn sse(events: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for (n, event) in events.iter().enumerate() {
        let mut event = event.clone();
        if event.get("sequence_number").is_none() {
            event["sequence_number"] = json!(n);
        }
        out.extend(format!("event: {}\ndata: {event}\n\n", event["type"].as_str().unwrap()).into_bytes());
    }
    out
}

fn run(events: &[Value]) -> Recording {
    run_with(Translator::new("gpt-5"), events)
}

fn run_with(translator: Translator, events: &[Value]) -> Recording {
    let body = sse(events);
    let recording = translate(translator, [body.as_slice()]);
    if let Err(violations) = recording.validate() {
        panic!("invalid events: {violations:?}\n{:#?}", recording.events);
    }
    recording
}

fn created() -> Value {
    json!({"type": "response.created", "response": {"id": "resp_1", "model": "gpt-5-2025-08-07", "status": "in_progress", "output": []}})
}

fn completed(usage: Value) -> Value {
    json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "usage": usage}})
}

fn finish(recording: &Recording) -> (FinishReason, patchbay_core::Usage) {
    match recording.events.last() {
        Some(Event::Finish { reason, usage, .. }) => (reason.clone(), *usage),
        other => panic!("no finish: {other:?} {:?}", recording.error),
    }
}

fn content(recording: &Recording) -> Vec<ContentBlock> {
    let mut builder = ContentBuilder::default();
    for event in &recording.events {
        builder.push(event);
    }
    builder.finish()
}

fn text_item(text: &str, annotations: Value) -> Value {
    json!({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": annotations}]})
}

#[test]
fn text_and_its_annotations_become_deltas_and_sources_once() {
    let annotation =
        json!({"type": "url_citation", "url": "https://example.com/a", "title": "A", "start_index": 0, "end_index": 5});
    let recording = run(&[
        created(),
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "id": "msg_1", "content": []}}),
        json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "Hello"}),
        json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": " world"}),
        json!({"type": "response.output_text.annotation.added", "output_index": 0, "content_index": 0, "annotation_index": 0, "annotation": annotation}),
        json!({"type": "response.output_text.done", "output_index": 0, "content_index": 0, "text": "Hello world"}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": text_item("Hello world", json!([annotation, {"type": "file_citation", "file_id": "file-1", "filename": "a.pdf", "index": 3}]))}),
        completed(
            json!({"input_tokens": 100, "input_tokens_details": {"cached_tokens": 40}, "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 8}}),
        ),
    ]);
    assert!(
        matches!(&recording.events[0], Event::Started { response_id: Some(id), model, .. } if id == "resp_1" && model == "gpt-5-2025-08-07")
    );
    let sources: Vec<_> = recording
        .events
        .iter()
        .filter_map(|event| match event {
            Event::Source(source) => Some(source.target.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(sources.len(), 2, "{sources:?}");
    assert!(matches!(&sources[1], SourceTarget::File { file_id, .. } if file_id == "file-1"));
    let (reason, usage) = finish(&recording);
    assert_eq!(reason, FinishReason::Stop);
    assert_eq!(
        (usage.input, usage.cache_read, usage.output, usage.reasoning),
        (Some(60), Some(40), Some(20), Some(8))
    );
    assert_eq!(content(&recording)[0].as_text(), Some("Hello world"));
}

#[test]
fn reasoning_summaries_join_and_the_encrypted_content_is_the_signature() {
    let encrypted = "gAAAAAB".repeat(300);
    let recording = run(&[
        created(),
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "First"}),
        json!({"type": "response.reasoning_summary_text.done", "output_index": 0, "summary_index": 0, "text": "First"}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 1, "delta": "Second"}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "First"}, {"type": "summary_text", "text": "Second"}], "encrypted_content": encrypted}}),
        json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_abc", "name": "get_weather", "arguments": ""}}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "{\"city\":"}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "\"Paris\"}"}),
        json!({"type": "response.function_call_arguments.done", "output_index": 1, "arguments": "{\"city\":\"Paris\"}"}),
        json!({"type": "response.output_item.done", "output_index": 1, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_abc", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}", "status": "completed"}}),
        completed(json!({"input_tokens": 1, "output_tokens": 2})),
    ]);
    assert_eq!(finish(&recording).0, FinishReason::ToolUse);
    let blocks = content(&recording);
    match &blocks[0] {
        ContentBlock::Thinking { text, signature } => {
            assert_eq!(text, "First\n\nSecond");
            assert_eq!(signature.as_deref(), Some(encrypted.as_str()));
        }
        other => panic!("{other:?}"),
    }
    assert!(
        matches!(&blocks[1], ContentBlock::ToolUse { id, input, .. } if id == "call_abc" && input == &json!({"city": "Paris"}))
    );
}

#[test]
fn built_in_tools_are_provider_run_calls_with_their_sources() {
    let search = json!({"type": "web_search_call", "id": "ws_1", "status": "completed",
        "action": {"type": "search", "query": "rust", "sources": [{"type": "url", "url": "https://www.rust-lang.org"}]}});
    let mcp = json!({"type": "mcp_call", "id": "mcp_1", "name": "roll", "server_label": "dice", "arguments": "{\"n\":2}", "output": "4", "error": null});
    let approval = json!({"type": "mcp_approval_request", "id": "mcpr_1", "name": "roll", "server_label": "dice", "arguments": "{}"});
    let recording = run(&[
        created(),
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "web_search_call", "id": "ws_1", "status": "in_progress"}}),
        json!({"type": "response.web_search_call.searching", "output_index": 0, "item_id": "ws_1"}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": search}),
        json!({"type": "response.output_item.done", "output_index": 1, "item": mcp}),
        json!({"type": "response.output_item.done", "output_index": 2, "item": approval}),
        completed(json!({})),
    ]);
    let calls: Vec<_> = recording
        .events
        .iter()
        .filter_map(|event| match event {
            Event::ToolCall {
                name,
                executed_by,
                input,
                ..
            } => Some((name.clone(), *executed_by, input.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(calls[0].0, "web_search");
    assert_eq!(calls[0].1, ExecutedBy::Provider);
    assert_eq!(calls[1], ("roll".to_string(), ExecutedBy::Provider, json!({"n": 2})));
    assert!(recording.events.iter().any(
        |event| matches!(event, Event::Source(source) if matches!(&source.target, SourceTarget::Url { url } if url == "https://www.rust-lang.org"))
    ));
    assert!(
        recording
            .events
            .iter()
            .any(|event| matches!(event, Event::Opaque { data, .. } if data["type"] == "mcp_approval_request"))
    );
    assert_eq!(finish(&recording).0, FinishReason::Stop);
}

#[test]
fn incomplete_failed_and_error_events_are_typed() {
    let incomplete = run(&[
        created(),
        json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "Hel"}),
        json!({"type": "response.incomplete", "response": {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}}),
    ]);
    assert_eq!(finish(&incomplete).0, FinishReason::Length);
    let filtered = run(&[
        created(),
        json!({"type": "response.incomplete", "response": {"status": "incomplete", "incomplete_details": {"reason": "content_filter"}}}),
    ]);
    assert_eq!(finish(&filtered).0, FinishReason::ContentFilter);
    let failed = run(&[
        created(),
        json!({"type": "response.failed", "response": {"status": "failed", "error": {"code": "rate_limit_exceeded", "message": "slow down"}}}),
    ]);
    assert_eq!(failed.error.as_ref().unwrap().kind(), ErrorKind::RateLimited);
    let error = run(&[
        created(),
        json!({"type": "error", "code": "server_is_overloaded", "message": "busy", "param": null}),
    ]);
    assert_eq!(error.error.as_ref().unwrap().kind(), ErrorKind::Overloaded);
    let nested = run(&[
        created(),
        json!({"type": "error", "error": {"type": "invalid_request_error", "code": "context_length_exceeded", "message": "too long"}}),
    ]);
    assert_eq!(nested.error.as_ref().unwrap().kind(), ErrorKind::ContextTooLong);
    let truncated = run(&[created(), json!({"type": "response.output_text.delta", "delta": "Hi"})]);
    assert_eq!(truncated.error.as_ref().unwrap().kind(), ErrorKind::Protocol);
}

#[test]
fn a_resumed_stream_starts_without_created_and_skips_repeated_events() {
    let delta = |n: u64, text: &str| json!({"type": "response.output_text.delta", "sequence_number": n, "output_index": 0, "content_index": 0, "delta": text});
    let recording = run(&[
        delta(5, "A"),
        delta(6, "B"),
        delta(6, "B"),
        delta(4, "old"),
        json!({"type": "response.completed", "sequence_number": 7, "response": {"id": "resp_9", "status": "completed"}}),
    ]);
    assert!(matches!(&recording.events[0], Event::Started { model, .. } if model == "gpt-5"));
    assert_eq!(content(&recording)[0].as_text(), Some("AB"));
}

#[test]
fn arguments_that_are_not_json_abort_the_call() {
    let recording = run(&[
        created(),
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": ""}}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{\"a\":"}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{\"a\":"}}),
        completed(json!({})),
    ]);
    assert!(
        recording
            .events
            .iter()
            .any(|event| matches!(event, Event::ToolResult { result, .. } if result.status == ToolStatus::Aborted))
    );
    assert_eq!(finish(&recording).0, FinishReason::Stop);
}

#[test]
fn ids_patchbay_assigns_skip_those_in_the_conversation() {
    let history = [Message {
        role: patchbay_core::Role::Assistant,
        content: vec![ContentBlock::tool_use("call_1", "f", json!({}))],
    }];
    let recording = run_with(
        Translator::new("m").with_history(&history),
        &[
            created(),
            json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "function_call", "name": "f", "arguments": "{}"}}),
            json!({"type": "response.output_item.done", "output_index": 1, "item": {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"}}),
            completed(json!({})),
        ],
    );
    let ids: Vec<_> = recording
        .events
        .iter()
        .filter_map(|event| match event {
            Event::ToolCall { id, .. } => Some(id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, ["call_2", "call_3"]);
}

#[test]
fn a_whole_json_response_reads_as_its_items() {
    let body = json!({"id": "resp_2", "object": "response", "model": "gpt-4.1", "status": "completed",
        "output": [text_item("Hi", json!([]))], "usage": {"input_tokens": 3, "output_tokens": 1}});
    let mut wire = Translator::new("gpt-4.1");
    wire.whole_body(body.to_string().as_bytes()).unwrap();
    let events: Vec<Event> = std::iter::from_fn(|| wire.next_event()).collect();
    assert!(matches!(&events[1], Event::TextDelta { text, .. } if text == "Hi"));
    assert!(matches!(
        events.last(),
        Some(Event::Finish {
            reason: FinishReason::Stop,
            ..
        })
    ));
}

#[test]
fn json_lines_captures_read_the_same() {
    let lines: String = [created(), completed(json!({}))]
        .iter()
        .map(|event| format!("{event}\n"))
        .collect();
    let recording = translate(Translator::new("m").with_framing(Framing::Lines), [lines.as_bytes()]);
    assert!(recording.error.is_none());
    assert_eq!(finish(&recording).0, FinishReason::Stop);
}

#[test]
fn a_delta_that_is_not_text_is_skipped_not_an_error() {
    // `response.shell_call_output_content.delta` carries an object (AI SDK's shell recording).
    let recording = run(&[
        created(),
        json!({"type": "response.shell_call_output_content.delta", "output_index": 0, "command_index": 0, "delta": {"stdout": "hi"}}),
        json!({"type": "response.output_text.delta", "output_index": 1, "content_index": 0, "delta": ["not", "text"]}),
        completed(json!({})),
    ]);
    assert!(recording.error.is_none(), "{:?}", recording.error);
    assert_eq!(finish(&recording).0, FinishReason::Stop);
}

#[test]
fn data_before_event_and_no_sequence_numbers_read_the_same() {
    let body = "data: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"model\":\"m\"}}\nevent: response.created\n\n\
                data: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hi\"}\nevent: response.output_text.delta\n\n\
                data: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"content_index\":0,\"delta\":\"!\"}\n\n\
                data: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\"}}\nevent: response.completed\n\n";
    let recording = translate(Translator::new("m"), [body.as_bytes()]);
    assert!(recording.error.is_none(), "{:?}", recording.error);
    assert_eq!(content(&recording)[0].as_text(), Some("Hi!"));
    assert_eq!(finish(&recording).0, FinishReason::Stop);
}

#[test]
fn the_fast_read_agrees_with_serde_or_leaves_the_event_to_it() {
    let payloads = [
        r#"{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","logprobs":[],"obfuscation":"aB3"}"#,
        r#"{ "delta" : "a\"b\\c\n\u00e9" , "type" : "response.output_text.delta", "logprobs": [{"token": "x", "bytes": [1, 2], "logprob": -0.5e-3}] }"#,
        r#"{"type":"response.reasoning_summary_text.delta","output_index":1,"summary_index":2,"delta":"x"}"#,
        r#"{"type":"response.function_call_arguments.delta","output_index":1,"delta":"{\"a\":"}"#,
        r#"{"type":"response.web_search_call.searching","output_index":0,"item_id":"ws_1","sequence_number":9}"#,
        // Left to serde: a repeated key, a null, an escaped surrogate, a key serde reads, no type.
        r#"{"type":"a","type":"b"}"#,
        r#"{"type":"response.output_text.delta","sequence_number":null,"delta":"x"}"#,
        r#"{"type":"response.output_text.delta","delta":"\ud83d\ude00"}"#,
        r#"{"type":"response.output_text.done","text":"whole"}"#,
        r#"{"delta":"x"}"#,
        r#"{"type":"response.shell_call_output_content.delta","delta":{"stdout":"hi"}}"#,
        r#"{"type":"x","output_index":01}"#,
        r#"{"type":"x"} trailing"#,
    ];
    for payload in payloads {
        super::check_fast_read(payload.as_bytes());
    }
    assert!(
        super::fast::event(payloads[0]).is_some(),
        "the common delta is read without serde"
    );
    assert!(super::fast::event(payloads[1]).is_some(), "escapes are decoded");
    for left in &payloads[5..] {
        assert!(super::fast::event(left).is_none(), "{left}");
    }
}
