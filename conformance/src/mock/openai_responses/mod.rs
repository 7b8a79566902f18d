//! The OpenAI Responses wire: scripted turns rendered as the typed SSE events
//! `api.openai.com` streams for `POST /v1/responses` (`"stream": true`), and HTTP failures as
//! OpenAI error bodies. Codex speaks the same wire.
//!
//! Every frame is `event: <type>\ndata: <json>\n\n`; the JSON's `type` is the event name and
//! its `sequence_number` counts from 0 in each response. There is no `[DONE]`: the terminal
//! event ends the stream. Ids are made up, stable and unique per wire: the n-th scripted turn it
//! renders (a response or a failure) is `resp_<n>` (the scripted response id when the script
//! gives one) and `req_<n>`, and output items are numbered on through the wire (`rs_<k>`,
//! `msg_<k>`, `fc_<k>`), so a conversation that sends items back never repeats an id.
//! `output_index` counts the items of the response, one per scripted part.
//!
//! | Scripted | Rendered |
//! |---|---|
//! | start of a response | `response.created`, `response.in_progress`: `response` with `id`, `object: "response"`, `created_at` ([`CREATED_AT`]), `status: "in_progress"`, `model` (the request body's), `output: []`, `usage: null`, `error: null`, `incomplete_details: null`, `store: false`, `tools: []` and the defaults of a plain request |
//! | [`Part::Thinking`] | a `reasoning` item: `response.output_item.added` (`summary: []`); for a non-empty text `response.reasoning_summary_part.added` (`summary_index` 0, `summary_text` `""`), the text in [`deltas`] pieces as `response.reasoning_summary_text.delta`, `response.reasoning_summary_text.done` (`text`), `response.reasoning_summary_part.done`; then `response.output_item.done` with `summary` (`[]` for an empty text) and the signature as `encrypted_content` (the key only when there is one) |
//! | [`Part::Text`] | a `message` item: `response.output_item.added` (`status: "in_progress"`, `role: "assistant"`, `content: []`), `response.content_part.added` (`output_text`, `annotations: []`, `logprobs: []`, `text: ""`), the text in [`deltas`] pieces as `response.output_text.delta` (`logprobs: []`), `response.output_text.done`, `response.content_part.done`, `response.output_item.done` (`status: "completed"`, `content` that part) |
//! | [`Part::Text`] of a `Refusal` finish | the same `message` item with a `refusal` part: `response.content_part.added` (`{type: "refusal", refusal: ""}`), `response.refusal.delta` pieces, `response.refusal.done` (`refusal`), final `content: [{type: "refusal", refusal}]` |
//! | [`Part::Cited`] | a `message` item as [`Part::Text`] (`output_text` even under a refusal), and after its deltas one `response.output_text.annotation.added` per source (`annotation_index` 0, 1...): `{type: "url_citation", url, title, start_index: 0, end_index}`, the span the whole text in characters (a citation has no span of its own); the part's `annotations` list them. The scripted `cited_text` has no place on this wire (a `url_citation` names a page, not a passage) |
//! | [`Part::ToolCall`] | a `function_call` item: `response.output_item.added` (`status: "in_progress"`, `arguments: ""`, `call_id` the scripted id, `name`), the input's JSON text in two halves (the chat mock's and the scripted provider's two fragments) as `response.function_call_arguments.delta`, `response.function_call_arguments.done` (`arguments`), `response.output_item.done` (`status: "completed"`, `arguments`) |
//! | finish `Stop`, `ToolUse`, `Refusal`, `Cancelled`, `Other` | `response.completed`, `status: "completed"` |
//! | finish `Length` | `response.incomplete`, `status: "incomplete"`, `incomplete_details: {reason: "max_output_tokens"}` |
//! | finish `ContentFilter` | `response.incomplete`, `incomplete_details: {reason: "content_filter"}` |
//! | usage | on the terminal event's `response` (with the whole `output`, each item as in its `output_item.done`): `input_tokens` (input, cache reads and cache writes: OpenAI counts the whole prompt), `input_tokens_details.cached_tokens` (cache reads, else 0), `output_tokens` (reasoning included), `output_tokens_details.reasoning_tokens` (else 0), `total_tokens` |
//! | [`End::Error`] | instead of the terminal event, `event: error` `{type: "error", code, message, param: null, sequence_number}`, the code from the kind ([`error_code`]) |
//! | [`End::Truncate`], [`End::Stall`] | every item event, no terminal event (the server then closes or stalls) |
//! | [`Turn::Fail`](patchbay_scripted::Turn::Fail) | status (scripted, else [`error_status`]), `content-type: application/json`, `x-request-id: req_<n>`, `retry-after` in whole seconds rounded up when the script gives a wait, body `{"error": {"message", "type", "param": null, "code"}}` with the type of the status ([`error_type`]) and the code of the kind |
//!
//! With [`ResponsesWire::with_tool_namespaces`], a scripted call named `mcp__<server>__<tool>`
//! is rendered as Codex's namespaced MCP call: the `function_call` item (in its
//! `output_item.added`, `output_item.done` and the terminal event's `output`) has
//! `"namespace": "mcp__<server>"` and `"name": "<tool>"`. Any other name, and every name by
//! default, is rendered as scripted.
//!
//! The server answers every POST with the next scripted turn, whatever the path, and reads the
//! model from the request body's `model`. Point the provider's base URL (the part before
//! `/responses`) at `format!("{}/v1", server.url())`: it then posts to `/v1/responses` as on
//! `api.openai.com` (a base URL of `server.url()`, posting to `/responses`, is served the same).
//! In a conformance target: `let server = case.mock(ResponsesWire::new()).await?;`.

