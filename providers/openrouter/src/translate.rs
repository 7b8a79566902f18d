//! The wire translator: a pure state machine from chat-completions stream bytes to patchbay
//! [`Event`]s. No I/O, no clock beyond the metrics recorder: feed it bytes cut anywhere and it
//! produces the same events.
//!
//! ```
//! use patchbay_openrouter::translate::{Framing, Translator};
//! let body = b"data: {\"id\":\"r1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n\
//!              data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
//! let (events, error) = Translator::new(Framing::Sse).translate_all([&body[..]]);
//! assert!(error.is_none());
//! assert_eq!(events.len(), 3); // Started, TextDelta, Finish
//! ```
//!
//! # What it does with the wire
//! - **Framing**: complete lines are sliced out of the incoming bytes and each `data:` line is
//!   parsed once, in place, into borrowing typed structs; only a partial line is buffered. `\n` and `\r\n` line ends; comment
//!   lines (`: OPENROUTER PROCESSING`) and `event:`/`id:`/`retry:` fields are ignored; each
//!   `data:` line is one payload (chat-completions servers never split a payload across lines).
//!   [`Framing::JsonLines`] reads one payload per line without SSE fields (recorded captures).
//! - **Blocks**: content block indexes are assigned in order of appearance; a new block opens
//!   whenever the kind changes (reasoning, text), after a reasoning signature, for encrypted
//!   reasoning, and after tool calls.
//! - **Reasoning**: `reasoning_details` win when present (`reasoning.text` with its signature,
//!   `reasoning.summary`, `reasoning.encrypted` as [`Event::RedactedReasoning`] whose data is the
//!   whole detail object as JSON, so id and format survive the round trip); otherwise
//!   `reasoning`, else `reasoning_content`.
//! - **Tool calls** are assembled by `index` (by id, or the last call, when a server leaves the
//!   index out; a new id on an index already holding a named call starts a new call). Ids and
//!   names may arrive late; ids missing or used twice are made unique. A call's
//!   `ToolCallStart`, input and `ToolCall` are emitted together when its choice finishes (a
//!   chat-completions stream has no per-call end, and partial JSON that happens to parse is
//!   not an end). A call whose input is not complete JSON when the choice ends (cut by the
//!   length limit) becomes an [`Event::Opaque`] `incomplete_tool_call`, never a call the host
//!   would run.
//! - **Several choices**: the first choice seen streams; every other choice is collected and
//!   reported at the end as an [`Event::Opaque`] `extra_choice` (nothing is dropped).
//! - **Finish**: `stop` (or `Refusal` after refusal deltas, or `ToolUse` when tool calls were
//!   made), `length`, `tool_calls`, `content_filter`; a missing or `null` reason with tool calls
//!   is `ToolUse`. `Finish` is emitted at `[DONE]`, or at the end of the body once the choice
//!   finished; a body that ends before either is a `Protocol` error.
//! - **Usage** may arrive in any chunk (usually a final chunk with `choices: []`); each one
//!   becomes a cumulative [`Event::Usage`]. `input` excludes cached tokens, which are reported
//!   as `cache_read` (and OpenRouter's `cache_write_tokens` as `cache_write`).
//! - **Errors**: an `error` object inside the stream ends it with a typed error; what was
//!   already emitted stays.

use std::collections::HashSet;

use memchr::memchr;
use std::time::Instant;

use patchbay_core::{ErrorKind, Event, ExecutedBy, FinishReason, Metrics, ProviderError, Usage, Warning};
use serde_json::{Value, json};

use crate::wire::{Choice, Chunk, Content, Delta, IgnoredAny, ReasoningDetail, Str, ToolCallDelta, WireUsage};

/// Where the translator puts events: a `Vec` or a `VecDeque` (the provider hands events out
/// from the front without moving them twice).
pub trait EventSink {
    /// Append one event.
    fn push_event(&mut self, event: Event);
}

