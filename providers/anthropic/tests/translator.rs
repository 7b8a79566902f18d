//! The translator on synthetic streams: one behaviour per test, named after what would break.

use patchbay_anthropic::{Translator, finish_reason};
use patchbay_core::kit::{Framer, Framing};
use patchbay_core::{ErrorKind, Event, ExecutedBy, FinishReason, ProviderError, validate::validate};
use serde_json::{Value, json};

use crate::common::{fixtures_dir, without_timings};

const START: &str = r#"{"type":"message_start","message":{"id":"msg_1","model":"claude-test","content":[],"usage":{"input_tokens":10,"output_tokens":1,"cache_read_input_tokens":4,"cache_creation_input_tokens":2}}}"#;

fn run(lines: &[&str]) -> (Vec<Event>, Option<ProviderError>) {
    let mut translator = Translator::new();
    let mut events = Vec::new();
    for line in lines {
        let result = translator.push_json(line);
        events.extend(translator.drain());
        if let Err(error) = result {
            return (events, Some(error));
        }
    }
    let result = translator.finish();
    events.extend(translator.drain());
    (events, result.err())
}

fn finish_of(events: &[Event]) -> Option<&FinishReason> {
    events.iter().find_map(|e| match e {
        Event::Finish { reason, .. } => Some(reason),
        _ => None,
    })
}

#[test]
fn every_stop_reason_maps() {
    for (wire, reason) in [
        ("end_turn", FinishReason::Stop),
        ("stop_sequence", FinishReason::Stop),
        ("max_tokens", FinishReason::Length),
        ("model_context_window_exceeded", FinishReason::Length),
        ("tool_use", FinishReason::ToolUse),
        ("refusal", FinishReason::Refusal),
        ("pause_turn", FinishReason::Other("pause_turn".into())),
    ] {
        assert_eq!(finish_reason(wire), reason);
        let delta =
            json!({"type":"message_delta","delta":{"stop_reason": wire},"usage":{"output_tokens":5}}).to_string();
        let (events, error) = run(&[START, &delta, r#"{"type":"message_stop"}"#]);
        assert!(error.is_none());
        assert_eq!(finish_of(&events), Some(&reason));
    }
}

#[test]
fn tool_call_not_emitted_before_block_stop() {
    let (events, error) = run(&[
        START,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Paris\"}"}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"   "}}"#,
    ]);
    assert_eq!(
        error.map(|e| e.kind()),
        Some(ErrorKind::Protocol),
        "the stream ended early"
    );
    assert!(
        !events.iter().any(|e| matches!(e, Event::ToolCall { .. })),
        "input parsed but block not stopped"
    );
}

#[test]
fn empty_tool_input_is_an_empty_object_and_usage_is_cumulative() {
    let (events, error) = run(&[
        START,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"now","input":{}}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":7}}"#,
        r#"{"type":"message_stop"}"#,
    ]);
    assert!(error.is_none());
    let call = events.iter().find_map(|e| match e {
        Event::ToolCall { input, executed_by, .. } => Some((input.clone(), *executed_by)),
        _ => None,
    });
    assert_eq!(call, Some((json!({}), ExecutedBy::Host)));
    let Some(Event::Finish { usage, .. }) = events.last() else {
        panic!("Finish last")
    };
    assert_eq!(
        (usage.input, usage.output, usage.cache_read, usage.cache_write),
        (Some(10), Some(7), Some(4), Some(2))
    );
}

#[test]
fn whitespace_padded_json_and_pings_are_fine() {
    let (events, error) = run(&[
        &format!("{START}      "),
        r#"{"type": "ping"}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}   }"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi \"there\""}}          "#,
        r#"{"type":"content_block_stop","index":0 }"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}"#,
        r#"{"type":"message_stop"}   "#,
    ]);
    assert!(error.is_none(), "{error:?}");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::TextDelta { text, .. } if text == "Hi \"there\""))
    );
}

#[test]
fn unknown_events_are_kept_and_a_repeated_message_start_is_tolerated() {
    let (events, error) = run(&[
        START,
        START,
        r#"{"type":"brand_new_event","payload":{"x":1}}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}"#,
        r#"{"type":"message_stop"}"#,
    ]);
    assert!(error.is_none(), "{error:?}");
    assert_eq!(events.iter().filter(|e| matches!(e, Event::Started { .. })).count(), 1);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Opaque { data, .. } if data["event"]["payload"]["x"] == 1))
    );
}

