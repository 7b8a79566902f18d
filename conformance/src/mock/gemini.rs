//! The Google Gemini wire: scripted turns rendered as `GenerateContentResponse` SSE frames, as
//! `generativelanguage.googleapis.com` streams them for
//! `POST /v1beta/models/{model}:streamGenerateContent?alt=sse`, and HTTP failures as Google
//! error bodies.
//!
//! Each chunk is one `data: <GenerateContentResponse>` frame ending in `\r\n\r\n` (the separator
//! the real API uses); there are no `event:` lines and no `[DONE]`. Every chunk has one candidate
//! (`index` 0, `content.role` `model`), `usageMetadata`, `modelVersion` (the model asked for) and
//! `responseId` (the scripted id, else `resp_mock`). The parts:
//!
//! - text streams in [`deltas`](super::deltas) pieces, one `{"text": ...}` part per chunk;
//! - thinking streams the same way as `{"text": ..., "thought": true}` parts, the scripted
//!   signature as `thoughtSignature` on the last of them (a signed thinking part without text is
//!   one empty thought part carrying the signature);
//! - tool calls are whole `{"functionCall": {"name": ..., "args": {...}}}` parts, without an `id`
//!   (the API sends none: the provider numbers the calls) and never streamed in fragments;
//!   consecutive calls share one chunk;
//! - a cited text streams as text; the sources go into the candidate's `groundingMetadata` on the
//!   last chunk: one `groundingChunks[].web` (`uri`, `title`) per source and one
//!   `groundingSupports` entry per cited text (its byte `segment` in the response's text, every
//!   chunk of its sources). Google Search grounding names pages, not passages: the scripted
//!   `cited_text` has no place on this wire, and a `segment`'s `startIndex` is left out when it
//!   is 0, as proto3 JSON does.
//!
//! The last chunk carries the candidate's `finishReason` (see [`finish_reason_name`]; a turn
//! that calls tools finishes with `STOP`, since Gemini has no tool-use finish) and the scripted
//! usage. `usageMetadata` is on every chunk, its counts growing chunk by chunk up to those
//! numbers: `promptTokenCount` is the whole prompt (input, cache reads and cache writes: Gemini
//! caches implicitly and reports no writes), `cachedContentTokenCount` the cache reads,
//! `candidatesTokenCount` the output without the reasoning, `thoughtsTokenCount` the reasoning
//! (when the script reports it), `totalTokenCount` their sum.
//!
//! An in-stream error is a `data: {"error": {...}}` frame with the body of
//! [`render_failure`](WireFormat::render_failure). A truncated or stalled stream sends the same
//! chunks without a `finishReason` (the server then closes or stalls). An HTTP failure is
//! `{"error": {"code", "message", "status", "details"}}` with the gRPC status name of its code
//! ([`status_name`]); a `429` carries a `google.rpc.QuotaFailure` and a `google.rpc.Help`
//! detail, and a scripted `retry_after_ms` becomes a `google.rpc.RetryInfo` detail
//! (`retryDelay` in seconds, `"37s"`, `"1.5s"`), the only place the API gives the wait: no
//! `retry-after` header is sent.
//!
//! The API key arrives as `x-goog-api-key` (the mock checks nothing; a
//! [`RecordedRequest`](super::RecordedRequest) shows it redacted). Gemini bodies carry no
//! `model`: the server reads it from the path (`models/{model}:...`).

use patchbay_core::{ErrorKind, FinishReason, Usage};
use patchbay_scripted::{End, Part, Response, ScriptedError};
use serde_json::{Map, Value, json};

use super::WireFormat;

/// The Google Gemini `streamGenerateContent` wire format (`?alt=sse`). See the module docs.
#[derive(Debug, Clone, Copy, Default)]
pub struct GeminiWire;

