//! The wire translator: a pure state machine from Anthropic stream events to patchbay events.
//!
//! [`Translator`] consumes parsed stream events (a JSON payload as `&str`, a
//! `serde_json::Value`, or a typed [`StreamEvent`]) and queues [`Event`]s; it is core's
//! [`Wire`](patchbay_core::kit::Wire) for the Messages API, so the kit's driver and
//! [`replay`](patchbay_core::kit::replay) feed it SSE frames. No I/O, no clock except the
//! [`MetricsRecorder`] of `Finish`. The agent-runtime provider reuses [`Translator`] for the
//! `stream_event` partials of the Claude Code CLI (one translator per message).
//!
//! What each wire block becomes:
//! - `text` → `TextDelta`; each citation (`citations_delta`, or one already on the block) → a
//!   `Source` of the block as it arrives (see [`crate::sources`]);
//! - `thinking` → `ReasoningDelta` + `ReasoningSignature`; `redacted_thinking` → `RedactedReasoning`;
//! - `tool_use` → `ToolCallStart`, `ToolCallDelta`s, and `ToolCall` only at `content_block_stop`
//!   (empty input is `{}`);
//! - `server_tool_use` / `mcp_tool_use` → the same with `executed_by: Provider`, plus the raw block
//!   (input filled in) as `Opaque` so it goes back to the API unchanged;
//! - `*_tool_result` blocks → the raw block as `Opaque`, then a `ToolResult` for its call, then a
//!   `Source` per web search result or fetched page;
//! - any other block (`compaction`, `fallback`...) → `Opaque`, with unknown deltas merged in;
//! - with [`Translator::with_output_tool`], a `tool_use` of that tool → its input JSON as
//!   `TextDelta`s of the block (the structured-output contract of `patchbay_core::object`), no
//!   tool call; a `tool_use` stop reason caused by it alone → `Stop`.
//!
//! `message_delta` usage is cumulative (`output_tokens_details.thinking_tokens` is
//! `Usage::reasoning`); server tool counts arrive as one `Opaque {"type": "server_tool_usage"}`,
//! and the stop sequence that fired and the `stop_details` of a refusal (category, explanation,
//! fallback credit) as one `Opaque {"type": "stop_details"}`. Stop reasons: `end_turn` and
//! `stop_sequence` → `Stop`, `max_tokens` and `model_context_window_exceeded` → `Length`,
//! `tool_use` → `ToolUse`, `refusal` → `Refusal`, anything else (`pause_turn`...) →
//! `Other(raw)`. An `error` event is a typed error; a stream that ends before `message_stop` is
//! a `Protocol` error, and so is a response that stops inside a tool call's input.
//!
//! Layout: this module holds the public types and the dispatch over wire events
//! ([`Translator::push_event`]); `blocks` the content block handlers (start, delta, stop);
//! `message` the message-level events (start, cumulative usage, stop reason, `Finish`);
//! `frames` the [`Wire`](patchbay_core::kit::Wire) implementation (framing, HTTP errors, a whole
//! JSON message).

mod blocks;
mod frames;
mod message;

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};

use patchbay_core::kit::MetricsRecorder;
use patchbay_core::{Event, ProviderError, Usage, Warning};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::NAME;
use crate::error::stream_error;
use crate::wire::{Delta, HotEvent, StreamEvent, text_delta};

pub use message::finish_reason;

/// Content block indexes at or above this are a protocol error (a guard against a hostile
/// stream making the translator allocate).
const MAX_BLOCKS: usize = 65_536;

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
    Text,
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
    /// The structured-output tool's input, streamed as text.
    Output,
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
    /// Sources announced so far (their ids count from 1).
    sources: u64,
    /// The tool that carries structured output (its input becomes text), if the request forced one.
    output_tool: Option<String>,
    /// Whether the output tool answered, and whether a host tool was called beside it.
    output_answered: bool,
    host_calls: bool,
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
            sources: 0,
            output_tool: None,
            output_answered: false,
            host_calls: false,
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

    /// Treat `tool_use` blocks of the tool `name` as the structured output (the request forced
    /// that tool to get a JSON object): their input streams as `TextDelta`s of the block, no
    /// tool call is emitted, and a `tool_use` stop reason for it alone is `Stop`.
    pub fn with_output_tool(mut self, name: impl Into<String>) -> Self {
        self.output_tool = Some(name.into());
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

    /// Translate one payload. A text delta in the API's own layout (nearly all the traffic) is
    /// read without the parser ([`text_delta`]); any other content block delta is parsed into
    /// the small [`HotEvent`]; both return their event directly, bypassing the queue. Anything
    /// else is parsed again as a full [`StreamEvent`] (a handful per message) and queues its
    /// events.
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
        if let Some((index, payload)) = text_delta(text) {
            let delta = Delta {
                kind: Cow::Borrowed("text_delta"),
                payload: Cow::Borrowed(payload),
                ..Delta::default()
            };
            let result = self.delta(index as usize, delta, RawEvent::Json(data));
            if result.is_err() {
                self.done = true;
            }
            return result;
        }
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
            ProviderError::protocol(format!("a stream event has an unexpected shape: {e}")).with_provider(NAME)
        })?;
        self.push_event(event, RawEvent::Value(value))
    }

    fn fail_json(&mut self, error: serde_json::Error, data: &[u8]) -> ProviderError {
        self.done = true;
        let head = patchbay_core::kit::frame_head(data);
        ProviderError::protocol(format!(
            "an SSE data payload is not a valid stream event ({error}): {head:?}"
        ))
        .with_provider(NAME)
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
        Err(ProviderError::protocol(message).with_provider(NAME))
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

    /// The id of the next source: the order of arrival, from 1.
    fn next_source_id(&mut self) -> String {
        self.sources += 1;
        self.sources.to_string()
    }

    fn open_block(&mut self, index: usize) -> Option<&mut Open> {
        self.blocks.get_mut(index).and_then(Option::as_mut)
    }

    fn next_index(&self) -> usize {
        self.blocks.len()
    }

    fn protocol(message: impl Into<String>) -> ProviderError {
        ProviderError::protocol(message).with_provider(NAME)
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
                self.message_delta(event, raw);
                Ok(())
            }
            "message_stop" => self.message_stop(),
            other => {
                tracing::debug!(kind = other, "keeping an unknown stream event");
                let index = self.next_index();
                let data = json!({ "type": "unknown_event", "event": raw.value().unwrap_or_else(|| json!({ "type": other })) });
                self.emit(Event::Opaque {
                    index,
                    provider: NAME.into(),
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
}
