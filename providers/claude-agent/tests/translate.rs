//! The pure line translator on recorded real-CLI transcripts and on synthetic edge lines.

use patchbay_claude_agent::Translator;
use patchbay_conformance::text_of;
use patchbay_core::{ErrorKind, Event, ExecutedBy, FinishReason, ProviderError, tool::ToolStatus, validate::validate};
use serde_json::{Value, json};

use crate::support;

/// Feed every non-control line of the first segment of a transcript.
fn translate_lines(lines: &[Value]) -> (Vec<Event>, Option<ProviderError>) {
    let mut translator = Translator::new("conformance-model", "host").with_session_marker(Some(2));
    let mut events = Vec::new();
    for line in lines {
        let pushed = translator.push_value(line);
        while let Some(event) = translator.next_event() {
            events.push(event);
        }
        if let Err(error) = pushed {
            return (events, Some(error));
        }
        if translator.is_done() {
            return (events, None);
        }
    }
    let error = translator.finish().err();
    (events, error)
}

fn transcript(name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(support::transcript(name)).unwrap_or_default();
    text.lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

fn translate(name: &str) -> (Vec<Event>, Option<ProviderError>) {
    translate_lines(&transcript(name))
}

fn check_lifecycle(events: &[Event], error: Option<&ProviderError>) {
    let items = events.iter().map(Ok).chain(error.map(Err));
    if let Err(violations) = validate(items) {
        panic!("lifecycle violations: {violations:?}");
    }
}

#[test]
fn every_transcript_keeps_the_lifecycle_rules() {
    for name in [
        "text_only",
        "one_tool_call",
        "parallel_tool_calls",
        "thinking_then_tool_call",
        "tool_error",
        "max_tokens",
        "refusal",
        "unicode_split",
        "huge_line",
        "error_mid_stream",
        "sources",
    ] {
        let (events, error) = translate(name);
        check_lifecycle(&events, error.as_ref());
        assert!(
            matches!(events.first(), Some(Event::Started { .. })),
            "{name}: Started first"
        );
    }
}

#[test]
fn text_arrives_once_although_the_cli_sends_it_twice() {
    let (events, error) = translate("text_only");
    assert!(error.is_none());
    assert_eq!(text_of(&events), "Hello! How can I help you today?");
}

#[test]
fn started_carries_the_session_id_and_finish_the_cost() {
    let lines = transcript("text_only");
    let session = lines
        .iter()
        .find_map(|l| l.get("session_id").and_then(Value::as_str))
        .map(str::to_string);
    let (events, _) = translate_lines(&lines);
    let Some(Event::Started { session_id, model, .. }) = events.first() else {
        panic!("no Started");
    };
    assert_eq!(session_id, &session);
    assert_eq!(model, "conformance-model");
    let Some(Event::Finish { usage, reason, .. }) = events.last() else {
        panic!("no Finish");
    };
    assert_eq!(reason, &FinishReason::Stop);
    assert_eq!((usage.input, usage.output), (Some(12), Some(9)));
    assert!(usage.cost_usd.is_some_and(|c| c > 0.0));
}

#[test]
fn host_tool_names_map_back_and_steps_split_turns() {
    let (events, error) = translate("one_tool_call");
    assert!(error.is_none(), "{error:?}");
    let calls: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCall { name, executed_by, .. } => Some((name.as_str(), *executed_by)),
            _ => None,
        })
        .collect();
    assert_eq!(calls, vec![("get_weather", ExecutedBy::Host)]);
    let result = events.iter().find_map(|e| match e {
        Event::ToolResult { name, result, .. } => Some((name.clone(), result.status)),
        _ => None,
    });
    assert_eq!(result, Some(("get_weather".into(), ToolStatus::Completed)));
    let steps: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::StepFinished { step, reason, usage } => Some((*step, reason.clone(), usage.input, usage.output)),
            _ => None,
        })
        .collect();
    assert_eq!(steps, vec![(0, FinishReason::ToolUse, Some(40), Some(20))]);
    // The session marker comes right before Finish.
    let marker = &events[events.len() - 2];
    assert!(matches!(marker, Event::Opaque { data, .. } if data["type"] == "session"));
}

#[test]
fn a_failed_cli_tool_result_is_a_failed_tool_result() {
    let (events, _) = translate("tool_error");
    let status = events.iter().find_map(|e| match e {
        Event::ToolResult { result, .. } => Some(result.status),
        _ => None,
    });
    assert_eq!(status, Some(ToolStatus::Failed));
}

