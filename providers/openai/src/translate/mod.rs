//! The Responses wire: the typed stream events of `POST /responses` (`stream: true`) into
//! patchbay events, as core's [`Wire`]. Events are read by their `type` (the `event:` line is
//! not needed, so a server that leaves it out or writes `data:` first reads the same); an
//! event whose `sequence_number` is not above the last one seen is a repeat (a resumed stream)
//! and is skipped.
//!
//! | Wire | Events |
//! | --- | --- |
//! | the first event (`response.created`; any event of a resumed stream that has none) | `Started` (the response's `id` and `model`, else the model asked for; the request's warnings) |
//! | `response.output_text.delta` | `TextDelta`s of the text block of that item and content part (`.done`: its whole text when no delta came) |
//! | `response.refusal.delta` | `TextDelta`s the same way; the finish becomes `Refusal` |
//! | `response.output_text.annotation.added` (and annotations only in the finished item) | `Source`s of that text block (see [`builtin`]) |
//! | `response.reasoning_summary_text.delta`, `response.reasoning_text.delta` | `ReasoningDelta`s of the reasoning item's block; summary parts after the first start with a blank line (`.done`: the whole text when no delta came) |
//! | `response.output_item.done` of a `reasoning` item | `ReasoningSignature` with its `encrypted_content` (core keeps it as the `Thinking` block's signature; the request sends it back byte for byte) |
//! | `response.output_item.added` of a `function_call` | `ToolCallStart` (id the `call_id`, else `call_N` numbered on from the conversation's calls) |
//! | `response.function_call_arguments.delta` (`.done` when no delta came) | `ToolCallDelta` |
//! | `response.output_item.done` of a `function_call` | `ToolCall` (host); arguments that are not JSON end the call with an `Aborted` `ToolResult` holding them |
//! | `output_item.added` / `.done` of `web_search_call`, `file_search_call`, `code_interpreter_call`, `image_generation_call`, `mcp_call`, `mcp_list_tools` | `ToolCallStart`, then a provider-run `ToolCall`, its `ToolResult` and its `Source`s (see [`builtin`]); id the item's `id` |
//! | `output_item.done` of any other item (`mcp_approval_request`, `computer_call`, `local_shell_call`, `custom_tool_call`...) | `Opaque` with the item as sent (the request sends it back verbatim) |
//! | progress events (`response.web_search_call.searching`, `response.code_interpreter_call_code.delta`, `response.image_generation_call.partial_image`, `response.mcp_call_arguments.delta`...), `response.content_part.*`, `response.reasoning_summary_part.*`, `response.in_progress`, `response.queued`, unknown types | nothing (the finished item carries the same data) |
//! | `response.completed` | `Usage` (the response's `usage`: `input` = `input_tokens` - cached, `cache_read` the cached tokens, `output`, `reasoning`), then `Finish`: `ToolUse` after host function calls, `Refusal` after a refusal, else `Stop` |
//! | `response.incomplete` | `Usage`, `Finish`: `max_output_tokens` is `Length`, `content_filter` `ContentFilter`, another reason `Other` with it; calls still open end `Aborted` |
//! | `response.failed`, `error` (flat `{"code", "message"}` or nested `{"error": ..}`) | a typed error by its code (core's [`openai_error`]) |
//! | the body ends before a terminal event | a `Protocol` error |

pub mod builtin;
mod event;
mod fast;
mod items;

use std::collections::VecDeque;

use patchbay_core::kit::{
    CallIds, ErrorResponse, Framing, MetricsRecorder, Wire, frame_head, openai_error, openai_http_error,
};
use patchbay_core::{Event, FinishReason, Message, ProviderError, Warning};
use serde_json::{Value, json};

use self::event::{Response, StreamEvent};
#[doc(hidden)]
pub use self::fast::check as check_fast_read;
use crate::NAME;

/// A text (or refusal) block: one content part of one message item.
#[derive(Debug)]
struct TextBlock {
    output: usize,
    part: usize,
    index: usize,
    emitted: bool,
    annotations: usize,
}

/// A reasoning item's block, opened at its first text or its signature.
#[derive(Debug)]
struct ReasoningBlock {
    output: usize,
    index: usize,
    /// The part the last text belonged to (`(true, n)` summary part n, `(false, n)` content n).
    part: Option<(bool, usize)>,
    /// Whether the current part had text.
    part_text: bool,
    emitted: bool,
}

/// A call opened by `output_item.added` and not yet done.
#[derive(Debug)]
struct OpenCall {
    output: usize,
    id: String,
    name: String,
    index: usize,
    arguments: String,
    host: bool,
}