/// The Gemini `finishReason` of a finish reason: `Stop`, `ToolUse` and `Cancelled` are `STOP`
/// (Gemini has no tool-use finish: a provider infers it from the function calls), `Length` is
/// `MAX_TOKENS`, `ContentFilter` is `SAFETY`, and `Refusal` is `STOP` (Gemini has no refusal
/// finish: a model that declines says so in text and stops; `PROHIBITED_CONTENT` is a filter of
/// Google's, not the model refusing, so a provider reads it as a content filter). `Other` keeps a raw reason that is a Gemini name (upper case, as
/// `RECITATION` or `MALFORMED_FUNCTION_CALL`); any other raw reason is `OTHER`.
pub fn finish_reason_name(reason: &FinishReason) -> String {
    match reason {
        FinishReason::Stop | FinishReason::ToolUse | FinishReason::Cancelled => "STOP".into(),
        FinishReason::Length => "MAX_TOKENS".into(),
        FinishReason::ContentFilter => "SAFETY".into(),
        FinishReason::Refusal => "STOP".into(),
        FinishReason::Other(raw) if is_gemini_name(raw) => raw.clone(),
        FinishReason::Other(_) => "OTHER".into(),
    }
}

fn is_gemini_name(raw: &str) -> bool {
    !raw.is_empty() && raw.bytes().all(|b| b.is_ascii_uppercase() || b == b'_')
}

/// The HTTP status Gemini answers an error kind with.
pub fn error_status(kind: ErrorKind) -> u16 {
    match kind {
        ErrorKind::RateLimited => 429,
        ErrorKind::Overloaded => 503,
        ErrorKind::Auth => 401,
        ErrorKind::InvalidRequest | ErrorKind::ContextTooLong => 400,
        ErrorKind::Transport => 504,
        _ => 500,
    }
}

/// The gRPC status name Google's error bodies give for an HTTP status (`UNKNOWN` for a status
/// without one).
pub fn status_name(status: u16) -> &'static str {
    match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ABORTED",
        429 => "RESOURCE_EXHAUSTED",
        499 => "CANCELLED",
        500 => "INTERNAL",
        501 => "UNIMPLEMENTED",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        _ => "UNKNOWN",
    }
}

/// A `google.protobuf.Duration` in JSON: whole or fractional seconds and `s` (`"37s"`,
/// `"1.5s"`, `"0.25s"`, `"0s"`).
pub fn duration_json(ms: u64) -> String {
    let (seconds, millis) = (ms / 1000, ms % 1000);
    if millis == 0 {
        return format!("{seconds}s");
    }
    let fraction = format!("{millis:03}");
    format!("{seconds}.{}s", fraction.trim_end_matches('0'))
}

/// The Google error body of a scripted error: `code`, `message`, the `status` name of the code,
/// and `details` (for a `429` a quota violation and a help link, for a scripted wait a
/// `RetryInfo`), left out when there are none.
pub fn error_json(error: &ScriptedError) -> Value {
    let code = error.status.unwrap_or_else(|| error_status(error.kind));
    let mut details = Vec::new();
    if code == 429 {
        details.push(json!({
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [{
                "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
            }],
        }));
        details.push(json!({
            "@type": "type.googleapis.com/google.rpc.Help",
            "links": [{
                "description": "Learn more about Gemini API quotas",
                "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
            }],
        }));
    }
    if let Some(ms) = error.retry_after_ms {
        details.push(json!({
            "@type": "type.googleapis.com/google.rpc.RetryInfo",
            "retryDelay": duration_json(ms),
        }));
    }
    let mut body = json!({ "code": code, "message": error.message, "status": status_name(code) });
    if !details.is_empty() {
        body["details"] = Value::Array(details);
    }
    json!({ "error": body })
}

fn frame(value: &Value) -> String {
    format!("data: {value}\r\n\r\n")
}

/// The share of `whole` after chunk `k` of `n`: growing with `k`, `whole` at the last chunk.
fn share(whole: u64, k: usize, n: usize) -> u64 {
    if k >= n || n == 0 {
        return whole;
    }
    let share = u128::from(whole) * k as u128 / n as u128;
    u64::try_from(share).unwrap_or(whole)
}