#[test]
fn transcript_events_snapshot() {
    for name in ["one_tool_call", "thinking_then_tool_call"] {
        let (events, _) = translate(name);
        insta::with_settings!({ snapshot_suffix => name, sort_maps => true }, {
            insta::assert_json_snapshot!("transcript", events, {
                ".**.metrics" => "[metrics]",
            });
        });
    }
}

fn line(value: Value) -> Value {
    value
}

fn init() -> Value {
    line(
        json!({"type": "system", "subtype": "init", "session_id": "s-1", "model": "m", "mcp_servers": [
            {"name": "host", "status": "connected"}, {"name": "docs", "status": "connected"}, {"name": "down", "status": "failed"}
        ]}),
    )
}

fn text_message(id: &str, text: &str) -> Vec<Value> {
    vec![
        json!({"type": "stream_event", "event": {"type": "message_start", "message": {"id": id, "model": "m", "content": [], "usage": {"input_tokens": 3, "output_tokens": 1}}}}),
        json!({"type": "stream_event", "event": {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}}),
        json!({"type": "stream_event", "event": {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}}),
        json!({"type": "assistant", "message": {"id": id, "model": "m", "content": [{"type": "text", "text": text}]}, "parent_tool_use_id": null}),
        json!({"type": "stream_event", "event": {"type": "content_block_stop", "index": 0}}),
        json!({"type": "stream_event", "event": {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 4}}}),
        json!({"type": "stream_event", "event": {"type": "message_stop"}}),
    ]
}

fn error_result(status: Value, text: &str) -> Value {
    json!({"type": "result", "subtype": "success", "is_error": true, "api_error_status": status, "result": text, "session_id": "s-1"})
}

#[test]
fn api_error_statuses_become_typed_errors_with_the_turn() {
    for (status, kind) in [
        (json!(429), ErrorKind::RateLimited),
        (json!(529), ErrorKind::Overloaded),
        (json!(401), ErrorKind::Auth),
        (json!(400), ErrorKind::InvalidRequest),
        (json!(500), ErrorKind::Server),
        (Value::Null, ErrorKind::Overloaded),
    ] {
        let text = if status.is_null() {
            "API Error: Overloaded"
        } else {
            "API Error"
        };
        let (events, error) = translate_lines(&[init(), error_result(status.clone(), text)]);
        assert!(
            events.is_empty(),
            "nothing reached the caller, so a retry layer may retry"
        );
        let error = error.unwrap_or_else(|| panic!("{status}: no error"));
        assert_eq!(error.kind(), kind, "{status}");
        assert_eq!(error.facts().turn, Some(0));
        assert_eq!(error.status(), status.as_u64().and_then(|s| u16::try_from(s).ok()));
    }
}

#[test]
fn an_error_after_a_tool_call_names_the_tool_and_turn() {
    let mut lines = vec![init()];
    lines.extend([
        json!({"type": "stream_event", "event": {"type": "message_start", "message": {"id": "m1", "model": "m", "content": [], "usage": {"input_tokens": 3}}}}),
        json!({"type": "stream_event", "event": {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}}}),
        json!({"type": "stream_event", "event": {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"command\":\"ls\"}"}}}),
        json!({"type": "stream_event", "event": {"type": "content_block_stop", "index": 0}}),
        json!({"type": "stream_event", "event": {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 4}}}),
        json!({"type": "stream_event", "event": {"type": "message_stop"}}),
        json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a b"}]}, "parent_tool_use_id": null}),
    ]);
    lines.extend(text_message("m2", "partial"));
    lines.push(error_result(json!(429), "API Error: 429"));
    let (events, error) = translate_lines(&lines);
    let error = error.unwrap_or_else(|| panic!("no error"));
    assert_eq!(error.kind(), ErrorKind::RateLimited);
    assert_eq!(error.facts().turn, Some(1));
    assert_eq!(error.facts().tool.as_deref(), Some("Bash"));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ToolCall { name, executed_by: ExecutedBy::Provider, .. } if name == "Bash"))
    );
    check_lifecycle(&events, Some(&error));
}