/// The translator: one response's state. See the [module docs](self).
#[derive(Debug)]
pub struct Translator {
    framing: Framing,
    model: String,
    warnings: Vec<Warning>,
    queue: VecDeque<Event>,
    metrics: MetricsRecorder,
    started: bool,
    done: bool,
    last_sequence: Option<u64>,
    next_index: usize,
    texts: Vec<TextBlock>,
    reasoning: Vec<ReasoningBlock>,
    calls: Vec<OpenCall>,
    ids: CallIds,
    host_calls: usize,
    refused: bool,
    sources: u64,
}

impl Default for Translator {
    fn default() -> Self {
        Self::new("")
    }
}

impl Translator {
    /// A translator for an SSE body; its metrics clock starts now. `model` names `Started`
    /// until the response reports its own.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            framing: Framing::DataLines,
            model: model.into(),
            warnings: Vec::new(),
            queue: VecDeque::new(),
            metrics: MetricsRecorder::start(),
            started: false,
            done: false,
            last_sequence: None,
            next_index: 0,
            texts: Vec::new(),
            reasoning: Vec::new(),
            calls: Vec::new(),
            ids: CallIds::default(),
            host_calls: 0,
            refused: false,
            sources: 0,
        }
    }

    /// Read one JSON event per line (`*.chunks.txt` captures) instead of SSE.
    pub fn with_framing(mut self, framing: Framing) -> Self {
        self.framing = framing;
        self
    }

    /// Warnings to put on `Started`.
    pub fn with_warnings(mut self, warnings: Vec<Warning>) -> Self {
        self.warnings = warnings;
        self
    }

    /// Number the ids patchbay assigns on from the tool calls already in the conversation, so
    /// ids stay unique across an agent run.
    pub fn with_history(mut self, messages: &[Message]) -> Self {
        self.ids = CallIds::with_history(messages);
        self
    }

    /// Whether `Started` was produced.
    pub fn has_started(&self) -> bool {
        self.started
    }

    fn emit(&mut self, event: Event) {
        self.metrics.observe(&event);
        self.queue.push_back(event);
    }

    fn protocol(message: impl Into<String>) -> ProviderError {
        ProviderError::protocol(message).with_provider(NAME)
    }

    fn new_index(&mut self) -> usize {
        let index = self.next_index;
        self.next_index += 1;
        index
    }

    fn start(&mut self, response: Option<&Response>) {
        if self.started {
            return;
        }
        self.started = true;
        let model = response
            .and_then(|r| r.model.clone())
            .filter(|model| !model.is_empty())
            .unwrap_or_else(|| self.model.clone());
        let event = Event::Started {
            response_id: response.and_then(|r| r.id.clone()),
            model,
            session_id: None,
            warnings: std::mem::take(&mut self.warnings),
        };
        self.emit(event);
    }

    /// Translate one payload.
    fn payload(&mut self, data: &[u8]) -> Result<(), ProviderError> {
        let data = data.trim_ascii();
        if self.done || data.is_empty() || data == b"[DONE]" {
            return Ok(());
        }
        let not_json = |error: &dyn std::fmt::Display| {
            Self::protocol(format!("an event is not valid JSON ({error}): {}", frame_head(data)))
        };
        // One UTF-8 check for the payload, then the common event without the parser (serde for
        // anything else, with no check per string).
        let text = std::str::from_utf8(data).map_err(|error| not_json(&error))?;
        let event: StreamEvent<'_> = match fast::event(text) {
            Some(event) => event,
            None => serde_json::from_str(text).map_err(|error| not_json(&error))?,
        };
        if let Some(sequence) = event.sequence_number {
            if self.last_sequence.is_some_and(|last| sequence <= last) {
                return Ok(());
            }
            self.last_sequence = Some(sequence);
        }
        self.event(event)
    }

    fn event(&mut self, event: StreamEvent<'_>) -> Result<(), ProviderError> {
        let output = event.output_index.unwrap_or(0);
        let part = event.content_index.unwrap_or(0);
        match event.kind.as_ref() {
            "response.output_text.delta" | "response.refusal.delta" => {
                self.start(None);
                if event.kind.starts_with("response.refusal") {
                    self.refused = true;
                }
                if let Some(delta) = event.delta.filter(|delta| !delta.is_empty()) {
                    let slot = self.text_block(output, part);
                    self.texts[slot].emitted = true;
                    let index = self.texts[slot].index;
                    self.emit(Event::TextDelta {
                        index,
                        text: delta.into_owned(),
                    });
                }
            }
            "response.output_text.done" | "response.refusal.done" => {
                self.start(None);
                let refusal = event.kind.starts_with("response.refusal");
                self.refused |= refusal;
                let text = if refusal { event.refusal } else { event.text };
                if let Some(text) = text {
                    self.whole_text(output, part, &text);
                }
            }
            "response.output_text.annotation.added" => {
                self.start(None);
                if let Some(annotation) = event.annotation {
                    let slot = self.text_block(output, part);
                    self.texts[slot].annotations += 1;
                    let index = self.texts[slot].index;
                    self.annotation(&annotation, index);
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                self.start(None);
                let summary = event.kind.contains("summary");
                let at = if summary {
                    event.summary_index
                } else {
                    event.content_index
                };
                if let Some(delta) = event.delta.filter(|delta| !delta.is_empty()) {
                    self.reasoning_text(output, (summary, at.unwrap_or(0)), &delta, true);
                }
            }
            "response.reasoning_summary_text.done" | "response.reasoning_text.done" => {
                self.start(None);
                let summary = event.kind.contains("summary");
                let at = if summary {
                    event.summary_index
                } else {
                    event.content_index
                };
                if let Some(text) = event.text.filter(|text| !text.is_empty()) {
                    self.reasoning_text(output, (summary, at.unwrap_or(0)), &text, false);
                }
            }
            "response.function_call_arguments.delta" => {
                self.start(None);
                let delta = event.delta.unwrap_or_default();
                let Some(call) = self.calls.iter_mut().find(|call| call.output == output && call.host) else {
                    return Err(Self::protocol(format!(
                        "function call arguments for output {output}, which holds no open call"
                    )));
                };
                if delta.is_empty() {
                    return Ok(());
                }
                call.arguments.push_str(&delta);
                let id = call.id.clone();
                self.emit(Event::ToolCallDelta {
                    id,
                    partial_json: delta.into_owned(),
                });
            }
            "response.function_call_arguments.done" => {
                self.start(None);
                if let Some(arguments) = event.arguments {
                    self.whole_arguments(output, &arguments);
                }
            }
            "response.output_item.added" => {
                self.start(None);
                if let Some(item) = event.item {
                    self.item_added(output, &item);
                }
            }
            "response.output_item.done" => {
                self.start(None);
                if let Some(item) = event.item {
                    self.item_done(output, &item)?;
                }
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                let response = event.response.unwrap_or_default();
                self.start(Some(&response));
                return self.finish(&response);
            }
            "error" => {
                self.start(None);
                let error = match event.error {
                    Some(error) => *error,
                    None => json!({
                        "code": event.code,
                        "message": event.message.as_deref().unwrap_or("the server reported an error"),
                    }),
                };
                return Err(openai_error(&error, None, NAME));
            }
            "response.created" | "response.in_progress" | "response.queued" => {
                self.start(event.response.as_deref());
            }
            _ => self.start(None),
        }
        Ok(())
    }

    /// The slot of the text block of `(output, part)`, opened when new.
    fn text_block(&mut self, output: usize, part: usize) -> usize {
        if let Some(slot) = self
            .texts
            .iter()
            .rposition(|block| block.output == output && block.part == part)
        {
            return slot;
        }
        let index = self.new_index();
        self.texts.push(TextBlock {
            output,
            part,
            index,
            emitted: false,
            annotations: 0,
        });
        self.texts.len() - 1
    }

    /// A part's whole text: emitted when no delta of it came.
    fn whole_text(&mut self, output: usize, part: usize, text: &str) {
        let slot = self.text_block(output, part);
        if self.texts[slot].emitted || text.is_empty() {
            return;
        }
        self.texts[slot].emitted = true;
        let index = self.texts[slot].index;
        self.emit(Event::TextDelta {
            index,
            text: text.to_string(),
        });
    }

    fn annotation(&mut self, annotation: &Value, index: usize) {
        if let Some(mut source) = builtin::annotation(annotation, index) {
            self.sources += 1;
            source.id = self.sources.to_string();
            self.emit(Event::Source(source));
        }
    }

    /// The slot of the reasoning block of item `output`, opened when new.
    fn reasoning_block(&mut self, output: usize) -> usize {
        if let Some(slot) = self.reasoning.iter().rposition(|block| block.output == output) {
            return slot;
        }
        let index = self.new_index();
        self.reasoning.push(ReasoningBlock {
            output,
            index,
            part: None,
            part_text: false,
            emitted: false,
        });
        self.reasoning.len() - 1
    }

    /// Reasoning text of a part: a delta, or a part's whole text (`delta` false), emitted only
    /// when the part had none. A new part after text starts with a blank line.
    fn reasoning_text(&mut self, output: usize, part: (bool, usize), text: &str, delta: bool) {
        let slot = self.reasoning_block(output);
        let block = &mut self.reasoning[slot];
        if block.part != Some(part) {
            block.part = Some(part);
            block.part_text = false;
        } else if !delta && block.part_text {
            return;
        }
        let separator = !block.part_text && block.emitted;
        block.part_text = true;
        block.emitted = true;
        let index = block.index;
        let text = if separator {
            format!("\n\n{text}")
        } else {
            text.to_string()
        };
        self.emit(Event::ReasoningDelta { index, text });
    }

    fn whole_arguments(&mut self, output: usize, arguments: &str) {
        let Some(call) = self.calls.iter_mut().find(|call| call.output == output && call.host) else {
            return;
        };
        if !call.arguments.is_empty() || arguments.is_empty() {
            return;
        }
        call.arguments = arguments.to_string();
        let event = Event::ToolCallDelta {
            id: call.id.clone(),
            partial_json: arguments.to_string(),
        };
        self.emit(event);
    }

    /// The terminal event: a failure as its typed error, else usage and `Finish`.
    fn finish(&mut self, response: &Response) -> Result<(), ProviderError> {
        self.done = true;
        if response.status.as_deref() == Some("failed") || response.error.as_ref().is_some_and(|e| !e.is_null()) {
            let error = response
                .error
                .clone()
                .unwrap_or_else(|| json!({"code": "server_error"}));
            return Err(openai_error(&error, None, NAME));
        }
        for call in std::mem::take(&mut self.calls) {
            self.abort_call(call, "the response ended before the call was complete");
        }
        let incomplete = response
            .incomplete_details
            .as_ref()
            .and_then(|details| details.get("reason"))
            .and_then(Value::as_str);
        let reason = match (response.status.as_deref(), incomplete) {
            (_, Some("max_output_tokens")) => FinishReason::Length,
            (_, Some("content_filter")) => FinishReason::ContentFilter,
            (_, Some(other)) => FinishReason::Other(other.to_string()),
            (Some("incomplete"), None) => FinishReason::Other("incomplete".to_string()),
            _ if self.host_calls > 0 => FinishReason::ToolUse,
            _ if self.refused => FinishReason::Refusal,
            _ => FinishReason::Stop,
        };
        let usage = response.usage.as_ref().map(|usage| usage.usage()).unwrap_or_default();
        if !usage.is_empty() {
            self.emit(Event::Usage(usage));
        }
        let metrics = self.metrics.finish();
        self.queue.push_back(Event::Finish { reason, usage, metrics });
        Ok(())
    }

    /// A whole (non-streamed) response object: its items as if streamed, then its finish.
    fn whole_response(&mut self, response: Response, output: &[Value]) -> Result<(), ProviderError> {
        self.start(Some(&response));
        for (index, item) in output.iter().enumerate() {
            self.item_done(index, item)?;
        }
        self.finish(&response)
    }
}

