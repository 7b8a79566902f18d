//! The Gemini wire: `streamGenerateContent?alt=sse` chunks (each `data:` line one
//! `GenerateContentResponse`) into patchbay events, as core's [`Wire`].
//!
//! | Wire | Events |
//! | --- | --- |
//! | the first chunk | `Started` (`responseId`, `modelVersion` or the model asked for, the request's warnings) |
//! | `text` parts | `TextDelta`s of one text block until another kind of part comes |
//! | `text` parts with `thought: true` | `ReasoningDelta`s of one reasoning block |
//! | `thoughtSignature` on a thought part | `ReasoningSignature` of that reasoning block |
//! | `thoughtSignature` on a text part (also an empty one) | `ReasoningSignature` of the open text block (core keeps it on the text); with no text block open, a block of its own (an empty thinking block that goes back as `{"text": "", "thoughtSignature"}`) |
//! | `functionCall` | `ToolCallStart`, one `ToolCallDelta` (the whole `args`), `ToolCall` with the part's signature; id the wire's, else `call_N` numbered on from the calls in the conversation |
//! | `functionCall` with `willContinue` (Vertex AI's streamed arguments), then parts with `partialArgs` | `ToolCallStart` at once; the pieces build the input by JSON path (string pieces appended); `ToolCallDelta` and `ToolCall` when a part without `willContinue` (the empty closer `{}`) comes, or any other part, the finish or the end |
//! | `executableCode`, then `codeExecutionResult`s | a provider-run `code_execution` `ToolCall` (`{language, code}`), then a `ToolResult` per result part (the output; an error unless `OUTCOME_OK`; `metadata.outcome` the raw outcome): code that prints and then fails has two |
//! | other parts (`inlineData`, `fileData`...) | `Opaque` with the part as sent |
//! | `groundingMetadata`, `urlContextMetadata`, `citationMetadata` | `Source`s of the last text block (see [`sources`]), and the grounding metadata itself as `Opaque` (`{"groundingMetadata": ..}`: its `searchEntryPoint` is what Google asks hosts to show) |
//! | `usageMetadata` (the last one wins: counts change between chunks and can go down) | one `Usage` before `Finish`: `input` = prompt - cached + tool-use prompt, `output` = candidates + thoughts, `cache_read`, `reasoning` |
//! | `finishReason` | `Finish` when the body ends (a trailing chunk may still carry usage): `STOP` is `Stop`, or `ToolUse` after host function calls; `MAX_TOKENS` is `Length`; `SAFETY`, `RECITATION`, `BLOCKLIST`, `PROHIBITED_CONTENT`, `SPII` and the `IMAGE_*` filters are `ContentFilter`; anything else (`MALFORMED_FUNCTION_CALL`, `UNEXPECTED_TOOL_CALL`, `LANGUAGE`, `OTHER`...) is `Other` with the raw value |
//! | a finish that is not `STOP` or `MAX_TOKENS` | first an `Opaque` `{"finishReason", "finishMessage", "safetyRatings"}`, so a host tells `SAFETY` from `RECITATION` and sees the ratings |
//! | `promptFeedback.blockReason` (no candidates) | `Opaque` `{"promptFeedback": ..}`, then `Finish` with `Refusal`: the prompt was refused, nothing was generated |
//! | `{"error": ..}` in the stream | a typed error ([`ApiError`](crate::ApiError) as its source) |
//! | the body ends without a finish reason or a blocked prompt | a `Protocol` error |
//!
//! Only candidate 0 is translated (patchbay never asks for more).

mod chunk;
mod fast;
mod path;
pub mod sources;

use std::collections::{HashSet, VecDeque};

use patchbay_core::kit::{CallIds, ErrorResponse, Framing, MetricsRecorder, Wire, frame_head};
use patchbay_core::tool::{ExecutedBy, ToolResult, ToolStatus};
use patchbay_core::{Event, FinishReason, Message, ProviderError, Usage, Warning};
use serde_json::{Value, json};

use self::chunk::{Candidate, Chunk, FunctionCall, Part};
#[doc(hidden)]
pub use self::fast::check as check_fast_read;
use self::path::Piece;
use self::sources::SourceIds;
use crate::{NAME, api_error};

/// The name of the provider-run tool for Gemini's code execution.
pub const CODE_EXECUTION: &str = "code_execution";

/// What block is open: consecutive parts of one kind join it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Text(usize),
    Thought(usize),
}

