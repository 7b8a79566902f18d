#![allow(clippy::unwrap_used)]

use patchbay_core::kit::{ContentBuilder, Recording, translate};
use patchbay_core::{ContentBlock, ErrorKind, Event, FinishReason, Message};
use serde_json::{Value, json};

use super::*;

/// A body of SSE frames, one per chunk, as the API sends them.
fn sse(chunks: &[Value]) -> Vec<u8> {
    chunks
        .iter()
        .flat_map(|chunk| format!("data: {chunk}\r\n\r\n").into_bytes())
        .collect()
}

fn run(chunks: &[Value]) -> Recording {
    run_with(Translator::new("gemini-2.5-flash"), chunks)
}

fn run_with(translator: Translator, chunks: &[Value]) -> Recording {
    let body = sse(chunks);
    let recording = translate(translator, [body.as_slice()]);
    if let Err(violations) = recording.validate() {
        panic!("invalid events: {violations:?}\n{:#?}", recording.events);
    }
    recording
}

fn parts(parts: Value) -> Value {
    json!({"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}]})
}

fn last(parts: Value, reason: &str, usage: Value) -> Value {
    json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": reason, "index": 0}],
        "usageMetadata": usage,
        "modelVersion": "gemini-2.5-flash",
        "responseId": "resp-1"
    })
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

#[test]
fn text_streams_as_one_block_with_the_last_usage() {
    let recording = run(&[
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hel"}]}, "index": 0}],
               "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 1, "totalTokenCount": 10},
               "modelVersion": "gemini-2.5-flash-001", "responseId": "abc"}),
        parts(json!([{"text": "lo"}])),
        last(
            json!([{"text": "!"}]),
            "STOP",
            json!({"promptTokenCount": 9, "candidatesTokenCount": 3, "thoughtsTokenCount": 4, "cachedContentTokenCount": 2}),
        ),
    ]);
    assert!(
        matches!(&recording.events[0], Event::Started { response_id: Some(id), model, .. } if id == "abc" && model == "gemini-2.5-flash-001")
    );
    assert_eq!(recording.text(), "Hello!");
    let (reason, usage) = finish(&recording);
    assert_eq!(reason, FinishReason::Stop);
    assert_eq!(
        (usage.input, usage.output, usage.cache_read, usage.reasoning),
        (Some(7), Some(7), Some(2), Some(4))
    );
    assert_eq!(content(&recording), vec![ContentBlock::text("Hello!")]);
}

#[test]
fn usage_counts_that_go_down_are_taken_as_sent() {
    let recording = run(&[
        json!({"candidates": [{"content": {"parts": [{"text": "a"}]}}], "usageMetadata": {"promptTokenCount": 50, "candidatesTokenCount": 30}}),
        last(
            json!([{"text": "b"}]),
            "STOP",
            json!({"promptTokenCount": 40, "candidatesTokenCount": 2}),
        ),
    ]);
    let (_, usage) = finish(&recording);
    assert_eq!((usage.input, usage.output), (Some(40), Some(2)));
}

#[test]
fn signatures_stay_on_their_parts_through_the_content_builder() {
    let recording = run(&[
        parts(json!([{"text": "Let me think", "thought": true}])),
        parts(json!([{"text": " more.", "thought": true, "thoughtSignature": "c2lnLXRob3VnaHQ="}])),
        parts(
            json!([{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "c2lnLWNhbGw="}]),
        ),
        last(
            json!([{"functionCall": {"name": "get_time", "args": {}}}]),
            "STOP",
            json!({"promptTokenCount": 5}),
        ),
    ]);
    assert_eq!(finish(&recording).0, FinishReason::ToolUse);
    let blocks = content(&recording);
    assert_eq!(blocks.len(), 3, "{blocks:#?}");
    assert!(
        matches!(&blocks[0], ContentBlock::Thinking { text, signature: Some(s) } if text == "Let me think more." && s == "c2lnLXRob3VnaHQ=")
    );
    assert!(
        matches!(&blocks[1], ContentBlock::ToolUse { id, name, signature: Some(s), .. } if id == "call_1" && name == "get_weather" && s == "c2lnLWNhbGw=")
    );
    assert!(matches!(&blocks[2], ContentBlock::ToolUse { id, signature: None, .. } if id == "call_2"));
}

