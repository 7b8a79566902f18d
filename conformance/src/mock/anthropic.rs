//! The Anthropic Messages wire format for the mock server, and recorded-stream helpers.
//!
//! [`AnthropicWire`] renders scripted turns the way `api.anthropic.com` streams them:
//! `message_start`, a `ping`, `content_block_start`/`_delta`/`_stop` per part (text and thinking
//! in word-sized deltas, a text over 4 KiB in one delta, a signature delta, tool input in three `input_json_delta` pieces),
//! `message_delta` with the stop reason and usage, `message_stop`. It serves the real Claude
//! Code CLI too (`POST /v1/messages?beta=true`; the server answers `HEAD /` itself).
//!
//! [`fixture_body`] turns any recorded stream (raw SSE with or without `event:` lines, or one
//! JSON payload per line) into an SSE body to serve, and [`split_responses`] cuts a recording of
//! several responses into one body per request.

use std::path::Path;

use axum::body::Bytes;
use patchbay_core::{ErrorKind, FinishReason};
use patchbay_scripted::{End, Part, Response, ScriptedError};
use serde_json::{Value, json};

use super::WireFormat;

/// The Anthropic Messages wire format. See the module docs.
#[derive(Debug, Clone, Copy, Default)]
pub struct AnthropicWire;

/// [`AnthropicWire`] as a model answers when structured output is forced through a tool (the
/// Anthropic provider's tool fallback, the Claude Code CLI's `StructuredOutput` tool): when the
/// last part of a response is text, it streams as a `tool_use` block of the tool whose
/// `input_json_delta`s are that text verbatim, in the same word-sized pieces, and a `Stop`
/// finish says `tool_use`. Anything else renders as [`AnthropicWire`] does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnthropicToolOutputWire {
    tool: String,
}

impl AnthropicToolOutputWire {
    /// The wire of a model forced to answer through the tool named `tool`.
    pub fn new(tool: impl Into<String>) -> Self {
        Self { tool: tool.into() }
    }
}

impl WireFormat for AnthropicToolOutputWire {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn render_response(&self, response: &Response, model: &str) -> Vec<String> {
        render(response, model, Some(&self.tool))
    }

    fn render_failure(&self, error: &ScriptedError) -> (u16, Vec<(String, String)>, String) {
        AnthropicWire.render_failure(error)
    }
}

/// The Anthropic `stop_reason` for a finish reason.
pub fn stop_reason(reason: &FinishReason) -> String {
    match reason {
        FinishReason::Stop | FinishReason::Cancelled => "end_turn".into(),
        FinishReason::Length => "max_tokens".into(),
        FinishReason::ToolUse => "tool_use".into(),
        FinishReason::Refusal | FinishReason::ContentFilter => "refusal".into(),
        FinishReason::Other(raw) => raw.clone(),
    }
}

/// The Anthropic error type and HTTP status for an error kind.
pub fn error_type(kind: ErrorKind) -> (&'static str, u16) {
    match kind {
        ErrorKind::RateLimited => ("rate_limit_error", 429),
        ErrorKind::Overloaded => ("overloaded_error", 529),
        ErrorKind::Auth => ("authentication_error", 401),
        ErrorKind::InvalidRequest => ("invalid_request_error", 400),
        ErrorKind::ContextTooLong => ("request_too_large", 413),
        ErrorKind::Transport => ("timeout_error", 504),
        _ => ("api_error", 500),
    }
}

fn frame(event: &str, data: &Value) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