#[test]
fn system_lines_become_warnings_before_output_and_opaque_after() {
    let mut lines = vec![
        init(),
        json!({"type": "system", "subtype": "api_retry", "attempt": 1, "error_status": 529, "session_id": "s-1"}),
    ];
    lines.extend(text_message("m1", "hi"));
    lines.push(json!({"type": "system", "subtype": "permission_denied", "tool_name": "Write", "session_id": "s-1"}));
    lines.push(
        json!({"type": "result", "subtype": "success", "is_error": false, "session_id": "s-1", "total_cost_usd": 0.5}),
    );
    let mut translator = Translator::new("m", "host").with_mcp_report(true);
    let mut events = Vec::new();
    for line in &lines {
        let _ = translator.push_value(line);
        while let Some(event) = translator.next_event() {
            events.push(event);
        }
    }
    let Some(Event::Started { warnings, .. }) = events.first() else {
        panic!("no Started");
    };
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].code, "api_retry");
    assert!(
        matches!(&events[1], Event::McpConnected { servers, failed } if servers == &["docs"] && failed.len() == 1 && failed[0].name == "down")
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Opaque { data, .. } if data["line"]["subtype"] == "permission_denied"))
    );
    assert!(matches!(events.last(), Some(Event::Finish { usage, .. }) if usage.cost_usd == Some(0.5)));
}

#[test]
fn messages_without_partials_are_translated_from_their_blocks() {
    let lines = vec![
        init(),
        json!({"type": "assistant", "message": {"id": "m1", "model": "m", "content": [{"type": "thinking", "thinking": "hmm", "signature": "sig"}], "usage": {"input_tokens": 5, "output_tokens": 2}}, "parent_tool_use_id": null}),
        json!({"type": "assistant", "message": {"id": "m1", "model": "m", "content": [{"type": "tool_use", "id": "t1", "name": "mcp__host__get_weather", "input": {"city": "Oslo"}}]}, "parent_tool_use_id": null}),
        json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "cold"}]}]}, "parent_tool_use_id": null}),
        json!({"type": "assistant", "message": {"id": "m2", "model": "m", "content": [{"type": "text", "text": "It is cold."}], "usage": {"input_tokens": 9, "output_tokens": 3}}, "parent_tool_use_id": null}),
        json!({"type": "result", "subtype": "success", "is_error": false, "session_id": "s-1"}),
    ];
    let (events, error) = translate_lines(&lines);
    assert!(error.is_none());
    check_lifecycle(&events, None);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ReasoningSignature { signature, .. } if signature == "sig"))
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ToolCall { name, executed_by: ExecutedBy::Host, .. } if name == "get_weather"))
    );
    assert!(events.iter().any(|e| matches!(
        e,
        Event::StepFinished {
            step: 0,
            reason: FinishReason::ToolUse,
            ..
        }
    )));
    assert!(matches!(events.last(), Some(Event::Finish { usage, .. }) if usage.input == Some(14)));
}

#[test]
fn citations_and_search_results_are_sources_with_or_without_partials() {
    let citation = json!({"type": "web_search_result_location", "url": "https://a.example", "title": "A",
        "cited_text": "sunny", "encrypted_index": "Eo8B"});
    let results = json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
        {"type": "web_search_result", "url": "https://a.example", "title": "A", "encrypted_content": "e"}]});
    let sources = |events: &[Event]| -> Vec<(String, usize, String)> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Source(s) => Some((s.id.clone(), s.index, s.as_url().unwrap_or_default().to_owned())),
                _ => None,
            })
            .collect()
    };
    // Without partials: from the assistant message's blocks.
    let lines = vec![
        init(),
        json!({"type": "assistant", "message": {"id": "m1", "model": "m", "content": [
            results.clone(), {"type": "text", "text": "It is sunny.", "citations": [citation.clone()]}],
            "usage": {"input_tokens": 5, "output_tokens": 2}}, "parent_tool_use_id": null}),
        json!({"type": "result", "subtype": "success", "is_error": false, "session_id": "s-1"}),
    ];
    let (events, error) = translate_lines(&lines);
    assert!(error.is_none(), "{error:?}");
    check_lifecycle(&events, None);
    let expected = vec![
        ("1".to_owned(), 0, "https://a.example".to_owned()),
        ("2".to_owned(), 1, "https://a.example".to_owned()),
    ];
    assert_eq!(sources(&events), expected);

    // With partials: the same sources once, although the assistant line repeats the blocks.
    let event = |e: Value| json!({"type": "stream_event", "event": e});
    let lines = vec![
        init(),
        event(
            json!({"type": "message_start", "message": {"id": "m1", "model": "m", "content": [], "usage": {"input_tokens": 5, "output_tokens": 1}}}),
        ),
        event(json!({"type": "content_block_start", "index": 0, "content_block": results})),
        event(json!({"type": "content_block_stop", "index": 0})),
        event(
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": "", "citations": []}}),
        ),
        event(
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "citations_delta", "citation": citation}}),
        ),
        event(
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "It is sunny."}}),
        ),
        json!({"type": "assistant", "message": {"id": "m1", "model": "m", "content": [{"type": "text", "text": "It is sunny."}]}, "parent_tool_use_id": null}),
        event(json!({"type": "content_block_stop", "index": 1})),
        event(json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 4}})),
        event(json!({"type": "message_stop"})),
        json!({"type": "result", "subtype": "success", "is_error": false, "session_id": "s-1"}),
    ];
    let (events, error) = translate_lines(&lines);
    assert!(error.is_none(), "{error:?}");
    check_lifecycle(&events, None);
    let mut got = sources(&events);
    got.sort();
    assert_eq!(got, expected);
}