impl EventSink for Vec<Event> {
    fn push_event(&mut self, event: Event) {
        self.push(event);
    }
}

impl EventSink for std::collections::VecDeque<Event> {
    fn push_event(&mut self, event: Event) {
        self.push_back(event);
    }
}

/// How payloads are framed in the byte stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Framing {
    /// Server-sent events (`data: {...}` lines), as servers send them.
    #[default]
    Sse,
    /// One JSON payload per line, no SSE fields (raw-chunk captures such as `*.chunks.txt`).
    JsonLines,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    Text,
    Reasoning,
}

#[derive(Debug, Default)]
struct ToolAcc {
    wire_index: Option<u32>,
    id: Option<String>,
    name: String,
    arguments: String,
    done: bool,
}

#[derive(Debug, Default)]
struct ExtraChoice {
    index: u32,
    text: String,
    reasoning: String,
    tools: Vec<ToolAcc>,
    finish: Option<String>,
}

/// The translator. See the [module docs](self) for what it does with the wire.
#[derive(Debug)]
pub struct Translator {
    framing: Framing,
    /// The bytes of a line whose end has not arrived yet.
    partial: Vec<u8>,
    state: State,
}

#[derive(Debug)]
struct State {
    model: String,
    warnings: Vec<Warning>,
    started: bool,
    /// `Finish` or an error was emitted: nothing more comes out.
    ended: bool,
    primary: Option<u32>,
    current: Option<(BlockKind, usize)>,
    next_index: usize,
    detail_index: Option<u32>,
    tools: Vec<ToolAcc>,
    finish: Option<String>,
    refusal: bool,
    tool_calls_made: bool,
    used_ids: HashSet<String>,
    usage: Usage,
    extras: Vec<ExtraChoice>,
    meter: Meter,
}

/// Counts events for `Finish` metrics; reads the clock only for the first event, the first
/// text and the end (not once per event).
#[derive(Debug)]
struct Meter {
    started: Instant,
    metrics: Metrics,
}

impl Meter {
    fn new() -> Self {
        Self {
            started: Instant::now(),
            metrics: Metrics::default(),
        }
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn observe(&mut self, event: &Event) {
        self.metrics.events += 1;
        if self.metrics.first_event_ms.is_none() {
            self.metrics.first_event_ms = Some(self.elapsed_ms());
        }
        match event {
            Event::TextDelta { text, .. } => {
                if self.metrics.first_text_ms.is_none() {
                    self.metrics.first_text_ms = Some(self.elapsed_ms());
                }
                self.metrics.text_chars += text.chars().count() as u64;
            }
            Event::ReasoningDelta { text, .. } => self.metrics.reasoning_chars += text.chars().count() as u64,
            _ => {}
        }
    }

    fn finish(&self) -> Metrics {
        let mut metrics = self.metrics;
        metrics.events += 1;
        metrics.total_ms = self.elapsed_ms();
        metrics.first_event_ms.get_or_insert(metrics.total_ms);
        metrics
    }
}

impl Default for Translator {
    fn default() -> Self {
        Self::new(Framing::Sse)
    }
}

impl Translator {
    /// A translator for this framing. `Started` names the model the first chunk reports.
    pub fn new(framing: Framing) -> Self {
        Self {
            framing,
            partial: Vec::new(),
            state: State {
                model: String::new(),
                warnings: Vec::new(),
                started: false,
                ended: false,
                primary: None,
                current: None,
                next_index: 0,
                detail_index: None,
                tools: Vec::new(),
                finish: None,
                refusal: false,
                tool_calls_made: false,
                used_ids: HashSet::new(),
                usage: Usage::default(),
                extras: Vec::new(),
                meter: Meter::new(),
            },
        }
    }

    /// The model to name in `Started` when the chunks name none.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.state.model = model.into();
        self
    }

    /// Warnings to put on `Started`.
    pub fn with_warnings(mut self, warnings: Vec<Warning>) -> Self {
        self.state.warnings = warnings;
        self
    }

