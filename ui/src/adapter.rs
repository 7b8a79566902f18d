//! [`UiStream`]: patchbay events in, UI message chunks out. A pure state machine: no I/O, no
//! clock; [`crate::sse`] wraps it around an event stream.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use patchbay_core::context::ApprovalRequest;
use patchbay_core::summary::RunSummary;
use patchbay_core::tool::ToolStatus;
use patchbay_core::{ErrorKind, Event, ExecutedBy, ProviderError, ToolResult};
use serde_json::{Map, Value, json};

use crate::ids::generate_message_id;
use crate::parts::{DataChunk, MessageMetadata, PROVIDER_METADATA_KEY, UiChunk, UiFinishReason};
use crate::request::{UiMessage, UiPart};
use crate::sources::source_chunk;

/// The `errorText` of a tool call that was cancelled (a `ToolResult` of status `Aborted`).
pub const ABORTED_TOOL_TEXT: &str = "aborted";

type IdFn = Arc<dyn Fn() -> String + Send + Sync>;
type ErrorTextFn = Arc<dyn Fn(&ProviderError) -> String + Send + Sync>;

/// Turns one run's events into the chunks of one UI message; see the crate docs for the
/// mapping table.
///
/// ```
/// use patchbay_core::{Event, FinishReason, Metrics, Usage};
/// use patchbay_ui::{UiChunk, UiStream};
///
/// let mut ui = UiStream::new().with_message_id("msg-1");
/// let mut chunks = ui.push(&Event::Started {
///     response_id: None, model: "m".into(), session_id: None, warnings: vec![],
/// });
/// chunks.extend(ui.push(&Event::TextDelta { index: 0, text: "Hi".into() }));
/// chunks.extend(ui.push(&Event::Finish {
///     reason: FinishReason::Stop, usage: Usage::default(), metrics: Metrics::default(),
/// }));
/// assert!(matches!(&chunks[0], UiChunk::Start { message_id: Some(id), .. } if id == "msg-1"));
/// assert!(matches!(chunks.last(), Some(UiChunk::Finish { .. })));
/// ```
#[derive(Clone)]
pub struct UiStream {
    message_id: Option<String>,
    id_fn: IdFn,
    error_text: ErrorTextFn,
    dynamic_tools: bool,
    continues: bool,
    state: State,
}

/// What the adapter remembers while a run streams.
#[derive(Debug, Clone, Default)]
struct State {
    started: bool,
    ended: bool,
    /// Text and reasoning parts opened so far (their ids count up).
    parts: u64,
    /// The one open text or reasoning part.
    open: Option<Open>,
    /// Tool calls seen, by id.
    calls: HashMap<String, Call>,
    summary: RunSummary,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Reasoning,
}

#[derive(Debug, Clone)]
struct Open {
    kind: Kind,
    index: usize,
    id: String,
    metadata: Map<String, Value>,
}

#[derive(Debug, Clone)]
struct Call {
    provider: bool,
    /// Whether `tool-input-available` went out.
    available: bool,
}