#[test]
fn max_turns_ends_the_run_and_subagent_lines_are_typed() {
    let mut lines = vec![init()];
    lines.extend(text_message("m1", "hi"));
    lines.push(json!({"type": "assistant", "message": {"id": "x", "content": [{"type": "text", "text": "sub"}]}, "parent_tool_use_id": "t9"}));
    lines.push(json!({"type": "result", "subtype": "error_max_turns", "is_error": false, "session_id": "s-1"}));
    let (events, error) = translate_lines(&lines);
    assert!(error.is_none());
    assert!(
        events.iter().any(
            |e| matches!(e, Event::SubagentMessage { parent_tool_use_id, message, .. } if parent_tool_use_id == "t9" && message.text() == "sub")
        ),
        "{events:?}"
    );
    assert!(matches!(events.last(), Some(Event::Finish { reason: FinishReason::Other(r), .. }) if r == "max_turns"));
}

#[test]
fn a_line_that_is_not_json_is_a_protocol_error() {
    let mut translator = Translator::new("m", "host");
    let error = translator.push_line("{not json").err();
    assert_eq!(error.map(|e| e.kind()), Some(ErrorKind::Protocol));
    let mut translator = Translator::new("m", "host");
    assert_eq!(translator.finish().err().map(|e| e.kind()), Some(ErrorKind::Process));
}

fn translate_structured(lines: &[Value]) -> Vec<Event> {
    let mut translator = Translator::new("m", "host").with_output_tool(true);
    let mut events = Vec::new();
    for line in lines {
        translator.push_value(line).expect("translates");
        while let Some(event) = translator.next_event() {
            events.push(event);
        }
    }
    assert!(validate(events.iter().map(Ok)).is_ok(), "{events:?}");
    events
}

fn structured_result(object: Value) -> Value {
    json!({"type": "result", "subtype": "success", "is_error": false, "stop_reason": "tool_use",
        "result": object.to_string(), "structured_output": object, "session_id": "s"})
}

#[test]
fn structured_output_without_partials_is_the_tool_input_as_text_once() {
    let object = json!({"city": "Paris", "celsius": 21});
    let events = translate_structured(&[
        json!({"type": "assistant", "message": {"id": "msg_1", "model": "m", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "StructuredOutput", "input": object}],
            "usage": {"input_tokens": 3, "output_tokens": 4}}, "parent_tool_use_id": null, "session_id": "s"}),
        json!({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Structured output provided successfully"}]},
            "parent_tool_use_id": null, "session_id": "s"}),
        structured_result(object.clone()),
    ]);
    assert_eq!(text_of(&events), object.to_string());
    assert!(!events.iter().any(|e| matches!(
        e,
        Event::ToolCallStart { .. } | Event::ToolCall { .. } | Event::ToolResult { .. }
    )));
    assert!(matches!(
        events.last(),
        Some(Event::Finish {
            reason: FinishReason::Stop,
            ..
        })
    ));
}