/// `usageMetadata` after chunk `k` of `n` (1-based): the prompt whole, the output growing.
fn usage_json(usage: &Usage, k: usize, n: usize) -> Value {
    let cached = usage.cache_read.unwrap_or(0);
    let prompt = usage.input.unwrap_or(0) + cached + usage.cache_write.unwrap_or(0);
    let reasoning = usage.reasoning.unwrap_or(0);
    let candidates = share(usage.output.unwrap_or(0).saturating_sub(reasoning), k, n);
    let thoughts = share(reasoning, k, n);
    let mut value = json!({
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "totalTokenCount": prompt + candidates + thoughts,
    });
    if usage.reasoning.is_some() {
        value["thoughtsTokenCount"] = json!(thoughts);
    }
    if usage.cache_read.is_some() {
        value["cachedContentTokenCount"] = json!(cached);
    }
    value
}

/// The parts of each chunk of a response, and its grounding metadata (if it cites anything).
fn chunk_parts(response: &Response) -> (Vec<Vec<Value>>, Option<Value>) {
    let mut chunks: Vec<Vec<Value>> = Vec::new();
    let mut calls: Vec<Value> = Vec::new();
    let mut web: Vec<Value> = Vec::new();
    let mut supports: Vec<Value> = Vec::new();
    // Bytes of (non-thought) text so far: where a cited text's segment starts.
    let mut offset = 0usize;
    for part in &response.parts {
        if !matches!(part, Part::ToolCall { .. }) && !calls.is_empty() {
            chunks.push(std::mem::take(&mut calls));
        }
        match part {
            Part::Text { text } => {
                chunks.extend(
                    super::deltas(text)
                        .into_iter()
                        .map(|piece| vec![json!({ "text": piece })]),
                );
                offset += text.len();
            }
            Part::Cited { text, sources } => {
                chunks.extend(
                    super::deltas(text)
                        .into_iter()
                        .map(|piece| vec![json!({ "text": piece })]),
                );
                let first = web.len();
                web.extend(
                    sources
                        .iter()
                        .map(|source| json!({ "web": { "uri": source.url, "title": source.title } })),
                );
                let mut segment = Map::new();
                if offset > 0 {
                    segment.insert("startIndex".into(), json!(offset));
                }
                segment.insert("endIndex".into(), json!(offset + text.len()));
                segment.insert("text".into(), json!(text));
                supports.push(json!({
                    "segment": segment,
                    "groundingChunkIndices": (first..web.len()).collect::<Vec<_>>(),
                }));
                offset += text.len();
            }
            Part::Thinking { text, signature } => {
                let pieces = super::deltas(text);
                let pieces = if pieces.is_empty() && signature.is_some() {
                    vec![""]
                } else {
                    pieces
                };
                let last = pieces.len().saturating_sub(1);
                for (at, piece) in pieces.into_iter().enumerate() {
                    let mut part = json!({ "text": piece, "thought": true });
                    if let (true, Some(signature)) = (at == last, signature) {
                        part["thoughtSignature"] = json!(signature);
                    }
                    chunks.push(vec![part]);
                }
            }
            Part::ToolCall { name, input, .. } => {
                calls.push(json!({ "functionCall": { "name": name, "args": input } }));
            }
        }
    }
    if !calls.is_empty() {
        chunks.push(calls);
    }
    let grounding = (!web.is_empty()).then(|| json!({ "groundingChunks": web, "groundingSupports": supports }));
    (chunks, grounding)
}

