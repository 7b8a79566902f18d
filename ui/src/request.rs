//! The body the AI SDK's `useChat` posts (`DefaultChatTransport`: `{id, messages, trigger,
//! messageId}` plus the host's own `body` fields), read leniently, and what patchbay makes of
//! it: the conversation ([`ChatRequest::to_messages`]) and the person's approval decisions
//! ([`ChatRequest::decisions`]).

use patchbay_core::agent::Decisions;
use patchbay_core::context::Approval;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::parts::RawData;

/// What the model is told when a person denied a call without a reason (the AI SDK's own
/// words, so either side of a conversion says the same).
pub const DEFAULT_DENIAL: &str = "Tool call execution denied.";

/// The request body of `useChat`'s default transport.
///
/// Lenient: a missing field takes its default, fields it does not know land in
/// [`body`](Self::body) (where `useChat`'s `body` option puts the host's own), and a part of a
/// type it does not know is kept as [`UiPart::Other`].
///
/// ```
/// let body = br#"{"id":"chat-1","trigger":"submit-message","model":"fast",
///   "messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"Hi"}]}]}"#;
/// let request = patchbay_ui::ChatRequest::from_json(body)?;
/// assert_eq!(request.to_messages()[0].text(), "Hi");
/// assert_eq!(request.body["model"], "fast");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ChatRequest {
    /// The chat's id.
    #[serde(default)]
    pub id: String,
    /// The whole conversation as the client holds it.
    #[serde(default)]
    pub messages: Vec<UiMessage>,
    /// Why the client sends.
    #[serde(default)]
    pub trigger: Trigger,
    /// The message to regenerate (or the one a submit answers), when the client names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// Every other field of the body (the host's own, from `useChat`'s `body` option).
    #[serde(flatten)]
    pub body: Map<String, Value>,
}

impl ChatRequest {
    /// Read a request body.
    pub fn from_json(body: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(body)
    }

    /// The text of the system messages, joined by blank lines (for
    /// `RequestContext::with_system`), or `None` when there is none.
    pub fn system(&self) -> Option<String> {
        let texts: Vec<String> = self
            .messages
            .iter()
            .filter(|message| message.role == UiRole::System)
            .map(UiMessage::text)
            .filter(|text| !text.is_empty())
            .collect();
        (!texts.is_empty()).then(|| texts.join("\n\n"))
    }

    /// The person's decisions, by tool call id: every tool part in state
    /// `approval-responded` (a part leaves that state once its output arrives, so only
    /// undecided runs count). Approved is [`Approval::Allow`]; denied is [`Approval::Deny`]
    /// with the person's reason, or [`DEFAULT_DENIAL`].
    pub fn decisions(&self) -> Decisions {
        let mut decisions = Decisions::new();
        let parts = self.messages.iter().flat_map(|message| &message.parts);
        for part in parts {
            let UiPart::Tool(tool) = part else { continue };
            let Some(approval) = tool
                .approval
                .as_ref()
                .filter(|_| tool.state == ToolState::ApprovalResponded)
            else {
                continue;
            };
            let decision = match approval.approved {
                Some(true) => Approval::Allow,
                Some(false) => Approval::deny(approval.reason.clone().unwrap_or_else(|| DEFAULT_DENIAL.to_owned())),
                None => continue,
            };
            decisions.insert(tool.tool_call_id.clone(), decision);
        }
        decisions
    }

    /// The last message when it is the assistant's: the message the client continues (after a
    /// person answered an approval, or a client-side tool gave its output). Hand it to
    /// [`UiStream::continuing`](crate::UiStream::continuing) for the resumed run.
    pub fn last_assistant(&self) -> Option<&UiMessage> {
        self.messages.last().filter(|message| message.role == UiRole::Assistant)
    }
}

/// Why the client sends.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
#[non_exhaustive]
pub enum Trigger {
    /// A new message (or a tool output, or an approval) to answer.
    #[default]
    SubmitMessage,
    /// Answer the message named by `messageId` (or the last) again.
    RegenerateMessage,
    /// Reconnect to a stream in progress.
    ResumeStream,
    /// A trigger this crate does not know, as sent.
    Other(String),
}

