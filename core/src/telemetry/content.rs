//! Message content in the JSON shapes of the GenAI conventions (`gen_ai.input.messages`,
//! `gen_ai.output.messages`, `gen_ai.system_instructions`), for spans that capture content.
//! Image bytes are never written: an image part names its type and, for a URL, the URL.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::event::{Event, FinishReason};
use crate::message::{ContentBlock, ImageSource, Message, Role};
use crate::tool::{ToolContent, ToolResult};

/// `[{"role", "parts": [...]}]` for a conversation; a user message holding only tool results
/// is a `tool` message.
pub(super) fn input_messages(messages: &[Message]) -> String {
    let list: Vec<Value> = messages.iter().map(message).collect();
    Value::Array(list).to_string()
}

/// `[{"type": "text", "content": system}]`.
pub(super) fn system_instructions(system: &str) -> String {
    json!([{ "type": "text", "content": system }]).to_string()
}

/// A tool's result as text (its text parts joined; other parts as JSON).
pub(super) fn tool_result(result: &ToolResult) -> String {
    Value::Array(result.content.iter().map(tool_content).collect()).to_string()
}

fn message(message: &Message) -> Value {
    let only_results = !message.content.is_empty()
        && message
            .content
            .iter()
            .all(|block| matches!(block, ContentBlock::ToolResult { .. }));
    let role = match (message.role, only_results) {
        (Role::User, true) => "tool",
        (Role::User, false) => "user",
        (Role::Assistant, _) => "assistant",
    };
    let parts: Vec<Value> = message.content.iter().filter_map(part).collect();
    json!({ "role": role, "parts": parts })
}

fn part(block: &ContentBlock) -> Option<Value> {
    Some(match block {
        ContentBlock::Text { text, .. } => json!({ "type": "text", "content": text }),
        ContentBlock::Image { media_type, source, .. } => match source {
            ImageSource::Url { url } => {
                json!({ "type": "uri", "modality": "image", "mime_type": media_type, "uri": url })
            }
            ImageSource::Base64 { .. } => json!({ "type": "blob", "modality": "image", "mime_type": media_type }),
        },
        ContentBlock::Thinking { text, .. } => json!({ "type": "reasoning", "content": text }),
        ContentBlock::ToolUse { id, name, input, .. } => {
            json!({ "type": "tool_call", "id": id, "name": name, "arguments": input })
        }
        ContentBlock::ToolResult {
            tool_use_id, content, ..
        } => {
            let response: Vec<Value> = content.iter().map(tool_content).collect();
            json!({ "type": "tool_call_response", "id": tool_use_id, "response": response })
        }
        _ => return None,
    })
}

fn tool_content(content: &ToolContent) -> Value {
    match content {
        ToolContent::Text { text } => json!({ "type": "text", "content": text }),
        ToolContent::Image { media_type, .. } => {
            json!({ "type": "blob", "modality": "image", "mime_type": media_type })
        }
        ToolContent::Resource {
            uri, mime_type, text, ..
        } => {
            json!({ "type": "uri", "uri": uri, "mime_type": mime_type, "content": text })
        }
        ToolContent::Json { value } => json!({ "type": "json", "content": value }),
    }
}

/// The answer of a model call as it streams: text and reasoning by block, complete tool calls.
#[derive(Debug, Default)]
pub(super) struct OutputMessages {
    text: BTreeMap<(usize, bool), String>,
    calls: Vec<Value>,
}

impl OutputMessages {
    pub(super) fn push(&mut self, event: &Event) {
        match event {
            Event::TextDelta { index, text } => self.text.entry((*index, false)).or_default().push_str(text),
            Event::ReasoningDelta { index, text } => self.text.entry((*index, true)).or_default().push_str(text),
            Event::ToolCall { id, name, input, .. } => {
                self.calls
                    .push(json!({ "type": "tool_call", "id": id, "name": name, "arguments": input }));
            }
            _ => {}
        }
    }

    /// `[{"role": "assistant", "parts": [...], "finish_reason"}]`.
    pub(super) fn finish(self, reason: &FinishReason) -> String {
        let mut parts: Vec<Value> = self
            .text
            .into_iter()
            .map(|((_, reasoning), text)| {
                let kind = if reasoning { "reasoning" } else { "text" };
                json!({ "type": kind, "content": text })
            })
            .collect();
        parts.extend(self.calls);
        json!([{ "role": "assistant", "parts": parts, "finish_reason": finish_reason(reason) }]).to_string()
    }
}

/// A finish reason as the conventions spell it (`stop`, `length`, `tool_call`,
/// `content_filter`), patchbay's own name otherwise.
pub(super) fn finish_reason(reason: &FinishReason) -> &str {
    match reason {
        FinishReason::Stop => "stop",
        FinishReason::Length => "length",
        FinishReason::ToolUse => "tool_call",
        FinishReason::ContentFilter => "content_filter",
        FinishReason::Refusal => "refusal",
        FinishReason::Cancelled => "cancelled",
        FinishReason::Other(raw) => raw,
    }
}
