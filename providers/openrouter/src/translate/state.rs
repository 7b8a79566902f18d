//! The translator's state machine: payloads in, events out (into an [`EventBuffer`]).

use std::collections::{HashMap, HashSet, VecDeque};

use patchbay_core::kit::MetricsRecorder;
use patchbay_core::{ErrorKind, Event, ExecutedBy, ProviderError, Usage, Warning};
use serde_json::{Value, json};

use super::convert::{ToolCalls, convert_usage, detail_json, finish_reason, non_empty};
use super::sources::Sources;
use crate::NAME;
use crate::api_error::from_error_object;
use crate::wire::{Choice, Chunk, Content, ContentPart, Delta, ReasoningDetail, Str, boxed_text};

/// Where the state appends the events it makes: the translator's queue, which the driver
/// empties from the front.
pub(super) trait EventBuffer {
    /// Append one event.
    fn push_event(&mut self, event: Event);
}

impl EventBuffer for VecDeque<Event> {
    fn push_event(&mut self, event: Event) {
        self.push_back(event);
    }
}

/// A payload parsed after one UTF-8 check of the whole of it (serde_json's slice reader checks
/// every string, keys included, one call each); invalid UTF-8 gets the slice reader's own error.
fn parse<'a, T: serde::Deserialize<'a>>(payload: &'a [u8]) -> Result<T, serde_json::Error> {
    match std::str::from_utf8(payload) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(payload),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    Text,
    Reasoning,
}

#[derive(Debug, Default)]
struct ExtraChoice {
    index: u32,
    text: String,
    reasoning: String,
    tools: ToolCalls,
    finish: Option<String>,
}

#[derive(Debug)]
pub(super) struct State {
    pub(super) model: String,
    pub(super) warnings: Vec<Warning>,
    pub(super) started: bool,
    /// `Finish` or an error was emitted: nothing more comes out.
    pub(super) ended: bool,
    primary: Option<u32>,
    current: Option<(BlockKind, usize)>,
    next_index: usize,
    detail_index: Option<u32>,
    tools: ToolCalls,
    finish: Option<String>,
    refusal: bool,
    tool_calls_made: bool,
    used_ids: HashSet<String>,
    /// For each id used twice, the suffix to try next: every smaller one is taken.
    next_suffix: HashMap<String, u64>,
    usage: Usage,
    sources: Sources,
    /// The primary choice's log probabilities so far, by list (`content`, `refusal`...).
    logprobs: serde_json::Map<String, Value>,
    /// The latest text block, which sources annotate.
    last_text: Option<usize>,
    extras: Vec<ExtraChoice>,
    /// Where each extra choice is in `extras`, by choice index.
    extra_by_index: HashMap<u32, usize>,
    /// Index lookups and calls visited by the tool-call and choice bookkeeping (see
    /// `Translator::lookups`).
    pub(super) lookups: u64,
    metrics: MetricsRecorder,
}

impl State {
    pub(super) fn new() -> Self {
        Self {
            model: String::new(),
            warnings: Vec::new(),
            started: false,
            ended: false,
            primary: None,
            current: None,
            next_index: 0,
            detail_index: None,
            tools: ToolCalls::default(),
            finish: None,
            refusal: false,
            tool_calls_made: false,
            used_ids: HashSet::new(),
            next_suffix: HashMap::new(),
            usage: Usage::default(),
            sources: Sources::default(),
            logprobs: serde_json::Map::new(),
            last_text: None,
            extras: Vec::new(),
            extra_by_index: HashMap::new(),
            lookups: 0,
            metrics: MetricsRecorder::start(),
        }
    }

    fn emit(&mut self, out: &mut impl EventBuffer, event: Event) {
        self.metrics.observe(&event);
        out.push_event(event);
    }

    fn fail(&mut self, error: ProviderError) -> Result<(), ProviderError> {
        self.ended = true;
        Err(error)
    }

