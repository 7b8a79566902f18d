//! The chunks of the UI message stream (the AI SDK's `uiMessageChunkSchema`, `ai` 7.0.173), as
//! typed values, and the message metadata this crate writes into them.
//!
//! Field names are the wire's (camelCase); an optional field is left out when it is `None`,
//! never written as `null` (the schema's `optional` refuses `null`).

use patchbay_core::summary::RunSummary;
use patchbay_core::{FinishReason, Metrics, Usage, Warning};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The key of this crate's entries in a part's `providerMetadata` (`{"patchbay": {...}}`):
/// signatures, redacted reasoning, a source's details.
pub const PROVIDER_METADATA_KEY: &str = "patchbay";

/// One chunk of the UI message stream: one `data: {json}` frame of the SSE body.
///
/// Only the chunk types patchbay can produce are here (not `file`, `custom`,
/// `tool-input-error`, `tool-approval-response`, `reset-step`...). Unknown fields of a chunk
/// read back are ignored, as the schema's loose objects do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", rename_all_fields = "camelCase")]
#[non_exhaustive]
pub enum UiChunk {
    /// The message begins: its id and first metadata.
    Start {
        /// The id of the assistant message the client builds.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
        /// Metadata merged into the message's `metadata` (see [`MessageMetadata`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_metadata: Option<Value>,
    },
    /// A step (one model call) begins; the client adds a `step-start` part.
    StartStep,
    /// A step ends.
    FinishStep,
    /// The message is complete.
    Finish {
        /// Why it ended.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        finish_reason: Option<UiFinishReason>,
        /// Metadata merged into the message's `metadata`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_metadata: Option<Value>,
    },
    /// The run was cancelled.
    Abort {
        /// Why, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The run failed; the client's `onError` gets the text.
    Error {
        /// What the person may read.
        error_text: String,
    },
    /// Metadata merged into the message's `metadata` (deep merge on the client).
    MessageMetadata {
        /// The metadata (see [`MessageMetadata`]).
        message_metadata: Value,
    },
    /// A text part begins.
    TextStart {
        /// The part's id within the message.
        id: String,
        /// Provider metadata kept on the part (an object of objects).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<Value>,
    },
    /// Text appended to an open text part.
    TextDelta {
        /// The part's id.
        id: String,
        /// The new text.
        delta: String,
    },
    /// A text part is complete.
    TextEnd {
        /// The part's id.
        id: String,
        /// Provider metadata kept on the part (a text block's signature).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<Value>,
    },
    /// A reasoning part begins.
    ReasoningStart {
        /// The part's id within the message.
        id: String,
        /// Provider metadata kept on the part (redacted reasoning's data).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<Value>,
    },
    /// Reasoning appended to an open reasoning part.
    ReasoningDelta {
        /// The part's id.
        id: String,
        /// The new reasoning text.
        delta: String,
    },
    /// A reasoning part is complete.
    ReasoningEnd {
        /// The part's id.
        id: String,
        /// Provider metadata kept on the part (the reasoning's signature).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<Value>,
    },
    /// A tool call begins: the client adds a tool part in state `input-streaming`.
    ToolInputStart {
        /// The call id.
        tool_call_id: String,
        /// The tool's name (the part's type is `tool-{name}` unless `dynamic`).
        tool_name: String,
        /// Whether the provider runs the call (a server tool, an agent runtime's own tool).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_executed: Option<bool>,
        /// Whether the part is a `dynamic-tool` part (a tool the client has no type for).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dynamic: Option<bool>,
    },
    /// A fragment of a tool call's JSON input.
    ToolInputDelta {
        /// The call id.
        tool_call_id: String,
        /// The fragment (not valid JSON on its own).
        input_text_delta: String,
    },
    /// A tool call's input is complete: part state `input-available`.
    ToolInputAvailable {
        /// The call id.
        tool_call_id: String,
        /// The tool's name.
        tool_name: String,
        /// The complete input.
        input: Value,
        /// Whether the provider runs the call.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_executed: Option<bool>,
        /// Provider metadata kept as the part's `callProviderMetadata` (the call's signature).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<Value>,
        /// Whether the part is a `dynamic-tool` part.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dynamic: Option<bool>,
    },
    /// A call waits for a person's decision: part state `approval-requested`.
    ToolApprovalRequest {
        /// The approval's id (this crate uses the call id).
        approval_id: String,
        /// The call id.
        tool_call_id: String,
    },
    /// A call's output: part state `output-available`.
    ToolOutputAvailable {
        /// The call id.
        tool_call_id: String,
        /// The output (this crate writes the whole `ToolResult`; see the crate docs).
        output: Value,
        /// Whether the provider ran the call.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_executed: Option<bool>,
    },
    /// A call failed: part state `output-error`.
    ToolOutputError {
        /// The call id.
        tool_call_id: String,
        /// Why.
        error_text: String,
        /// Whether the provider ran the call.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_executed: Option<bool>,
    },
    /// A call was denied: part state `output-denied`.
    ToolOutputDenied {
        /// The call id.
        tool_call_id: String,
    },
    /// A web page the answer used.
    SourceUrl {
        /// The source's id.
        source_id: String,
        /// Its URL.
        url: String,
        /// Its title, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// Provider metadata kept on the part.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<Value>,
    },
    /// A document (or file, or search result) the answer used.
    SourceDocument {
        /// The source's id.
        source_id: String,
        /// Its media type.
        media_type: String,
        /// Its title.
        title: String,
        /// Its file name, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        filename: Option<String>,
        /// Provider metadata kept on the part.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<Value>,
    },
    /// A `data-{name}` part: a host's own typed data.
    #[serde(untagged)]
    Data(DataChunk),
}

impl UiChunk {
    /// A `data-{name}` chunk kept in the message.
    pub fn data(name: impl Into<String>, data: Value) -> Self {
        Self::Data(DataChunk::new(name, data))
    }
}

/// A `data-{name}` chunk: `{"type": "data-{name}", "id"?, "data", "transient"?}`.
///
/// A transient one reaches the client's `onData` only; any other becomes a part of the message
/// (replacing the part of the same type and id, when it has an id).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawData<bool>", into = "RawData<bool>")]
pub struct DataChunk {
    /// The name after `data-`.
    pub name: String,
    /// The part's id, to update it later.
    pub id: Option<String>,
    /// The data.
    pub data: Value,
    /// Whether it stays out of the message.
    pub transient: bool,
}

impl DataChunk {
    /// A data chunk kept in the message, without an id.
    pub fn new(name: impl Into<String>, data: Value) -> Self {
        Self {
            name: name.into(),
            id: None,
            data,
            transient: false,
        }
    }