/// A call whose arguments are still streaming (`willContinue`).
#[derive(Debug)]
struct StreamingCall {
    id: String,
    name: String,
    args: Value,
    signature: Option<String>,
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
    next_index: usize,
    open: Option<Open>,
    last_text: Option<usize>,
    ids: CallIds,
    host_calls: usize,
    /// The id of the last `executableCode` call, which the `codeExecutionResult`s after it answer.
    code_call: Option<String>,
    streaming: Option<StreamingCall>,
    finish: Option<String>,
    finish_details: Option<Value>,
    blocked: Option<Value>,
    usage: Usage,
    grounding: Option<Value>,
    url_context: Option<Value>,
    citations: Vec<Value>,
    citations_seen: HashSet<String>,
}

impl Default for Translator {
    fn default() -> Self {
        Self::new("")
    }
}

impl Translator {
    /// A translator for an SSE body (`data:` lines); its metrics clock starts now. `model` names
    /// `Started` until a chunk reports its `modelVersion`.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            framing: Framing::DataLines,
            model: model.into(),
            warnings: Vec::new(),
            queue: VecDeque::new(),
            metrics: MetricsRecorder::start(),
            started: false,
            done: false,
            next_index: 0,
            open: None,
            last_text: None,
            ids: CallIds::default(),
            host_calls: 0,
            code_call: None,
            streaming: None,
            finish: None,
            finish_details: None,
            blocked: None,
            usage: Usage::default(),
            grounding: None,
            url_context: None,
            citations: Vec::new(),
            citations_seen: HashSet::new(),
        }
    }

    /// Read one JSON chunk per line (`*.chunks.txt` captures) instead of SSE.
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

    /// Translate one payload.
    fn payload(&mut self, data: &[u8]) -> Result<(), ProviderError> {
        let data = data.trim_ascii();
        if self.done || data.is_empty() {
            return Ok(());
        }
        let not_json = |error: &dyn std::fmt::Display| {
            Self::protocol(format!("a chunk is not valid JSON ({error}): {}", frame_head(data)))
        };
        // One UTF-8 check for the payload, then the text chunk without the parser (serde for
        // anything else, with no check per string).
        let text = std::str::from_utf8(data).map_err(|error| not_json(&error))?;
        let chunk: Chunk<'_> = match fast::chunk(text) {
            Some(chunk) => chunk,
            None => serde_json::from_str(text).map_err(|error| not_json(&error))?,
        };
        if let Some(error) = &chunk.error {
            return Err(api_error::from_error_object(error, None));
        }
        if !self.started {
            self.started = true;
            let model = chunk.model_version.as_deref().unwrap_or(&self.model).to_string();
            let event = Event::Started {
                response_id: chunk.response_id.as_deref().map(str::to_string),
                model,
                session_id: None,
                warnings: std::mem::take(&mut self.warnings),
            };
            self.emit(event);
        }
        if let Some(usage) = chunk.usage_metadata {
            self.usage = usage.usage();
        }
        if let Some(feedback) = chunk.prompt_feedback
            && feedback.get("blockReason").is_some()
        {
            self.blocked = Some(*feedback);
        }
        for candidate in chunk.candidates {
            if candidate.index == 0 {
                self.candidate(candidate)?;
            }
        }
        Ok(())
    }

    fn candidate(&mut self, candidate: Candidate<'_>) -> Result<(), ProviderError> {
        if let Some(content) = candidate.content {
            for part in content.parts {
                self.part(part)?;
            }
        }
        if let Some(metadata) = candidate.grounding_metadata {
            self.grounding = Some(*metadata);
        }
        if let Some(metadata) = candidate.url_context_metadata {
            self.url_context = Some(*metadata);
        }
        if let Some(metadata) = candidate.citation_metadata {
            let list = metadata.get("citations").or_else(|| metadata.get("citationSources"));
            // A chunk may repeat the citations of the chunks before it: each kept once, in
            // order (a set of their JSON text, so many citations cost linear time).
            for citation in list.and_then(Value::as_array).into_iter().flatten() {
                if self.citations_seen.insert(citation.to_string()) {
                    self.citations.push(citation.clone());
                }
            }
        }
        if let Some(reason) = candidate.finish_reason {
            self.close_streaming();
            let reason = reason.into_owned();
            if !matches!(reason.as_str(), "STOP" | "MAX_TOKENS") {
                let mut details = json!({ "finishReason": reason });
                if let Some(message) = candidate.finish_message {
                    details["finishMessage"] = json!(message);
                }
                if let Some(ratings) = candidate.safety_ratings {
                    details["safetyRatings"] = *ratings;
                }
                self.finish_details = Some(details);
            }
            self.finish = Some(reason);
        }
        Ok(())
    }

    fn part(&mut self, part: Part<'_>) -> Result<(), ProviderError> {
        let signature = part.thought_signature.map(|s| s.into_owned());
        if let Some(call) = part.function_call {
            return self.function_call(*call, signature);
        }
        self.close_streaming();
        if let Some(text) = part.text {
            let index = match (part.thought, self.open) {
                (true, Some(Open::Thought(index))) => index,
                (false, Some(Open::Text(index))) => index,
                // An empty text part only carries a signature: it joins no new block.
                (false, _) if text.is_empty() => {
                    if let Some(signature) = signature {
                        let index = self.new_index();
                        self.open = None;
                        self.emit(Event::ReasoningSignature { index, signature });
                    }
                    return Ok(());
                }
                (true, _) => {
                    let index = self.new_index();
                    self.open = Some(Open::Thought(index));
                    index
                }
                (false, _) => {
                    let index = self.new_index();
                    self.open = Some(Open::Text(index));
                    self.last_text = Some(index);
                    index
                }
            };
            if !text.is_empty() {
                let text = text.into_owned();
                self.emit(if part.thought {
                    Event::ReasoningDelta { index, text }
                } else {
                    Event::TextDelta { index, text }
                });
            }
            if let Some(signature) = signature {
                self.emit(Event::ReasoningSignature { index, signature });
            }
            return Ok(());
        }
        self.open = None;
        if let Some(code) = part.executable_code {
            let id = self.ids.id(None);
            self.next_index += 1;
            self.code_call = Some(id.clone());
            self.emit(Event::ToolCallStart {
                id: id.clone(),
                name: CODE_EXECUTION.to_string(),
            });
            self.emit(Event::ToolCall {
                id,
                name: CODE_EXECUTION.to_string(),
                input: *code,
                executed_by: ExecutedBy::Provider,
                signature,
            });
        } else if let Some(result) = part.code_execution_result.map(|result| *result) {
            // Code that prints and then fails has one result per outcome: each answers the
            // same call, in order (they go back as they came).
            let Some(id) = self.code_call.clone() else {
                return Err(Self::protocol(
                    "a `codeExecutionResult` without the `executableCode` it answers",
                ));
            };
            self.next_index += 1;
            let outcome = result.outcome.unwrap_or_default();
            let status = if outcome == "OUTCOME_OK" {
                ToolStatus::Completed
            } else {
                ToolStatus::Failed
            };
            let result = ToolResult::with_status(status, result.output.unwrap_or_default())
                .with_metadata(json!({ "outcome": outcome }));
            self.emit(Event::ToolResult {
                id,
                name: CODE_EXECUTION.to_string(),
                result,
            });
        } else {
            let mut data = serde_json::Map::new();
            let fields = [
                ("inlineData", part.inline_data),
                ("fileData", part.file_data),
                ("functionResponse", part.function_response),
                ("videoMetadata", part.video_metadata),
                ("partMetadata", part.part_metadata),
            ];
            for (key, value) in fields {
                if let Some(value) = value {
                    data.insert(key.into(), *value);
                }
            }
            if let Some(signature) = signature {
                data.insert("thoughtSignature".into(), json!(signature));
            }
            if !data.is_empty() {
                let index = self.new_index();
                self.emit(Event::Opaque {
                    index,
                    provider: NAME.to_string(),
                    data: Value::Object(data),
                });
            }
        }
        Ok(())
    }

    /// A `functionCall` part: a whole call, the start of a streamed one, a piece of its
    /// arguments, or its closer.
    fn function_call(&mut self, call: FunctionCall, signature: Option<String>) -> Result<(), ProviderError> {
        self.open = None;
        let Some(name) = call.name else {
            let Some(streaming) = self.streaming.as_mut() else {
                if call.partial_args.is_empty() && call.args.is_none() {
                    return Ok(()); // A closer with nothing open (`{}` after a whole call).
                }
                return Err(Self::protocol(
                    "function call arguments without the call they belong to",
                ));
            };
            if streaming.signature.is_none() {
                streaming.signature = signature;
            }
            if let (Some(Value::Object(args)), Value::Object(open)) = (call.args, &mut streaming.args) {
                open.extend(args);
            }
            for piece in call.partial_args {
                let value = match (
                    piece.string_value,
                    piece.number_value,
                    piece.bool_value,
                    piece.null_value,
                ) {
                    (Some(text), ..) => Piece::Text(text),
                    (None, Some(number), ..) => Piece::Whole(Value::Number(number)),
                    (None, None, Some(flag), _) => Piece::Whole(Value::Bool(flag)),
                    _ => Piece::Whole(Value::Null),
                };
                path::put(&mut streaming.args, &piece.json_path, value).map_err(Self::protocol)?;
            }
            if !call.will_continue {
                self.close_streaming();
            }
            return Ok(());
        };
        self.close_streaming();
        let id = self.ids.id(call.id.as_deref());
        self.host_calls += 1;
        self.next_index += 1;
        self.emit(Event::ToolCallStart {
            id: id.clone(),
            name: name.clone(),
        });
        let input = call.args.unwrap_or_else(|| json!({}));
        if call.will_continue {
            self.streaming = Some(StreamingCall {
                id,
                name,
                args: input,
                signature,
            });
            return Ok(());
        }
        self.finish_call(id, name, input, signature);
        Ok(())
    }

    /// A call's input is complete: its one `ToolCallDelta` (the whole input) and `ToolCall`.
    fn finish_call(&mut self, id: String, name: String, input: Value, signature: Option<String>) {
        self.emit(Event::ToolCallDelta {
            id: id.clone(),
            partial_json: input.to_string(),
        });
        self.emit(Event::ToolCall {
            id,
            name,
            input,
            executed_by: ExecutedBy::Host,
            signature,
        });
    }

    /// End the call whose arguments were streaming, if any (its closer, another part, the
    /// finish or the end of the body).
    fn close_streaming(&mut self) {
        if let Some(call) = self.streaming.take() {
            self.finish_call(call.id, call.name, call.args, call.signature);
        }
    }

    /// The end of the body: sources, the finish details, usage and `Finish`, or a `Protocol`
    /// error when the response never finished.
    fn close(&mut self) -> Result<(), ProviderError> {
        self.done = true;
        self.close_streaming();
        let reason = match (&self.finish, &self.blocked) {
            (Some(raw), _) => map_finish(raw, self.host_calls > 0),
            (None, Some(_)) => FinishReason::Refusal,
            (None, None) if !self.started => return Err(Self::protocol("the stream ended before any chunk")),
            (None, None) => return Err(Self::protocol("the stream ended before a `finishReason`")),
        };
        let index = self.last_text.unwrap_or(self.next_index);
        let mut found = Vec::new();
        let mut ids = SourceIds::default();
        if let Some(metadata) = &self.grounding {
            sources::grounding(metadata, index, &mut ids, &mut found);
        }
        if let Some(metadata) = &self.url_context {
            sources::url_context(metadata, index, &mut ids, &mut found);
        }
        if !self.citations.is_empty() {
            let metadata = json!({ "citations": self.citations });
            sources::citations(&metadata, index, &mut ids, &mut found);
        }
        for source in found {
            self.emit(Event::Source(source));
        }
        if let Some(metadata) = self.grounding.take() {
            let index = self.new_index();
            self.emit(Event::Opaque {
                index,
                provider: NAME.to_string(),
                data: json!({ "groundingMetadata": metadata }),
            });
        }
        let details = match self.blocked.take() {
            Some(feedback) => Some(json!({ "promptFeedback": feedback })),
            None => self.finish_details.take(),
        };
        if let Some(data) = details {
            let index = self.new_index();
            self.emit(Event::Opaque {
                index,
                provider: NAME.to_string(),
                data,
            });
        }
        let usage = self.usage;
        if !usage.is_empty() {
            self.emit(Event::Usage(usage));
        }
        let metrics = self.metrics.finish();
        self.queue.push_back(Event::Finish { reason, usage, metrics });
        Ok(())
    }

    /// Whether `Started` was produced.
    pub fn has_started(&self) -> bool {
        self.started
    }
}

