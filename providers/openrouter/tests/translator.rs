//! Synthetic edge cases of the chat-completions wire, on the translator without HTTP.

use patchbay_conformance::{split_randomly, text_of};
use patchbay_core::kit::{Framer, Framing, Wire};
use patchbay_core::{ErrorKind, Event, FinishReason, validate::validate};
use patchbay_openrouter::translate::Translator;
use serde_json::{Value, json};

use crate::common::translate;

/// An SSE body from chunk JSON values, ending with `[DONE]`.
fn sse(chunks: &[Value]) -> Vec<u8> {
    let mut body = Vec::new();
    for chunk in chunks {
        body.extend_from_slice(format!("data: {chunk}\n\n").as_bytes());
    }
    body.extend_from_slice(b"data: [DONE]\n\n");
    body
}

fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({ "id": "r1", "model": "m", "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }] })
}

fn call(index: Option<u32>, id: Option<&str>, name: Option<&str>, arguments: &str) -> Value {
    let mut call = json!({ "function": { "arguments": arguments } });
    if let Some(index) = index {
        call["index"] = json!(index);
    }
    if let Some(id) = id {
        call["id"] = json!(id);
    }
    if let Some(name) = name {
        call["function"]["name"] = json!(name);
    }
    json!({ "tool_calls": [call] })
}

/// Translate, check the validator and split invariance, and return the events.
fn run(body: &[u8]) -> (Vec<Event>, Option<ErrorKind>) {
    let (events, error) = translate(Framing::DataLines, [body]);
    let items = events.iter().map(Ok).chain(error.iter().map(Err));
    if let Err(violations) = validate(items) {
        panic!("lifecycle violations: {violations:?}\n{events:#?}");
    }
    for seed in 0..20 {
        let chunks = split_randomly(body, seed, 1 + seed as usize * 3);
        let (split, split_error) = translate(Framing::DataLines, chunks.iter().map(Vec::as_slice));
        assert_eq!(split, events, "split with seed {seed} changed the events");
        assert_eq!(split_error.map(|e| e.kind()), error.as_ref().map(|e| e.kind()));
    }
    (events, error.map(|e| e.kind()))
}

fn calls(events: &[Event]) -> Vec<(String, String, Value)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCall { id, name, input, .. } => Some((id.clone(), name.clone(), input.clone())),
            _ => None,
        })
        .collect()
}

fn finish(events: &[Event]) -> Option<FinishReason> {
    events.iter().find_map(|e| match e {
        Event::Finish { reason, .. } => Some(reason.clone()),
        _ => None,
    })
}

/// Frame `bytes` (whole SSE lines) into `translator` as the driver does, without ending it.
fn feed(translator: &mut Translator, bytes: &[u8], out: &mut Vec<Event>) {
    let mut framer = Framer::new(translator.framing());
    framer
        .push(bytes, |data| {
            out.extend(translator.frame(data)?);
            out.extend(std::iter::from_fn(|| translator.next_event()));
            Ok(())
        })
        .expect("valid chunks");
}

#[test]
fn tool_call_not_emitted_before_choice_finished() {
    // The arguments are valid JSON after the second fragment ("{}"-like prefix parses), but
    // more follows: nothing may be emitted until the choice finishes.
    let chunks = [
        chunk(call(Some(0), Some("c1"), Some("f"), ""), None),
        chunk(call(Some(0), None, None, "{\"a\": 1}"), None),
        chunk(call(Some(0), None, None, ""), None),
    ];
    let mut translator = Translator::new(Framing::DataLines);
    let mut out = Vec::new();
    let mut body = Vec::new();
    for c in &chunks {
        body.extend_from_slice(format!("data: {c}\n\n").as_bytes());
    }
    feed(&mut translator, &body, &mut out);
    assert!(
        !out.iter()
            .any(|e| matches!(e, Event::ToolCall { .. } | Event::ToolCallStart { .. })),
        "a tool call was emitted before its choice finished: {out:?}"
    );
    let end = format!("data: {}\n\n", chunk(json!({}), Some("tool_calls")));
    feed(&mut translator, end.as_bytes(), &mut out);
    assert_eq!(calls(&out), vec![("c1".into(), "f".into(), json!({"a": 1}))]);
}

