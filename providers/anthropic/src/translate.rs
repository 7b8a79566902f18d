//! The wire translator: a pure state machine from Anthropic stream events to patchbay events.
//!
//! This file is longer than the house limit on purpose: the state machine is one `match` over
//! the wire events whose arms share the open-block state, and splitting it would scatter that.
//!
//! [`Translator`] consumes parsed stream events (a JSON payload as `&str`, a
//! `serde_json::Value`, or a typed [`StreamEvent`]) and queues [`Event`]s; [`StreamTranslator`]
//! puts the [`Framer`] in front of it so raw bytes go in. No I/O, no clock except the
//! [`MetricsRecorder`] of `Finish`. The agent-runtime provider reuses [`Translator`] for the
//! `stream_event` partials of the Claude Code CLI (one translator per message).
//!
//! What each wire block becomes:
//! - `text` → `TextDelta`; its citations → one `Opaque {"type": "text_citations"}` after the block;
//! - `thinking` → `ReasoningDelta` + `ReasoningSignature`; `redacted_thinking` → `RedactedReasoning`;
//! - `tool_use` → `ToolCallStart`, `ToolCallDelta`s, and `ToolCall` only at `content_block_stop`
//!   (empty input is `{}`);
//! - `server_tool_use` / `mcp_tool_use` → the same with `executed_by: Provider`, plus the raw block
//!   (input filled in) as `Opaque` so it goes back to the API unchanged;
//! - `*_tool_result` blocks → the raw block as `Opaque`, then a `ToolResult` for its call;
//! - any other block (`compaction`, `fallback`...) → `Opaque`, with unknown deltas merged in.
//!
//! `message_delta` usage is cumulative; server tool counts arrive as one
//! `Opaque {"type": "server_tool_usage"}`. Stop reasons: `end_turn` and `stop_sequence` → `Stop`,
//! `max_tokens` and `model_context_window_exceeded` → `Length`, `tool_use` → `ToolUse`,
//! `refusal` → `Refusal`, anything else (`pause_turn`...) → `Other(raw)`. An `error` event is a
//! typed error; a stream that ends before `message_stop` is a `Protocol` error, and so is a
//! response that stops inside a tool call's input.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};

/// Content block indexes at or above this are a protocol error (a guard against a hostile
/// stream making the translator allocate).
const MAX_BLOCKS: usize = 65_536;

use patchbay_core::kit::MetricsRecorder;
use patchbay_core::kit::{self, Framer, Framing};
use patchbay_core::{
    Event, ExecutedBy, FinishReason, ProviderError, ToolContent, ToolResult, ToolStatus, Usage, Warning,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::error::{PROVIDER, stream_error};
use crate::wire::{Block, Delta, HotEvent, StreamEvent};

/// The patchbay finish reason of an Anthropic `stop_reason`.
pub fn finish_reason(stop_reason: &str) -> FinishReason {
    match stop_reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "tool_use" => FinishReason::ToolUse,
        "refusal" => FinishReason::Refusal,
        other => FinishReason::Other(other.to_string()),
    }
}

/// Where a stream event came from, for the rare paths that need the raw JSON.
#[derive(Debug, Clone, Copy)]
pub enum RawEvent<'a> {
    /// The JSON text of the payload.
    Json(&'a [u8]),
    /// An already-parsed payload.
    Value(&'a Value),
    /// Nothing raw is available (unknown blocks keep only their typed fields).
    None,
}

impl RawEvent<'_> {
    fn value(&self) -> Option<Value> {
        match self {
            RawEvent::Json(text) => serde_json::from_slice(text).ok(),
            RawEvent::Value(value) => Some((*value).clone()),
            RawEvent::None => None,
        }
    }
}

#[derive(Debug)]
enum Open {
    Text {
        citations: Vec<Value>,
    },
    Thinking,
    Tool {
        id: String,
        name: String,
        json: String,
        start_input: Option<Value>,
        /// The raw block of a provider-executed call.
        raw: Option<Value>,
    },
    Other {
        raw: Value,
    },
    Done,
}