impl Default for UiStream {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for UiStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UiStream")
            .field("message_id", &self.message_id)
            .field("dynamic_tools", &self.dynamic_tools)
            .field("continues", &self.continues)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl UiStream {
    /// An adapter with a generated message id ([`generate_message_id`]), static tool parts and
    /// errors shown by their `Display`.
    pub fn new() -> Self {
        Self {
            message_id: None,
            id_fn: Arc::new(generate_message_id),
            error_text: Arc::new(|error: &ProviderError| error.to_string()),
            dynamic_tools: false,
            continues: false,
            state: State::default(),
        }
    }

    /// Continue `message` on the client (a run resumed after approvals, whose request ends
    /// with the assistant message: [`ChatRequest::last_assistant`](crate::ChatRequest::last_assistant)):
    /// its id, no `start-step` at `start` (the run goes on with the step it paused in), and its
    /// tool calls known, so that a call the resumed run announces again writes nothing and its
    /// output lands on the part the person answered.
    pub fn continuing(mut self, message: &UiMessage) -> Self {
        self.message_id = Some(message.id.clone());
        self.continues = true;
        for part in &message.parts {
            if let UiPart::Tool(tool) = part {
                let call = Call {
                    provider: tool.provider_executed == Some(true),
                    available: true,
                };
                self.state.calls.insert(tool.tool_call_id.clone(), call);
            }
        }
        self
    }

    /// Use this message id.
    pub fn with_message_id(mut self, id: impl Into<String>) -> Self {
        self.message_id = Some(id.into());
        self
    }

    /// Generate message ids with `generate` (called once, at `start`).
    pub fn with_id_generator(mut self, generate: impl Fn() -> String + Send + Sync + 'static) -> Self {
        self.id_fn = Arc::new(generate);
        self
    }

    /// What the person reads for an error (default: the error's `Display`, which never holds a
    /// key; a host that shows no details returns a fixed text).
    pub fn with_error_text(mut self, text: impl Fn(&ProviderError) -> String + Send + Sync + 'static) -> Self {
        self.error_text = Arc::new(text);
        self
    }

    /// Write tool parts as `dynamic-tool` parts (`dynamic: true`) instead of `tool-{name}`.
    pub fn with_dynamic_tools(mut self, dynamic: bool) -> Self {
        self.dynamic_tools = dynamic;
        self
    }

    /// The run summary observed so far.
    pub fn summary(&self) -> &RunSummary {
        &self.state.summary
    }

    /// Whether the message ended (`finish`, `error` or `abort` went out).
    pub fn is_ended(&self) -> bool {
        self.state.ended
    }

    /// The chunks for one event. Nothing after the message ended.
    pub fn push(&mut self, event: &Event) -> Vec<UiChunk> {
        let mut out = Vec::new();
        self.state.summary.observe(event);
        if self.state.ended {
            return out;
        }
        if let Event::Started { .. } = event {
            self.started(event, &mut out);
            return out;
        }
        self.ensure_started(&mut out);
        match event {
            Event::Started { .. } => {}
            Event::McpConnected { servers, failed } => {
                let data = json!({ "servers": servers, "failed": failed });
                out.push(UiChunk::Data(DataChunk::new("mcp", data).transient()));
            }
            Event::TextDelta { index, text } => {
                let id = self.open(Kind::Text, *index, &mut out);
                out.push(UiChunk::TextDelta {
                    id,
                    delta: text.clone(),
                });
            }
            Event::ReasoningDelta { index, text } => {
                let id = self.open(Kind::Reasoning, *index, &mut out);
                out.push(UiChunk::ReasoningDelta {
                    id,
                    delta: text.clone(),
                });
            }
            Event::ReasoningSignature { index, signature } => self.signature(*index, signature, &mut out),
            Event::RedactedReasoning { data, .. } => {
                self.close(&mut out);
                let id = self.next_part_id(Kind::Reasoning);
                let metadata = patchbay_metadata([("redactedData", Value::String(data.clone()))]);
                out.push(UiChunk::ReasoningStart {
                    id: id.clone(),
                    provider_metadata: Some(metadata),
                });
                out.push(UiChunk::ReasoningEnd {
                    id,
                    provider_metadata: None,
                });
            }
            Event::ToolCallStart { id, name } => {
                if self.state.calls.get(id).is_some_and(|call| call.available) {
                    return out;
                }
                self.close(&mut out);
                self.input_start(id, name, false, &mut out);
            }
            Event::ToolCallDelta { id, partial_json } => {
                if self.state.calls.get(id).is_some_and(|call| !call.available) {
                    out.push(UiChunk::ToolInputDelta {
                        tool_call_id: id.clone(),
                        input_text_delta: partial_json.clone(),
                    });
                }
            }
            Event::ToolCall {
                id,
                name,
                input,
                executed_by,
                signature,
            } => {
                if self.state.calls.get(id).is_some_and(|call| call.available) {
                    // Announced again (a resumed run): the client has the whole call.
                    return out;
                }
                self.close(&mut out);
                let provider = *executed_by == ExecutedBy::Provider;
                let metadata = signature
                    .as_ref()
                    .map(|signature| patchbay_metadata([("signature", Value::String(signature.clone()))]));
                self.input_available(id, name, input, provider, metadata, &mut out);
            }
            Event::ToolResult { id, result, .. } => {
                self.close(&mut out);
                self.tool_result(id, result, &mut out);
            }
            Event::Opaque { index, provider, data } => {
                self.close(&mut out);
                let data = json!({ "index": index, "provider": provider, "data": data });
                out.push(UiChunk::data("opaque", data));
            }
            Event::SubagentMessage {
                parent_tool_use_id,
                subagent,
                message,
            } => {
                let mut data = json!({ "parentToolCallId": parent_tool_use_id, "message": message });
                if let (Some(subagent), Value::Object(map)) = (subagent, &mut data) {
                    map.insert("subagent".into(), Value::String(subagent.clone()));
                }
                out.push(UiChunk::data("subagent", data));
            }
            Event::ToolProgress {
                id,
                message,
                progress,
                total,
            } => {
                let data = json!({ "toolCallId": id, "message": message, "progress": progress, "total": total });
                out.push(UiChunk::Data(
                    DataChunk::new("progress", data)
                        .with_id(format!("progress-{id}"))
                        .transient(),
                ));
            }
            Event::Log {
                source,
                level,
                logger,
                data,
            } => {
                let data = json!({ "source": source, "level": level, "logger": logger, "data": data });
                out.push(UiChunk::Data(DataChunk::new("log", data).transient()));
            }
            Event::ApprovalRequested { calls } => {
                self.close(&mut out);
                for call in calls {
                    self.approval(call, &mut out);
                }
            }
            Event::Source(source) => out.push(source_chunk(source)),
            Event::Usage(usage) => {
                let metadata = MessageMetadata {
                    usage: Some(*usage),
                    ..MessageMetadata::default()
                };
                out.push(UiChunk::MessageMetadata {
                    message_metadata: metadata.to_value(),
                });
            }
            Event::StepFinished { .. } => {
                self.close(&mut out);
                out.push(UiChunk::FinishStep);
                out.push(UiChunk::StartStep);
            }
            Event::Finish { reason, usage, metrics } => {
                self.close(&mut out);
                out.push(UiChunk::FinishStep);
                let metadata = MessageMetadata {
                    usage: Some(*usage),
                    metrics: Some(*metrics),
                    finish_reason: Some(reason.clone()),
                    summary: Some(self.state.summary.clone()),
                    ..MessageMetadata::default()
                };
                out.push(UiChunk::MessageMetadata {
                    message_metadata: metadata.to_value(),
                });
                out.push(UiChunk::Finish {
                    finish_reason: Some(UiFinishReason::from(reason)),
                    message_metadata: None,
                });
                self.state.ended = true;
            }
        }
        out
    }

    /// The chunks for the error that ended the stream: open parts closed, then `abort` for a
    /// cancellation, `error` otherwise. Nothing after the message ended.
    pub fn error(&mut self, error: &ProviderError) -> Vec<UiChunk> {
        let mut out = Vec::new();
        if self.state.ended {
            return out;
        }
        self.ensure_started(&mut out);
        self.close(&mut out);
        let text = (self.error_text)(error);
        out.push(if error.kind() == ErrorKind::Cancelled {
            UiChunk::Abort { reason: Some(text) }
        } else {
            UiChunk::Error { error_text: text }
        });
        self.state.ended = true;
        out
    }

    /// The chunks for a stream that ended without `Finish` or an error: open parts closed,
    /// `finish-step` and `finish` with reason `interrupted`. Nothing when the message ended or
    /// never started.
    pub fn end(&mut self) -> Vec<UiChunk> {
        let mut out = Vec::new();
        if self.state.ended || !self.state.started {
            self.state.ended = true;
            return out;
        }
        self.close(&mut out);
        out.push(UiChunk::FinishStep);
        out.push(UiChunk::Finish {
            finish_reason: Some(UiFinishReason::Interrupted),
            message_metadata: None,
        });
        self.state.ended = true;
        out
    }

    fn started(&mut self, event: &Event, out: &mut Vec<UiChunk>) {
        let Event::Started {
            response_id,
            model,
            session_id,
            warnings,
        } = event
        else {
            return;
        };
        let metadata = MessageMetadata {
            model: Some(model.clone()),
            response_id: response_id.clone(),
            session_id: session_id.clone(),
            warnings: warnings.clone(),
            ..MessageMetadata::default()
        };
        if self.state.started {
            out.push(UiChunk::MessageMetadata {
                message_metadata: metadata.to_value(),
            });
            return;
        }
        self.begin(Some(metadata), out);
    }

    fn ensure_started(&mut self, out: &mut Vec<UiChunk>) {
        if !self.state.started {
            self.begin(None, out);
        }
    }

    fn begin(&mut self, metadata: Option<MessageMetadata>, out: &mut Vec<UiChunk>) {
        let id = self.message_id.clone().unwrap_or_else(|| (self.id_fn)());
        self.state.started = true;
        out.push(UiChunk::Start {
            message_id: Some(id),
            message_metadata: metadata.map(|m| m.to_value()),
        });
        if !self.continues {
            out.push(UiChunk::StartStep);
        }
    }

    fn next_part_id(&mut self, kind: Kind) -> String {
        let n = self.state.parts;
        self.state.parts += 1;
        match kind {
            Kind::Text => format!("text-{n}"),
            Kind::Reasoning => format!("reasoning-{n}"),
        }
    }

    /// The id of the open part of this kind and block, opening it (and closing another) first.
    fn open(&mut self, kind: Kind, index: usize, out: &mut Vec<UiChunk>) -> String {
        if let Some(open) = &self.state.open
            && open.kind == kind
            && open.index == index
        {
            return open.id.clone();
        }
        self.close(out);
        let id = self.next_part_id(kind);
        out.push(match kind {
            Kind::Text => UiChunk::TextStart {
                id: id.clone(),
                provider_metadata: None,
            },
            Kind::Reasoning => UiChunk::ReasoningStart {
                id: id.clone(),
                provider_metadata: None,
            },
        });
        self.state.open = Some(Open {
            kind,
            index,
            id: id.clone(),
            metadata: Map::new(),
        });
        id
    }

    /// Close the open part, if any, with the provider metadata gathered for it.
    fn close(&mut self, out: &mut Vec<UiChunk>) {
        let Some(open) = self.state.open.take() else {
            return;
        };
        let provider_metadata =
            (!open.metadata.is_empty()).then(|| json!({ PROVIDER_METADATA_KEY: Value::Object(open.metadata) }));
        out.push(match open.kind {
            Kind::Text => UiChunk::TextEnd {
                id: open.id,
                provider_metadata,
            },
            Kind::Reasoning => UiChunk::ReasoningEnd {
                id: open.id,
                provider_metadata,
            },
        });
    }

    /// A signature belongs to the open text part of its block (Gemini signs text), else to the
    /// reasoning part of its block (opened empty when none is).
    fn signature(&mut self, index: usize, signature: &str, out: &mut Vec<UiChunk>) {
        let text_open = self
            .state
            .open
            .as_ref()
            .is_some_and(|open| open.kind == Kind::Text && open.index == index);
        if !text_open {
            self.open(Kind::Reasoning, index, out);
        }
        if let Some(open) = &mut self.state.open {
            open.metadata
                .insert("signature".into(), Value::String(signature.to_owned()));
        }
    }

    fn input_start(&mut self, id: &str, name: &str, provider: bool, out: &mut Vec<UiChunk>) {
        self.state.calls.insert(
            id.to_owned(),
            Call {
                provider,
                available: false,
            },
        );
        out.push(UiChunk::ToolInputStart {
            tool_call_id: id.to_owned(),
            tool_name: name.to_owned(),
            provider_executed: provider.then_some(true),
            dynamic: self.dynamic_tools.then_some(true),
        });
    }

    fn input_available(
        &mut self,
        id: &str,
        name: &str,
        input: &Value,
        provider: bool,
        metadata: Option<Value>,
        out: &mut Vec<UiChunk>,
    ) {
        if !self.state.calls.contains_key(id) {
            self.input_start(id, name, provider, out);
        }
        if let Some(call) = self.state.calls.get_mut(id) {
            call.provider = provider;
            call.available = true;
        }
        out.push(UiChunk::ToolInputAvailable {
            tool_call_id: id.to_owned(),
            tool_name: name.to_owned(),
            input: input.clone(),
            provider_executed: provider.then_some(true),
            provider_metadata: metadata,
            dynamic: self.dynamic_tools.then_some(true),
        });
    }

    fn approval(&mut self, call: &ApprovalRequest, out: &mut Vec<UiChunk>) {
        let id = &call.tool_use_id;
        if !self.state.calls.get(id).is_some_and(|known| known.available) {
            self.input_available(id, &call.tool_name, &call.input, false, None, out);
        }
        out.push(UiChunk::ToolApprovalRequest {
            approval_id: id.clone(),
            tool_call_id: id.clone(),
        });
    }

    /// The output chunk of a call. A call this stream has not shown is answered as it is: its
    /// part is in the message the stream continues (a run resumed after approvals).
    fn tool_result(&mut self, id: &str, result: &ToolResult, out: &mut Vec<UiChunk>) {
        let provider = self.state.calls.get(id).is_some_and(|call| call.provider);
        let provider_executed = provider.then_some(true);
        let tool_call_id = id.to_owned();
        out.push(match result.status {
            ToolStatus::Completed => UiChunk::ToolOutputAvailable {
                tool_call_id,
                output: serde_json::to_value(result).unwrap_or(Value::Null),
                provider_executed,
            },
            ToolStatus::Failed => UiChunk::ToolOutputError {
                tool_call_id,
                error_text: failure_text(result),
                provider_executed,
            },
            ToolStatus::Aborted => UiChunk::ToolOutputError {
                tool_call_id,
                error_text: ABORTED_TOOL_TEXT.to_owned(),
                provider_executed,
            },
            ToolStatus::Denied => UiChunk::ToolOutputDenied { tool_call_id },
        });
    }
}

/// `{"patchbay": {key: value...}}`, a part's `providerMetadata`.
fn patchbay_metadata<const N: usize>(entries: [(&str, Value); N]) -> Value {
    let map: Map<String, Value> = entries.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    json!({ PROVIDER_METADATA_KEY: Value::Object(map) })
}

/// The text of a failed result (its text pieces), or a fixed text when it has none.
fn failure_text(result: &ToolResult) -> String {
    let text = result.text_content();
    if text.is_empty() {
        "the tool failed".to_owned()
    } else {
        text
    }
}
