//! The streams every consumer reads: one OpenAI chat-completions body, one Anthropic Messages
//! body, one Gemini `streamGenerateContent?alt=sse` body and one OpenAI Responses body
//! (`POST /responses`) carrying the same text, and that text, which every consumer must give
//! back.
//!
//! Every chunk is complete for the strictest reader (async-openai wants `id`, `object`,
//! `created` and `model` on each chunk, `total_tokens` in the usage). One delta in a hundred
//! holds an escaped newline and one in a hundred a non-ASCII character, so no reader gets
//! through on the unescaped fast path alone.

use std::fmt::Write as _;

/// The text of delta `i`.
pub fn delta(i: usize) -> String {
    let mut text = format!("tok{} ", i % 1000);
    if i % 100 == 7 {
        text.push('\n');
    }
    if i % 100 == 42 {
        text.push('é');
    }
    text
}

/// The whole text of `deltas` deltas: what every consumer must produce.
pub fn text(deltas: usize) -> String {
    (0..deltas).map(delta).collect()
}

/// `text` as a JSON string literal (quotes included).
fn json(text: &str) -> String {
    serde_json::to_string(text).expect("a string serializes")
}

const CHUNK_HEAD: &str =
    r#""id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"bench""#;

/// An OpenAI chat-completions SSE body: a role chunk, `deltas` content chunks, a finish chunk,
/// a usage chunk and `[DONE]`, one SSE frame each.
pub fn openai(deltas: usize) -> String {
    let mut body = String::with_capacity(deltas * 190 + 1024);
    let _ = write!(
        body,
        "data: {{{CHUNK_HEAD},\"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":\"\"}},\"finish_reason\":null}}]}}\n\n"
    );
    for i in 0..deltas {
        let _ = write!(
            body,
            "data: {{{CHUNK_HEAD},\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{}}},\"finish_reason\":null}}]}}\n\n",
            json(&delta(i))
        );
    }
    let _ = write!(
        body,
        "data: {{{CHUNK_HEAD},\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\n"
    );
    let _ = write!(
        body,
        "data: {{{CHUNK_HEAD},\"choices\":[],\"usage\":{{\"prompt_tokens\":5,\"completion_tokens\":{deltas},\"total_tokens\":{}}}}}\n\n",
        deltas + 5
    );
    body.push_str("data: [DONE]\n\n");
    body
}

/// A Gemini `streamGenerateContent?alt=sse` body: `deltas` chunks (`GenerateContentResponse`s)
/// of one text part each, printed as the Gemini API prints them (a space after each colon, none
/// after commas): one candidate (`content` with `role` `model`, `index` 0), `usageMetadata` on
/// every chunk (the output count growing, `promptTokensDetails` beside), `modelVersion` and
/// `responseId` on every chunk, `finishReason` `STOP` on the last; frames end in `\r\n\r\n`
/// (the API's separator); no `event:` lines, no `[DONE]`.
pub fn gemini(deltas: usize) -> String {
    let mut body = String::with_capacity(deltas * 330 + 1024);
    for i in 0..deltas {
        let finish = if i + 1 == deltas {
            r#""finishReason": "STOP","#
        } else {
            ""
        };
        let _ = write!(
            body,
            "data: {{\"candidates\": [{{\"content\": {{\"parts\": [{{\"text\": {}}}],\"role\": \"model\"}},{finish}\"index\": 0}}],\"usageMetadata\": {{\"promptTokenCount\": 5,\"candidatesTokenCount\": {},\"totalTokenCount\": {},\"promptTokensDetails\": [{{\"modality\": \"TEXT\",\"tokenCount\": 5}}]}},\"modelVersion\": \"gemini-bench\",\"responseId\": \"bR3nchMarkRespOnse1d23x\"}}\r\n\r\n",
            json(&delta(i)),
            i + 1,
            i + 6
        );
    }
    body
}

/// The Responses body's ids, shaped as OpenAI's (a prefix, then 48 hex digits).
const RESPONSE_ID: &str = "resp_68af3c0e5b0c8190a1d7e2f4b6c8d0e20c1f2a3b4c5d6e7f";
const MESSAGE_ID: &str = "msg_68af3c0f1a2c8190b3e5d7f9a1c3e5070c1f2a3b4c5d6e7f";

/// The response object of the Responses lifecycle events (`response.created`,
/// `.in_progress`, `.completed`), every member the API prints, in its order; `output` and
/// `usage` as given (JSON text).
fn response_object(status: &str, output: &str, usage: &str) -> String {
    format!(
        r#"{{"id":"{RESPONSE_ID}","object":"response","created_at":1756315662,"status":"{status}","background":false,"error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"max_tool_calls":null,"model":"gpt-bench-2026-01-01","output":[{output}],"parallel_tool_calls":true,"previous_response_id":null,"prompt_cache_key":null,"reasoning":{{"effort":null,"summary":null}},"safety_identifier":null,"service_tier":"default","store":true,"temperature":1.0,"text":{{"format":{{"type":"text"}},"verbosity":"medium"}},"tool_choice":"auto","tools":[],"top_logprobs":0,"top_p":1.0,"truncation":"disabled","usage":{usage},"user":null,"metadata":{{}}}}"#
    )
}