    /// Whether the stream ended (`Finish` or an error was produced); later bytes are ignored.
    pub fn is_done(&self) -> bool {
        self.state.ended
    }

    /// Whether `Started` was produced (the retry layer may still retry before that).
    pub fn has_started(&self) -> bool {
        self.state.started
    }

    /// Feed bytes cut anywhere; complete events are appended to `out`. An error ends the
    /// stream: events appended before it stay valid and should reach the caller first.
    ///
    /// Complete lines are parsed straight from `bytes`; only a trailing partial line is kept
    /// (in one buffer, which then grows until its line ends: linear even for a huge line).
    pub fn feed(&mut self, bytes: &[u8], out: &mut impl EventSink) -> Result<(), ProviderError> {
        if self.state.ended {
            return Ok(());
        }
        let mut rest = bytes;
        if !self.partial.is_empty() {
            let Some(offset) = memchr(b'\n', rest) else {
                self.partial.extend_from_slice(rest);
                return Ok(());
            };
            self.partial.extend_from_slice(&rest[..offset]);
            rest = &rest[offset + 1..];
            let result = self.state.line(trim_cr(&self.partial), self.framing, out);
            self.partial.clear();
            result?;
        }
        while let Some(offset) = memchr(b'\n', rest) {
            if self.state.ended {
                return Ok(());
            }
            self.state.line(trim_cr(&rest[..offset]), self.framing, out)?;
            rest = &rest[offset + 1..];
        }
        if !self.state.ended {
            self.partial.extend_from_slice(rest);
        }
        Ok(())
    }

    /// The body ended: translate a last line without a line end, then close the stream
    /// (`Finish`, or a `Protocol` error if the response never finished).
    pub fn finish(&mut self, out: &mut impl EventSink) -> Result<(), ProviderError> {
        if self.state.ended {
            return Ok(());
        }
        if !self.partial.is_empty() {
            let result = self.state.line(trim_cr(&self.partial), self.framing, out);
            self.partial.clear();
            result?;
            if self.state.ended {
                return Ok(());
            }
        }
        self.state.end(false, out)
    }

    /// Translate a whole body given as chunks; returns the events and the error that ended
    /// the stream, if any.
    pub fn translate_all<'a>(
        mut self,
        chunks: impl IntoIterator<Item = &'a [u8]>,
    ) -> (Vec<Event>, Option<ProviderError>) {
        let mut out = Vec::new();
        for chunk in chunks {
            if let Err(error) = self.feed(chunk, &mut out) {
                return (out, Some(error));
            }
        }
        match self.finish(&mut out) {
            Ok(()) => (out, None),
            Err(error) => (out, Some(error)),
        }
    }
}

fn trim_cr(line: &[u8]) -> &[u8] {
    match line.last() {
        Some(b'\r') => &line[..line.len() - 1],
        _ => line,
    }
}

fn trim_ascii(bytes: &[u8]) -> &[u8] {
    bytes.trim_ascii()
}

fn non_empty<'s>(value: &'s Option<crate::wire::Str<'_>>) -> Option<&'s str> {
    value.as_deref().filter(|s| !s.is_empty())
}

impl State {
    fn emit(&mut self, out: &mut impl EventSink, event: Event) {
        self.meter.observe(&event);
        out.push_event(event);
    }

    fn fail(&mut self, error: ProviderError) -> Result<(), ProviderError> {
        self.ended = true;
        Err(error)
    }

