//! The OpenAI chat-completions wire: scripted turns rendered as `chat.completion.chunk` SSE
//! frames, HTTP failures as OpenAI error bodies, and recorded streams loaded for replay.
//!
//! Rendering follows what real servers send: a first chunk with the role, word-sized content
//! deltas, reasoning as `reasoning` plus OpenRouter `reasoning_details` (text, then the
//! signature in its own detail), tool calls by index (id and name first, then two argument
//! fragments), a chunk with `finish_reason`, a usage-only chunk with `choices: []`, and
//! `data: [DONE]`. A refusal is streamed as `refusal` deltas. An in-stream error is
//! `data: {"error": {...}}` with a code mapping to the scenario's error kind.

use std::path::Path;

use axum::body::Bytes;
use patchbay_core::{ErrorKind, FinishReason, Usage};
use patchbay_scripted::{End, Part, Response, ScriptedError};
use serde_json::{Value, json};

use super::{Serve, WireFormat};

/// The OpenAI chat-completions wire format (OpenRouter flavoured: `reasoning_details`, `cost`).
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAiWire;

fn halves(text: &str) -> [&str; 2] {
    let count = text.chars().count();
    let mid = text.char_indices().nth(count / 2).map_or(text.len(), |(at, _)| at);
    [&text[..mid], &text[mid..]]
}

/// The wire name of a finish reason.
pub fn finish_reason_name(reason: &FinishReason) -> String {
    match reason {
        FinishReason::Stop | FinishReason::Refusal | FinishReason::Cancelled => "stop".into(),
        FinishReason::Length => "length".into(),
        FinishReason::ToolUse => "tool_calls".into(),
        FinishReason::ContentFilter => "content_filter".into(),
        FinishReason::Other(raw) => raw.clone(),
    }
}

/// The HTTP status, error type and code an OpenAI-style server uses for an error kind.
pub fn error_code(kind: ErrorKind) -> (u16, &'static str) {
    match kind {
        ErrorKind::Auth => (401, "authentication_error"),
        ErrorKind::RateLimited => (429, "rate_limit_exceeded"),
        ErrorKind::Overloaded => (503, "overloaded_error"),
        ErrorKind::ContextTooLong => (400, "context_length_exceeded"),
        ErrorKind::InvalidRequest => (400, "invalid_request_error"),
        ErrorKind::Transport => (408, "timeout"),
        _ => (500, "server_error"),
    }
}

fn error_json(error: &ScriptedError) -> Value {
    let (status, kind) = error_code(error.kind);
    let code = error.status.unwrap_or(status);
    json!({ "error": { "message": error.message, "type": kind, "code": code } })
}

fn usage_json(usage: &Usage) -> Value {
    let input = usage.input.unwrap_or(0);
    let cached = usage.cache_read.unwrap_or(0);
    let prompt = input + cached + usage.cache_write.unwrap_or(0);
    let output = usage.output.unwrap_or(0);
    let mut value = json!({
        "prompt_tokens": prompt,
        "completion_tokens": output,
        "total_tokens": prompt + output,
        "prompt_tokens_details": { "cached_tokens": cached },
        "completion_tokens_details": { "reasoning_tokens": usage.reasoning.unwrap_or(0) },
    });
    if let Some(write) = usage.cache_write {
        value["prompt_tokens_details"]["cache_write_tokens"] = json!(write);
    }
    if let Some(cost) = usage.cost_usd {
        value["cost"] = json!(cost);
    }
    value
}

/// The SSE frames of one response being rendered.
struct Frames<'a> {
    id: &'a str,
    model: &'a str,
    frames: Vec<String>,
}