#[test]
fn structured_output_only_in_the_result_becomes_the_final_text_block() {
    let object = json!({"city": "Paris"});
    let events = translate_structured(&[
        json!({"type": "assistant", "message": {"id": "msg_1", "model": "m", "content": [
            {"type": "text", "text": "Checking."}], "usage": {"input_tokens": 3, "output_tokens": 4}},
            "parent_tool_use_id": null, "session_id": "s"}),
        structured_result(object.clone()),
    ]);
    let texts: Vec<(usize, &str)> = events
        .iter()
        .filter_map(|e| match e {
            Event::TextDelta { index, text } => Some((*index, text.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(texts, [(0, "Checking."), (1, r#"{"city":"Paris"}"#)]);
}

#[test]
fn a_run_that_fails_after_output_still_reports_its_usage_and_cost() {
    let (events, error) = translate("truncated_stream");
    let error = error.expect("the run fails");
    assert_eq!(error.status(), Some(500));
    check_lifecycle(&events, Some(&error));
    let Some(Event::Usage(usage)) = events.last() else {
        panic!("no last Usage: {events:?}");
    };
    assert_eq!(usage.cost_usd, Some(0.0001));
    assert!(usage.input.is_some(), "{usage:?}");
}

#[test]
fn an_api_error_carries_its_type_and_the_failed_calls_request_id() {
    let (events, error) = translate("rate_limited_then_fine");
    let error = error.expect("the first turn fails");
    assert_eq!(error.kind(), ErrorKind::RateLimited);
    assert_eq!(error.status(), Some(429));
    assert_eq!(error.facts().provider_code.as_deref(), Some("rate_limit_error"));
    assert_eq!(error.request_id(), Some("req_mock"));
    // Nothing began: a bare error a retry layer may retry, with no usage before it.
    assert!(events.is_empty(), "{events:?}");
}

/// A model message opened with a `Write` call whose input is still streaming (`t1`).
fn message_with_open_tool_call() -> Vec<Value> {
    vec![
        json!({"type": "stream_event", "event": {"type": "message_start", "message": {"id": "m1", "model": "m", "content": [], "usage": {"input_tokens": 5, "output_tokens": 1}}}}),
        json!({"type": "stream_event", "event": {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t1", "name": "Write", "input": {}}}}),
        json!({"type": "stream_event", "event": {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"file_path\": \"a."}}}),
    ]
}

fn success_result() -> Value {
    json!({"type": "result", "subtype": "success", "is_error": false, "result": "Done.", "session_id": "s-1", "total_cost_usd": 0.001})
}

/// The lines of a run whose `Write` call `t1` is left open by the message, then `after`:
/// translated, the run must succeed, keep the lifecycle rules and answer `t1` exactly once, as
/// `Aborted`. The events and that result.
fn abandoned(after: Vec<Value>) -> (Vec<Event>, patchbay_core::ToolResult) {
    let mut lines = vec![init()];
    lines.extend(message_with_open_tool_call());
    lines.extend(after);
    let (events, error) = translate_lines(&lines);
    assert!(error.is_none(), "{error:?}");
    check_lifecycle(&events, None);
    let results: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolResult { id, result, .. } if id == "t1" => Some(result.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 1, "answered once: {events:?}");
    assert_eq!(results[0].status, ToolStatus::Aborted);
    let result = results[0].clone();
    (events, result)
}

#[test]
fn a_tool_call_abandoned_by_a_restarted_message_ends_as_aborted() {
    // Found by the claude_agent fuzz target (fuzz/findings/claude-agent-tool-call-start-left-
    // open-by-a-restarted-message): the CLI restarts a model message (an API retry) while a tool
    // call's input streams; its `ToolCallStart` had reached the host and was left open.
    let mut after = text_message("m2", "Done.");
    after.push(json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "late"}]}}));
    after.push(success_result());
    let (events, result) = abandoned(after);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::ToolCall { id, .. } if id == "t1")),
        "no ToolCall for an input that never completed: {events:?}"
    );
    assert_eq!(
        result.metadata,
        Some(json!({"abandoned": true})),
        "the late result dropped"
    );
    assert!(result.text_content().contains("restarted"), "{result:?}");
    assert_eq!(text_of(&events), "Done.");
}

#[test]
fn a_cli_result_for_a_call_whose_input_never_completed_closes_it_as_aborted() {
    let mut after = vec![
        json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "done", "is_error": false}]}}),
    ];
    after.extend(text_message("m2", "Done."));
    after.push(success_result());
    let (_, result) = abandoned(after);
    assert_eq!(result.text_content(), "done", "the CLI's content is kept");
}

#[test]
fn a_run_ending_inside_a_tool_call_answers_it_before_finish() {
    let (events, result) = abandoned(vec![success_result()]);
    assert!(result.text_content().contains("the run ended"), "{result:?}");
    assert!(matches!(events.last(), Some(Event::Finish { .. })));
}

#[test]
fn a_step_never_ends_with_a_call_left_open_and_its_late_input_is_dropped() {
    // Found by the claude_agent fuzz target after the fix above: a whole `assistant` message of
    // another id (no partials) ends a step while the streamed message still has a call open.
    let mut after: Vec<Value> = [("m-other", "Meanwhile."), ("m-third", "Done.")]
        .into_iter()
        .map(|(id, text)| json!({"type": "assistant", "message": {"id": id, "model": "m", "content": [{"type": "text", "text": text}]}, "parent_tool_use_id": null}))
        .collect();
    after.push(json!({"type": "stream_event", "event": {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "txt\"}"}}}));
    after.push(success_result());
    abandoned(after);
}