    fn line(&mut self, line: &[u8], framing: Framing, out: &mut impl EventSink) -> Result<(), ProviderError> {
        let payload = match framing {
            Framing::JsonLines => trim_ascii(line),
            Framing::Sse => {
                let Some(rest) = line.strip_prefix(b"data:") else {
                    // Blank lines, comments (`: OPENROUTER PROCESSING`) and other fields.
                    return Ok(());
                };
                trim_ascii(rest)
            }
        };
        if payload.is_empty() {
            return Ok(());
        }
        if payload == b"[DONE]" {
            return self.end(true, out);
        }
        if self.started {
            match serde_json::from_slice::<Chunk<'_, IgnoredAny>>(payload) {
                Ok(chunk) => self.chunk(chunk, None, out),
                Err(error) => self.bad_payload(payload, error),
            }
        } else {
            match serde_json::from_slice::<Chunk<'_, Str<'_>>>(payload) {
                Ok(mut chunk) => {
                    let head = (chunk.id.take(), chunk.model.take());
                    self.chunk(chunk, Some(head), out)
                }
                Err(error) => self.bad_payload(payload, error),
            }
        }
    }

    fn bad_payload(&mut self, payload: &[u8], error: serde_json::Error) -> Result<(), ProviderError> {
        let shown = String::from_utf8_lossy(&payload[..payload.len().min(200)]).into_owned();
        self.fail(
            ProviderError::protocol(format!("a stream payload is not a valid chunk: {shown}"))
                .with_provider(crate::PROVIDER_NAME)
                .with_source(error),
        )
    }

    fn chunk<S>(
        &mut self,
        chunk: Chunk<'_, S>,
        head: Option<(Option<Str<'_>>, Option<Str<'_>>)>,
        out: &mut impl EventSink,
    ) -> Result<(), ProviderError> {
        if let Some(error) = &chunk.error {
            return self.fail(crate::error::from_error_object(error, None));
        }
        if !self.started {
            self.started = true;
            let (id, model) = head.unwrap_or((None, None));
            let model = match model.as_deref() {
                Some(model) if !model.is_empty() => model.to_string(),
                _ => self.model.clone(),
            };
            let event = Event::Started {
                response_id: id.as_deref().map(str::to_string),
                model,
                session_id: None,
                warnings: std::mem::take(&mut self.warnings),
            };
            self.emit(out, event);
        }
        for choice in &chunk.choices {
            let primary = *self.primary.get_or_insert(choice.index);
            if choice.index == primary {
                self.primary_choice(choice, out)?;
            } else {
                self.extra_choice(choice);
            }
        }
        let usage = chunk.usage.or_else(|| chunk.x_groq.and_then(|x| x.usage.map(Box::new)));
        if let Some(usage) = usage {
            self.usage.update(&convert_usage(&usage));
            let event = Event::Usage(self.usage);
            self.emit(out, event);
        }
        Ok(())
    }

    fn open(&mut self, kind: BlockKind) -> usize {
        let index = self.next_index;
        self.next_index += 1;
        self.current = Some((kind, index));
        index
    }

    fn new_block(&mut self) -> usize {
        let index = self.next_index;
        self.next_index += 1;
        self.current = None;
        index
    }

    fn reasoning_text(&mut self, text: &str, detail: Option<u32>, out: &mut impl EventSink) {
        let index = match self.current {
            Some((BlockKind::Reasoning, index)) if detail.is_none() || detail == self.detail_index => index,
            _ => {
                self.detail_index = detail;
                self.open(BlockKind::Reasoning)
            }
        };
        self.emit(
            out,
            Event::ReasoningDelta {
                index,
                text: text.to_string(),
            },
        );
    }

    fn signature(&mut self, signature: &str, detail: Option<u32>, out: &mut impl EventSink) {
        let index = match self.current {
            Some((BlockKind::Reasoning, index)) if detail.is_none() || detail == self.detail_index => index,
            _ => self.open(BlockKind::Reasoning),
        };
        self.emit(
            out,
            Event::ReasoningSignature {
                index,
                signature: signature.to_string(),
            },
        );
        // A signature seals its block: later reasoning opens a new one.
        self.current = None;
    }

    fn text(&mut self, text: &str, out: &mut impl EventSink) {
        let index = match self.current {
            Some((BlockKind::Text, index)) => index,
            _ => self.open(BlockKind::Text),
        };
        self.emit(
            out,
            Event::TextDelta {
                index,
                text: text.to_string(),
            },
        );
    }

    fn detail(&mut self, detail: &ReasoningDetail<'_>, out: &mut impl EventSink) {
        match detail.kind.as_ref() {
            "reasoning.text" => {
                if let Some(text) = non_empty(&detail.text) {
                    self.reasoning_text(text, detail.index, out);
                }
                if let Some(signature) = non_empty(&detail.signature) {
                    self.signature(signature, detail.index, out);
                }
            }
            "reasoning.summary" => {
                if let Some(text) = non_empty(&detail.summary) {
                    self.reasoning_text(text, detail.index, out);
                }
            }
            "reasoning.encrypted" => {
                let index = self.new_block();
                let data = detail_json(detail).to_string();
                self.emit(out, Event::RedactedReasoning { index, data });
            }
            _ => {
                let index = self.new_block();
                let data = detail_json(detail);
                let provider = crate::PROVIDER_NAME.to_string();
                self.emit(out, Event::Opaque { index, provider, data });
            }
        }
    }

    fn primary_choice(&mut self, choice: &Choice<'_>, out: &mut impl EventSink) -> Result<(), ProviderError> {
        if let Some(delta) = &choice.delta {
            self.primary_delta(delta, out);
        }
        if let Some(reason) = crate::wire::boxed_text(&choice.finish_reason) {
            if reason == "error" {
                return self.fail(
                    ProviderError::new(ErrorKind::Server, "the model stopped with finish_reason `error`")
                        .with_provider(crate::PROVIDER_NAME),
                );
            }
            self.finish = Some(reason.to_string());
            self.finalize_tools(out);
        }
        Ok(())
    }

    fn primary_delta(&mut self, delta: &Delta<'_>, out: &mut impl EventSink) {
        if !delta.reasoning_details().is_empty() {
            for detail in delta.reasoning_details() {
                self.detail(detail, out);
            }
        } else if let Some(text) = non_empty(&delta.reasoning).or_else(|| non_empty(&delta.reasoning_content)) {
            self.reasoning_text(text, None, out);
        }
        match &delta.content {
            Some(Content::Text(text)) if !text.is_empty() => self.text(text, out),
            Some(Content::Parts(parts)) => self.parts(parts, false, out),
            _ => {}
        }
        if let Some(text) = crate::wire::boxed_text(&delta.refusal) {
            self.refusal = true;
            self.text(text, out);
        }
        for call in delta.tool_calls() {
            accumulate(&mut self.tools, call);
        }
    }

    /// Array content (Mistral): text parts and thinking parts holding text parts.
    fn parts(&mut self, parts: &[crate::wire::ContentPart<'_>], thinking: bool, out: &mut impl EventSink) {
        for part in parts {
            match (part.kind.as_ref(), &part.thinking) {
                ("thinking", Some(Content::Parts(inner))) => self.parts(inner, true, out),
                ("thinking", Some(Content::Text(text))) if !text.is_empty() => self.reasoning_text(text, None, out),
                ("text", _) => {
                    if let Some(text) = non_empty(&part.text) {
                        if thinking {
                            self.reasoning_text(text, None, out);
                        } else {
                            self.text(text, out);
                        }
                    }
                }
                (kind, _) => {
                    let index = self.new_block();
                    let data = json!({ "type": "content_part", "part_type": kind, "text": part.text.as_deref() });
                    let provider = crate::PROVIDER_NAME.to_string();
                    self.emit(out, Event::Opaque { index, provider, data });
                }
            }
        }
    }

    fn extra_choice(&mut self, choice: &Choice<'_>) {
        let position = match self.extras.iter().position(|e| e.index == choice.index) {
            Some(position) => position,
            None => {
                self.extras.push(ExtraChoice {
                    index: choice.index,
                    ..ExtraChoice::default()
                });
                self.extras.len() - 1
            }
        };
        let extra = &mut self.extras[position];
        if let Some(delta) = &choice.delta {
            for detail in delta.reasoning_details() {
                if let Some(text) = non_empty(&detail.text).or_else(|| non_empty(&detail.summary)) {
                    extra.reasoning.push_str(text);
                }
            }
            if delta.reasoning_details().is_empty()
                && let Some(text) = non_empty(&delta.reasoning).or_else(|| non_empty(&delta.reasoning_content))
            {
                extra.reasoning.push_str(text);
            }
            match &delta.content {
                Some(Content::Text(text)) => extra.text.push_str(text),
                Some(Content::Parts(parts)) => {
                    for part in parts {
                        if let Some(text) = non_empty(&part.text) {
                            extra.text.push_str(text);
                        }
                    }
                }
                None => {}
            }
            if let Some(text) = crate::wire::boxed_text(&delta.refusal) {
                extra.text.push_str(text);
            }
            for call in delta.tool_calls() {
                accumulate(&mut extra.tools, call);
            }
        }
        if let Some(reason) = crate::wire::boxed_text(&choice.finish_reason) {
            extra.finish = Some(reason.to_string());
        }
    }

    fn unique_id(&mut self, id: Option<&str>, position: usize) -> String {
        let base = match id {
            Some(id) if !id.is_empty() => id.to_string(),
            _ => format!("call_{position}"),
        };
        let mut candidate = base.clone();
        let mut n = 2;
        while self.used_ids.contains(&candidate) {
            candidate = format!("{base}_{n}");
            n += 1;
        }
        self.used_ids.insert(candidate.clone());
        candidate
    }

    fn finalize_tools(&mut self, out: &mut impl EventSink) {
        let truncated = matches!(self.finish.as_deref(), Some("length" | "max_tokens"));
        let tools = std::mem::take(&mut self.tools);
        for (position, mut call) in tools.into_iter().enumerate() {
            if call.done {
                self.tools.push(call);
                continue;
            }
            call.done = true;
            let trimmed = call.arguments.trim();
            let input = if call.name.is_empty() {
                None
            } else if trimmed.is_empty() {
                (!truncated).then(|| Value::Object(Default::default()))
            } else {
                match serde_json::from_str::<Value>(trimmed) {
                    // Groq sends `null` for calls without arguments: an empty input.
                    Ok(Value::Null) => {
                        call.arguments.clear();
                        Some(Value::Object(Default::default()))
                    }
                    parsed => parsed.ok(),
                }
            };
            match input {
                Some(input) => {
                    let id = self.unique_id(call.id.as_deref(), position);
                    self.current = None;
                    let name = call.name.clone();
                    self.emit(
                        out,
                        Event::ToolCallStart {
                            id: id.clone(),
                            name: name.clone(),
                        },
                    );
                    if !call.arguments.is_empty() {
                        let partial_json = call.arguments.clone();
                        self.emit(
                            out,
                            Event::ToolCallDelta {
                                id: id.clone(),
                                partial_json,
                            },
                        );
                    }
                    self.emit(
                        out,
                        Event::ToolCall {
                            id,
                            name,
                            input,
                            executed_by: ExecutedBy::Host,
                        },
                    );
                    self.tool_calls_made = true;
                }
                None => {
                    let index = self.new_block();
                    let data = json!({
                        "type": "incomplete_tool_call",
                        "id": call.id,
                        "name": call.name,
                        "arguments": call.arguments,
                    });
                    let provider = crate::PROVIDER_NAME.to_string();
                    self.emit(out, Event::Opaque { index, provider, data });
                }
            }
            self.tools.push(call);
        }
    }

    fn end(&mut self, done_marker: bool, out: &mut impl EventSink) -> Result<(), ProviderError> {
        if !self.started {
            return self.fail(
                ProviderError::protocol("the stream ended before its first chunk").with_provider(crate::PROVIDER_NAME),
            );
        }
        if self.finish.is_none() && !done_marker {
            return self.fail(
                ProviderError::protocol("the stream ended before the response finished")
                    .with_provider(crate::PROVIDER_NAME),
            );
        }
        self.finalize_tools(out);
        for extra in std::mem::take(&mut self.extras) {
            let index = self.new_block();
            let calls: Vec<Value> = extra
                .tools
                .iter()
                .map(|t| json!({ "id": t.id, "name": t.name, "arguments": t.arguments }))
                .collect();
            let data = json!({
                "type": "extra_choice",
                "choice": extra.index,
                "text": extra.text,
                "reasoning": extra.reasoning,
                "tool_calls": calls,
                "finish_reason": extra.finish,
            });
            let provider = crate::PROVIDER_NAME.to_string();
            self.emit(out, Event::Opaque { index, provider, data });
        }
        let reason = finish_reason(self.finish.as_deref(), self.refusal, self.tool_calls_made);
        let metrics = self.meter.finish();
        out.push_event(Event::Finish {
            reason,
            usage: self.usage,
            metrics,
        });
        self.ended = true;
        Ok(())
    }
}

