//! The translator alone, on hand-made `/api/chat` bodies: no HTTP.

use patchbay_conformance::RecordingExt;
use patchbay_conformance::{Recording, split_randomly};
use patchbay_core::kit::{Driver, StreamLimits};
use patchbay_core::{ErrorKind, Event, FinishReason, Limit, ProviderError, Signal};
use patchbay_ollama::OllamaTranslator;

/// A response with thinking, multi-byte text, two whole tool calls in one line and the end.
const BODY: &str = concat!(
    r#"{"model":"qwen3","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":"","thinking":"The user wants "},"done":false}"#,
    "\n",
    r#"{"model":"qwen3","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":"","thinking":"the weather."},"done":false}"#,
    "\r\n",
    r#"{"model":"qwen3","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":"Grüße 🎉 "},"done":false}"#,
    "\n\n",
    r#"{"model":"qwen3","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Köln"}}},{"function":{"name":"get_weather","arguments":{"city":"Tokyo"}}}]},"done":false}"#,
    "\n",
    r#"{"model":"qwen3","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","total_duration":5,"prompt_eval_count":31,"eval_count":12}"#,
    "\n",
);

/// Feed `chunks`, end the body, and collect what comes out until the first error.
fn translate(translator: OllamaTranslator, chunks: &[&[u8]]) -> Recording {
    patchbay_core::kit::translate(translator, chunks.iter().copied())
}

fn whole(body: &str) -> Recording {
    translate(OllamaTranslator::new("qwen3", Vec::new()), &[body.as_bytes()])
}

#[test]
fn a_body_split_at_random_byte_boundaries_gives_the_same_events() {
    let reference = whole(BODY);
    reference.validate().expect("a valid stream");
    assert!(reference.error.is_none(), "{:?}", reference.error);
    for seed in 0..20 {
        for max in [1, 3, 17, 200] {
            let chunks = split_randomly(BODY.as_bytes(), seed, max);
            let chunks: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
            let split = translate(OllamaTranslator::new("qwen3", Vec::new()), &chunks);
            assert_eq!(
                split.without_timings(),
                reference.without_timings(),
                "seed {seed}, max {max}"
            );
        }
    }
}

#[test]
fn whole_tool_calls_get_stable_ids_and_end_with_tool_use() {
    let recording = translate(
        OllamaTranslator::new("qwen3", Vec::new()).with_first_call(3),
        &[BODY.as_bytes()],
    );
    let calls: Vec<(&str, &serde_json::Value)> = recording
        .events
        .iter()
        .filter_map(|event| match event {
            Event::ToolCall { id, input, .. } => Some((id.as_str(), input)),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].0, "call_3");
    assert_eq!(calls[1].0, "call_4");
    assert_eq!(calls[0].1["city"], "Köln");
    assert_eq!(recording.text(), "Grüße 🎉 ");
    let Some(Event::Finish { reason, usage, .. }) = recording.events.last() else {
        panic!("ends with Finish: {:?}", recording.events);
    };
    assert_eq!(*reason, FinishReason::ToolUse);
    assert_eq!((usage.input, usage.output), (Some(31), Some(12)));
}

#[test]
fn done_reason_length_is_length() {
    let body = concat!(
        r#"{"message":{"role":"assistant","content":"Once upon"},"done":false}"#,
        "\n",
        r#"{"message":{"role":"assistant","content":""},"done":true,"done_reason":"length","eval_count":2}"#,
    );
    let recording = whole(body);
    recording.validate().expect("a valid stream");
    assert!(matches!(
        recording.events.last(),
        Some(Event::Finish {
            reason: FinishReason::Length,
            ..
        })
    ));
}

#[test]
fn an_error_line_is_a_typed_error_that_ends_the_stream() {
    let body = concat!(
        r#"{"message":{"role":"assistant","content":"Here is"},"done":false}"#,
        "\n",
        r#"{"error":"an error was encountered while running the model: unexpected EOF"}"#,
        "\n",
        r#"{"message":{"role":"assistant","content":" more"},"done":false}"#,
        "\n",
    );
    let recording = whole(body);
    recording.validate().expect("nothing follows the error");
    let error = recording.error.as_ref().expect("an error");
    assert_eq!(error.kind(), ErrorKind::Server);
    assert!(error.message().contains("unexpected EOF"), "{error}");
    assert_eq!(error.facts().provider.as_deref(), Some("ollama"));
    assert_eq!(recording.text(), "Here is");
}

#[tokio::test]
async fn a_line_past_the_cap_is_a_typed_limit_error_however_it_is_cut() {
    let line = format!(
        r#"{{"message":{{"role":"assistant","content":"{}"}},"done":false}}"#,
        "x".repeat(4096)
    );
    for chunk in [1, 7, 4096, 10_000] {
        let chunks: Vec<Result<Vec<u8>, ProviderError>> =
            line.as_bytes().chunks(chunk).map(|c| Ok(c.to_vec())).collect();
        // The cap is the driver's (the limits' `max_line_bytes`), as the provider runs it.
        let limits = StreamLimits::default().with_max_line_bytes(1024);
        let events = Driver::new(
            futures::stream::iter(chunks),
            OllamaTranslator::new("m", Vec::new()),
            &Signal::new(),
        )
        .with_limits(&limits)
        .with_provider("ollama")
        .into_stream();
        let recording = Recording::collect(events).await;
        let error = recording.error.as_ref().expect("the cap trips");
        assert_eq!(error.kind(), ErrorKind::Protocol, "chunks of {chunk}");
        assert_eq!(error.limit(), Some(Limit::LineLength), "chunks of {chunk}");
        assert!(recording.text().is_empty(), "chunks of {chunk}");
    }
}

#[test]
fn a_body_that_ends_before_its_done_line_is_a_protocol_error() {
    let recording = whole(r#"{"message":{"role":"assistant","content":"One, two,"},"done":false}"#);
    assert_eq!(
        recording.text(),
        "One, two,",
        "the last line counts without its newline"
    );
    let error = recording.error.as_ref().expect("truncated");
    assert_eq!(error.kind(), ErrorKind::Protocol);
    recording.validate().expect("an error ends the stream");
}

#[test]
fn a_line_that_is_not_json_is_a_protocol_error() {
    let recording = whole("<html>502 Bad Gateway</html>\n");
    assert_eq!(recording.error.as_ref().map(|e| e.kind()), Some(ErrorKind::Protocol));
}

#[test]
fn absurd_usage_numbers_cost_their_value_not_the_stream() {
    let recording = whole(r#"{"done":true,"done_reason":"stop","prompt_eval_count":-5,"eval_count":1e30}"#);
    assert!(recording.error.is_none(), "{:?}", recording.error);
    let Some(Event::Finish { usage, .. }) = recording.events.last() else {
        panic!("ends with Finish: {:?}", recording.events);
    };
    assert_eq!((usage.input, usage.output), (Some(0), Some(u64::MAX)));
}