/// Anthropic stream events in, patchbay events out. See the module docs.
#[derive(Debug)]
pub struct Translator {
    model: String,
    warnings: Vec<Warning>,
    started: bool,
    content_seen: bool,
    done: bool,
    /// Open and finished blocks by index (indexes are small and dense).
    blocks: Vec<Option<Open>>,
    provider_calls: HashMap<String, String>,
    usage: Usage,
    stop_reason: Option<String>,
    recorder: MetricsRecorder,
    /// Counted here rather than by the recorder, which reads the clock on every event.
    events: u64,
    text_chars: u64,
    reasoning_chars: u64,
    timed_text: bool,
    queue: VecDeque<Event>,
}

impl Default for Translator {
    fn default() -> Self {
        Self::new()
    }
}

impl Translator {
    /// A translator; its metrics clock starts now.
    pub fn new() -> Self {
        Self {
            model: String::new(),
            warnings: Vec::new(),
            started: false,
            content_seen: false,
            done: false,
            blocks: Vec::new(),
            provider_calls: HashMap::new(),
            usage: Usage::default(),
            stop_reason: None,
            recorder: MetricsRecorder::start(),
            events: 0,
            text_chars: 0,
            reasoning_chars: 0,
            timed_text: false,
            queue: VecDeque::new(),
        }
    }

    /// The model named on `Started` when `message_start` does not name one.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// Warnings to report on `Started` (options the request could not honour).
    pub fn with_warnings(mut self, warnings: Vec<Warning>) -> Self {
        self.warnings = warnings;
        self
    }

    /// Whether the response ended (`Finish` queued, or an error returned).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Whether `Started` was queued.
    pub fn is_started(&self) -> bool {
        self.started
    }

    /// The next queued event.
    pub fn next_event(&mut self) -> Option<Event> {
        self.queue.pop_front()
    }

