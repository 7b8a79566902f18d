//! [`OllamaTranslator`]: the pure state machine from `/api/chat` JSON lines to patchbay events.
//!
//! One JSON object per line. A line with `message.thinking` gives a `ReasoningDelta`, with
//! `message.content` a `TextDelta`, with `message.tool_calls` (whole calls, no ids) a
//! `ToolCallStart`, one `ToolCallDelta` with the arguments and the `ToolCall` per call. The line
//! with `"done": true` gives `Usage` and `Finish`; a line with `"error"` ends the stream with a
//! typed error. A body that ends before its `done` line is a `Protocol` error.

use std::collections::VecDeque;

use patchbay_core::kit::{ErrorResponse, Framing, MetricsRecorder, Wire, kind_for_status, token_count};
use patchbay_core::{ErrorKind, Event, ExecutedBy, FinishReason, ProviderError, Usage, Warning};
use serde::Deserialize;
use serde_json::Value;

use crate::NAME;

/// One line of the stream, as far as it is read.
#[derive(Debug, Deserialize)]
struct Line {
    #[serde(default)]
    message: Option<Message>,
    #[serde(default)]
    done: bool,
    #[serde(default)]
    done_reason: Option<String>,
    #[serde(default, deserialize_with = "token_count")]
    prompt_eval_count: Option<u64>,
    #[serde(default, deserialize_with = "token_count")]
    eval_count: Option<u64>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
struct Message {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ToolCall>,
}

#[derive(Debug, Deserialize)]
struct ToolCall {
    function: Function,
}

#[derive(Debug, Deserialize)]
struct Function {
    name: String,
    #[serde(default)]
    arguments: Value,
}

/// Which kind of block deltas currently go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    Reasoning,
    Text,
}

/// The `/api/chat` wire: JSON lines in, events out, no I/O. `patchbay_http::Call` drives it
/// over a response; `patchbay_core::kit::translate` over a recorded body in a test.
///
/// ```
/// use patchbay_core::kit::translate;
/// use patchbay_ollama::OllamaTranslator;
/// let body = b"{\"message\":{\"role\":\"assistant\",\"content\":\"Hi\"},\"done\":false}\n\
///              {\"done\":true,\"done_reason\":\"stop\",\"eval_count\":1}\n";
/// let recording = translate(OllamaTranslator::new("llama3.2", Vec::new()), [&body[..]]);
/// assert!(recording.error.is_none());
/// assert_eq!(recording.events.len(), 4); // Started, TextDelta, Usage, Finish
/// ```
#[derive(Debug)]
pub struct OllamaTranslator {
    queue: VecDeque<Event>,
    metrics: MetricsRecorder,
    block: Option<(Block, usize)>,
    next_index: usize,
    next_call: u64,
    calls: u64,
    done: bool,
    failed: bool,
}

impl OllamaTranslator {
    /// A translator for one response of `model`; `Started` (with `warnings`) is queued at once.
    /// Tool calls are numbered `call_1`, `call_2`... (see [`with_first_call`](Self::with_first_call)).
    pub fn new(model: impl Into<String>, warnings: Vec<Warning>) -> Self {
        let mut translator = Self {
            queue: VecDeque::new(),
            metrics: MetricsRecorder::start(),
            block: None,
            next_index: 0,
            next_call: 1,
            calls: 0,
            done: false,
            failed: false,
        };
        translator.emit(Event::Started {
            response_id: None,
            model: model.into(),
            session_id: None,
            warnings,
        });
        translator
    }

    /// Number this response's tool calls from `call_<first>` on: the provider passes one more
    /// than the calls already in the conversation, so ids stay unique over an agent run.
    pub fn with_first_call(mut self, first: u64) -> Self {
        self.next_call = first.max(1);
        self
    }

    fn emit(&mut self, event: Event) {
        self.metrics.observe(&event);
        self.queue.push_back(event);
    }

    /// The stream failed: nothing more is read.
    fn fail(&mut self, error: ProviderError) -> ProviderError {
        self.failed = true;
        error.with_provider(NAME)
    }

    /// The block index for a delta of `kind`: a new one whenever the kind changes.
    fn index_for(&mut self, kind: Block) -> usize {
        match self.block {
            Some((open, index)) if open == kind => index,
            _ => {
                let index = self.next_index;
                self.next_index += 1;
                self.block = Some((kind, index));
                index
            }
        }
    }