use std::sync::atomic::{AtomicU64, Ordering};

use patchbay_core::{ErrorKind, FinishReason, Usage};
use patchbay_scripted::{Citation, End, Part, Response, ScriptedError};
use serde_json::{Value, json};

use super::{WireFormat, deltas};

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

/// The `created_at` of every rendered response: 2026-01-01T00:00:00Z, in Unix seconds.
pub const CREATED_AT: u64 = 1_767_225_600;

/// The OpenAI Responses wire format (`POST {base}/responses`, streamed). See the module docs.
///
/// It numbers the calls it answers and the items it streams, so ids stay unique across a
/// conversation; a clone goes on from the same numbers.
#[derive(Debug, Default)]
pub struct ResponsesWire {
    /// Calls answered so far (responses and failures).
    calls: AtomicU64,
    /// Output items streamed so far.
    items: AtomicU64,
    /// Whether `mcp__<server>__<tool>` calls are rendered with a `namespace`.
    namespaces: bool,
}

impl ResponsesWire {
    /// A wire that numbers from 1.
    pub fn new() -> Self {
        Self::default()
    }

    /// Render a scripted tool call named `mcp__<server>__<tool>` as Codex expects an MCP tool
    /// call: a `function_call` item with `"namespace": "mcp__<server>"` and `"name": "<tool>"`
    /// (Codex offers each MCP server as a `namespace` tool and refuses the flat name).
    pub fn with_tool_namespaces(mut self) -> Self {
        self.namespaces = true;
        self
    }

    /// The number of the next call (from 1).
    fn next_call(&self) -> u64 {
        self.calls.fetch_add(1, Ordering::Relaxed) + 1
    }
}

impl Clone for ResponsesWire {
    fn clone(&self) -> Self {
        Self {
            calls: AtomicU64::new(self.calls.load(Ordering::Relaxed)),
            items: AtomicU64::new(self.items.load(Ordering::Relaxed)),
            namespaces: self.namespaces,
        }
    }
}

/// The error `code` OpenAI gives an error kind, in a stream's `error` event and an HTTP error
/// body (a provider maps it back to the kind): `Overloaded` `server_is_overloaded`,
/// `RateLimited` `rate_limit_exceeded`, `ContextTooLong` `context_length_exceeded`,
/// `InvalidRequest` `invalid_request_error`, `Auth` `invalid_api_key`, anything else
/// `server_error`.
pub fn error_code(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Overloaded => "server_is_overloaded",
        ErrorKind::RateLimited => "rate_limit_exceeded",
        ErrorKind::ContextTooLong => "context_length_exceeded",
        ErrorKind::InvalidRequest => "invalid_request_error",
        ErrorKind::Auth => "invalid_api_key",
        _ => "server_error",
    }
}