impl WireFormat for GeminiWire {
    fn name(&self) -> &'static str {
        "gemini"
    }

    fn render_response(&self, response: &Response, model: &str) -> Vec<String> {
        let id = response.id.as_deref().unwrap_or("resp_mock");
        let (mut chunks, grounding) = chunk_parts(response);
        let finish = match &response.end {
            End::Finish { reason } => Some(finish_reason_name(reason)),
            End::Error(_) | End::Truncate | End::Stall => None,
        };
        if chunks.is_empty() && finish.is_some() {
            // Nothing to say: one chunk, without parts, for the finish.
            chunks.push(Vec::new());
        }
        let n = chunks.len();
        let mut out: Vec<String> = chunks
            .into_iter()
            .enumerate()
            .map(|(at, parts)| {
                let mut content = json!({ "role": "model" });
                if !parts.is_empty() {
                    content["parts"] = Value::Array(parts);
                }
                let mut candidate = json!({ "content": content, "index": 0 });
                if at + 1 == n
                    && let Some(reason) = &finish
                {
                    candidate["finishReason"] = json!(reason);
                    if let Some(grounding) = &grounding {
                        candidate["groundingMetadata"] = grounding.clone();
                    }
                }
                frame(&json!({
                    "candidates": [candidate],
                    "usageMetadata": usage_json(&response.usage, at + 1, n),
                    "modelVersion": model,
                    "responseId": id,
                }))
            })
            .collect();
        if let End::Error(error) = &response.end {
            out.push(frame(&error_json(error)));
        }
        out
    }

    fn render_failure(&self, error: &ScriptedError) -> (u16, Vec<(String, String)>, String) {
        let status = error.status.unwrap_or_else(|| error_status(error.kind));
        let headers = vec![(
            "content-type".to_string(),
            "application/json; charset=UTF-8".to_string(),
        )];
        (status, headers, error_json(error).to_string())
    }
}

#[cfg(test)]
mod tests {
    use patchbay_scripted::Citation;

    use super::*;

    const MODEL: &str = "gemini-2.5-flash";

    /// The JSON of every frame, checking the framing: `data: `, one line, `\r\n\r\n`.
    fn payloads(frames: &[String]) -> Vec<Value> {
        frames
            .iter()
            .map(|frame| {
                let data = frame
                    .strip_prefix("data: ")
                    .and_then(|rest| rest.strip_suffix("\r\n\r\n"))
                    .unwrap_or_else(|| panic!("not one SSE data frame: {frame:?}"));
                assert!(!data.contains('\n') && !data.contains('\r'), "one line: {frame:?}");
                serde_json::from_str(data).unwrap_or_else(|e| panic!("not JSON ({e}): {data}"))
            })
            .collect()
    }

    fn candidate(chunk: &Value) -> &Value {
        &chunk["candidates"][0]
    }