    fn line(&mut self, line: Line) -> Result<(), ProviderError> {
        if let Some(error) = line.error {
            let message = match error {
                Value::String(text) => text,
                other => other.to_string(),
            };
            // Ollama's in-stream error carries only a message: no type, no status.
            return Err(ProviderError::new(ErrorKind::Server, message));
        }
        let message = line.message.unwrap_or_default();
        if let Some(thinking) = message.thinking.filter(|t| !t.is_empty()) {
            let index = self.index_for(Block::Reasoning);
            self.emit(Event::ReasoningDelta { index, text: thinking });
        }
        if let Some(text) = message.content.filter(|t| !t.is_empty()) {
            let index = self.index_for(Block::Text);
            self.emit(Event::TextDelta { index, text });
        }
        for call in message.tool_calls {
            self.tool_call(call.function)?;
        }
        if line.done {
            self.finish_response(line.done_reason.as_deref(), line.prompt_eval_count, line.eval_count);
        }
        Ok(())
    }

    fn tool_call(&mut self, function: Function) -> Result<(), ProviderError> {
        let input = match function.arguments {
            Value::Null => Value::Object(Default::default()),
            Value::String(text) => serde_json::from_str(&text).map_err(|e| {
                ProviderError::protocol(format!("the arguments of tool call `{}` are not JSON", function.name))
                    .with_source(e)
            })?,
            other => other,
        };
        let id = format!("call_{}", self.next_call);
        self.next_call += 1;
        self.calls += 1;
        self.block = None;
        self.emit(Event::ToolCallStart {
            id: id.clone(),
            name: function.name.clone(),
        });
        self.emit(Event::ToolCallDelta {
            id: id.clone(),
            partial_json: input.to_string(),
        });
        self.emit(Event::ToolCall {
            id,
            name: function.name,
            input,
            executed_by: ExecutedBy::Host,
            signature: None,
        });
        Ok(())
    }

    fn finish_response(&mut self, reason: Option<&str>, input: Option<u64>, output: Option<u64>) {
        let reason = match reason {
            None | Some("stop") if self.calls > 0 => FinishReason::ToolUse,
            None | Some("stop") => FinishReason::Stop,
            Some("length") => FinishReason::Length,
            Some(other) => FinishReason::Other(other.to_string()),
        };
        let usage = Usage {
            input,
            output,
            ..Usage::default()
        };
        self.emit(Event::Usage(usage));
        let metrics = self.metrics.finish();
        self.queue.push_back(Event::Finish { reason, usage, metrics });
        self.done = true;
    }
}

/// One line read as an `/api/chat` object.
fn parse(bytes: &[u8]) -> Result<Line, ProviderError> {
    serde_json::from_slice(bytes)
        .map_err(|e| ProviderError::protocol("a line of the stream is not a valid /api/chat object").with_source(e))
}

impl Wire for OllamaTranslator {
    fn framing(&self) -> Framing {
        Framing::Lines
    }

    fn frame(&mut self, data: &[u8]) -> Result<Option<Event>, ProviderError> {
        match parse(data).and_then(|line| self.line(line)) {
            Ok(()) => Ok(None),
            Err(error) => Err(self.fail(error)),
        }
    }

    fn end(&mut self) -> Result<(), ProviderError> {
        if self.done || self.failed {
            return Ok(());
        }
        let error = ProviderError::protocol(
            "the stream ended before its last line (`\"done\": true`): the response is truncated",
        );
        Err(self.fail(error))
    }

    fn next_event(&mut self) -> Option<Event> {
        self.queue.pop_front()
    }

    fn is_done(&self) -> bool {
        self.done || self.failed
    }

    /// The kind from the status, the message from Ollama's `{"error": "..."}` body (or the
    /// body's first bytes), `retry-after` when sent.
    fn error_response(&self, response: ErrorResponse<'_>) -> ProviderError {
        let status = response.status;
        let message = serde_json::from_slice::<Value>(response.body)
            .ok()
            .and_then(|body| body.get("error").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_else(|| String::from_utf8_lossy(response.body).trim().to_string());
        let message = if message.is_empty() {
            format!("the Ollama server answered HTTP {status}")
        } else {
            message
        };
        let mut error = ProviderError::new(kind_for_status(status), message).with_status(status);
        if let Some(wait) = response.retry_after() {
            error = error.with_retry_after(wait);
        }
        error
    }
}