#[test]
fn ids_and_names_arriving_late_and_indexes_not_starting_at_zero() {
    let body = sse(&[
        chunk(call(Some(3), None, None, "{\"x\":"), None),
        chunk(call(Some(3), Some("late"), Some("lookup"), " 1}"), None),
        chunk(call(Some(5), Some("second"), Some("other"), "{}"), None),
        chunk(json!({}), Some("tool_calls")),
    ]);
    let (events, error) = run(&body);
    assert_eq!(error, None);
    assert_eq!(
        calls(&events),
        vec![
            ("late".into(), "lookup".into(), json!({"x": 1})),
            ("second".into(), "other".into(), json!({})),
        ]
    );
    assert_eq!(finish(&events), Some(FinishReason::ToolUse));
}

#[test]
fn missing_index_whole_call_in_one_chunk_and_repeated_names() {
    let body = sse(&[
        chunk(call(None, Some("a"), Some("one"), "{\"k\": \"v\"}"), None),
        chunk(call(None, Some("b"), Some("two"), "{\"n\":"), None),
        chunk(call(None, None, Some("two"), " 2}"), None),
        chunk(json!({}), Some("tool_calls")),
    ]);
    let (events, _) = run(&body);
    assert_eq!(
        calls(&events),
        vec![
            ("a".into(), "one".into(), json!({"k": "v"})),
            ("b".into(), "two".into(), json!({"n": 2}))
        ]
    );
}

#[test]
fn duplicate_and_missing_ids_are_made_unique() {
    let body = sse(&[
        chunk(call(Some(0), Some("dup"), Some("f"), "{}"), None),
        chunk(call(Some(1), Some("dup"), Some("g"), ""), None),
        chunk(call(Some(2), None, Some("h"), ""), None),
        chunk(json!({}), Some("tool_calls")),
    ]);
    let (events, _) = run(&body);
    let ids: Vec<String> = calls(&events).into_iter().map(|(id, _, _)| id).collect();
    assert_eq!(ids, vec!["dup", "dup_2", "call_2"]);
}

#[test]
fn every_call_numbered_zero_with_new_ids_are_separate_calls() {
    let body = sse(&[
        chunk(call(Some(0), Some("a"), Some("f"), "{\"i\": 1}"), None),
        chunk(call(Some(0), Some("b"), Some("f"), "{\"i\": 2}"), None),
        chunk(json!({}), Some("tool_calls")),
    ]);
    let (events, _) = run(&body);
    assert_eq!(calls(&events).len(), 2);
}

#[test]
fn missing_finish_reason_with_tool_calls_means_tool_use() {
    let body = sse(&[
        chunk(call(Some(0), Some("c"), Some("f"), "{}"), None),
        chunk(json!({}), None),
    ]);
    let (events, error) = run(&body);
    assert_eq!(error, None);
    assert_eq!(calls(&events).len(), 1);
    assert_eq!(finish(&events), Some(FinishReason::ToolUse));
}

#[test]
fn truncated_arguments_become_an_incomplete_call_not_a_tool_call() {
    let body = sse(&[
        chunk(call(Some(0), Some("c"), Some("f"), "{\"note\": \"The"), None),
        chunk(json!({}), Some("length")),
    ]);
    let (events, _) = run(&body);
    assert!(calls(&events).is_empty());
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Opaque { data, .. } if data["type"] == "incomplete_tool_call"))
    );
    assert_eq!(finish(&events), Some(FinishReason::Length));
}