    /// The same chunk, transient (the client's `onData` only).
    pub fn transient(mut self) -> Self {
        self.transient = true;
        self
    }

    /// The same chunk with an id.
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }
}

/// The wire form of a `data-{name}` chunk or part: `{"type", "id"?, "data", "transient"?}`.
/// `T` is what `transient` reads as: `bool` for a [`DataChunk`]; any value for a
/// [`DataPart`](crate::request::DataPart), which has no such field and ignores it.
#[derive(Serialize, Deserialize)]
pub(crate) struct RawData<T> {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) id: Option<String>,
    #[serde(default)]
    pub(crate) data: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    transient: Option<T>,
}

impl<T> RawData<T> {
    /// `data-{name}` with these fields.
    pub(crate) fn new(name: &str, id: Option<String>, data: Value, transient: Option<T>) -> Self {
        Self {
            kind: format!("data-{name}"),
            id,
            data,
            transient,
        }
    }

    /// The name after `data-`; else the error `unknown(type)` makes.
    pub(crate) fn name(&self, unknown: impl Fn(&str) -> String) -> Result<String, String> {
        self.kind
            .strip_prefix("data-")
            .map(str::to_owned)
            .ok_or_else(|| unknown(&self.kind))
    }
}

impl TryFrom<RawData<bool>> for DataChunk {
    type Error = String;

    fn try_from(raw: RawData<bool>) -> Result<Self, String> {
        Ok(Self {
            name: raw.name(|kind| format!("unknown chunk type `{kind}`"))?,
            id: raw.id,
            data: raw.data,
            transient: raw.transient.unwrap_or(false),
        })
    }
}

impl From<DataChunk> for RawData<bool> {
    fn from(chunk: DataChunk) -> Self {
        Self::new(&chunk.name, chunk.id, chunk.data, chunk.transient.then_some(true))
    }
}

/// The AI SDK's finish reasons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UiFinishReason {
    /// The model finished its turn.
    Stop,
    /// The output token limit was reached.
    Length,
    /// A content filter (or a refusal) stopped the output.
    ContentFilter,
    /// The run stopped at tool calls (paused for approval).
    ToolCalls,
    /// An error ended it.
    Error,
    /// The stream ended without a completion signal.
    Interrupted,
    /// Anything else.
    Other,
}

impl From<&FinishReason> for UiFinishReason {
    fn from(reason: &FinishReason) -> Self {
        match reason {
            FinishReason::Stop => Self::Stop,
            FinishReason::Length => Self::Length,
            FinishReason::ToolUse => Self::ToolCalls,
            FinishReason::ContentFilter | FinishReason::Refusal => Self::ContentFilter,
            FinishReason::Cancelled | FinishReason::Other(_) => Self::Other,
        }
    }
}

/// What this crate writes into the message's `metadata` (`start`, `message-metadata` and
/// `finish` chunks; the client merges them). Keys are camelCase; the values are patchbay's own
/// serde forms, so each reads back into its Rust type.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct MessageMetadata {
    /// The model that answers (`start`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The provider's response id of the first model call (`start`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    /// The agent runtime's session id (`start`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// What the provider ignored (`start`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Warning>,
    /// Usage so far (`message-metadata`), the run's total at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The run's timings and counts (end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
    /// patchbay's own finish reason, finer than the AI SDK's (end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<FinishReason>,
    /// What the run's tools reported, with counts and totals (end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<RunSummary>,
}

impl MessageMetadata {
    /// As the JSON a chunk carries.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}
