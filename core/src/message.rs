//! Conversation messages and their content blocks.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cache::CacheControl;
use crate::tool::{ExecutedBy, ToolContent};

/// Who wrote a message. The system prompt travels separately, in
/// [`RequestContext::system`](crate::RequestContext::system).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The human, or the host speaking for it (tool results travel as user content).
    User,
    /// The model.
    Assistant,
}

/// Where an image's bytes come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ImageSource {
    /// Base64-encoded bytes.
    Base64 {
        /// Base64 data, without a `data:` prefix.
        data: String,
    },
    /// A URL the provider fetches itself.
    Url {
        /// The image URL.
        url: String,
    },
}

/// One block of a message's content.
///
/// Everything a provider returns survives a round trip: signatures, tool call ids, cache
/// markers, and blocks patchbay has no variant for (kept in [`ContentBlock::Opaque`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
        /// Citations attached to this text, as the provider sent them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        citations: Vec<Value>,
        /// Prompt-caching marker.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
        /// The signature the text came with (Gemini's `thoughtSignature` on a text part); send
        /// it back unchanged.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// An image.
    Image {
        /// MIME type such as `image/png`.
        media_type: String,
        /// The bytes or a URL.
        source: ImageSource,
        /// Prompt-caching marker.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// Model reasoning, with the signature that proves it was not edited.
    Thinking {
        /// The reasoning text (possibly a summary).
        text: String,
        /// The provider's signature; send it back unchanged.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Reasoning the provider encrypted; send it back unchanged.
    RedactedThinking {
        /// Opaque encrypted data.
        data: String,
    },
    /// A tool call made by the model.
    ToolUse {
        /// The call id, unique within the conversation.
        id: String,
        /// The tool name as the model saw it.
        name: String,
        /// The complete input.
        input: Value,
        /// Who ran (or will run) the call.
        #[serde(default, skip_serializing_if = "ExecutedBy::is_host")]
        executed_by: ExecutedBy,
        /// The signature the call came with (Gemini's `thoughtSignature` on a function call,
        /// which Gemini 3 requires back on the next turn); send it back unchanged.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// The result of a tool call.
    ToolResult {
        /// The id of the [`ContentBlock::ToolUse`] this answers.
        tool_use_id: String,
        /// The result content.
        content: Vec<ToolContent>,
        /// Whether the tool failed (or was denied or aborted).
        #[serde(default)]
        is_error: bool,
        /// Prompt-caching marker.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// A provider-specific block patchbay has no variant for, kept verbatim for the round trip.
    Opaque {
        /// The provider that produced it (`"anthropic"`, ...).
        provider: String,
        /// The block exactly as the provider sent it.
        data: Value,
    },
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text {
            text: text.into(),
            citations: Vec::new(),
            cache_control: None,
            signature: None,
        }
    }

    /// A host-executed tool call block.
    pub fn tool_use(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self::ToolUse {
            id: id.into(),
            name: name.into(),
            input,
            executed_by: ExecutedBy::Host,
            signature: None,
        }
    }

    /// The text of a `Text` block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text { text, .. } => Some(text),
            _ => None,
        }
    }
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its content blocks, in order.
    pub content: Vec<ContentBlock>,
}

impl Message {
    /// A user message with one text block.
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: vec![ContentBlock::text(text)],
        }
    }

    /// An assistant message with one text block.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: vec![ContentBlock::text(text)],
        }
    }

    /// A message with the given role and blocks.
    pub fn new(role: Role, content: Vec<ContentBlock>) -> Self {
        Self { role, content }
    }

    /// All text blocks joined, in order.
    pub fn text(&self) -> String {
        self.content.iter().filter_map(ContentBlock::as_text).collect()
    }
}