#[test]
fn usage_only_final_chunk_with_cost_cache_and_reasoning_tokens() {
    let body = sse(&[
        chunk(json!({"content": "hi"}), Some("stop")),
        json!({ "id": "r1", "choices": [], "usage": {
            "prompt_tokens": 100, "completion_tokens": 20,
            "prompt_tokens_details": { "cached_tokens": 60, "cache_write_tokens": 10 },
            "completion_tokens_details": { "reasoning_tokens": 5 },
            "cost": 0.0125,
        }}),
    ]);
    let (events, _) = run(&body);
    let Some(Event::Finish { usage, .. }) = events.last() else {
        panic!("no finish: {events:?}")
    };
    assert_eq!(usage.input, Some(30));
    assert_eq!(usage.cache_read, Some(60));
    assert_eq!(usage.cache_write, Some(10));
    assert_eq!(usage.output, Some(20));
    assert_eq!(usage.reasoning, Some(5));
    assert_eq!(usage.cost_usd, Some(0.0125));
}

#[test]
fn comments_crlf_and_other_fields_are_ignored() {
    let body = format!(
        ": OPENROUTER PROCESSING\r\n\r\nevent: message\r\nid: 1\r\ndata: {}\r\n\r\n: OPENROUTER PROCESSING\r\n\r\ndata: {}\r\n\r\ndata: [DONE]\r\n\r\n",
        chunk(json!({"content": "a"}), None),
        chunk(json!({"content": "b"}), Some("stop"))
    );
    let (events, error) = run(body.as_bytes());
    assert_eq!(error, None);
    assert_eq!(text_of(&events), "ab");
}

#[test]
fn error_inside_a_200_stream_is_typed_and_keeps_partial_output() {
    let mut body = Vec::new();
    body.extend_from_slice(format!("data: {}\n\n", chunk(json!({"content": "partial"}), None)).as_bytes());
    body.extend_from_slice(b"data: {\"error\":{\"code\":502,\"message\":\"Provider returned error\"}}\n\n");
    let (events, error) = run(&body);
    assert!(matches!(&events[1], Event::TextDelta { text, .. } if text == "partial"));
    assert_eq!(error, Some(ErrorKind::Server));

    let overloaded = b"data: {\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy\",\"code\":529}}\n\n";
    assert_eq!(run(overloaded).1, Some(ErrorKind::Overloaded));
    let rate = b"data: {\"error\":{\"message\":\"slow\",\"code\":\"rate_limit_exceeded\"}}\n\n";
    assert_eq!(run(rate).1, Some(ErrorKind::RateLimited));
}

#[test]
fn usage_sent_with_an_in_stream_error_is_reported_before_the_error() {
    let usage = json!({"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19});
    let last_usage = |events: &[Event]| {
        events.iter().rev().find_map(|e| match e {
            Event::Usage(u) => Some((u.input, u.output)),
            _ => None,
        })
    };
    // OpenRouter: the error object and the usage in one chunk.
    let mut body = Vec::new();
    body.extend_from_slice(format!("data: {}\n\n", chunk(json!({"content": "partial"}), None)).as_bytes());
    let failing = json!({"id": "r1", "error": {"code": 502, "message": "Provider returned error"}, "usage": usage,
        "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]});
    body.extend_from_slice(format!("data: {failing}\n\n").as_bytes());
    let (events, error) = run(&body);
    assert_eq!(error, Some(ErrorKind::Server));
    assert_eq!(last_usage(&events), Some((Some(12), Some(7))));

    // finish_reason `error` without an error object, usage in the same chunk.
    let mut body = Vec::new();
    body.extend_from_slice(format!("data: {}\n\n", chunk(json!({"content": "partial"}), None)).as_bytes());
    let mut stopped = chunk(json!({}), Some("error"));
    stopped["usage"] = usage;
    body.extend_from_slice(format!("data: {stopped}\n\n").as_bytes());
    let (events, error) = run(&body);
    assert_eq!(error, Some(ErrorKind::Server));
    assert_eq!(last_usage(&events), Some((Some(12), Some(7))));
}

/// OpenRouter when the upstream provider fails mid-stream: a chunk finished with `length`, then
/// one with `error` and `usage` together and `finish_reason: null`.
#[test]
fn usage_sent_with_an_error_after_a_length_finish_is_reported() {
    let mut body = Vec::new();
    for payload in [
        chunk(json!({"content": "partial"}), None),
        chunk(json!({}), Some("length")),
        json!({"id": "r1", "model": "m", "error": {"code": 502, "message": "Provider returned error"},
            "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19},
            "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": null}]}),
    ] {
        body.extend_from_slice(format!("data: {payload}\n\n").as_bytes());
    }
    let (events, error) = run(&body);
    assert_eq!(error, Some(ErrorKind::Server), "{events:#?}");
    // The usage is the last event, right before the error.
    let usage = match events.last() {
        Some(Event::Usage(u)) => Some((u.input, u.output)),
        _ => None,
    };
    assert_eq!(usage, Some((Some(12), Some(7))), "{events:#?}");
}

#[test]
fn url_citation_annotations_are_sources_of_their_text() {
    let annotation = json!({"type": "url_citation", "url_citation": {"url": "https://a.example/paris", "title": "Paris",
        "start_index": 0, "end_index": 18, "content": "Paris is the capital"}});
    let body = sse(&[
        chunk(
            json!({"role": "assistant", "content": "Paris is the capital of France."}),
            None,
        ),
        chunk(json!({"annotations": [annotation.clone()]}), None),
        // Some servers repeat the list with the last chunk.
        chunk(json!({"annotations": [annotation]}), Some("stop")),
    ]);
    let (events, error) = run(&body);
    assert!(error.is_none());
    let sources: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::Source(s) => Some(s),
            _ => None,
        })
        .collect();
    assert_eq!(sources.len(), 1, "{events:?}");
    let source = sources[0];
    assert_eq!((source.index, source.as_url()), (0, Some("https://a.example/paris")));
    assert_eq!(source.supports, Some(patchbay_core::source::Span { start: 0, end: 18 }));
    assert_eq!(source.cited_text.as_deref(), Some("Paris is the capital"));
}