/// The HTTP status of a failure of this kind when the script gives none: `Auth` 401,
/// `RateLimited` 429, `Overloaded` 503, `ContextTooLong` and `InvalidRequest` 400 (OpenAI
/// tells them apart by `code`), `Transport` 408, anything else 500.
pub fn error_status(kind: ErrorKind) -> u16 {
    match kind {
        ErrorKind::Auth => 401,
        ErrorKind::RateLimited => 429,
        ErrorKind::Overloaded => 503,
        ErrorKind::ContextTooLong | ErrorKind::InvalidRequest => 400,
        ErrorKind::Transport => 408,
        _ => 500,
    }
}

/// The error `type` of an HTTP error body, following its status as OpenAI's bodies do: 429
/// `requests` (a request-rate limit; OpenAI says `tokens` for a token-rate one), 503
/// `service_unavailable_error`, any other 4xx `invalid_request_error` (a bad key is a 401
/// `invalid_request_error` with code `invalid_api_key`), anything else `server_error`.
pub fn error_type(status: u16) -> &'static str {
    match status {
        429 => "requests",
        503 => "service_unavailable_error",
        400..=499 => "invalid_request_error",
        _ => "server_error",
    }
}

/// The terminal event of a finish, its `status` and its `incomplete_details.reason`:
/// `Length` and `ContentFilter` end `response.incomplete` (`max_output_tokens`,
/// `content_filter`), every other finish `response.completed`.
pub fn terminal(reason: &FinishReason) -> (&'static str, &'static str, Option<&'static str>) {
    match reason {
        FinishReason::Length => ("response.incomplete", "incomplete", Some("max_output_tokens")),
        FinishReason::ContentFilter => ("response.incomplete", "incomplete", Some("content_filter")),
        _ => ("response.completed", "completed", None),
    }
}

/// The `usage` of a terminal event.
fn usage_json(usage: &Usage) -> Value {
    let cached = usage.cache_read.unwrap_or(0);
    let input = usage.input.unwrap_or(0) + cached + usage.cache_write.unwrap_or(0);
    let output = usage.output.unwrap_or(0);
    json!({
        "input_tokens": input,
        "input_tokens_details": { "cached_tokens": cached },
        "output_tokens": output,
        "output_tokens_details": { "reasoning_tokens": usage.reasoning.unwrap_or(0) },
        "total_tokens": input + output,
    })
}

/// `base` (an object) with the fields of `extra` (an object) added.
fn with(base: &Value, extra: Value) -> Value {
    let mut value = base.clone();
    if let (Some(object), Value::Object(extra)) = (value.as_object_mut(), extra) {
        object.extend(extra);
    }
    value
}

/// Split text in two at the character in the middle (the chat mock's convention for tool
/// arguments); empty halves are left out.
fn halves(text: &str) -> Vec<&str> {
    let mid = text
        .char_indices()
        .nth(text.chars().count() / 2)
        .map_or(text.len(), |(at, _)| at);
    [&text[..mid], &text[mid..]]
        .into_iter()
        .filter(|half| !half.is_empty())
        .collect()
}

/// An assistant `message` item.
fn message_item(id: &str, status: &str, content: Value) -> Value {
    json!({ "id": id, "type": "message", "status": status, "role": "assistant", "content": content })
}

/// A call name split as a namespaced MCP call: `mcp__<server>__<tool>` into `mcp__<server>`
/// and `<tool>` (neither part empty).
fn mcp_namespace(name: &str) -> Option<(String, &str)> {
    let rest = name.strip_prefix("mcp__")?;
    let (server, tool) = rest.split_once("__")?;
    (!server.is_empty() && !tool.is_empty()).then(|| (format!("mcp__{server}"), tool))
}

/// The frames of one response being rendered.
struct Stream<'a> {
    id: String,
    model: &'a str,
    /// Whether MCP calls get a `namespace` ([`ResponsesWire::with_tool_namespaces`]).
    namespaces: bool,
    /// The number of this response's first item.
    first_item: u64,
    sequence: u64,
    frames: Vec<String>,
    /// The finished items, as in their `output_item.done`.
    output: Vec<Value>,
}