    /// One payload (the framing already stripped, not empty).
    pub(super) fn payload(&mut self, payload: &[u8], out: &mut impl EventBuffer) -> Result<(), ProviderError> {
        if payload == b"[DONE]" {
            return self.end(true, out);
        }
        if self.started {
            let parsed = match std::str::from_utf8(payload) {
                Ok(text) => crate::fast::chunk(text).map_or_else(|| serde_json::from_str(text), Ok),
                Err(_) => serde_json::from_slice(payload),
            };
            match parsed {
                Ok(chunk) => self.chunk(chunk, None, out),
                Err(error) => self.bad_payload(payload, error),
            }
        } else {
            match parse::<Chunk<'_, Str<'_>>>(payload) {
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
                .with_provider(NAME)
                .with_source(error),
        )
    }

    fn chunk<S>(
        &mut self,
        chunk: Chunk<'_, S>,
        head: Option<(Option<Str<'_>>, Option<Str<'_>>)>,
        out: &mut impl EventBuffer,
    ) -> Result<(), ProviderError> {
        let usage = chunk
            .usage
            .as_deref()
            .or_else(|| chunk.x_groq.as_ref().and_then(|x| x.usage.as_ref()))
            .map(convert_usage);
        if let Some(error) = &chunk.error {
            // Usage sent with the error still reaches the caller, before the error ends the
            // stream (only once the stream started: an error alone stays a plain error).
            if self.started {
                self.usage_update(usage, out);
            }
            return self.fail(from_error_object(error, None));
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
                if let Err(error) = self.primary_choice(choice, out) {
                    self.usage_update(usage, out);
                    return Err(error);
                }
            } else {
                self.extra_choice(choice);
            }
        }
        // Venice reports the cost beside the usage.
        let usage = match chunk.cost.as_deref().and_then(|c| c.get("usd")).and_then(Value::as_f64) {
            Some(cost) => {
                let mut usage = usage.unwrap_or_default();
                usage.cost_usd = usage.cost_usd.or(Some(cost));
                Some(usage)
            }
            None => usage,
        };
        if chunk.citations.is_some() || chunk.search_results.is_some() {
            let citations = chunk.citations.as_deref().map_or(&[][..], Vec::as_slice);
            let results = chunk.search_results.as_deref().map_or(&[][..], Vec::as_slice);
            let index = self.source_block();
            for source in self.sources.perplexity(citations, results, index) {
                self.emit(out, Event::Source(source));
            }
        }
        self.usage_update(usage, out);
        Ok(())
    }