#[test]
fn refusal_deltas_are_text_with_finish_reason_refusal() {
    let body = sse(&[
        chunk(json!({"content": "", "refusal": "I can't"}), None),
        chunk(json!({"refusal": " help."}), None),
        chunk(json!({}), Some("stop")),
    ]);
    let (events, _) = run(&body);
    assert_eq!(finish(&events), Some(FinishReason::Refusal));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::TextDelta { text, .. } if text == "I can't"))
    );
}

#[test]
fn stream_ending_without_finish_is_a_protocol_error() {
    let body = format!("data: {}\n\n", chunk(json!({"content": "cut"}), None));
    assert_eq!(run(body.as_bytes()).1, Some(ErrorKind::Protocol));
    assert_eq!(run(b"").1, Some(ErrorKind::Protocol));
    assert_eq!(run(b"data: {not json}\n\n").1, Some(ErrorKind::Protocol));
}

#[test]
fn reasoning_details_win_over_duplicated_reasoning_and_signatures_seal_blocks() {
    let body = sse(&[
        chunk(
            json!({"reasoning": "think", "reasoning_details": [{"type": "reasoning.text", "text": "think", "index": 0}]}),
            None,
        ),
        chunk(
            json!({"reasoning_details": [{"type": "reasoning.text", "signature": "sig", "index": 0}]}),
            None,
        ),
        chunk(
            json!({"reasoning_details": [{"type": "reasoning.encrypted", "data": "blob", "id": "rs_1", "format": "openai-responses-v1", "index": 1}]}),
            None,
        ),
        chunk(json!({"reasoning_content": "more"}), None),
        chunk(json!({"content": "answer"}), Some("stop")),
    ]);
    let (events, _) = run(&body);
    let kinds: Vec<(&str, usize)> = events
        .iter()
        .filter_map(|e| match e {
            Event::ReasoningDelta { index, .. } => Some(("reasoning", *index)),
            Event::ReasoningSignature { index, .. } => Some(("signature", *index)),
            Event::RedactedReasoning { index, .. } => Some(("redacted", *index)),
            Event::TextDelta { index, .. } => Some(("text", *index)),
            _ => None,
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("reasoning", 0),
            ("signature", 0),
            ("redacted", 1),
            ("reasoning", 2),
            ("text", 3)
        ]
    );
    let redacted = events.iter().find_map(|e| match e {
        Event::RedactedReasoning { data, .. } => serde_json::from_str::<Value>(data).ok(),
        _ => None,
    });
    assert_eq!(redacted.expect("redacted")["id"], "rs_1");
}