    /// Take every queued event.
    pub fn drain(&mut self) -> std::collections::vec_deque::Drain<'_, Event> {
        self.queue.drain(..)
    }

    /// Feed one SSE data payload (JSON text), parsed once into borrowing typed structs.
    pub fn push_json(&mut self, data: &str) -> Result<(), ProviderError> {
        self.push_slice(data.as_bytes())
    }

    /// Feed one SSE data payload as bytes (UTF-8 is checked by the JSON parser).
    pub fn push_slice(&mut self, data: &[u8]) -> Result<(), ProviderError> {
        if let Some(event) = self.step(data)? {
            self.queue.push_back(event);
        }
        Ok(())
    }

    /// Translate one payload. A content block delta (nearly all the traffic) is parsed into the
    /// small [`HotEvent`] and its event returned directly, bypassing the queue; anything else is
    /// parsed again as a full [`StreamEvent`] (a handful per message) and queues its events.
    pub(crate) fn step(&mut self, data: &[u8]) -> Result<Option<Event>, ProviderError> {
        if self.done {
            return Ok(None);
        }
        // One UTF-8 check of the whole payload is cheaper than serde_json's check of every
        // string (keys included) that `from_slice` does.
        let Ok(text) = std::str::from_utf8(data) else {
            self.done = true;
            return Err(Self::protocol("an SSE data payload is not valid UTF-8"));
        };
        let hot: HotEvent<'_> = serde_json::from_str(text).map_err(|e| self.fail_json(e, data))?;
        if hot.kind == "content_block_delta" {
            let result = match hot.index {
                Some(index) => self.delta(index as usize, hot.delta.unwrap_or_default(), RawEvent::Json(data)),
                None => Err(Self::protocol("`content_block_delta` without an `index`")),
            };
            if result.is_err() {
                self.done = true;
            }
            return result;
        }
        let event: StreamEvent<'_> = serde_json::from_str(text).map_err(|e| self.fail_json(e, data))?;
        self.push_event(event, RawEvent::Json(data)).map(|()| None)
    }

    /// Feed one already-parsed stream event (as the Claude Code CLI's `stream_event.event`).
    pub fn push_value(&mut self, value: &Value) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        let event = StreamEvent::deserialize(value).map_err(|e| {
            self.done = true;
            ProviderError::protocol(format!("a stream event has an unexpected shape: {e}")).with_provider(PROVIDER)
        })?;
        self.push_event(event, RawEvent::Value(value))
    }

    fn fail_json(&mut self, error: serde_json::Error, data: &[u8]) -> ProviderError {
        self.done = true;
        let head: String = String::from_utf8_lossy(&data[..data.len().min(120)])
            .chars()
            .take(80)
            .collect();
        ProviderError::protocol(format!(
            "an SSE data payload is not a valid stream event ({error}): {head:?}"
        ))
        .with_provider(PROVIDER)
    }

    /// Feed one typed stream event; `raw` is used only for blocks and events without a typed
    /// view (server tool blocks, unknown types).
    pub fn push_event(&mut self, event: StreamEvent<'_>, raw: RawEvent<'_>) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        let result = self.handle(event, raw);
        if result.is_err() {
            self.done = true;
        }
        result
    }

    /// End of input. A response that has not reached `message_stop` is a `Protocol` error.
    pub fn finish(&mut self) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        self.done = true;
        let message = if self.started {
            "the stream ended before `message_stop`"
        } else {
            "the stream ended before `message_start`"
        };
        Err(ProviderError::protocol(message).with_provider(PROVIDER))
    }

    fn emit(&mut self, event: Event) {
        self.count(&event);
        self.queue.push_back(event);
    }

    /// Count an event for the metrics of `Finish`.
    fn count(&mut self, event: &Event) {
        self.events += 1;
        match &event {
            Event::TextDelta { text, .. } => {
                self.text_chars += text.chars().count() as u64;
                if !self.timed_text {
                    self.timed_text = true;
                    self.recorder.observe(event);
                }
            }
            Event::ReasoningDelta { text, .. } => self.reasoning_chars += text.chars().count() as u64,
            _ if self.events == 1 => self.recorder.observe(event),
            _ => {}
        }
    }

    fn open_block(&mut self, index: usize) -> Option<&mut Open> {
        self.blocks.get_mut(index).and_then(Option::as_mut)
    }

    fn next_index(&self) -> usize {
        self.blocks.len()
    }

    fn protocol(message: impl Into<String>) -> ProviderError {
        ProviderError::protocol(message).with_provider(PROVIDER)
    }

    fn handle(&mut self, event: StreamEvent<'_>, raw: RawEvent<'_>) -> Result<(), ProviderError> {
        match event.kind.as_ref() {
            // The hot path first (a delta before `message_start` finds no open block: an error).
            "content_block_delta" => {
                let index = Self::index(&event)?;
                let delta = event.delta.unwrap_or_default();
                if let Some(event) = self.delta(index, delta, raw)? {
                    self.queue.push_back(event);
                }
                Ok(())
            }
            "ping" => Ok(()),
            "error" => {
                let request_id = raw
                    .value()
                    .and_then(|v| v.get("request_id").and_then(Value::as_str).map(str::to_string));
                Err(stream_error(event.error.as_deref(), request_id.as_deref()))
            }
            "message_start" => self.message_start(event),
            _ if !self.started => {
                if matches!(
                    event.kind.as_ref(),
                    "content_block_start"
                        | "content_block_delta"
                        | "content_block_stop"
                        | "message_delta"
                        | "message_stop"
                ) {
                    return Err(Self::protocol(format!(
                        "`{}` arrived before `message_start`",
                        event.kind
                    )));
                }
                tracing::debug!(kind = %event.kind, "ignoring an unknown event before message_start");
                Ok(())
            }
            "content_block_start" => {
                let index = Self::index(&event)?;
                let block = *event
                    .content_block
                    .ok_or_else(|| Self::protocol("`content_block_start` without `content_block`"))?;
                let raw_block = || {
                    raw.value()
                        .and_then(|mut v| v.get_mut("content_block").map(Value::take))
                };
                self.start_block(index, block, raw_block)
            }
            "content_block_stop" => {
                let index = Self::index(&event)?;
                self.stop_block(index)
            }
            "message_delta" => {
                if let Some(reason) = event
                    .delta
                    .as_ref()
                    .and_then(|d| d.stop_reason.as_deref().map(|r| r.as_ref()))
                {
                    self.stop_reason = Some(reason.to_string());
                }
                if let Some(usage) = event.usage.as_deref() {
                    self.usage.update(&usage.to_usage());
                    let event = Event::Usage(self.usage);
                    self.emit(event);
                    if let Some(counts) = usage.server_tool_use.as_ref().filter(|c| has_nonzero(c)) {
                        let index = self.next_index();
                        let data = json!({ "type": "server_tool_usage", "server_tool_use": counts });
                        self.emit(Event::Opaque {
                            index,
                            provider: PROVIDER.into(),
                            data,
                        });
                    }
                }
                Ok(())
            }
            "message_stop" => self.message_stop(),
            other => {
                tracing::debug!(kind = other, "keeping an unknown stream event");
                let index = self.next_index();
                let data = json!({ "type": "unknown_event", "event": raw.value().unwrap_or_else(|| json!({ "type": other })) });
                self.emit(Event::Opaque {
                    index,
                    provider: PROVIDER.into(),
                    data,
                });
                Ok(())
            }
        }
    }

    fn index(event: &StreamEvent<'_>) -> Result<usize, ProviderError> {
        event
            .index
            .map(|i| i as usize)
            .ok_or_else(|| Self::protocol(format!("`{}` without an `index`", event.kind)))
    }

    fn message_start(&mut self, event: StreamEvent<'_>) -> Result<(), ProviderError> {
        let message = event.message.map(|m| *m).unwrap_or_default();
        if self.started {
            if self.content_seen {
                return Err(Self::protocol(
                    "a second `message_start` arrived inside a message that had already begun",
                ));
            }
            tracing::debug!("ignoring a repeated message_start");
            return Ok(());
        }
        self.started = true;
        if let Some(model) = message.model.as_deref().filter(|m| !m.is_empty()) {
            self.model = model.to_string();
        }
        let event = Event::Started {
            response_id: message.id.map(Cow::into_owned),
            model: self.model.clone(),
            session_id: None,
            warnings: std::mem::take(&mut self.warnings),
        };
        self.emit(event);
        if let Some(usage) = &message.usage {
            self.usage.update(&usage.to_usage());
            if !self.usage.is_empty() {
                let event = Event::Usage(self.usage);
                self.emit(event);
            }
        }
        if let Some(reason) = message.stop_reason {
            self.stop_reason = Some(reason.into_owned());
        }
        // A message may arrive with complete blocks (programmatic tool calls, non-streamed
        // answers): each is a block that starts and stops at once.
        for (index, value) in message.content.iter().enumerate() {
            let block = Block::deserialize(value)
                .map_err(|e| Self::protocol(format!("content block {index} of `message_start` is malformed: {e}")))?;
            self.start_block(index, block, || Some(value.clone()))?;
            self.stop_block(index)?;
        }
        Ok(())
    }

    fn start_block(
        &mut self,
        index: usize,
        block: Block<'_>,
        raw: impl FnOnce() -> Option<Value>,
    ) -> Result<(), ProviderError> {
        self.content_seen = true;
        if index >= MAX_BLOCKS {
            return Err(Self::protocol(format!(
                "content block index {index} is beyond {MAX_BLOCKS}"
            )));
        }
        if matches!(self.open_block(index), Some(open) if !matches!(open, Open::Done)) {
            return Err(Self::protocol(format!("content block {index} started twice")));
        }
        let open = match block.kind.as_ref() {
            "text" => {
                if let Some(text) = block.text.filter(|t| !t.is_empty()) {
                    self.emit(Event::TextDelta {
                        index,
                        text: text.into_owned(),
                    });
                }
                Open::Text {
                    citations: block.citations.unwrap_or_default(),
                }
            }
            "thinking" => {
                if let Some(text) = block.thinking.filter(|t| !t.is_empty()) {
                    self.emit(Event::ReasoningDelta {
                        index,
                        text: text.into_owned(),
                    });
                }
                if let Some(signature) = block.signature.filter(|s| !s.is_empty()) {
                    self.emit(Event::ReasoningSignature {
                        index,
                        signature: signature.into_owned(),
                    });
                }
                Open::Thinking
            }
            "redacted_thinking" => {
                let data = block.data.map(Cow::into_owned).unwrap_or_default();
                self.emit(Event::RedactedReasoning { index, data });
                Open::Done
            }
            kind @ ("tool_use" | "server_tool_use" | "mcp_tool_use") => {
                let id = block.id.map(Cow::into_owned).unwrap_or_default();
                let name = block.name.map(Cow::into_owned).unwrap_or_default();
                if id.is_empty() {
                    return Err(Self::protocol(format!("`{kind}` block {index} has no id")));
                }
                let raw = if kind == "tool_use" {
                    None
                } else {
                    Some(raw().unwrap_or_else(|| json!({ "type": kind, "id": id, "name": name })))
                };
                self.emit(Event::ToolCallStart {
                    id: id.clone(),
                    name: name.clone(),
                });
                Open::Tool {
                    id,
                    name,
                    json: String::new(),
                    start_input: block.input.filter(|v| !is_empty_object(v)),
                    raw,
                }
            }
            kind => Open::Other {
                raw: raw().unwrap_or_else(|| json!({ "type": kind })),
            },
        };
        if self.blocks.len() <= index {
            self.blocks.resize_with(index + 1, || None);
        }
        self.blocks[index] = Some(open);
        Ok(())
    }

    /// The event of a content block delta, counted but not queued.
    fn delta(&mut self, index: usize, delta: Delta<'_>, raw: RawEvent<'_>) -> Result<Option<Event>, ProviderError> {
        let Some(open) = self.blocks.get_mut(index).and_then(Option::as_mut) else {
            return Err(Self::protocol(format!(
                "a delta for content block {index}, which never started"
            )));
        };
        let Delta {
            kind,
            payload,
            citation,
            ..
        } = delta;
        if payload.is_empty()
            && kind != "citations_delta"
            && matches!(open, Open::Text { .. } | Open::Thinking | Open::Tool { .. })
        {
            // An empty delta (`thinking_delta` with "" before a signature...) carries nothing.
            return Ok(None);
        }
        let event = match (kind.as_ref(), open) {
            ("text_delta", Open::Text { .. }) => Event::TextDelta {
                index,
                text: payload.into_owned(),
            },
            ("thinking_delta", Open::Thinking) => Event::ReasoningDelta {
                index,
                text: payload.into_owned(),
            },
            ("signature_delta", Open::Thinking) => Event::ReasoningSignature {
                index,
                signature: payload.into_owned(),
            },
            ("input_json_delta", Open::Tool { id, json, .. }) => {
                json.push_str(&payload);
                Event::ToolCallDelta {
                    id: id.clone(),
                    partial_json: payload.into_owned(),
                }
            }
            ("citations_delta", Open::Text { citations }) => {
                if let Some(citation) = citation {
                    citations.push(*citation);
                }
                return Ok(None);
            }
            (_, Open::Other { raw: block }) => {
                // Unknown block kinds (`compaction`...): merge the delta's fields into the block.
                let value = raw.value().and_then(|mut v| v.get_mut("delta").map(Value::take));
                if let (Some(Value::Object(fields)), Value::Object(target)) = (value, block) {
                    merge_delta(target, fields);
                }
                return Ok(None);
            }
            (kind, open) => {
                return Err(Self::protocol(format!(
                    "a `{kind}` delta does not fit content block {index} ({})",
                    open_name(open)
                )));
            }
        };
        self.count(&event);
        Ok(Some(event))
    }

    fn stop_block(&mut self, index: usize) -> Result<(), ProviderError> {
        let Some(open) = self.blocks.get_mut(index).and_then(|slot| slot.replace(Open::Done)) else {
            tracing::debug!(index, "ignoring content_block_stop of a block that never started");
            return Ok(());
        };
        match open {
            Open::Text { citations } if !citations.is_empty() => {
                let data = json!({ "type": "text_citations", "citations": citations });
                self.emit(Event::Opaque {
                    index,
                    provider: PROVIDER.into(),
                    data,
                });
            }
            Open::Text { .. } | Open::Thinking | Open::Done => {}
            Open::Tool {
                id,
                name,
                json,
                start_input,
                raw,
            } => {
                let input = tool_input(&id, &json, start_input)?;
                let executed_by = if raw.is_some() {
                    ExecutedBy::Provider
                } else {
                    ExecutedBy::Host
                };
                if let Some(mut raw) = raw {
                    if let Value::Object(map) = &mut raw {
                        map.insert("input".into(), input.clone());
                    }
                    self.provider_calls.insert(id.clone(), name.clone());
                    self.emit(Event::ToolCall {
                        id,
                        name,
                        input,
                        executed_by,
                    });
                    self.emit(Event::Opaque {
                        index,
                        provider: PROVIDER.into(),
                        data: raw,
                    });
                } else {
                    self.emit(Event::ToolCall {
                        id,
                        name,
                        input,
                        executed_by,
                    });
                }
            }
            Open::Other { raw } => {
                let call = raw
                    .get("tool_use_id")
                    .and_then(Value::as_str)
                    .and_then(|id| self.provider_calls.get(id).map(|name| (id.to_string(), name.clone())));
                let result = call.as_ref().map(|_| server_tool_result(&raw));
                self.emit(Event::Opaque {
                    index,
                    provider: PROVIDER.into(),
                    data: raw,
                });
                if let (Some((id, name)), Some(result)) = (call, result) {
                    self.emit(Event::ToolResult { id, name, result });
                }
            }
        }
        Ok(())
    }

    fn message_stop(&mut self) -> Result<(), ProviderError> {
        let open: Vec<usize> = self
            .blocks
            .iter()
            .enumerate()
            .filter(|(_, b)| matches!(b, Some(open) if !matches!(open, Open::Done)))
            .map(|(i, _)| i)
            .collect();
        for index in open {
            if let Some(Some(Open::Tool {
                id, json, start_input, ..
            })) = self.blocks.get(index)
                && tool_input(id, json, start_input.clone()).is_err()
            {
                let reason = self.stop_reason.as_deref().unwrap_or("none");
                return Err(Self::protocol(format!(
                    "the response ended (stop_reason `{reason}`) inside tool call `{id}`: its input is incomplete"
                )));
            }
            self.stop_block(index)?;
        }
        let reason = self
            .stop_reason
            .as_deref()
            .map_or_else(|| FinishReason::Other("unknown".into()), finish_reason);
        let mut metrics = self.recorder.finish();
        metrics.events = self.events + 1;
        metrics.text_chars = self.text_chars;
        metrics.reasoning_chars = self.reasoning_chars;
        self.queue.push_back(Event::Finish {
            reason,
            usage: self.usage,
            metrics,
        });
        self.done = true;
        Ok(())
    }
}