impl Wire for Translator {
    fn framing(&self) -> Framing {
        self.framing
    }

    fn frame(&mut self, data: &[u8]) -> Result<Option<Event>, ProviderError> {
        let result = self.payload(data);
        if result.is_err() {
            self.done = true;
        }
        result?;
        Ok(self.queue.pop_front())
    }

    fn end(&mut self) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        self.done = true;
        if !self.started {
            return Err(Self::protocol("the stream ended before any event"));
        }
        Err(Self::protocol("the stream ended before `response.completed`"))
    }

    fn next_event(&mut self) -> Option<Event> {
        self.queue.pop_front()
    }

    fn is_done(&self) -> bool {
        self.done
    }

    /// A JSON answer: a response object (`{"object": "response", "output": [..]}`, what the
    /// server sends without `stream: true`) read as its items and finish.
    fn whole_body(&mut self, body: &[u8]) -> Result<(), ProviderError> {
        let value: Value = serde_json::from_slice(body)
            .map_err(|error| Self::protocol(format!("the JSON answer is not a response ({error})")))?;
        if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
            self.done = true;
            return Err(openai_error(error, None, NAME));
        }
        let output = match value.get("output") {
            Some(Value::Array(items)) => items.clone(),
            _ => Vec::new(),
        };
        let response: Response = serde_json::from_value(value)
            .map_err(|error| Self::protocol(format!("the JSON answer is not a response ({error})")))?;
        let result = self.whole_response(response, &output);
        self.done = true;
        result
    }

    fn error_response(&self, response: ErrorResponse<'_>) -> ProviderError {
        openai_http_error(response, NAME)
    }
}

#[cfg(test)]
mod tests;