#[test]
fn several_choices_stream_the_first_and_report_the_others() {
    let two = |i: u32, delta: Value, finish: Option<&str>| json!({ "id": "r", "model": "m", "choices": [{ "index": i, "delta": delta, "finish_reason": finish }] });
    let body = sse(&[
        two(0, json!({"content": "A"}), None),
        two(1, json!({"content": "B"}), None),
        two(1, call(Some(0), Some("x"), Some("f"), "{}"), Some("tool_calls")),
        two(0, json!({}), Some("stop")),
    ]);
    let (events, _) = run(&body);
    assert!(calls(&events).is_empty(), "tool calls of another choice must not run");
    let extra = events.iter().find_map(|e| match e {
        Event::Opaque { data, .. } if data["type"] == "extra_choice" => Some(data.clone()),
        _ => None,
    });
    let extra = extra.expect("extra choice reported");
    assert_eq!(extra["text"], "B");
    assert_eq!(extra["tool_calls"][0]["name"], "f");
    assert_eq!(finish(&events), Some(FinishReason::Stop));
}

#[test]
fn huge_line_split_anywhere() {
    let text = "x".repeat(1_000_000);
    let body = sse(&[chunk(json!({ "content": text }), Some("stop"))]);
    for max in [1000, 65_536] {
        let chunks = split_randomly(&body, 3, max);
        let (events, error) = translate(Framing::DataLines, chunks.iter().map(Vec::as_slice));
        assert!(error.is_none());
        assert!(matches!(&events[1], Event::TextDelta { text: t, .. } if t.len() == 1_000_000));
    }
}

#[test]
fn json_lines_framing_without_done() {
    let body = format!(
        "{}\n{}\n",
        chunk(json!({"content": "hi"}), None),
        chunk(json!({}), Some("stop"))
    );
    let (events, error) = translate(Framing::Lines, [body.as_bytes()]);
    assert!(error.is_none());
    assert_eq!(finish(&events), Some(FinishReason::Stop));
}

#[test]
fn replay_detects_framing_and_splits_several_responses() {
    let one = sse(&[chunk(json!({"content": "a"}), Some("stop"))]);
    let mut two = one.clone();
    two.extend_from_slice(&one);
    let responses = patchbay_core::kit::replay(Translator::default, [&two[..]]);
    assert_eq!(responses.len(), 2);
    assert!(responses.iter().all(|r| r.error.is_none() && r.events.len() == 3));
    let lines = format!(
        "{}\n{}\n",
        chunk(json!({"content": "b"}), None),
        chunk(json!({}), Some("stop"))
    );
    let responses = patchbay_core::kit::replay(Translator::default, [lines.as_bytes()]);
    assert_eq!(responses.len(), 1);
    assert!(responses[0].error.is_none());
}

#[test]
fn an_id_arriving_late_on_an_earlier_call_does_not_take_the_later_calls_fragments() {
    // Call 0 learns id `x` after call 1 took it: fragments by id `x` alone still go to the
    // last call holding it (call 1), and the ids are then made unique in order.
    let body = sse(&[
        chunk(call(Some(0), None, Some("f"), "{\"a\":"), None),
        chunk(call(Some(1), Some("x"), Some("g"), "{\"b\":"), None),
        chunk(call(Some(0), Some("x"), None, "1}"), None),
        chunk(call(None, Some("x"), None, "2}"), None),
        chunk(json!({}), Some("tool_calls")),
    ]);
    let (events, error) = run(&body);
    assert!(error.is_none());
    assert_eq!(
        calls(&events),
        [
            ("x".into(), "f".into(), json!({"a": 1})),
            ("x_2".into(), "g".into(), json!({"b": 2})),
        ]
    );
}