fn open_name(open: &Open) -> &'static str {
    match open {
        Open::Text { .. } => "text",
        Open::Thinking => "thinking",
        Open::Tool { .. } => "tool call",
        Open::Other { .. } => "other",
        Open::Done => "already stopped",
    }
}

fn is_empty_object(value: &Value) -> bool {
    matches!(value, Value::Object(map) if map.is_empty())
}

fn has_nonzero(counts: &Value) -> bool {
    match counts {
        Value::Object(map) => map.values().any(|v| v.as_u64().is_some_and(|n| n > 0)),
        _ => false,
    }
}

fn tool_input(id: &str, json: &str, start_input: Option<Value>) -> Result<Value, ProviderError> {
    let trimmed = json.trim();
    if trimmed.is_empty() {
        return Ok(start_input.unwrap_or_else(|| Value::Object(Map::new())));
    }
    serde_json::from_str(trimmed).map_err(|e| {
        ProviderError::protocol(format!("the input of tool call `{id}` is not valid JSON: {e}")).with_provider(PROVIDER)
    })
}

fn merge_delta(target: &mut Map<String, Value>, fields: Map<String, Value>) {
    for (key, value) in fields {
        if key == "type" {
            continue;
        }
        match (target.get_mut(&key), value) {
            (Some(Value::String(existing)), Value::String(more)) => existing.push_str(&more),
            (_, value) => {
                target.insert(key, value);
            }
        }
    }
}