#[test]
fn a_signature_on_an_empty_text_part_joins_the_open_text_or_stands_alone() {
    let joined = run(&[
        parts(json!([{"text": "The answer is 4."}])),
        last(
            json!([{"text": "", "thoughtSignature": "c2lnLXRleHQ="}]),
            "STOP",
            json!({}),
        ),
    ]);
    assert!(
        matches!(&content(&joined)[..], [ContentBlock::Text { text, signature: Some(s), .. }] if text == "The answer is 4." && s == "c2lnLXRleHQ=")
    );
    let alone = run(&[
        parts(json!([{"functionCall": {"name": "f", "args": {}}}])),
        last(json!([{"text": "", "thoughtSignature": "c2ln"}]), "STOP", json!({})),
    ]);
    assert!(
        matches!(&content(&alone)[..], [ContentBlock::ToolUse { .. }, ContentBlock::Thinking { text, signature: Some(s) }] if text.is_empty() && s == "c2ln")
    );
}

#[test]
fn calls_in_one_chunk_and_over_several_get_ids_numbered_on_from_the_history() {
    let history = vec![
        Message::user("hi"),
        Message::new(
            patchbay_core::Role::Assistant,
            vec![ContentBlock::tool_use("call_1", "f", json!({}))],
        ),
    ];
    let translator = Translator::new("m").with_history(&history);
    let recording = run_with(
        translator,
        &[
            parts(
                json!([{"text": "Checking."}, {"functionCall": {"name": "a", "args": {"x": 1}}}, {"functionCall": {"name": "b"}}]),
            ),
            last(
                json!([{"functionCall": {"id": "wire-id", "name": "c", "args": {}}}]),
                "STOP",
                json!({}),
            ),
        ],
    );
    let calls: Vec<(String, String, Value)> = recording
        .events
        .iter()
        .filter_map(|event| match event {
            Event::ToolCall { id, name, input, .. } => Some((id.clone(), name.clone(), input.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls,
        vec![
            ("call_2".into(), "a".into(), json!({"x": 1})),
            ("call_3".into(), "b".into(), json!({})),
            ("wire-id".into(), "c".into(), json!({})),
        ]
    );
}

#[test]
fn code_execution_is_a_provider_run_tool_with_its_result() {
    let recording = run(&[
        parts(json!([{"executableCode": {"language": "PYTHON", "code": "print(2+2)"}}])),
        parts(json!([{"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "4\n"}}])),
        last(json!([{"text": "It is 4."}]), "STOP", json!({})),
    ]);
    assert_eq!(finish(&recording).0, FinishReason::Stop);
    let result = recording.events.iter().find_map(|event| match event {
        Event::ToolResult { name, result, .. } => Some((name.clone(), result.clone())),
        _ => None,
    });
    let (name, result) = result.expect("a result");
    assert_eq!(name, CODE_EXECUTION);
    assert_eq!(result.text_content(), "4\n");
    assert_eq!(result.metadata, Some(json!({"outcome": "OUTCOME_OK"})));
    let blocks = content(&recording);
    assert!(
        matches!(&blocks[0], ContentBlock::ToolUse { executed_by: ExecutedBy::Provider, input, .. } if input["code"] == "print(2+2)")
    );
    assert!(matches!(&blocks[1], ContentBlock::ToolResult { is_error: false, .. }));
    let orphan = translate(
        Translator::new("m"),
        [sse(&[parts(json!([{"codeExecutionResult": {"outcome": "OUTCOME_OK"}}]))]).as_slice()],
    );
    assert_eq!(orphan.error.map(|e| e.kind()), Some(ErrorKind::Protocol));
}

#[test]
fn grounding_becomes_sources_with_their_spans_and_the_metadata_is_kept() {
    let grounding = json!({
        "webSearchQueries": ["who won euro 2024"],
        "searchEntryPoint": {"renderedContent": "<div>chips</div>"},
        "groundingChunks": [
            {"web": {"uri": "https://example.com/a", "title": "example.com"}},
            {"web": {"uri": "https://example.org/b", "title": "example.org"}}
        ],
        "groundingSupports": [
            {"segment": {"startIndex": 0, "endIndex": 20, "text": "Spain won Euro 2024"}, "groundingChunkIndices": [1, 0]}
        ]
    });
    let recording = run(&[json!({
        "candidates": [{"content": {"parts": [{"text": "Spain won Euro 2024."}]}, "finishReason": "STOP", "groundingMetadata": grounding,
                        "urlContextMetadata": {"urlMetadata": [{"retrievedUrl": "https://example.net", "urlRetrievalStatus": "URL_RETRIEVAL_STATUS_SUCCESS"}]}}]
    })]);
    let sources: Vec<_> = recording
        .events
        .iter()
        .filter_map(|event| match event {
            Event::Source(source) => Some(source.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(sources.len(), 3);
    assert_eq!(
        sources[0].supports,
        Some(patchbay_core::source::Span { start: 0, end: 20 })
    );
    assert_eq!(sources[0].title.as_deref(), Some("example.com"));
    assert_eq!(
        sources[0].cited_text, None,
        "the segment is the answer's text, not the source's"
    );
    assert_eq!(
        sources[0].data["groundingSupports"][0]["segment"]["text"],
        "Spain won Euro 2024"
    );
    assert_eq!(sources[0].index, 0);
    assert_eq!(sources[2].data["urlRetrievalStatus"], "URL_RETRIEVAL_STATUS_SUCCESS");
    assert!(recording.events.iter().any(
        |event| matches!(event, Event::Opaque { data, .. } if data["groundingMetadata"]["searchEntryPoint"].is_object())
    ));
}

#[test]
fn filters_and_odd_finishes_keep_their_raw_value() {
    for (raw, expected) in [
        ("SAFETY", FinishReason::ContentFilter),
        ("RECITATION", FinishReason::ContentFilter),
        ("PROHIBITED_CONTENT", FinishReason::ContentFilter),
        (
            "MALFORMED_FUNCTION_CALL",
            FinishReason::Other("MALFORMED_FUNCTION_CALL".into()),
        ),
        ("MAX_TOKENS", FinishReason::Length),
    ] {
        let recording = run(&[
            json!({"candidates": [{"content": {"parts": [{"text": "x"}]}, "finishReason": raw,
            "finishMessage": "why", "safetyRatings": [{"category": "HARM_CATEGORY_HARASSMENT", "probability": "HIGH", "blocked": true}]}]}),
        ]);
        assert_eq!(finish(&recording).0, expected, "{raw}");
        let details = recording.events.iter().find_map(|event| match event {
            Event::Opaque { data, .. } if data.get("finishReason").is_some() => Some(data.clone()),
            _ => None,
        });
        if raw == "MAX_TOKENS" {
            assert!(details.is_none());
        } else {
            let details = details.expect("the raw finish");
            assert_eq!(details["finishReason"], raw);
            assert_eq!(details["safetyRatings"][0]["blocked"], true);
        }
    }
}

#[test]
fn a_blocked_prompt_is_a_refusal_with_its_feedback() {
    let recording = run(&[json!({
        "promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
        "usageMetadata": {"promptTokenCount": 12, "totalTokenCount": 12}
    })]);
    assert_eq!(finish(&recording).0, FinishReason::Refusal);
    assert!(recording.events.iter().any(|event| matches!(event, Event::Opaque { data, .. } if data["promptFeedback"]["blockReason"] == "PROHIBITED_CONTENT")));
}

#[test]
fn an_error_in_the_stream_is_typed_with_its_retry_delay() {
    let body = sse(&[
        parts(json!([{"text": "Hi"}])),
        json!({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE",
               "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2s"}]}}),
    ]);
    let recording = translate(Translator::new("m"), [body.as_slice()]);
    assert_eq!(recording.text(), "Hi");
    let error = recording.error.expect("an error");
    assert_eq!(error.kind(), ErrorKind::Overloaded);
    assert_eq!(error.retry_after(), Some(std::time::Duration::from_secs(2)));
}

#[test]
fn a_body_cut_before_the_finish_is_a_protocol_error() {
    let body = sse(&[parts(json!([{"text": "One, two,"}]))]);
    let recording = translate(Translator::new("m"), [body.as_slice()]);
    assert_eq!(recording.text(), "One, two,");
    assert_eq!(recording.error.map(|e| e.kind()), Some(ErrorKind::Protocol));
    let broken = translate(Translator::new("m"), [&b"data: {\"candidates\": [\n\n"[..]]);
    assert_eq!(broken.error.map(|e| e.kind()), Some(ErrorKind::Protocol));
}

#[test]
fn a_whole_json_answer_reads_like_the_stream() {
    let mut translator = Translator::new("m");
    let body = json!([
        parts(json!([{"text": "a"}])),
        last(json!([{"text": "b"}]), "STOP", json!({}))
    ])
    .to_string();
    translator.whole_body(body.as_bytes()).unwrap();
    let mut texts = String::new();
    while let Some(event) = translator.next_event() {
        if let Event::TextDelta { text, .. } = event {
            texts.push_str(&text);
        }
    }
    assert_eq!(texts, "ab");
}

#[test]
fn other_parts_are_kept_verbatim() {
    let recording = run(&[last(
        json!([{"inlineData": {"mimeType": "image/png", "data": "iVBOR"}, "thoughtSignature": "c2ln"}]),
        "STOP",
        json!({}),
    )]);
    assert!(
        recording
            .events
            .iter()
            .any(|event| matches!(event, Event::Opaque { data, .. }
        if data["inlineData"]["mimeType"] == "image/png" && data["thoughtSignature"] == "c2ln"))
    );
}

#[test]
fn streamed_arguments_are_built_by_path_until_the_closer() {
    let call = |value: Value| parts(json!([{"functionCall": value}]));
    let recording = run(&[
        parts(json!([{"functionCall": {"name": "cookRecipe", "willContinue": true}, "thoughtSignature": "c2ln"}])),
        call(
            json!({"partialArgs": [{"jsonPath": "$.recipe.steps[0]", "stringValue": "Preheat", "willContinue": true}], "willContinue": true}),
        ),
        call(
            json!({"partialArgs": [{"jsonPath": "$.recipe.steps[0]", "stringValue": " the oven.", "willContinue": true}], "willContinue": true}),
        ),
        call(json!({"partialArgs": [{"jsonPath": "$.recipe.steps[0]", "stringValue": ""}], "willContinue": true})),
        call(json!({"willContinue": true})),
        call(json!({"partialArgs": [{"jsonPath": "$.recipe.serves", "numberValue": 4}], "willContinue": true})),
        call(json!({})),
        call(json!({"name": "writeItems", "willContinue": true})),
        call(json!({"partialArgs": [{"jsonPath": "$.operations[1].price", "numberValue": 0.3}]})),
        last(json!([{"text": ""}]), "STOP", json!({})),
    ]);
    let calls: Vec<(String, Value, Option<String>)> = recording
        .events
        .iter()
        .filter_map(|event| match event {
            Event::ToolCall {
                name, input, signature, ..
            } => Some((name.clone(), input.clone(), signature.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls,
        vec![
            (
                "cookRecipe".into(),
                json!({"recipe": {"steps": ["Preheat the oven."], "serves": 4}}),
                Some("c2ln".into())
            ),
            ("writeItems".into(), json!({"operations": [null, {"price": 0.3}]}), None),
        ]
    );
    assert_eq!(finish(&recording).0, FinishReason::ToolUse);
}

#[test]
fn a_call_still_streaming_at_the_finish_is_closed_there() {
    let recording = run(&[
        parts(json!([{"functionCall": {"name": "f", "willContinue": true}}])),
        last(
            json!([{"functionCall": {"partialArgs": [{"jsonPath": "$.a", "stringValue": "x", "willContinue": true}], "willContinue": true}}]),
            "STOP",
            json!({}),
        ),
    ]);
    assert!(
        recording
            .events
            .iter()
            .any(|e| matches!(e, Event::ToolCall { input, .. } if input == &json!({"a": "x"})))
    );
    let orphan = translate(
        Translator::new("m"),
        [sse(&[parts(
            json!([{"functionCall": {"partialArgs": [{"jsonPath": "$.a", "numberValue": 1}]}}]),
        )])
        .as_slice()],
    );
    assert_eq!(orphan.error.map(|e| e.kind()), Some(ErrorKind::Protocol));
    let bad_path = translate(
        Translator::new("m"),
        [sse(&[
            parts(json!([{"functionCall": {"name": "f", "willContinue": true}}])),
            parts(json!([{"functionCall": {"partialArgs": [{"jsonPath": "$[123456789]", "numberValue": 1}]}}])),
        ])
        .as_slice()],
    );
    assert_eq!(bad_path.error.map(|e| e.kind()), Some(ErrorKind::Protocol));
}

#[test]
fn citations_repeated_over_chunks_are_sources_once_with_their_spans() {
    let citation = json!({"startIndex": 4, "endIndex": 20, "uri": "https://example.com/poem", "license": "mit"});
    let recording = run(&[
        json!({"candidates": [{"content": {"parts": [{"text": "The poem goes like this"}]}, "citationMetadata": {"citations": [citation]}}]}),
        json!({"candidates": [{"content": {"parts": [{"text": "."}]}, "finishReason": "RECITATION",
               "citationMetadata": {"citationSources": [citation, {"startIndex": 0, "endIndex": 3}]}}]}),
    ]);
    let sources: Vec<_> = recording
        .events
        .iter()
        .filter_map(|event| match event {
            Event::Source(source) => Some(source.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(sources.len(), 1, "{sources:#?}");
    assert_eq!(
        sources[0].supports,
        Some(patchbay_core::source::Span { start: 4, end: 20 })
    );
    assert_eq!(sources[0].data["license"], "mit");
    assert_eq!(finish(&recording).0, FinishReason::ContentFilter);
}