impl Stream<'_> {
    /// One frame: `fields` with the event's `type` and the next `sequence_number`.
    fn emit(&mut self, event: &str, fields: Value) {
        let mut data = with(&json!({ "type": event }), fields);
        data["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        self.frames.push(format!("event: {event}\ndata: {data}\n\n"));
    }

    /// The response object in `status`, with no output yet.
    fn response(&self, status: &str) -> Value {
        json!({
            "id": self.id, "object": "response", "created_at": CREATED_AT, "status": status,
            "background": false, "error": null, "incomplete_details": null, "instructions": null,
            "max_output_tokens": null, "model": self.model, "output": [], "parallel_tool_calls": true,
            "previous_response_id": null, "reasoning": { "effort": null, "summary": null },
            "store": false, "temperature": 1.0, "text": { "format": { "type": "text" } },
            "tool_choice": "auto", "tools": [], "top_p": 1.0, "truncation": "disabled",
            "usage": null, "metadata": {},
        })
    }

    /// The next item's output index and id.
    fn open(&self, prefix: &str) -> (usize, String) {
        let index = self.output.len();
        (index, format!("{prefix}_{}", self.first_item + index as u64))
    }

    /// Announce an item.
    fn added(&mut self, index: usize, item: Value) {
        self.emit(
            "response.output_item.added",
            json!({ "output_index": index, "item": item }),
        );
    }

    /// Finish an item: `output_item.done`, and keep it for the terminal event.
    fn done(&mut self, index: usize, item: Value) {
        self.emit(
            "response.output_item.done",
            json!({ "output_index": index, "item": item.clone() }),
        );
        self.output.push(item);
    }

    fn reasoning(&mut self, text: &str, signature: Option<&str>) {
        let (index, id) = self.open("rs");
        self.added(index, json!({ "id": id, "type": "reasoning", "summary": [] }));
        let mut summary = Vec::new();
        if !text.is_empty() {
            let at = json!({ "item_id": id, "output_index": index, "summary_index": 0 });
            let empty = json!({ "type": "summary_text", "text": "" });
            self.emit(
                "response.reasoning_summary_part.added",
                with(&at, json!({ "part": empty })),
            );
            for piece in deltas(text) {
                self.emit(
                    "response.reasoning_summary_text.delta",
                    with(&at, json!({ "delta": piece })),
                );
            }
            self.emit(
                "response.reasoning_summary_text.done",
                with(&at, json!({ "text": text })),
            );
            let part = json!({ "type": "summary_text", "text": text });
            self.emit(
                "response.reasoning_summary_part.done",
                with(&at, json!({ "part": part })),
            );
            summary.push(part);
        }
        let mut item = json!({ "id": id, "type": "reasoning", "summary": summary });
        if let Some(signature) = signature {
            item["encrypted_content"] = json!(signature);
        }
        self.done(index, item);
    }

    fn message(&mut self, text: &str, sources: &[Citation], refusal: bool) {
        let (index, id) = self.open("msg");
        self.added(index, message_item(&id, "in_progress", json!([])));
        let at = json!({ "item_id": id, "output_index": index, "content_index": 0 });
        let part = if refusal {
            self.refusal_part(&at, text)
        } else {
            self.text_part(&at, text, sources)
        };
        self.emit("response.content_part.done", with(&at, json!({ "part": part.clone() })));
        self.done(index, message_item(&id, "completed", json!([part])));
    }

    /// An `output_text` part at `at` (item, output and content index) up to its `text.done`, with
    /// one `url_citation` per source; the finished part.
    fn text_part(&mut self, at: &Value, text: &str, sources: &[Citation]) -> Value {
        let empty = json!({ "type": "output_text", "annotations": [], "logprobs": [], "text": "" });
        self.emit("response.content_part.added", with(at, json!({ "part": empty })));
        for piece in deltas(text) {
            let delta = json!({ "delta": piece, "logprobs": [] });
            self.emit("response.output_text.delta", with(at, delta));
        }
        let end = text.chars().count();
        let mut annotations = Vec::new();
        for (n, source) in sources.iter().enumerate() {
            let annotation = json!({
                "type": "url_citation", "url": source.url, "title": source.title,
                "start_index": 0, "end_index": end,
            });
            let added = json!({ "annotation_index": n, "annotation": annotation.clone() });
            self.emit("response.output_text.annotation.added", with(at, added));
            annotations.push(annotation);
        }
        self.emit(
            "response.output_text.done",
            with(at, json!({ "text": text, "logprobs": [] })),
        );
        json!({ "type": "output_text", "annotations": annotations, "logprobs": [], "text": text })
    }

    /// A `refusal` part at `at` up to its `refusal.done`; the finished part.
    fn refusal_part(&mut self, at: &Value, text: &str) -> Value {
        let empty = json!({ "type": "refusal", "refusal": "" });
        self.emit("response.content_part.added", with(at, json!({ "part": empty })));
        for piece in deltas(text) {
            self.emit("response.refusal.delta", with(at, json!({ "delta": piece })));
        }
        self.emit("response.refusal.done", with(at, json!({ "refusal": text })));
        json!({ "type": "refusal", "refusal": text })
    }

    fn function_call(&mut self, call_id: &str, name: &str, input: &Value) {
        let (index, id) = self.open("fc");
        let namespaced = if self.namespaces { mcp_namespace(name) } else { None };
        let item = |status: &str, arguments: &str| {
            let mut item = json!({
                "id": id, "type": "function_call", "status": status, "arguments": arguments,
                "call_id": call_id, "name": name,
            });
            if let Some((namespace, tool)) = &namespaced {
                item["namespace"] = json!(namespace);
                item["name"] = json!(tool);
            }
            item
        };
        self.added(index, item("in_progress", ""));
        let arguments = input.to_string();
        let at = json!({ "item_id": id, "output_index": index });
        for piece in halves(&arguments) {
            self.emit(
                "response.function_call_arguments.delta",
                with(&at, json!({ "delta": piece })),
            );
        }
        let done = json!({ "arguments": arguments });
        self.emit("response.function_call_arguments.done", with(&at, done));
        self.done(index, item("completed", &arguments));
    }

    /// The terminal event, an `error` event, or nothing for a stream cut short.
    fn end(&mut self, end: &End, usage: &Usage) {
        match end {
            End::Finish { reason } => {
                let (event, status, incomplete) = terminal(reason);
                let mut response = self.response(status);
                response["output"] = Value::Array(std::mem::take(&mut self.output));
                response["usage"] = usage_json(usage);
                if let Some(reason) = incomplete {
                    response["incomplete_details"] = json!({ "reason": reason });
                }
                self.emit(event, json!({ "response": response }));
            }
            End::Error(error) => {
                let fields = json!({ "code": error_code(error.kind), "message": error.message, "param": null });
                self.emit("error", fields);
            }
            End::Truncate | End::Stall => {}
        }
    }
}