/// A server tool's result block as a patchbay tool result: text blocks stay text, anything
/// else is kept as JSON; an `*_error` content or `is_error: true` is a failure.
fn server_tool_result(raw: &Value) -> ToolResult {
    let content = raw.get("content").cloned().unwrap_or(Value::Null);
    let failed = raw.get("is_error").and_then(Value::as_bool).unwrap_or(false)
        || content
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| t.ends_with("_error"))
        || content.get("error_code").is_some();
    let pieces = match &content {
        Value::Array(items)
            if items
                .iter()
                .all(|i| i.get("type").and_then(Value::as_str) == Some("text")) =>
        {
            items
                .iter()
                .map(|i| ToolContent::text(i.get("text").and_then(Value::as_str).unwrap_or_default()))
                .collect()
        }
        Value::String(text) => vec![ToolContent::text(text.clone())],
        Value::Null => Vec::new(),
        other => vec![ToolContent::Json { value: other.clone() }],
    };
    ToolResult {
        content: pieces,
        status: if failed {
            ToolStatus::Failed
        } else {
            ToolStatus::Completed
        },
        metadata: None,
    }
}

/// Bytes in, events out: a [`Framer`] in front of a [`Translator`]. The provider hands it to
/// the kit's [`Driver`](patchbay_core::kit::Driver) through [`kit::StreamTranslator`].
#[derive(Debug)]
pub struct StreamTranslator {
    decoder: Framer,
    translator: Translator,
    /// An error met while events were still queued: delivered after them.
    failed: Option<ProviderError>,
}