impl From<String> for Trigger {
    fn from(value: String) -> Self {
        match value.as_str() {
            "submit-message" => Self::SubmitMessage,
            "regenerate-message" => Self::RegenerateMessage,
            "resume-stream" => Self::ResumeStream,
            _ => Self::Other(value),
        }
    }
}

impl From<Trigger> for String {
    fn from(trigger: Trigger) -> Self {
        match trigger {
            Trigger::SubmitMessage => "submit-message".into(),
            Trigger::RegenerateMessage => "regenerate-message".into(),
            Trigger::ResumeStream => "resume-stream".into(),
            Trigger::Other(value) => value,
        }
    }
}

/// Who wrote a UI message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UiRole {
    /// Instructions.
    System,
    /// The person.
    User,
    /// The model (one message per run, across its steps).
    Assistant,
}

/// One message as the client holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct UiMessage {
    /// Its id.
    #[serde(default)]
    pub id: String,
    /// Who wrote it.
    pub role: UiRole,
    /// Its parts, in order.
    #[serde(default)]
    pub parts: Vec<UiPart>,
    /// The metadata the stream wrote (see [`MessageMetadata`](crate::MessageMetadata)) or the
    /// client set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

impl UiMessage {
    /// A message with these parts.
    pub fn new(id: impl Into<String>, role: UiRole, parts: Vec<UiPart>) -> Self {
        Self {
            id: id.into(),
            role,
            parts,
            metadata: None,
        }
    }

    /// Its text parts, joined.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|part| match part {
                UiPart::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// One part of a UI message. Parts of other types are kept as [`UiPart::Other`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", rename_all_fields = "camelCase")]
#[non_exhaustive]
pub enum UiPart {
    /// Text.
    Text {
        /// The text.
        #[serde(default)]
        text: String,
        /// Provider metadata (a text block's signature under `patchbay`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<Value>,
    },
    /// Reasoning.
    Reasoning {
        /// The reasoning text.
        #[serde(default)]
        text: String,
        /// Provider metadata (`signature` or `redactedData` under `patchbay`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<Value>,
    },
    /// A file the person attached (a `data:` URL or an address).
    File {
        /// Its media type.
        #[serde(default)]
        media_type: String,
        /// A `data:` URL or an address.
        #[serde(default)]
        url: String,
        /// Its name, when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        filename: Option<String>,
    },
    /// A web page the answer used.
    SourceUrl {
        /// The source's id.
        #[serde(default)]
        source_id: String,
        /// Its URL.
        #[serde(default)]
        url: String,
        /// Its title.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    /// A document the answer used.
    SourceDocument {
        /// The source's id.
        #[serde(default)]
        source_id: String,
        /// Its media type.
        #[serde(default)]
        media_type: String,
        /// Its title.
        #[serde(default)]
        title: String,
    },
    /// Where a step (one model call) begins.
    StepStart,
    /// A tool call (`tool-{name}` or `dynamic-tool`), boxed: it is the largest part.
    #[serde(untagged)]
    Tool(Box<ToolPart>),
    /// A `data-{name}` part.
    #[serde(untagged)]
    Data(DataPart),
    /// A part of another type, as sent.
    #[serde(untagged)]
    Other(Value),
}

/// A tool part: a call and how far it got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawToolPart", into = "RawToolPart")]
#[non_exhaustive]
pub struct ToolPart {
    /// The call id.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// Whether it is a `dynamic-tool` part.
    pub dynamic: bool,
    /// How far the call got.
    pub state: ToolState,
    /// The input (partial while streaming).
    pub input: Option<Value>,
    /// The output (`output-available`).
    pub output: Option<Value>,
    /// Why it failed (`output-error`).
    pub error_text: Option<String>,
    /// Whether the provider ran it.
    pub provider_executed: Option<bool>,
    /// The call's provider metadata (its signature under `patchbay`).
    pub call_provider_metadata: Option<Value>,
    /// The approval asked for and, once given, the answer.
    pub approval: Option<ToolApproval>,
}

/// How far a tool call got.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
#[non_exhaustive]
pub enum ToolState {
    /// The input streams in.
    #[default]
    InputStreaming,
    /// The input is complete.
    InputAvailable,
    /// A person is asked.
    ApprovalRequested,
    /// A person answered; the run has not gone on yet.
    ApprovalResponded,
    /// The call returned.
    OutputAvailable,
    /// The call failed.
    OutputError,
    /// The call was denied.
    OutputDenied,
    /// A state this crate does not know, as sent.
    Other(String),
}

const STATES: [(&str, ToolState); 7] = [
    ("input-streaming", ToolState::InputStreaming),
    ("input-available", ToolState::InputAvailable),
    ("approval-requested", ToolState::ApprovalRequested),
    ("approval-responded", ToolState::ApprovalResponded),
    ("output-available", ToolState::OutputAvailable),
    ("output-error", ToolState::OutputError),
    ("output-denied", ToolState::OutputDenied),
];

impl From<String> for ToolState {
    fn from(value: String) -> Self {
        STATES
            .iter()
            .find(|(name, _)| *name == value)
            .map_or(Self::Other(value), |(_, state)| state.clone())
    }
}

impl From<ToolState> for String {
    fn from(state: ToolState) -> Self {
        match state {
            ToolState::Other(value) => value,
            known => STATES
                .iter()
                .find(|(_, state)| *state == known)
                .map(|(name, _)| (*name).to_owned())
                .unwrap_or_default(),
        }
    }
}

/// A tool part's approval.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolApproval {
    /// The approval's id.
    #[serde(default)]
    pub id: String,
    /// The answer, once given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved: Option<bool>,
    /// The person's reason, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A `data-{name}` part of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawData<Value>", into = "RawData<Value>")]
#[non_exhaustive]
pub struct DataPart {
    /// The name after `data-`.
    pub name: String,
    /// Its id, when it has one.
    pub id: Option<String>,
    /// The data.
    pub data: Value,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawToolPart {
    #[serde(rename = "type")]
    kind: String,
    tool_call_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool_name: Option<String>,
    #[serde(default)]
    state: ToolState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    input: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    output: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error_text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    provider_executed: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    call_provider_metadata: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    approval: Option<ToolApproval>,
}

impl TryFrom<RawToolPart> for ToolPart {
    type Error = String;

