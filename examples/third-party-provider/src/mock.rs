//! [`OllamaWire`]: the Ollama `/api/chat` wire family for `patchbay_conformance`'s mock servers
//! (feature `mock`).
//!
//! Rendering follows what an Ollama server sends: one JSON object per line, word-sized
//! `message.content` (or `message.thinking`) deltas, each tool call whole in its own line (no id,
//! arguments as an object), then the `"done": true` line with `done_reason`, the token counts and
//! durations. A text longer than 4 KiB goes out in one line (the `huge_line` scenario). Ollama
//! has no reasoning signature and no refusal: signatures are left out and a refusal ends with
//! `stop`, as a real server would. An in-stream error is `{"error": "..."}`; an HTTP failure is
//! `{"error": "..."}` with the scenario's status and `retry-after`.

use patchbay_conformance::mock::WireFormat;
use patchbay_core::{ErrorKind, FinishReason};
use patchbay_scripted::{End, Part, Response, ScriptedError};
use serde_json::{Value, json};

/// The timestamp every rendered line carries.
const CREATED_AT: &str = "2025-01-01T00:00:00.000000Z";

/// The Ollama `/api/chat` wire format (JSON lines, `application/x-ndjson`).
///
/// ```
/// use patchbay_conformance::mock::WireFormat;
/// use patchbay_ollama::mock::OllamaWire;
/// use patchbay_scripted::{Part, Response};
/// let lines = OllamaWire.render_response(&Response::new(vec![Part::text("Hi there")]).with_usage(3, 2), "m");
/// assert_eq!(lines.len(), 3); // "Hi ", "there", done
/// assert!(lines.iter().all(|line| line.ends_with('\n')));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct OllamaWire;

/// The `done_reason` an Ollama server gives for a finish reason.
pub fn done_reason(reason: &FinishReason) -> String {
    match reason {
        FinishReason::Length => "length".into(),
        FinishReason::Other(raw) => raw.clone(),
        // Tool calls, refusals and filters all end with a plain `stop` on Ollama.
        _ => "stop".into(),
    }
}

/// The HTTP status an Ollama server (or the proxy in front of a hosted one) answers for a kind.
pub fn status_for(kind: ErrorKind) -> u16 {
    match kind {
        ErrorKind::Auth => 401,
        ErrorKind::RateLimited => 429,
        ErrorKind::Overloaded => 503,
        ErrorKind::InvalidRequest | ErrorKind::ContextTooLong => 400,
        _ => 500,
    }
}

struct Lines<'a> {
    model: &'a str,
    lines: Vec<String>,
}

impl Lines<'_> {
    fn message(&mut self, fields: Value) {
        let mut message = json!({"role": "assistant", "content": ""});
        if let (Value::Object(message), Value::Object(fields)) = (&mut message, fields) {
            message.extend(fields);
        }
        self.line(json!({"model": self.model, "created_at": CREATED_AT, "message": message, "done": false}));
    }

    fn line(&mut self, value: Value) {
        self.lines.push(format!("{value}\n"));
    }
}

impl WireFormat for OllamaWire {
    fn name(&self) -> &'static str {
        "ollama"
    }

    fn content_type(&self) -> &'static str {
        "application/x-ndjson"
    }

    fn render_response(&self, response: &Response, model: &str) -> Vec<String> {
        let mut out = Lines {
            model,
            lines: Vec::new(),
        };
        for part in &response.parts {
            match part {
                // Ollama has no citations: a cited text is plain text.
                Part::Text { text } | Part::Cited { text, .. } => {
                    for word in patchbay_conformance::mock::deltas(text) {
                        out.message(json!({"content": word}));
                    }
                }
                Part::Thinking { text, .. } => {
                    for word in patchbay_conformance::mock::deltas(text) {
                        out.message(json!({"thinking": word}));
                    }
                }
                Part::ToolCall { name, input, .. } => {
                    out.message(json!({"tool_calls": [{"function": {"name": name, "arguments": input}}]}));
                }
            }
        }
        match &response.end {
            End::Finish { reason } => out.line(json!({
                "model": model,
                "created_at": CREATED_AT,
                "message": {"role": "assistant", "content": ""},
                "done": true,
                "done_reason": done_reason(reason),
                "total_duration": 1_200_000_000u64,
                "load_duration": 20_000_000u64,
                "prompt_eval_count": response.usage.input.unwrap_or(0),
                "prompt_eval_duration": 100_000_000u64,
                "eval_count": response.usage.output.unwrap_or(0),
                "eval_duration": 1_000_000_000u64,
            })),
            End::Error(error) => out.line(json!({"error": error.message})),
            End::Truncate | End::Stall => {}
        }
        out.lines
    }

    fn render_failure(&self, error: &ScriptedError) -> (u16, Vec<(String, String)>, String) {
        let status = error.status.unwrap_or_else(|| status_for(error.kind));
        let mut headers = vec![(
            "content-type".to_string(),
            "application/json; charset=utf-8".to_string(),
        )];
        if let Some(ms) = error.retry_after_ms {
            headers.push(("retry-after".into(), ms.div_ceil(1000).to_string()));
        }
        (status, headers, json!({"error": error.message}).to_string())
    }
}