    /// Fold a chunk's usage into the total and report it.
    fn usage_update(&mut self, usage: Option<Usage>, out: &mut impl EventBuffer) {
        if let Some(usage) = usage {
            self.usage.update(&usage);
            let event = Event::Usage(self.usage);
            self.emit(out, event);
        }
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

    fn reasoning_text(&mut self, text: &str, detail: Option<u32>, out: &mut impl EventBuffer) {
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

    fn signature(&mut self, signature: &str, detail: Option<u32>, out: &mut impl EventBuffer) {
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

    fn text(&mut self, text: &str, out: &mut impl EventBuffer) {
        let index = match self.current {
            Some((BlockKind::Text, index)) => index,
            _ => self.open(BlockKind::Text),
        };
        self.last_text = Some(index);
        self.emit(
            out,
            Event::TextDelta {
                index,
                text: text.to_string(),
            },
        );
    }

    fn detail(&mut self, detail: &ReasoningDetail<'_>, out: &mut impl EventBuffer) {
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
                let provider = NAME.to_string();
                self.emit(out, Event::Opaque { index, provider, data });
            }
        }
    }

    fn primary_choice(&mut self, choice: &Choice<'_>, out: &mut impl EventBuffer) -> Result<(), ProviderError> {
        if let Some(delta) = &choice.delta {
            self.primary_delta(delta, out);
        }
        if let Some(Value::Object(lists)) = choice.logprobs.as_deref() {
            for (key, value) in lists {
                if let Value::Array(items) = value {
                    let list = self
                        .logprobs
                        .entry(key.clone())
                        .or_insert_with(|| Value::Array(Vec::new()));
                    if let Value::Array(list) = list {
                        list.extend(items.iter().cloned());
                    }
                }
            }
        }
        if let Some(reason) = boxed_text(&choice.finish_reason) {
            if reason == "error" {
                return self.fail(
                    ProviderError::new(ErrorKind::Server, "the model stopped with finish_reason `error`")
                        .with_provider(NAME),
                );
            }
            self.finish = Some(reason.to_string());
            self.finalize_tools(out);
        }
        Ok(())
    }

    fn primary_delta(&mut self, delta: &Delta<'_>, out: &mut impl EventBuffer) {
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
        if let Some(text) = boxed_text(&delta.refusal) {
            self.refusal = true;
            self.text(text, out);
        }
        for call in delta.tool_calls() {
            self.tools.accumulate(call, &mut self.lookups);
        }
        if !delta.annotations().is_empty() {
            let index = self.source_block();
            for source in self.sources.annotations(delta.annotations(), index) {
                self.emit(out, Event::Source(source));
            }
        }
    }

    /// The block sources of this moment belong to: the latest text block, or the one about to
    /// open when no text came yet.
    fn source_block(&self) -> usize {
        self.last_text.unwrap_or(self.next_index)
    }

    /// Array content (Mistral): text parts and thinking parts holding text parts.
    fn parts(&mut self, parts: &[ContentPart<'_>], thinking: bool, out: &mut impl EventBuffer) {
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
                    let provider = NAME.to_string();
                    self.emit(out, Event::Opaque { index, provider, data });
                }
            }
        }
    }

    fn extra_choice(&mut self, choice: &Choice<'_>) {
        self.lookups += 1;
        let extras = &mut self.extras;
        let position = *self.extra_by_index.entry(choice.index).or_insert_with(|| {
            extras.push(ExtraChoice {
                index: choice.index,
                ..ExtraChoice::default()
            });
            extras.len() - 1
        });
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
            if let Some(text) = boxed_text(&delta.refusal) {
                extra.text.push_str(text);
            }
            for call in delta.tool_calls() {
                extra.tools.accumulate(call, &mut self.lookups);
            }
        }
        if let Some(reason) = boxed_text(&choice.finish_reason) {
            extra.finish = Some(reason.to_string());
        }
    }

    fn unique_id(&mut self, id: Option<&str>, position: usize) -> String {
        let base = match id {
            Some(id) if !id.is_empty() => id.to_string(),
            _ => format!("call_{position}"),
        };
        self.lookups += 1;
        if self.used_ids.insert(base.clone()) {
            return base;
        }
        // `base_2`, `base_3`, ...: the first one free. Start after the last one tried for this
        // base (those before it are taken, and taken ids stay taken): linear in all.
        let next = self.next_suffix.entry(base.clone()).or_insert(2);
        loop {
            self.lookups += 1;
            let candidate = format!("{base}_{next}");
            *next += 1;
            if self.used_ids.insert(candidate.clone()) {
                return candidate;
            }
        }
    }

    fn finalize_tools(&mut self, out: &mut impl EventBuffer) {
        let truncated = matches!(self.finish.as_deref(), Some("length" | "max_tokens"));
        let mut tools = std::mem::take(&mut self.tools);
        for (position, call) in tools.finalize() {
            self.lookups += 1;
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
                            signature: None,
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
                    let provider = NAME.to_string();
                    self.emit(out, Event::Opaque { index, provider, data });
                }
            }
        }
        self.tools = tools;
    }

    pub(super) fn end(&mut self, done_marker: bool, out: &mut impl EventBuffer) -> Result<(), ProviderError> {
        if !self.started {
            return self.fail(ProviderError::protocol("the stream ended before its first chunk").with_provider(NAME));
        }
        if self.finish.is_none() && !done_marker {
            return self
                .fail(ProviderError::protocol("the stream ended before the response finished").with_provider(NAME));
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
            let provider = NAME.to_string();
            self.emit(out, Event::Opaque { index, provider, data });
        }
        if !self.logprobs.is_empty() {
            let index = self.new_block();
            let mut data = std::mem::take(&mut self.logprobs);
            data.insert("type".into(), Value::from("logprobs"));
            let provider = NAME.to_string();
            let data = Value::Object(data);
            self.emit(out, Event::Opaque { index, provider, data });
        }
        let reason = finish_reason(self.finish.as_deref(), self.refusal, self.tool_calls_made);
        let metrics = self.metrics.finish();
        out.push_event(Event::Finish {
            reason,
            usage: self.usage,
            metrics,
        });
        self.ended = true;
        Ok(())
    }
}