    fn try_from(raw: RawToolPart) -> Result<Self, String> {
        let (dynamic, tool_name) = match (raw.kind.as_str(), raw.tool_name) {
            ("dynamic-tool", name) => (true, name.unwrap_or_default()),
            (kind, _) if kind.starts_with("tool-") => (false, kind["tool-".len()..].to_owned()),
            (kind, _) => return Err(format!("`{kind}` is no tool part")),
        };
        Ok(Self {
            tool_call_id: raw.tool_call_id,
            tool_name,
            dynamic,
            state: raw.state,
            input: raw.input,
            output: raw.output,
            error_text: raw.error_text,
            provider_executed: raw.provider_executed,
            call_provider_metadata: raw.call_provider_metadata,
            approval: raw.approval,
        })
    }
}

impl From<ToolPart> for RawToolPart {
    fn from(part: ToolPart) -> Self {
        let (kind, tool_name) = if part.dynamic {
            ("dynamic-tool".to_owned(), Some(part.tool_name))
        } else {
            (format!("tool-{}", part.tool_name), None)
        };
        Self {
            kind,
            tool_call_id: part.tool_call_id,
            tool_name,
            state: part.state,
            input: part.input,
            output: part.output,
            error_text: part.error_text,
            provider_executed: part.provider_executed,
            call_provider_metadata: part.call_provider_metadata,
            approval: part.approval,
        }
    }
}

impl TryFrom<RawData<Value>> for DataPart {
    type Error = String;

    fn try_from(raw: RawData<Value>) -> Result<Self, String> {
        Ok(Self {
            name: raw.name(|kind| format!("`{kind}` is no data part"))?,
            id: raw.id,
            data: raw.data,
        })
    }
}

impl From<DataPart> for RawData<Value> {
    fn from(part: DataPart) -> Self {
        Self::new(&part.name, part.id, part.data, None)
    }
}