    fn parts(chunk: &Value) -> Vec<Value> {
        candidate(chunk)["content"]["parts"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    fn render(response: &Response) -> Vec<Value> {
        payloads(&GeminiWire.render_response(response, MODEL))
    }

    #[test]
    fn a_text_turn_streams_word_pieces_and_finishes_on_the_last_chunk() {
        let response = Response::new(vec![Part::text("Hello! How are you?")]).with_usage(12, 9);
        let chunks = render(&response);
        assert_eq!(chunks.len(), 4);
        let texts: Vec<Value> = chunks.iter().flat_map(parts).collect();
        assert_eq!(
            texts,
            vec![
                json!({ "text": "Hello! " }),
                json!({ "text": "How " }),
                json!({ "text": "are " }),
                json!({ "text": "you?" })
            ]
        );
        for (at, chunk) in chunks.iter().enumerate() {
            assert_eq!(candidate(chunk)["content"]["role"], "model");
            assert_eq!(candidate(chunk)["index"], 0);
            assert_eq!(chunk["modelVersion"], MODEL);
            assert_eq!(chunk["responseId"], "resp_mock");
            let usage = &chunk["usageMetadata"];
            assert_eq!(usage["promptTokenCount"], 12);
            assert_eq!(
                usage["totalTokenCount"].as_u64(),
                Some(12 + usage["candidatesTokenCount"].as_u64().unwrap_or(99))
            );
            assert!(usage.get("thoughtsTokenCount").is_none());
            assert!(usage.get("cachedContentTokenCount").is_none());
            let last = at + 1 == chunks.len();
            assert_eq!(candidate(chunk).get("finishReason").is_some(), last, "{chunk}");
        }
        let counts: Vec<u64> = chunks
            .iter()
            .filter_map(|c| c["usageMetadata"]["candidatesTokenCount"].as_u64())
            .collect();
        assert!(counts.is_sorted(), "{counts:?}");
        let last = chunks.last().expect("a chunk");
        assert_eq!(candidate(last)["finishReason"], "STOP");
        assert_eq!(
            last["usageMetadata"],
            json!({ "promptTokenCount": 12, "candidatesTokenCount": 9, "totalTokenCount": 21 })
        );
    }

    #[test]
    fn a_huge_text_is_one_part_on_one_line() {
        let text = crate::huge_text();
        let frames = GeminiWire.render_response(&Response::new(vec![Part::text(text.clone())]), MODEL);
        let chunks = payloads(&frames);
        assert_eq!(chunks.len(), 1);
        assert_eq!(parts(&chunks[0]), vec![json!({ "text": text })]);
    }

    #[test]
    fn thinking_streams_as_thought_parts_with_the_signature_on_the_last() {
        let mut response = Response::new(vec![
            Part::thinking("Rain in Paris? Check.", "c2lnbmF0dXJlLTE="),
            Part::text("Let me look."),
        ])
        .with_usage(50, 40);
        response.usage.reasoning = Some(25);
        let chunks = render(&response);
        let all: Vec<Value> = chunks.iter().flat_map(parts).collect();
        assert_eq!(
            all,
            vec![
                json!({ "text": "Rain ", "thought": true }),
                json!({ "text": "in ", "thought": true }),
                json!({ "text": "Paris? ", "thought": true }),
                json!({ "text": "Check.", "thought": true, "thoughtSignature": "c2lnbmF0dXJlLTE=" }),
                json!({ "text": "Let " }),
                json!({ "text": "me " }),
                json!({ "text": "look." }),
            ]
        );
        assert_eq!(chunks.len(), all.len(), "one piece per chunk");
        let usage = &chunks.last().expect("a chunk")["usageMetadata"];
        assert_eq!(
            *usage,
            json!({
                "promptTokenCount": 50, "candidatesTokenCount": 15, "thoughtsTokenCount": 25,
                "totalTokenCount": 90,
            })
        );
    }

    #[test]
    fn a_signature_without_thinking_text_is_one_empty_thought() {
        let response = Response::new(vec![Part::Thinking {
            text: String::new(),
            signature: Some("c2ln".into()),
        }]);
        let chunks = render(&response);
        assert_eq!(
            parts(&chunks[0]),
            vec![json!({ "text": "", "thought": true, "thoughtSignature": "c2ln" })]
        );
    }

    #[test]
    fn parallel_tool_calls_are_whole_parts_of_one_chunk_without_ids() {
        let response = Response::new(vec![
            Part::text("Checking both."),
            Part::tool_call("toolu_01", "get_weather", json!({ "city": "Paris" })),
            Part::tool_call("toolu_02", "get_weather", json!({ "city": "Tokyo" })),
        ])
        .with_usage(40, 30);
        assert_eq!(
            response.end,
            End::Finish {
                reason: FinishReason::ToolUse
            }
        );
        let chunks = render(&response);
        assert_eq!(chunks.len(), 3);
        let last = chunks.last().expect("a chunk");
        assert_eq!(
            parts(last),
            vec![
                json!({ "functionCall": { "name": "get_weather", "args": { "city": "Paris" } } }),
                json!({ "functionCall": { "name": "get_weather", "args": { "city": "Tokyo" } } }),
            ]
        );
        assert_eq!(candidate(last)["finishReason"], "STOP", "Gemini has no tool-use finish");
        let text = GeminiWire.render_response(&response, MODEL).concat();
        assert!(!text.contains("toolu_0"), "no call ids on the wire: {text}");
    }

    #[test]
    fn tool_calls_apart_go_in_chunks_apart() {
        let response = Response::new(vec![
            Part::tool_call("a", "one", json!({})),
            Part::text("then"),
            Part::tool_call("b", "two", json!({ "n": 2 })),
        ]);
        let chunks = render(&response);
        let shapes: Vec<usize> = chunks.iter().map(|c| parts(c).len()).collect();
        assert_eq!(shapes, vec![1, 1, 1]);
        assert_eq!(parts(&chunks[0])[0]["functionCall"]["name"], "one");
        assert_eq!(parts(&chunks[2])[0]["functionCall"]["args"], json!({ "n": 2 }));
    }

    #[test]
    fn finish_reasons_map_to_gemini_names() {
        for (reason, name) in [
            (FinishReason::Stop, "STOP"),
            (FinishReason::ToolUse, "STOP"),
            (FinishReason::Cancelled, "STOP"),
            (FinishReason::Length, "MAX_TOKENS"),
            (FinishReason::ContentFilter, "SAFETY"),
            (FinishReason::Refusal, "STOP"),
            (FinishReason::Other("RECITATION".into()), "RECITATION"),
            (FinishReason::Other("pause_turn".into()), "OTHER"),
            (FinishReason::Other(String::new()), "OTHER"),
        ] {
            assert_eq!(finish_reason_name(&reason), name, "{reason:?}");
        }
        let response = Response::new(vec![Part::text("Once upon")]).with_end(End::Finish {
            reason: FinishReason::Length,
        });
        let chunks = render(&response);
        assert_eq!(candidate(chunks.last().expect("a chunk"))["finishReason"], "MAX_TOKENS");
    }

    #[test]
    fn an_empty_finished_turn_is_one_chunk_without_parts() {
        let chunks = render(&Response::new(Vec::new()).with_usage(3, 0));
        assert_eq!(chunks.len(), 1);
        assert_eq!(candidate(&chunks[0])["content"], json!({ "role": "model" }));
        assert_eq!(candidate(&chunks[0])["finishReason"], "STOP");
    }

    #[test]
    fn cut_streams_have_no_finish_and_an_error_ends_with_an_error_frame() {
        for end in [End::Truncate, End::Stall] {
            let chunks = render(&Response::new(vec![Part::text("One, two,")]).with_end(end.clone()));
            assert_eq!(chunks.len(), 2, "{end:?}");
            assert!(
                chunks.iter().all(|c| candidate(c).get("finishReason").is_none()),
                "{end:?}"
            );
        }
        let error = ScriptedError::new(ErrorKind::Overloaded, "The model is overloaded.");
        let chunks = render(&Response::new(vec![Part::text("Here is")]).with_end(End::Error(error)));
        assert_eq!(chunks.len(), 3);
        assert!(chunks.iter().all(|c| candidate(c).get("finishReason").is_none()));
        assert_eq!(
            chunks[2],
            json!({ "error": { "code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE" } })
        );
        let server = ScriptedError {
            status: Some(500),
            ..ScriptedError::new(ErrorKind::Server, "An internal error has occurred.")
        };
        let chunks = render(&Response::new(Vec::new()).with_end(End::Error(server)));
        assert_eq!(chunks[0]["error"]["status"], "INTERNAL");
    }

    #[test]
    fn usage_splits_cache_reads_and_reasoning_the_gemini_way() {
        let mut response = Response::new(vec![Part::text("a b c d")]);
        response.usage = Usage {
            input: Some(100),
            output: Some(30),
            cache_read: Some(400),
            cache_write: Some(5),
            reasoning: Some(10),
            cost_usd: None,
        };
        let chunks = render(&response);
        assert_eq!(
            chunks.last().expect("a chunk")["usageMetadata"],
            json!({
                "promptTokenCount": 505, "cachedContentTokenCount": 400, "candidatesTokenCount": 20,
                "thoughtsTokenCount": 10, "totalTokenCount": 535,
            })
        );
        assert_eq!(chunks[0]["usageMetadata"]["candidatesTokenCount"], 5);
        assert_eq!(chunks[0]["usageMetadata"]["promptTokenCount"], 505);
    }

    #[test]
    fn cited_text_carries_grounding_metadata_on_the_last_chunk() {
        let response = Response::new(vec![
            Part::text("Well. "),
            Part::cited(
                "Paris, 330 m.",
                vec![
                    Citation::new("https://a.example/eiffel", "Eiffel", "A lattice tower."),
                    Citation::new("https://b.example/figures", "Figures", "Height: 330 metres"),
                ],
            ),
        ]);
        let chunks = render(&response);
        let text: String = chunks
            .iter()
            .flat_map(parts)
            .filter_map(|p| p["text"].as_str().map(str::to_string))
            .collect();
        assert_eq!(text, "Well. Paris, 330 m.");
        let (last, rest) = chunks.split_last().expect("chunks");
        assert!(rest.iter().all(|c| candidate(c).get("groundingMetadata").is_none()));
        assert_eq!(
            candidate(last)["groundingMetadata"],
            json!({
                "groundingChunks": [
                    { "web": { "uri": "https://a.example/eiffel", "title": "Eiffel" } },
                    { "web": { "uri": "https://b.example/figures", "title": "Figures" } },
                ],
                "groundingSupports": [{
                    "segment": { "startIndex": 6, "endIndex": 19, "text": "Paris, 330 m." },
                    "groundingChunkIndices": [0, 1],
                }],
            })
        );
    }

    #[test]
    fn the_response_id_is_the_scripted_one() {
        let mut response = Response::new(vec![Part::text("hi")]);
        response.id = Some("mHt0aK3yN9qPz7IP".into());
        assert_eq!(render(&response)[0]["responseId"], "mHt0aK3yN9qPz7IP");
    }

    #[test]
    fn a_rate_limit_is_resource_exhausted_with_quota_and_retry_info() {
        let error = ScriptedError {
            status: Some(429),
            retry_after_ms: Some(37_000),
            ..ScriptedError::new(ErrorKind::RateLimited, "You exceeded your current quota.")
        };
        let (status, headers, body) = GeminiWire.render_failure(&error);
        assert_eq!(status, 429);
        assert!(
            headers
                .iter()
                .all(|(name, _)| !name.eq_ignore_ascii_case("retry-after")),
            "the wait is in the body only: {headers:?}"
        );
        assert!(
            headers
                .iter()
                .any(|(n, v)| n == "content-type" && v.starts_with("application/json"))
        );
        let body: Value = serde_json::from_str(&body).expect("JSON");
        let error = &body["error"];
        assert_eq!(error["code"], 429);
        assert_eq!(error["status"], "RESOURCE_EXHAUSTED");
        assert_eq!(error["message"], "You exceeded your current quota.");
        let details = error["details"].as_array().expect("details");
        let of_type = |name: &str| {
            details
                .iter()
                .find(|d| d["@type"] == format!("type.googleapis.com/google.rpc.{name}"))
                .unwrap_or_else(|| panic!("no {name} in {details:?}"))
        };
        let violations = of_type("QuotaFailure")["violations"].as_array().expect("violations");
        assert_eq!(violations.len(), 1);
        assert!(violations[0]["quotaMetric"].is_string() && violations[0]["quotaId"].is_string());
        assert_eq!(of_type("RetryInfo")["retryDelay"], "37s");
    }

    #[test]
    fn retry_delays_are_protobuf_durations() {
        for (ms, text) in [
            (0, "0s"),
            (37_000, "37s"),
            (1_500, "1.5s"),
            (250, "0.25s"),
            (1_001, "1.001s"),
        ] {
            assert_eq!(duration_json(ms), text);
        }
        let error = ScriptedError {
            retry_after_ms: Some(1_500),
            ..ScriptedError::new(ErrorKind::Overloaded, "The model is overloaded.")
        };
        let (status, _, body) = GeminiWire.render_failure(&error);
        assert_eq!(status, 503);
        let body: Value = serde_json::from_str(&body).expect("JSON");
        assert_eq!(body["error"]["status"], "UNAVAILABLE");
        assert_eq!(
            body["error"]["details"],
            json!([{ "@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.5s" }])
        );
    }

    #[test]
    fn failures_name_the_status_of_their_code() {
        for (kind, status, name) in [
            (ErrorKind::InvalidRequest, 400, "INVALID_ARGUMENT"),
            (ErrorKind::ContextTooLong, 400, "INVALID_ARGUMENT"),
            (ErrorKind::Auth, 401, "UNAUTHENTICATED"),
            (ErrorKind::RateLimited, 429, "RESOURCE_EXHAUSTED"),
            (ErrorKind::Server, 500, "INTERNAL"),
            (ErrorKind::Overloaded, 503, "UNAVAILABLE"),
            (ErrorKind::Transport, 504, "DEADLINE_EXCEEDED"),
        ] {
            let (got, _, body) = GeminiWire.render_failure(&ScriptedError::new(kind, "no"));
            assert_eq!(got, status, "{kind:?}");
            let body: Value = serde_json::from_str(&body).expect("JSON");
            assert_eq!(body["error"]["status"], name, "{kind:?}");
            assert_eq!(body["error"]["code"], status, "{kind:?}");
            assert_eq!(body["error"].get("details").is_some(), status == 429, "{kind:?}");
        }
        // A scripted status wins, and its name follows it.
        for (status, name) in [(403, "PERMISSION_DENIED"), (404, "NOT_FOUND"), (418, "UNKNOWN")] {
            let error = ScriptedError {
                status: Some(status),
                ..ScriptedError::new(ErrorKind::Auth, "no")
            };
            let (got, _, body) = GeminiWire.render_failure(&error);
            assert_eq!(got, status);
            let body: Value = serde_json::from_str(&body).expect("JSON");
            assert_eq!(body["error"]["status"], name);
        }
    }

    /// One raw HTTP/1.1 POST to `server`; the whole answer (head and body) as text.
    async fn post(server: &super::super::MockServer, path: &str) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(server.addr()).await.expect("connects");
        let body = r#"{"contents":[{"role":"user","parts":[{"text":"Say hello."}]}]}"#;
        let request = format!(
            "POST {path} HTTP/1.1\r\nhost: localhost\r\nx-goog-api-key: AIza-secret\r\n\
             content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).await.expect("writes");
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.expect("reads");
        String::from_utf8(answer).expect("UTF-8")
    }

    #[tokio::test]
    async fn the_server_serves_gemini_turns_for_the_model_of_the_path() {
        use patchbay_scripted::{Script, Turn};
        let rate_limited = ScriptedError {
            status: Some(429),
            retry_after_ms: Some(0),
            ..ScriptedError::new(ErrorKind::RateLimited, "Quota exceeded.")
        };
        let script = Script::new(vec![Turn::Fail(rate_limited), Turn::text("Hello there.")]);
        let server = super::super::MockServer::builder(GeminiWire)
            .script(&script)
            .start()
            .await
            .expect("starts");
        let path = "/v1beta/models/conformance-model:streamGenerateContent?alt=sse";
        let failed = post(&server, path).await;
        assert!(failed.starts_with("HTTP/1.1 429"), "{failed}");
        assert!(failed.contains(r#""retryDelay":"0s""#), "{failed}");
        let answer = post(&server, path).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.contains("content-type: text/event-stream"), "{answer}");
        assert!(answer.contains(r#""modelVersion":"conformance-model""#), "{answer}");
        assert!(answer.contains(r#""finishReason":"STOP""#), "{answer}");
        assert!(answer.contains("}\r\n\r\n"), "{answer}");
        let requests = server.requests();
        assert_eq!(requests.len(), 2);
        assert_eq!(requests[1].path, path);
        assert_eq!(requests[1].header("x-goog-api-key"), Some("[redacted]"));
        assert_eq!(requests[1].body["contents"][0]["parts"][0]["text"], "Say hello.");
    }

    #[test]
    fn every_scenario_renders_json_frames() {
        use patchbay_scripted::Turn;
        for scenario in crate::scenarios() {
            for turn in &scenario.script.turns {
                match turn {
                    Turn::Respond(response) => {
                        let frames = GeminiWire.render_response(response, crate::SCENARIO_MODEL);
                        let chunks = payloads(&frames);
                        for chunk in chunks.iter().filter(|c| c.get("error").is_none()) {
                            assert_eq!(chunk["modelVersion"], crate::SCENARIO_MODEL, "{}", scenario.name);
                        }
                        let finishes = chunks
                            .iter()
                            .filter(|c| candidate(c).get("finishReason").is_some())
                            .count();
                        let finished = matches!(response.end, End::Finish { .. });
                        assert_eq!(finishes, usize::from(finished), "{}", scenario.name);
                    }
                    Turn::Fail(error) => {
                        let (_, _, body) = GeminiWire.render_failure(error);
                        let body: Value = serde_json::from_str(&body).expect("JSON");
                        assert!(body["error"]["status"].is_string(), "{}", scenario.name);
                    }
                }
            }
        }
    }
}