#[test]
fn events_before_message_start_and_deltas_of_unknown_blocks_are_protocol_errors() {
    let (_, error) = run(&[r#"{"type":"content_block_stop","index":0}"#]);
    assert_eq!(error.map(|e| e.kind()), Some(ErrorKind::Protocol));
    let (_, error) = run(&[
        START,
        r#"{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}"#,
    ]);
    assert_eq!(error.map(|e| e.kind()), Some(ErrorKind::Protocol));
    let (_, error) = run(&[START, "not json"]);
    assert_eq!(error.map(|e| e.kind()), Some(ErrorKind::Protocol));
    let (events, error) = run(&[]);
    assert!(events.is_empty());
    assert_eq!(error.map(|e| e.kind()), Some(ErrorKind::Protocol));
}

#[test]
fn error_events_map_to_kinds() {
    for (wire, kind) in [
        ("overloaded_error", ErrorKind::Overloaded),
        ("rate_limit_error", ErrorKind::RateLimited),
        ("authentication_error", ErrorKind::Auth),
        ("permission_error", ErrorKind::Auth),
        ("invalid_request_error", ErrorKind::InvalidRequest),
        ("request_too_large", ErrorKind::ContextTooLong),
        ("api_error", ErrorKind::Server),
        ("timeout_error", ErrorKind::Transport),
    ] {
        let line = json!({"type":"error","error":{"type":wire,"message":"m"},"request_id":"req_9"}).to_string();
        let (events, error) = run(&[&line]);
        assert!(events.is_empty());
        let error = error.expect("an error");
        assert_eq!(error.kind(), kind, "{wire}");
        assert_eq!(error.request_id(), Some("req_9"));
    }
}

/// Frames of a recording, each parsed as a `serde_json::Value`.
fn frames(bytes: &[u8]) -> Vec<Value> {
    let mut out = Vec::new();
    let mut decoder = Framer::new(Framing::SseOrJsonLines);
    let mut collect = |data: &[u8]| {
        if let Ok(value) = serde_json::from_slice(data) {
            out.push(value);
        }
        Ok(())
    };
    decoder.push(bytes, &mut collect).expect("decodes");
    decoder.finish(&mut collect).expect("decodes");
    out
}

#[test]
fn parsed_values_translate_like_json_text() {
    // The agent-runtime provider feeds `stream_event` values; they must give the same events.
    for path in [
        "ai/anthropic-web-search-tool.1.chunks.txt",
        "llm-anthropic/test_stream_events_thinking.sse",
        "rig/anthropic__messages_thinking__redacted_thinking_streaming.sse",
        "ai/anthropic-mcp.1.chunks.txt",
    ] {
        let bytes = std::fs::read(fixtures_dir().join(path)).expect("fixture");
        let mut translator = Translator::new();
        let mut events = Vec::new();
        for frame in frames(&bytes) {
            translator.push_value(&frame).expect("translates");
            events.extend(translator.drain());
        }
        let replayed = crate::common::replay(&bytes);
        assert_eq!(without_timings(&events), without_timings(&replayed[0].events), "{path}");
        assert!(validate(events.iter().map(Ok)).is_ok());
    }
}

fn run_with_output_tool(lines: &[&str]) -> Vec<Event> {
    let mut translator = Translator::new().with_output_tool("weather");
    let mut events = Vec::new();
    for line in lines {
        translator.push_json(line).expect("translates");
        events.extend(translator.drain());
    }
    events
}

#[test]
fn output_tool_input_streams_as_text_and_no_tool_call_shows() {
    let events = run_with_output_tool(&[
        START,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"weather","input":{}}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\": "}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"Paris\"}"}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":5}}"#,
        r#"{"type":"message_stop"}"#,
    ]);
    assert!(validate(events.iter().map(Ok)).is_ok());
    let texts: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::TextDelta { index: 0, text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, [r#"{"city": "#, r#""Paris"}"#]);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::ToolCallStart { .. } | Event::ToolCall { .. }))
    );
    assert_eq!(finish_of(&events), Some(&FinishReason::Stop));
}