#[test]
fn unique_ids_skip_suffixes_a_server_already_used() {
    let ids = ["a_2", "a", "a", "a_2", "a"];
    let mut chunks: Vec<Value> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| chunk(call(Some(i as u32), Some(id), Some("f"), "{}"), None))
        .collect();
    chunks.push(chunk(json!({}), Some("tool_calls")));
    let (events, error) = run(&sse(&chunks));
    assert!(error.is_none());
    let ids: Vec<String> = calls(&events).into_iter().map(|(id, ..)| id).collect();
    assert_eq!(ids, ["a_2", "a", "a_3", "a_2_2", "a_4"]);
}

#[test]
fn absurd_usage_values_saturate_instead_of_overflowing() {
    // Tests build with overflow checks: an unchecked `prompt - cached` would panic here.
    let max = u64::MAX;
    let body = sse(&[
        chunk(json!({"content": "hi"}), Some("stop")),
        json!({ "choices": [], "usage": {
            "prompt_tokens": 10, "completion_tokens": max,
            "prompt_tokens_details": { "cached_tokens": 20, "cache_write_tokens": max },
            "completion_tokens_details": { "reasoning_tokens": max },
        }}),
        json!({ "choices": [], "usage": { "prompt_tokens": max, "prompt_cache_hit_tokens": max } }),
        json!({ "choices": [], "usage": {
            "prompt_tokens": max, "completion_tokens": max,
            "prompt_tokens_details": { "cached_tokens": 1 },
        }}),
    ]);
    let (events, error) = run(&body);
    assert!(error.is_none());
    let usages: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::Usage(usage) => Some(*usage),
            _ => None,
        })
        .collect();
    assert_eq!(usages.len(), 3);
    assert_eq!(
        usages[0].input,
        Some(0),
        "cached > prompt is no input, not an underflow"
    );
    assert_eq!(usages[0].cache_read, Some(20));
    assert_eq!(usages[0].cache_write, Some(max));
    assert_eq!(usages[0].output, Some(max));
    assert_eq!(usages[0].reasoning, Some(max));
    assert_eq!(usages[1].input, Some(0));
    assert_eq!(usages[1].cache_read, Some(max));
    assert_eq!(usages[2].input, Some(max - 1));
    let Some(Event::Finish { usage, .. }) = events.last() else {
        panic!("no finish: {events:?}")
    };
    assert_eq!(*usage, usages[2]);
}

// Scaling. The translator counts the steps of its tool-call and choice bookkeeping
// (`Translator::lookups`: index lookups, calls finalized, ids tried when making ids unique).
// Each test below translates one stream shape with n and with 10 n calls and checks that ten
// times the calls cost at most eleven times the steps: a count, not a timer, so neither a
// slow nor a busy machine can fool it. The main shape runs 10,000 against 100,000 calls; the
// others 1,000 against 10,000, which tells linear from quadratic just as well (10x against
// 100x) at a tenth of the time of a debug build. The timings are in `benches/scaling.rs`.
// The earlier translator searched the calls (or the choices, or the id suffixes) linearly
// for each new one: counted the same way, its steps grew 99 to 100 times in every shape but
// the one numbering every call 0 (there the call sought is always the last).

/// Append the `data:` line of a chunk of choice 0 holding one tool-call fragment, given as
/// its JSON fields without the braces (formatted by hand: building `Value`s would cost more
/// than the translation in a debug build).
fn fragment(body: &mut String, call: std::fmt::Arguments<'_>) {
    use std::fmt::Write;
    let _ = write!(
        body,
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{{call}}}]}}}}]}}\n\n"
    );
}

/// An SSE body: some text, the chunks of each of `calls` calls, the finish, `[DONE]`.
fn scaled_body(calls: usize, each: fn(&mut String, usize)) -> Vec<u8> {
    let mut body = String::with_capacity(calls * 300);
    body.push_str(&format!("data: {}\n\n", chunk(json!({"content": "go"}), None)));
    for i in 0..calls {
        each(&mut body, i);
    }
    body.push_str(&format!("data: {}\n\n", chunk(json!({}), Some("tool_calls"))));
    body.push_str("data: [DONE]\n\n");
    body.into_bytes()
}

