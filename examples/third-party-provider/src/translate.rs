//! [`OllamaTranslator`]: the pure state machine from `/api/chat` JSON lines to patchbay events.
//!
//! One JSON object per line. A line with `message.thinking` gives a `ReasoningDelta`, with
//! `message.content` a `TextDelta`, with `message.tool_calls` (whole calls, no ids) a
//! `ToolCallStart`, one `ToolCallDelta` with the arguments and the `ToolCall` per call. The line
//! with `"done": true` gives `Usage` and `Finish`; a line with `"error"` ends the stream with a
//! typed error. A body that ends before its `done` line is a `Protocol` error.

use std::collections::VecDeque;

use patchbay_core::kit::{Framer, Framing, MetricsRecorder, token_count};
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

/// The `/api/chat` stream translator: bytes cut anywhere in, events out, no I/O. Drive it with
/// `patchbay_core::kit::Driver`, or feed it a recorded body in a test.
///
/// ```
/// use patchbay_core::kit::StreamTranslator;
/// use patchbay_ollama::OllamaTranslator;
/// let mut translator = OllamaTranslator::new("llama3.2", Vec::new());
/// translator.feed(b"{\"message\":{\"role\":\"assistant\",\"content\":\"Hi\"},\"done\":false}\n").unwrap();
/// translator.feed(b"{\"done\":true,\"done_reason\":\"stop\",\"eval_count\":1}\n").unwrap();
/// translator.finish().unwrap();
/// let events: Vec<_> = std::iter::from_fn(|| translator.next_event()).collect();
/// assert_eq!(events.len(), 4); // Started, TextDelta, Usage, Finish
/// ```
#[derive(Debug)]
pub struct OllamaTranslator {
    framer: Framer,
    queue: VecDeque<Result<Event, ProviderError>>,
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
            framer: Framer::new(Framing::Lines),
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

    /// Cap one line at `max` bytes (default 64 MiB): a longer line is a `Protocol` error naming
    /// `Limit::LineLength`.
    pub fn with_max_line_bytes(mut self, max: usize) -> Self {
        self.framer = Framer::new(Framing::Lines).with_max_bytes(max);
        self
    }

    /// Time the `Finish` metrics from `metrics` (started when the call began) instead of now.
    pub fn with_metrics(mut self, metrics: MetricsRecorder) -> Self {
        // `Started` was counted by the recorder made in `new`; count it again on this one.
        if let Some(Ok(started)) = self.queue.front() {
            let mut metrics = metrics;
            metrics.observe(started);
            self.metrics = metrics;
        }
        self
    }

    fn emit(&mut self, event: Event) {
        self.metrics.observe(&event);
        self.queue.push_back(Ok(event));
    }

    fn fail(&mut self, error: ProviderError) {
        self.failed = true;
        self.queue.push_back(Err(error.with_provider(NAME)));
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
        self.queue.push_back(Ok(Event::Finish { reason, usage, metrics }));
        self.done = true;
    }

    /// Translate every complete line fed so far; stop at the first error or the `done` line.
    fn drain(&mut self) -> Result<(), ProviderError> {
        while !self.done {
            let Some(line) = self.framer.next_frame()?.map(parse).transpose()? else {
                return Ok(());
            };
            self.line(line)?;
        }
        Ok(())
    }
}

/// One line read as an `/api/chat` object.
fn parse(bytes: &[u8]) -> Result<Line, ProviderError> {
    serde_json::from_slice(bytes)
        .map_err(|e| ProviderError::protocol("a line of the stream is not a valid /api/chat object").with_source(e))
}

impl patchbay_core::kit::StreamTranslator for OllamaTranslator {
    fn feed(&mut self, bytes: &[u8]) -> Result<(), ProviderError> {
        if self.done || self.failed {
            return Ok(());
        }
        let fed = self.framer.feed(bytes).and_then(|()| self.drain());
        fed.or_else(|error| {
            self.fail(error);
            Ok(())
        })
    }

    fn finish(&mut self) -> Result<(), ProviderError> {
        if self.done || self.failed {
            return Ok(());
        }
        let ended = (|| {
            while let Some(line) = self.framer.end()?.map(parse).transpose()? {
                self.line(line)?;
                if self.done {
                    return Ok(());
                }
            }
            Err(ProviderError::protocol(
                "the stream ended before its last line (`\"done\": true`): the response is truncated",
            ))
        })();
        if let Err(error) = ended {
            self.fail(error);
        }
        Ok(())
    }

    fn next_event(&mut self) -> Option<Result<Event, ProviderError>> {
        self.queue.pop_front()
    }

    fn is_done(&self) -> bool {
        self.done || self.failed
    }
}