/// A raw `finishReason` as patchbay's (module docs).
pub fn map_finish(raw: &str, host_calls: bool) -> FinishReason {
    match raw {
        "STOP" if host_calls => FinishReason::ToolUse,
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        "SAFETY"
        | "RECITATION"
        | "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT"
        | "IMAGE_RECITATION" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_string()),
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
        self.close()
    }

    fn next_event(&mut self) -> Option<Event> {
        self.queue.pop_front()
    }

    /// Whether the stream ended (`Finish` or an error was produced). A finish reason does not
    /// end it: usage may follow in a later chunk, so the body is read to its end.
    fn is_done(&self) -> bool {
        self.done
    }

    /// A `generateContent` JSON answer (one `GenerateContentResponse`, or the array the
    /// non-SSE stream sends): read as a stream of those chunks.
    fn whole_body(&mut self, body: &[u8]) -> Result<(), ProviderError> {
        if body.trim_ascii_start().first() == Some(&b'[') {
            let chunks: Vec<Value> = serde_json::from_slice(body)
                .map_err(|error| Self::protocol(format!("the JSON answer is not a list of chunks ({error})")))?;
            for chunk in chunks {
                self.payload(chunk.to_string().as_bytes())?;
            }
        } else {
            self.payload(body)?;
        }
        self.close()
    }

    fn error_response(&self, response: ErrorResponse<'_>) -> ProviderError {
        api_error::from_http(response)
    }
}

#[cfg(test)]
mod tests;