/// Add one tool-call fragment to the calls of a choice.
fn accumulate(tools: &mut Vec<ToolAcc>, call: &ToolCallDelta<'_>) {
    let id = non_empty(&call.id);
    let function = call.function.as_ref();
    let name = function.and_then(|f| non_empty(&f.name));
    let slot = match call.index {
        Some(index) => tools.iter().rposition(|t| t.wire_index == Some(index)).filter(|&at| {
            // A new id on an index whose call already has a name and another id: a new call
            // (servers that number every call 0).
            let known = &tools[at];
            !matches!((id, known.id.as_deref()), (Some(new), Some(old)) if new != old && !known.name.is_empty())
        }),
        None => match id {
            Some(id) => tools.iter().rposition(|t| t.id.as_deref() == Some(id)),
            None => tools.len().checked_sub(1),
        },
    };
    let slot = match slot {
        Some(slot) if !tools[slot].done => slot,
        _ => {
            tools.push(ToolAcc {
                wire_index: call.index,
                ..ToolAcc::default()
            });
            tools.len() - 1
        }
    };
    let acc = &mut tools[slot];
    if let Some(id) = id
        && acc.id.is_none()
    {
        acc.id = Some(id.to_string());
    }
    if let Some(name) = name {
        // Servers repeat the whole name on every fragment, or stream it in pieces.
        if acc.name != name {
            acc.name.push_str(name);
        }
    }
    if let Some(arguments) = function.and_then(|f| f.arguments.as_deref()) {
        acc.arguments.push_str(arguments);
    }
}