/// The `obfuscation` of delta `i`: the random padding OpenAI adds to every delta event (on by
/// default) so a delta's size does not tell its text; here 1 to 16 letters, deterministic.
fn obfuscation(i: usize, delta: &str) -> &'static str {
    const LETTERS: &str = "q3ZxT8vLpN2sKd7RwYb4HcJm9GfA1eUo6VhXn0QiBtC5yDrEgFaSlWjMkOzIuP";
    let len = 16 - delta.len() % 16;
    let from = (i * 7) % (LETTERS.len() - 16);
    &LETTERS[from..from + len]
}

/// One Responses SSE frame: `event: {kind}`, then the event with its `type` and
/// `sequence_number` first and `rest` after, as the API prints them; the number goes up by one.
fn responses_frame(body: &mut String, kind: &str, sequence: &mut usize, rest: std::fmt::Arguments<'_>) {
    let _ = write!(
        body,
        "event: {kind}\ndata: {{\"type\":\"{kind}\",\"sequence_number\":{sequence},{rest}}}\n\n"
    );
    *sequence += 1;
}

/// An OpenAI Responses SSE body (`POST /responses`, `stream: true`), every event as the API
/// sends it: `response.created` and `response.in_progress` with the whole response object, the
/// message item and its `output_text` part added, `deltas` `response.output_text.delta` events
/// (`item_id`, `output_index`, `content_index`, `delta`, `logprobs: []`, `obfuscation`), then
/// `response.output_text.done`, `response.content_part.done`, `response.output_item.done` and
/// `response.completed` (each with the whole text again, the last with `usage`). No `[DONE]`.
pub fn responses(deltas: usize) -> String {
    let whole = json(&text(deltas));
    let mut body = String::with_capacity(deltas * 240 + 4 * whole.len() + 8192);
    let mut seq = 0;
    let in_progress = response_object("in_progress", "", "null");
    responses_frame(
        &mut body,
        "response.created",
        &mut seq,
        format_args!("\"response\":{in_progress}"),
    );
    responses_frame(
        &mut body,
        "response.in_progress",
        &mut seq,
        format_args!("\"response\":{in_progress}"),
    );
    responses_frame(
        &mut body,
        "response.output_item.added",
        &mut seq,
        format_args!(
            r#""output_index":0,"item":{{"id":"{MESSAGE_ID}","type":"message","status":"in_progress","content":[],"role":"assistant"}}"#
        ),
    );
    let part = |text: &str| format!(r#"{{"type":"output_text","annotations":[],"logprobs":[],"text":{text}}}"#);
    let place = format!(r#""item_id":"{MESSAGE_ID}","output_index":0,"content_index":0"#);
    responses_frame(
        &mut body,
        "response.content_part.added",
        &mut seq,
        format_args!(r#"{place},"part":{}"#, part("\"\"")),
    );
    for i in 0..deltas {
        let delta = delta(i);
        responses_frame(
            &mut body,
            "response.output_text.delta",
            &mut seq,
            format_args!(
                r#"{place},"delta":{},"logprobs":[],"obfuscation":"{}""#,
                json(&delta),
                obfuscation(i, &delta)
            ),
        );
    }
    responses_frame(
        &mut body,
        "response.output_text.done",
        &mut seq,
        format_args!(r#"{place},"text":{whole},"logprobs":[]"#),
    );
    responses_frame(
        &mut body,
        "response.content_part.done",
        &mut seq,
        format_args!(r#"{place},"part":{}"#, part(&whole)),
    );
    let message = format!(
        r#"{{"id":"{MESSAGE_ID}","type":"message","status":"completed","content":[{}],"role":"assistant"}}"#,
        part(&whole)
    );
    responses_frame(
        &mut body,
        "response.output_item.done",
        &mut seq,
        format_args!(r#""output_index":0,"item":{message}"#),
    );
    let usage = format!(
        r#"{{"input_tokens":5,"input_tokens_details":{{"cached_tokens":0}},"output_tokens":{deltas},"output_tokens_details":{{"reasoning_tokens":0}},"total_tokens":{}}}"#,
        deltas + 5
    );
    let completed = response_object("completed", &message, &usage);
    responses_frame(
        &mut body,
        "response.completed",
        &mut seq,
        format_args!("\"response\":{completed}"),
    );
    body
}

/// An Anthropic Messages SSE body: `message_start`, one text block of `deltas` deltas,
/// `message_delta` with the stop reason and usage, `message_stop`.
pub fn anthropic(deltas: usize) -> String {
    let mut body = String::with_capacity(deltas * 150 + 1024);
    body.push_str("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_bench\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-bench\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n");
    body.push_str("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n");
    for i in 0..deltas {
        let _ = write!(
            body,
            "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":{}}}}}\n\n",
            json(&delta(i))
        );
    }
    body.push_str("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n");
    let _ = write!(
        body,
        "event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"end_turn\",\"stop_sequence\":null}},\"usage\":{{\"output_tokens\":{deltas}}}}}\n\n"
    );
    body.push_str("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_body_carries_the_text_escaped() {
        let text = text(300);
        assert!(text.contains('\n') && text.contains('é'));
        assert!(openai(300).contains(r#""content":"tok7 \n""#));
        assert!(anthropic(300).contains(r#""text":"tok107 \n""#));
        assert!(gemini(300).contains(r#""text": "tok207 \n""#));
        assert_eq!(openai(300).matches("\n\n").count(), 300 + 4);
        assert_eq!(anthropic(300).matches("\n\n").count(), 300 + 5);
        assert_eq!(gemini(300).matches("\r\n\r\n").count(), 300);
        assert!(responses(300).contains(r#""delta":"tok7 \n""#));
        assert_eq!(responses(300).matches("\n\n").count(), 300 + 8);
    }

    #[test]
    fn the_responses_body_is_numbered_events_with_the_text_in_its_deltas() {
        let body = responses(3);
        let events: Vec<serde_json::Value> = body
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .map(|data| serde_json::from_str(data).expect("JSON"))
            .collect();
        assert_eq!(events.len(), 3 + 8);
        for (n, event) in events.iter().enumerate() {
            assert_eq!(event["sequence_number"], n);
        }
        let texts: String = events
            .iter()
            .filter(|event| event["type"] == "response.output_text.delta")
            .map(|event| event["delta"].as_str().expect("delta"))
            .collect();
        assert_eq!(texts, super::text(3));
        assert!(body.starts_with("event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_"));
        assert!(body.contains(r#"{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_68af3c0f1a2c8190b3e5d7f9a1c3e5070c1f2a3b4c5d6e7f","output_index":0,"content_index":0,"delta":"tok0 ","logprobs":[],"obfuscation":""#));
        let last = events.last().expect("an event");
        assert_eq!(last["type"], "response.completed");
        assert_eq!(last["response"]["output"][0]["content"][0]["text"], super::text(3));
        assert_eq!(last["response"]["usage"]["output_tokens"], 3);
    }

    #[test]
    fn async_openai_reads_every_responses_event_as_its_type() {
        use async_openai::types::responses::ResponseStreamEvent;
        let body = responses(3);
        let mut deltas = 0;
        for data in body.lines().filter_map(|line| line.strip_prefix("data: ")) {
            let event: ResponseStreamEvent =
                serde_json::from_str(data).unwrap_or_else(|error| panic!("{error}: {data}"));
            deltas += usize::from(matches!(event, ResponseStreamEvent::ResponseOutputTextDelta(_)));
        }
        assert_eq!(deltas, 3);
    }

    #[test]
    fn the_gemini_body_is_json_chunks_finished_on_the_last() {
        let body = gemini(3);
        let chunks: Vec<serde_json::Value> = body
            .split("\r\n\r\n")
            .filter(|frame| !frame.is_empty())
            .map(|frame| serde_json::from_str(frame.strip_prefix("data: ").expect("a data line")).expect("JSON"))
            .collect();
        assert_eq!(chunks.len(), 3);
        assert!(body.starts_with(
            r#"data: {"candidates": [{"content": {"parts": [{"text": "tok0 "}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 5,"candidatesTokenCount": 1,"#
        ));
        assert!(body.ends_with(concat!(
            r#"}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 5,"candidatesTokenCount": 3,"totalTokenCount": 8,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 5}]},"modelVersion": "gemini-bench","responseId": "bR3nchMarkRespOnse1d23x"}"#,
            "\r\n\r\n"
        )));
        let texts: String = chunks
            .iter()
            .map(|chunk| {
                chunk["candidates"][0]["content"]["parts"][0]["text"]
                    .as_str()
                    .expect("text")
            })
            .collect();
        assert_eq!(texts, super::text(3));
        assert!(chunks[1]["candidates"][0].get("finishReason").is_none());
        assert_eq!(chunks[2]["candidates"][0]["finishReason"], "STOP");
        assert_eq!(chunks[2]["usageMetadata"]["candidatesTokenCount"], 3);
    }
}