#[test]
fn output_tool_beside_a_host_call_keeps_tool_use_and_a_whole_block_is_one_delta() {
    let message =
        json!({"type":"message_start","message":{"id":"msg_1","model":"m","stop_reason":"tool_use","content":[
        {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Oslo"}},
        {"type":"tool_use","id":"toolu_2","name":"weather","input":{"city":"Oslo","celsius":-3}}
    ],"usage":{"input_tokens":3,"output_tokens":4}}})
        .to_string();
    let events = run_with_output_tool(&[&message, r#"{"type":"message_stop"}"#]);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ToolCall { name, .. } if name == "get_weather"))
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::TextDelta { index: 1, text } if text == r#"{"city":"Oslo","celsius":-3}"#)),
        "{events:?}"
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::ToolCall { name, .. } if name == "weather"))
    );
    assert_eq!(finish_of(&events), Some(&FinishReason::ToolUse));
}

#[test]
fn thinking_tokens_are_the_reasoning_usage() {
    let (events, error) = run(&[
        START,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":40,"output_tokens_details":{"thinking_tokens":25}}}"#,
        r#"{"type":"message_stop"}"#,
    ]);
    assert!(error.is_none(), "{error:?}");
    let Some(Event::Finish { usage, .. }) = events.last() else {
        panic!("no Finish: {events:?}");
    };
    assert_eq!((usage.output, usage.reasoning), (Some(40), Some(25)));
}

#[test]
fn stop_details_and_the_stop_sequence_reach_the_host_and_never_go_back() {
    let refusal = json!({"type": "refusal", "category": "cyber", "explanation": "Blocked under the usage policy.",
        "recommended_model": "claude-other"});
    let delta = json!({"type": "message_delta", "delta": {"stop_reason": "refusal", "stop_sequence": null,
        "stop_details": refusal}, "usage": {"output_tokens": 3}})
    .to_string();
    let text = r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"No."}}"#;
    let (events, error) = run(&[
        START,
        text,
        r#"{"type":"content_block_stop","index":0}"#,
        &delta,
        r#"{"type":"message_stop"}"#,
    ]);
    assert!(error.is_none(), "{error:?}");
    let opaque: Vec<&Value> = events
        .iter()
        .filter_map(|e| match e {
            Event::Opaque { data, .. } => Some(data),
            _ => None,
        })
        .collect();
    assert_eq!(opaque, [&json!({"type": "stop_details", "stop_details": refusal})]);
    assert_eq!(finish_of(&events), Some(&FinishReason::Refusal));

    // The stop sequence that fired; no `stop_details` object, no empty sequence.
    let fired = r#"{"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"END","stop_details":null},"usage":{"output_tokens":3}}"#;
    let (events, _) = run(&[START, fired, r#"{"type":"message_stop"}"#]);
    assert!(events.iter().any(
        |e| matches!(e, Event::Opaque { data, .. } if *data == json!({"type": "stop_details", "stop_sequence": "END"}))
    ));
    let plain = r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":"","stop_details":null},"usage":{"output_tokens":3}}"#;
    let (events, _) = run(&[START, plain, r#"{"type":"message_stop"}"#]);
    assert!(!events.iter().any(|e| matches!(e, Event::Opaque { .. })), "{events:?}");

    // The answer goes back as its text alone.
    let (events, _) = run(&[
        START,
        text,
        r#"{"type":"content_block_stop","index":0}"#,
        &delta,
        r#"{"type":"message_stop"}"#,
    ]);
    let mut builder = patchbay_core::kit::ContentBuilder::default();
    events.iter().for_each(|e| builder.push(e));
    let messages = [
        patchbay_core::Message::user("Hi."),
        patchbay_core::Message::new(patchbay_core::Role::Assistant, builder.finish()),
        patchbay_core::Message::user("Why?"),
    ];
    let request = patchbay_anthropic::build_request(&messages, &patchbay_core::ToolSet::new(), "m", None, 1024)
        .expect("request builds");
    assert_eq!(
        request.body["messages"][1]["content"],
        json!([{"type": "text", "text": "No."}])
    );
    assert!(request.warnings.is_empty(), "{:?}", request.warnings);
}

#[test]
fn a_block_index_started_again_after_its_stop_is_a_protocol_error() {
    // Found by fuzzing: restarting a stopped tool_use index repeated its `ToolCall` and id.
    let block = r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}"#;
    let stop = r#"{"type":"content_block_stop","index":0}"#;
    let (events, error) = run(&[START, block, stop, block]);
    let error = error.expect("the restart is refused");
    assert_eq!(error.kind(), ErrorKind::Protocol);
    assert!(error.to_string().contains("content block 0 started twice"), "{error}");
    let calls = events.iter().filter(|e| matches!(e, Event::ToolCall { .. })).count();
    assert_eq!(calls, 1);
    assert!(validate(events.iter().map(Ok).chain([Err(&error)])).is_ok());
}