fn detail_json(detail: &ReasoningDetail<'_>) -> Value {
    let mut map = serde_json::Map::new();
    map.insert("type".into(), Value::String(detail.kind.to_string()));
    let fields = [
        ("id", &detail.id),
        ("format", &detail.format),
        ("data", &detail.data),
        ("text", &detail.text),
        ("summary", &detail.summary),
        ("signature", &detail.signature),
    ];
    for (key, value) in fields {
        if let Some(value) = value {
            map.insert(key.into(), Value::String(value.to_string()));
        }
    }
    if let Some(index) = detail.index {
        map.insert("index".into(), Value::from(index));
    }
    Value::Object(map)
}

fn convert_usage(wire: &WireUsage) -> Usage {
    let details = wire.prompt_tokens_details.as_ref();
    let cache_read = details.and_then(|d| d.cached_tokens).or(wire.prompt_cache_hit_tokens);
    let cache_write = details.and_then(|d| d.cache_write_tokens);
    let input = wire.prompt_tokens.map(|prompt| {
        prompt
            .saturating_sub(cache_read.unwrap_or(0))
            .saturating_sub(cache_write.unwrap_or(0))
    });
    let cost_usd = wire.cost.as_ref().and_then(|cost| match cost {
        Value::Number(n) => n.as_f64(),
        Value::Object(map) => map.get("total_cost").and_then(Value::as_f64),
        _ => None,
    });
    Usage {
        input,
        output: wire.completion_tokens,
        cache_read,
        cache_write,
        reasoning: wire.completion_tokens_details.as_ref().and_then(|d| d.reasoning_tokens),
        cost_usd,
    }
}

