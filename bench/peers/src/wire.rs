//! The streams every consumer reads: one OpenAI chat-completions body, one Anthropic Messages
//! body and one Gemini `streamGenerateContent?alt=sse` body carrying the same text, and that
//! text, which every consumer must give back.
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