/// Split JSON text into `parts` pieces at character boundaries.
fn pieces(text: &str, parts: usize) -> Vec<&str> {
    let chars: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    let mut cuts: Vec<usize> = (1..parts)
        .map(|k| chars.get(chars.len() * k / parts).copied().unwrap_or(text.len()))
        .collect();
    cuts.dedup();
    let mut out = Vec::new();
    let mut start = 0;
    for cut in cuts {
        if cut > start {
            out.push(&text[start..cut]);
            start = cut;
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

fn usage_json(response: &Response, start: bool) -> Value {
    let usage = &response.usage;
    let mut value = json!({
        "input_tokens": usage.input.unwrap_or(0),
        "output_tokens": if start { 1 } else { usage.output.unwrap_or(0) },
    });
    if let Some(read) = usage.cache_read {
        value["cache_read_input_tokens"] = json!(read);
    }
    if let Some(write) = usage.cache_write {
        value["cache_creation_input_tokens"] = json!(write);
    }
    value
}

fn block_frames(out: &mut Vec<String>, index: usize, part: &Part) {
    let delta = |delta: Value| {
        frame(
            "content_block_delta",
            &json!({ "type": "content_block_delta", "index": index, "delta": delta }),
        )
    };
    match part {
        Part::Text { text } => {
            let start = json!({ "type": "content_block_start", "index": index, "content_block": { "type": "text", "text": "" } });
            out.push(frame("content_block_start", &start));
            for piece in super::deltas(text) {
                out.push(delta(json!({ "type": "text_delta", "text": piece })));
            }
        }
        Part::Cited { text, sources } => {
            // As the API streams a cited block: empty citations on the start, each citation
            // as a `citations_delta` before the text.
            let block = json!({ "type": "text", "text": "", "citations": [] });
            let start = json!({ "type": "content_block_start", "index": index, "content_block": block });
            out.push(frame("content_block_start", &start));
            for (n, source) in sources.iter().enumerate() {
                let citation = json!({
                    "type": "web_search_result_location", "url": source.url, "title": source.title,
                    "cited_text": source.cited_text, "encrypted_index": format!("ZW5jcnlwdGVk{n}"),
                });
                out.push(delta(json!({ "type": "citations_delta", "citation": citation })));
            }
            for piece in super::deltas(text) {
                out.push(delta(json!({ "type": "text_delta", "text": piece })));
            }
        }
        Part::Thinking { text, signature } => {
            let block = json!({ "type": "thinking", "thinking": "", "signature": "" });
            out.push(frame(
                "content_block_start",
                &json!({ "type": "content_block_start", "index": index, "content_block": block }),
            ));
            for piece in super::deltas(text) {
                out.push(delta(json!({ "type": "thinking_delta", "thinking": piece })));
            }
            if let Some(signature) = signature {
                out.push(delta(json!({ "type": "signature_delta", "signature": signature })));
            }
        }
        Part::ToolCall { id, name, input } => {
            let block = json!({ "type": "tool_use", "id": id, "name": name, "input": {} });
            out.push(frame(
                "content_block_start",
                &json!({ "type": "content_block_start", "index": index, "content_block": block }),
            ));
            let text = input.to_string();
            for piece in pieces(&text, 3) {
                out.push(delta(json!({ "type": "input_json_delta", "partial_json": piece })));
            }
        }
    }
}

fn error_body(error: &ScriptedError) -> Value {
    let (kind, _) = error_type(error.kind);
    json!({ "type": "error", "error": { "type": kind, "message": error.message }, "request_id": "req_mock" })
}

impl WireFormat for AnthropicWire {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn render_response(&self, response: &Response, model: &str) -> Vec<String> {
        render(response, model, None)
    }

    fn render_failure(&self, error: &ScriptedError) -> (u16, Vec<(String, String)>, String) {
        let (_, default_status) = error_type(error.kind);
        let status = error.status.unwrap_or(default_status);
        let mut headers = vec![
            ("content-type".to_string(), "application/json".to_string()),
            ("request-id".to_string(), "req_mock".to_string()),
        ];
        if let Some(ms) = error.retry_after_ms {
            headers.push(("retry-after".into(), ms.div_ceil(1000).to_string()));
            headers.push(("retry-after-ms".into(), ms.to_string()));
        }
        (status, headers, error_body(error).to_string())
    }
}

/// A response's frames; with `output_tool`, a last text part goes out as that tool's input.
fn render(response: &Response, model: &str, output_tool: Option<&str>) -> Vec<String> {
    let id = response.id.clone().unwrap_or_else(|| "msg_mock".into());
    let message = json!({
        "id": id, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": null, "stop_sequence": null, "usage": usage_json(response, true),
    });
    let mut out = vec![
        frame("message_start", &json!({ "type": "message_start", "message": message })),
        frame("ping", &json!({ "type": "ping" })),
    ];
    let last = response.parts.len().saturating_sub(1);
    let output_tool = output_tool.filter(|_| matches!(response.parts.last(), Some(Part::Text { .. })));
    for (index, part) in response.parts.iter().enumerate() {
        match (output_tool, part) {
            (Some(tool), Part::Text { text }) if index == last => output_tool_frames(&mut out, index, tool, text),
            _ => block_frames(&mut out, index, part),
        }
        let cut_here = index == last && !matches!(response.end, End::Finish { .. });
        if !cut_here {
            out.push(frame(
                "content_block_stop",
                &json!({ "type": "content_block_stop", "index": index }),
            ));
        }
    }
    match &response.end {
        End::Finish { reason } => {
            let stop = match (output_tool, reason) {
                (Some(_), FinishReason::Stop) => "tool_use".to_string(),
                _ => stop_reason(reason),
            };
            let delta = json!({
                "type": "message_delta",
                "delta": { "stop_reason": stop, "stop_sequence": null },
                "usage": usage_json(response, false),
            });
            out.push(frame("message_delta", &delta));
            out.push(frame("message_stop", &json!({ "type": "message_stop" })));
        }
        End::Error(error) => out.push(frame("error", &error_body(error))),
        End::Truncate | End::Stall => {}
    }
    out
}

/// A text part as the input of the structured-output tool `tool`, streamed verbatim.
fn output_tool_frames(out: &mut Vec<String>, index: usize, tool: &str, text: &str) {
    let block = json!({ "type": "tool_use", "id": "toolu_output", "name": tool, "input": {} });
    out.push(frame(
        "content_block_start",
        &json!({ "type": "content_block_start", "index": index, "content_block": block }),
    ));
    for piece in super::deltas(text) {
        let delta = json!({ "type": "input_json_delta", "partial_json": piece });
        out.push(frame(
            "content_block_delta",
            &json!({ "type": "content_block_delta", "index": index, "delta": delta }),
        ));
    }
}

/// An SSE body from any recorded stream: raw SSE is kept byte for byte; one JSON payload per
/// line becomes `event: <type>` / `data: <line>` frames.
pub fn fixture_body(recorded: &[u8]) -> Bytes {
    let text = String::from_utf8_lossy(recorded);
    let is_sse = text
        .lines()
        .any(|line| line.starts_with("data:") || line.starts_with("event:"));
    if is_sse {
        return Bytes::copy_from_slice(recorded);
    }
    let mut out = String::with_capacity(recorded.len() * 2);
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let kind = serde_json::from_str::<Value>(line)
            .ok()
            .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_else(|| "message".into());
        out.push_str(&format!("event: {kind}\ndata: {line}\n\n"));
    }
    Bytes::from(out)
}

/// Read a recorded stream file as an SSE body to serve (see [`fixture_body`]).
pub fn load_fixture(path: impl AsRef<Path>) -> std::io::Result<Bytes> {
    Ok(fixture_body(&std::fs::read(path)?))
}

/// Cut an SSE body holding several responses into one body per response (after each
/// `message_stop` frame).
pub fn split_responses(body: &[u8]) -> Vec<Bytes> {
    let text = String::from_utf8_lossy(body);
    let mut out = Vec::new();
    let mut current = String::new();
    for chunk in text.split_inclusive("\n\n") {
        current.push_str(chunk);
        let is_stop = chunk
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .any(|data| data.contains("\"message_stop\""));
        if is_stop {
            out.push(Bytes::from(std::mem::take(&mut current)));
        }
    }
    if !current.trim().is_empty() {
        out.push(Bytes::from(current));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_deltas_match_the_scripted_provider() {
        assert_eq!(
            crate::mock::deltas("héllo  wörld 🎉 end"),
            vec!["héllo  ", "wörld ", "🎉 ", "end"]
        );
    }

    #[test]
    fn pieces_cover_the_text() {
        let text = "{\"city\":\"Zürich\"}";
        assert_eq!(pieces(text, 3).concat(), text);
        assert_eq!(pieces("{}", 3).concat(), "{}");
    }

    #[test]
    fn json_lines_become_frames() {
        let body = fixture_body(b"{\"type\":\"ping\"}\n{\"type\":\"message_stop\"}\n");
        assert_eq!(
            body,
            Bytes::from(
                "event: ping\ndata: {\"type\":\"ping\"}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
            )
        );
        assert_eq!(split_responses(&body).len(), 1);
    }
}