/// Map a chat-completions finish reason.
fn finish_reason(raw: Option<&str>, refusal: bool, tool_calls: bool) -> FinishReason {
    match raw {
        None => {
            if tool_calls {
                FinishReason::ToolUse
            } else if refusal {
                FinishReason::Refusal
            } else {
                FinishReason::Stop
            }
        }
        Some("stop" | "end_turn" | "stop_sequence" | "eos" | "eos_token") => {
            if refusal {
                FinishReason::Refusal
            } else if tool_calls {
                FinishReason::ToolUse
            } else {
                FinishReason::Stop
            }
        }
        Some("length" | "max_tokens" | "model_length") => FinishReason::Length,
        Some("tool_calls" | "function_call" | "tool_use") => FinishReason::ToolUse,
        Some("content_filter") => FinishReason::ContentFilter,
        Some("refusal") => FinishReason::Refusal,
        Some(other) => FinishReason::Other(other.to_string()),
    }
}

/// A payload after the end of a response that starts no new one: no choices, no error (some
/// servers send a last `{"choices": [], "cost": ...}` after `[DONE]`).
fn trailer(payload: &[u8], framing: Framing) -> bool {
    let json = match framing {
        Framing::JsonLines => payload,
        Framing::Sse => payload.strip_prefix(b"data:").unwrap_or(payload).trim_ascii(),
    };
    match serde_json::from_slice::<Value>(json) {
        Ok(value) => {
            value.get("error").is_none() && value.get("choices").and_then(Value::as_array).is_none_or(Vec::is_empty)
        }
        Err(_) => json == b"[DONE]",
    }
}