impl WireFormat for ResponsesWire {
    fn name(&self) -> &'static str {
        "openai-responses"
    }

    fn render_response(&self, response: &Response, model: &str) -> Vec<String> {
        let call = self.next_call();
        let count = response.parts.len() as u64;
        let first_item = self.items.fetch_add(count, Ordering::Relaxed) + 1;
        let mut out = Stream {
            id: response.id.clone().unwrap_or_else(|| format!("resp_{call}")),
            model,
            namespaces: self.namespaces,
            first_item,
            sequence: 0,
            frames: Vec::new(),
            output: Vec::new(),
        };
        for event in ["response.created", "response.in_progress"] {
            let created = out.response("in_progress");
            out.emit(event, json!({ "response": created }));
        }
        let refusal = matches!(
            response.end,
            End::Finish {
                reason: FinishReason::Refusal
            }
        );
        for part in &response.parts {
            match part {
                Part::Thinking { text, signature } => out.reasoning(text, signature.as_deref()),
                Part::Text { text } => out.message(text, &[], refusal),
                Part::Cited { text, sources } => out.message(text, sources, false),
                Part::ToolCall { id, name, input } => out.function_call(id, name, input),
            }
        }
        out.end(&response.end, &response.usage);
        out.frames
    }

    fn render_failure(&self, error: &ScriptedError) -> (u16, Vec<(String, String)>, String) {
        let call = self.next_call();
        let status = error.status.unwrap_or_else(|| error_status(error.kind));
        let mut headers = vec![
            ("content-type".to_string(), "application/json".to_string()),
            ("x-request-id".to_string(), format!("req_{call}")),
        ];
        if let Some(ms) = error.retry_after_ms {
            headers.push(("retry-after".into(), ms.div_ceil(1000).to_string()));
        }
        let body = json!({ "error": {
            "message": error.message, "type": error_type(status), "param": null,
            "code": error_code(error.kind),
        }});
        (status, headers, body.to_string())
    }
}