/// Translate `calls` calls of this shape; returns the steps and the events.
fn steps(calls: usize, each: fn(&mut String, usize)) -> (u64, Vec<Event>) {
    let body = scaled_body(calls, each);
    let mut translator = Translator::new(Framing::DataLines);
    let recording = patchbay_core::kit::translate(&mut translator, [&body[..]]);
    assert!(recording.error.is_none(), "{:?}", recording.error);
    (translator.lookups(), recording.events)
}

/// `10 n` calls of this shape cost at most 11 times the steps of `n`; `count` says which
/// events stand for calls (all must come out).
fn assert_linear(n: usize, each: fn(&mut String, usize), count: fn(&Event) -> bool) {
    let [(small, small_events), (large, large_events)] = [n, 10 * n].map(|calls| steps(calls, each));
    assert_eq!(small_events.iter().filter(|e| count(e)).count(), n);
    assert_eq!(large_events.iter().filter(|e| count(e)).count(), 10 * n);
    assert!(
        large <= 11 * small,
        "not linear: {large} steps for {} calls, {small} for {n} ({:.1}x)",
        10 * n,
        large as f64 / small as f64
    );
}

fn is_tool_call(event: &Event) -> bool {
    matches!(event, Event::ToolCall { .. })
}

#[test]
fn tool_calls_by_index_take_linear_work() {
    assert_linear(
        10_000,
        |body, i| {
            let f = r#""function":{"name":"f","arguments":""}"#;
            fragment(body, format_args!(r#""index":{i},"id":"call_{i}",{f}"#));
            fragment(
                body,
                format_args!(r#""index":{i},"function":{{"arguments":"{{\"n\": "}}"#),
            );
            fragment(body, format_args!(r#""index":{i},"function":{{"arguments":"{i}}}"}}"#));
        },
        is_tool_call,
    );
}

#[test]
fn tool_calls_by_id_without_index_take_linear_work() {
    assert_linear(
        1_000,
        |body, i| {
            let f = r#""function":{"name":"f","arguments":""}"#;
            fragment(body, format_args!(r#""id":"call_{i}",{f}"#));
            fragment(
                body,
                format_args!(r#""id":"call_{i}","function":{{"arguments":"{{\"n\": "}}"#),
            );
            fragment(body, format_args!(r#""function":{{"arguments":"{i}}}"}}"#));
        },
        is_tool_call,
    );
}

#[test]
fn tool_calls_all_numbered_zero_take_linear_work() {
    assert_linear(
        1_000,
        |body, i| {
            fragment(
                body,
                format_args!(r#""index":0,"id":"call_{i}","function":{{"name":"f"}}"#),
            );
            fragment(body, format_args!(r#""index":0,"function":{{"arguments":"{{}}"}}"#));
        },
        is_tool_call,
    );
}

#[test]
fn tool_calls_sharing_one_id_take_linear_work() {
    assert_linear(
        1_000,
        |body, i| {
            fragment(
                body,
                format_args!(r#""index":{i},"id":"call","function":{{"name":"f"}}"#),
            );
            fragment(body, format_args!(r#""index":{i},"function":{{"arguments":"{{}}"}}"#));
        },
        is_tool_call,
    );
}

#[test]
fn extra_choices_take_linear_work() {
    assert_linear(
        1_000,
        |body, i| {
            let choice = i + 1;
            let call = r#"{"index":0,"id":"c","function":{"name":"f","arguments":"{}"}}"#;
            body.push_str(&format!(
                "data: {{\"choices\":[{{\"index\":{choice},\"delta\":{{\"content\":\"x\",\"tool_calls\":[{call}]}}}}]}}\n\n"
            ));
            body.push_str(&format!(
                "data: {{\"choices\":[{{\"index\":{choice},\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\n"
            ));
        },
        |e| matches!(e, Event::Opaque { data, .. } if data["type"] == "extra_choice"),
    );
}