impl Default for StreamTranslator {
    fn default() -> Self {
        Self::new(Translator::new())
    }
}

impl StreamTranslator {
    /// Decode SSE into `translator`.
    pub fn new(translator: Translator) -> Self {
        Self {
            decoder: Framer::new(Framing::Sse),
            translator,
            failed: None,
        }
    }

    /// Also accept bare JSON lines (recordings without SSE framing).
    pub fn json_lines(mut self) -> Self {
        self.decoder = Framer::new(Framing::SseOrJsonLines).with_max_bytes(self.decoder.max_bytes());
        self
    }

    /// Cap one SSE frame at `max` bytes (default [`patchbay_core::kit::MAX_LINE_BYTES`]).
    pub fn with_max_frame_bytes(mut self, max: usize) -> Self {
        self.decoder = Framer::new(self.decoder.framing()).with_max_bytes(max);
        self
    }

    /// Feed bytes; events queue up (read them with [`next_event`](Self::next_event)) until the
    /// first error, which is returned once.
    pub fn push_bytes(&mut self, bytes: &[u8]) -> Result<(), ProviderError> {
        let translator = &mut self.translator;
        self.decoder.push(bytes, |data| translator.push_slice(data))
    }

    /// Feed bytes without translating them yet: [`pull`](Self::pull) takes one event at a time,
    /// decoding frames only as needed (what the provider's stream does).
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), ProviderError> {
        self.decoder.feed(bytes)
    }

    /// The next event from what was fed: `Ok(None)` when more bytes are needed.
    pub fn pull(&mut self) -> Result<Option<Event>, ProviderError> {
        loop {
            if let Some(event) = self.translator.next_event() {
                return Ok(Some(event));
            }
            if self.translator.is_done() {
                return Ok(None);
            }
            match self.decoder.next_frame()? {
                Some(frame) => {
                    if let Some(event) = self.translator.step(frame)? {
                        return Ok(Some(event));
                    }
                }
                None => return Ok(None),
            }
        }
    }

    /// End of input: delivers a last unterminated frame, then requires `message_stop`.
    pub fn finish(&mut self) -> Result<(), ProviderError> {
        let translator = &mut self.translator;
        self.decoder.finish(|data| translator.push_slice(data))?;
        self.translator.finish()
    }

    /// The next queued event.
    pub fn next_event(&mut self) -> Option<Event> {
        self.translator.next_event()
    }

    /// Whether the response ended.
    pub fn is_done(&self) -> bool {
        self.translator.is_done()
    }

    /// The translator.
    pub fn translator(&mut self) -> &mut Translator {
        &mut self.translator
    }
}

impl kit::StreamTranslator for StreamTranslator {
    fn feed(&mut self, bytes: &[u8]) -> Result<(), ProviderError> {
        StreamTranslator::feed(self, bytes)
    }

    fn finish(&mut self) -> Result<(), ProviderError> {
        StreamTranslator::finish(self)
    }

    fn next_event(&mut self) -> Option<Result<Event, ProviderError>> {
        if let Some(error) = self.failed.take() {
            return Some(match self.translator.next_event() {
                Some(event) => {
                    self.failed = Some(error);
                    Ok(event)
                }
                None => Err(error),
            });
        }
        match self.pull() {
            Ok(event) => event.map(Ok),
            // Events queued before the error go first.
            Err(error) => match self.translator.next_event() {
                Some(event) => {
                    self.failed = Some(error);
                    Some(Ok(event))
                }
                None => Some(Err(error)),
            },
        }
    }

    fn is_done(&self) -> bool {
        self.translator.is_done()
    }
}