impl Frames<'_> {
    fn chunk(&mut self, delta: Value, finish: Option<&str>) {
        let chunk = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": 0,
            "model": self.model,
            "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }],
        });
        self.raw(&chunk);
    }

    fn raw(&mut self, value: &Value) {
        self.frames.push(format!("data: {value}\n\n"));
    }

    /// A text part as word-sized `content` deltas (`refusal` deltas for a refusal).
    fn text(&mut self, text: &str, refusal: bool) {
        let field = if refusal { "refusal" } else { "content" };
        for word in patchbay_scripted::word_deltas(text) {
            self.chunk(json!({ field: word }), None);
        }
    }

    /// A cited text: its text, then one chunk of `url_citation` annotations (as OpenRouter's
    /// web plugin sends them: each spans the whole text and carries the cited passage).
    fn cited(&mut self, text: &str, sources: &[patchbay_scripted::Citation]) {
        self.text(text, false);
        let end = text.chars().count();
        let annotations: Vec<Value> = sources
            .iter()
            .map(|source| {
                json!({ "type": "url_citation", "url_citation": {
                    "url": source.url, "title": source.title, "content": source.cited_text,
                    "start_index": 0, "end_index": end,
                }})
            })
            .collect();
        self.chunk(json!({ "annotations": annotations }), None);
    }

    /// A thinking part as word-sized `reasoning` deltas with their `reasoning_details`, then
    /// the signature in a detail of its own.
    fn thinking(&mut self, text: &str, signature: Option<&str>, detail_index: usize) {
        for word in patchbay_scripted::word_deltas(text) {
            self.chunk(
                json!({
                    "reasoning": word,
                    "reasoning_details": [{
                        "type": "reasoning.text", "text": word,
                        "format": "anthropic-claude-v1", "index": detail_index,
                    }],
                }),
                None,
            );
        }
        if let Some(signature) = signature {
            self.chunk(
                json!({
                    "reasoning_details": [{
                        "type": "reasoning.text", "signature": signature,
                        "format": "anthropic-claude-v1", "index": detail_index,
                    }],
                }),
                None,
            );
        }
    }

    /// A tool call at `tool_index`: id and name first, then the arguments in two fragments.
    fn tool_call(&mut self, tool_index: usize, id: &str, name: &str, input: &Value) {
        self.chunk(
            json!({ "tool_calls": [{
                "index": tool_index, "id": id, "type": "function",
                "function": { "name": name, "arguments": "" },
            }] }),
            None,
        );
        let arguments = input.to_string();
        for piece in halves(&arguments) {
            if !piece.is_empty() {
                self.chunk(
                    json!({ "tool_calls": [{ "index": tool_index, "function": { "arguments": piece } }] }),
                    None,
                );
            }
        }
    }

    /// The end: `finish_reason`, a usage-only chunk and `[DONE]`; an in-stream error; or
    /// nothing for a stream cut short.
    fn end(&mut self, end: &End, usage: &Usage) {
        match end {
            End::Finish { reason } => {
                self.chunk(json!({}), Some(&finish_reason_name(reason)));
                let usage = json!({
                    "id": self.id, "object": "chat.completion.chunk", "created": 0, "model": self.model,
                    "choices": [], "usage": usage_json(usage),
                });
                self.raw(&usage);
                self.frames.push("data: [DONE]\n\n".into());
            }
            End::Error(error) => self.raw(&error_json(error)),
            End::Truncate | End::Stall => {}
        }
    }
}

impl WireFormat for OpenAiWire {
    fn name(&self) -> &'static str {
        "openai"
    }

    fn render_response(&self, response: &Response, model: &str) -> Vec<String> {
        let id = response.id.as_deref().unwrap_or("chatcmpl-mock");
        let mut out = Frames {
            id,
            model,
            frames: Vec::new(),
        };
        let refusal = matches!(
            response.end,
            End::Finish {
                reason: FinishReason::Refusal
            }
        );
        out.chunk(json!({ "role": "assistant", "content": "" }), None);
        let mut tool_index = 0;
        for (detail_index, part) in response.parts.iter().enumerate() {
            match part {
                Part::Text { text } => out.text(text, refusal),
                Part::Cited { text, sources } => out.cited(text, sources),
                Part::Thinking { text, signature } => out.thinking(text, signature.as_deref(), detail_index),
                Part::ToolCall { id, name, input } => {
                    out.tool_call(tool_index, id, name, input);
                    tool_index += 1;
                }
            }
        }
        out.end(&response.end, &response.usage);
        out.frames
    }

    fn render_failure(&self, error: &ScriptedError) -> (u16, Vec<(String, String)>, String) {
        let (default_status, _) = error_code(error.kind);
        let status = error.status.unwrap_or(default_status);
        let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
        if let Some(ms) = error.retry_after_ms {
            headers.push(("retry-after".into(), (ms / 1000).to_string()));
            headers.push(("retry-after-ms".into(), ms.to_string()));
        }
        (status, headers, error_json(error).to_string())
    }
}

/// Whether a recorded file is a raw-chunk capture (one JSON payload per line, no SSE framing).
pub fn is_json_lines(path: &Path) -> bool {
    path.to_string_lossy().ends_with(".chunks.txt")
}

/// A recorded OpenAI-family stream as an SSE body to replay: SSE files unchanged, raw-chunk
/// captures (`*.chunks.txt`) framed as `data:` lines.
pub fn fixture_body(path: &Path) -> std::io::Result<Bytes> {
    let bytes = std::fs::read(path)?;
    if !is_json_lines(path) {
        return Ok(Bytes::from(bytes));
    }
    let mut body = Vec::with_capacity(bytes.len() + bytes.len() / 8);
    for line in bytes.split(|&b| b == b'\n') {
        let line = line.trim_ascii();
        if !line.is_empty() {
            body.extend_from_slice(b"data: ");
            body.extend_from_slice(line);
            body.extend_from_slice(b"\n\n");
        }
    }
    Ok(Bytes::from(body))
}

/// A recorded stream served with status 200.
pub fn replay(path: &Path) -> std::io::Result<Serve> {
    Ok(Serve::sse(fixture_body(path)?))
}