/// One response of a recorded body, as [`replay`] translates it.
#[derive(Debug)]
pub struct Replayed {
    /// The events, in order.
    pub events: Vec<Event>,
    /// The error that ended the response, if any.
    pub error: Option<ProviderError>,
}

/// Translate a recorded body (the `replay` command's `--family openai`): raw SSE or one JSON
/// payload per line (detected from the first non-blank line); a body holding several responses
/// (more payloads after a `[DONE]`, a finish or an error) gives one [`Replayed`] per response;
/// trailing payloads without choices are not a new response.
pub fn replay(body: &[u8]) -> Vec<Replayed> {
    let first = body
        .split(|&b| b == b'\n')
        .map(<[u8]>::trim_ascii)
        .find(|line| !line.is_empty());
    let framing = match first {
        Some(line) if line.starts_with(b"{") => Framing::JsonLines,
        _ => Framing::Sse,
    };
    let mut responses = Vec::new();
    let mut translator = Translator::new(framing);
    let mut events = Vec::new();
    let mut error = None;
    for line in body.split_inclusive(|&b| b == b'\n') {
        if translator.is_done() {
            let payload = line.trim_ascii();
            let is_payload = match framing {
                Framing::JsonLines => !payload.is_empty(),
                Framing::Sse => payload.starts_with(b"data:"),
            };
            if !is_payload || trailer(payload, framing) {
                continue;
            }
            responses.push(Replayed {
                events: std::mem::take(&mut events),
                error: error.take(),
            });
            translator = Translator::new(framing);
        }
        if let Err(e) = translator.feed(line, &mut events) {
            error = Some(e);
        }
    }
    if let Err(e) = translator.finish(&mut events) {
        error = Some(e);
    }
    responses.push(Replayed { events, error });
    responses
}
