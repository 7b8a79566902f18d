//! The conversation as `input` items, block by block (see the module docs' tables).

use std::collections::HashSet;

use patchbay_core::{ContentBlock, ExecutedBy, Message, Role, Warning};
use serde_json::{Value, json};

use super::parts::{function_call_output, media};
use crate::NAME;

/// How the items are written: what the options decide.
pub(super) struct Style<'a> {
    /// `store`: built-in calls go back as `item_reference`s only when the server kept them.
    pub(super) store: bool,
    /// The `detail` of `input_image` parts.
    pub(super) image_detail: &'a str,
}

/// The items of one conversation, and the ids referenced so far.
struct Items<'a> {
    style: &'a Style<'a>,
    items: Vec<Value>,
    /// Content parts of the message item being written (user `input_*` or assistant
    /// `output_text` parts), flushed before the next other item.
    parts: Vec<Value>,
    referenced: HashSet<&'a str>,
    warnings: &'a mut Vec<Warning>,
}

/// The index of the first message `input` holds when the server has the rest
/// (`previous_response_id`): the one after the last assistant message.
pub(super) fn after_last_answer(messages: &[Message]) -> usize {
    messages
        .iter()
        .rposition(|message| message.role == Role::Assistant)
        .map_or(0, |at| at + 1)
}

/// The messages from `from` on as `input` items.
pub(super) fn items(messages: &[Message], from: usize, style: &Style<'_>, warnings: &mut Vec<Warning>) -> Value {
    let mut out = Items {
        style,
        items: Vec::with_capacity(messages.len()),
        parts: Vec::new(),
        referenced: HashSet::new(),
        warnings,
    };
    for (index, message) in messages.iter().enumerate().skip(from) {
        match message.role {
            Role::User => out.user(index, message),
            Role::Assistant => out.assistant(index, message),
        }
    }
    Value::Array(out.items)
}

/// The `type` of an `openai` `Opaque` block's data, when it is an object with a string one.
fn opaque_type(data: &Value) -> Option<&str> {
    data.get("type").and_then(Value::as_str)
}

/// The warning for a block another provider wrote.
fn foreign(index: usize, provider: &str) -> Warning {
    Warning::new(
        Warning::DROPPED_CONTENT,
        format!("message {index}: a block from provider `{provider}` cannot be sent to OpenAI and was dropped"),
    )
}

impl<'a> Items<'a> {
    /// The pending content parts as one message item of `role` (nothing when there are none).
    fn flush(&mut self, role: &str) {
        if !self.parts.is_empty() {
            let content = std::mem::take(&mut self.parts);
            self.items
                .push(json!({ "type": "message", "role": role, "content": content }));
        }
    }

    /// An item after the pending parts of a `role` message.
    fn push(&mut self, role: &str, item: Value) {
        self.flush(role);
        self.items.push(item);
    }

    /// A user message: its tool results first, then one message item with its other blocks
    /// (split where an `openai` item stands among them).
    fn user(&mut self, index: usize, message: &'a Message) {
        for block in &message.content {
            if let ContentBlock::ToolResult {
                tool_use_id, content, ..
            } = block
            {
                self.items.push(function_call_output(tool_use_id, content));
            }
        }
        for block in &message.content {
            match block {
                ContentBlock::Text { text, .. } if !text.is_empty() => {
                    self.parts.push(json!({ "type": "input_text", "text": text }));
                }
                ContentBlock::Text { .. } | ContentBlock::ToolResult { .. } => {}
                ContentBlock::Image { media_type, source, .. } => {
                    self.parts.push(media(media_type, source, self.style.image_detail));
                }
                ContentBlock::Opaque { provider, data } if provider == NAME => match opaque_type(data) {
                    Some(kind) if kind.starts_with("input_") => self.parts.push(data.clone()),
                    Some(_) => self.push("user", data.clone()),
                    None => {}
                },
                ContentBlock::Opaque { provider, .. } => self.warnings.push(foreign(index, provider)),
                ContentBlock::Thinking { .. }
                | ContentBlock::RedactedThinking { .. }
                | ContentBlock::ToolUse { .. } => {
                    self.warnings.push(Warning::new(
                        Warning::UNSUPPORTED_CONTENT,
                        format!("message {index}: reasoning and tool calls in a user message are not sent"),
                    ));
                }
            }
        }
        self.flush("user");
    }

    /// An assistant message, block by block; consecutive texts share one message item.
    fn assistant(&mut self, index: usize, message: &'a Message) {
        for block in &message.content {
            match block {
                ContentBlock::Text { text, .. } if !text.is_empty() => {
                    self.parts.push(json!({ "type": "output_text", "text": text }));
                }
                ContentBlock::Text { .. } => {}
                ContentBlock::Thinking {
                    text,
                    signature: Some(signature),
                } => {
                    let summary = if text.is_empty() {
                        json!([])
                    } else {
                        json!([{ "type": "summary_text", "text": text }])
                    };
                    let item = json!({ "type": "reasoning", "summary": summary, "encrypted_content": signature });
                    self.push("assistant", item);
                }
                ContentBlock::Thinking { signature: None, .. } | ContentBlock::RedactedThinking { .. } => {
                    self.warnings.push(Warning::new(
                        Warning::REASONING_NOT_SENT,
                        "reasoning without OpenAI's encrypted content (no signature, or another provider's \
                         redacted thinking) is not sent back",
                    ));
                }
                ContentBlock::ToolUse {
                    id,
                    name,
                    input,
                    executed_by: ExecutedBy::Host,
                    ..
                } => {
                    let arguments = if input.is_null() {
                        "{}".to_string()
                    } else {
                        input.to_string()
                    };
                    let item = json!({ "type": "function_call", "call_id": id, "name": name, "arguments": arguments });
                    self.push("assistant", item);
                }
                ContentBlock::ToolUse { id, .. } => self.built_in(id),
                ContentBlock::ToolResult { tool_use_id, .. } => self.built_in(tool_use_id),
                ContentBlock::Image { .. } => self.warnings.push(Warning::new(
                    Warning::UNSUPPORTED_CONTENT,
                    format!("message {index}: an image in an assistant message is not sent (output text only)"),
                )),
                ContentBlock::Opaque { provider, data } if provider == NAME => {
                    if opaque_type(data).is_some() {
                        self.push("assistant", data.clone());
                    }
                }
                ContentBlock::Opaque { provider, .. } => self.warnings.push(foreign(index, provider)),
            }
        }
        self.flush("assistant");
    }

    /// A built-in tool's call or result (its id the item's): an `item_reference` once per id
    /// when the server stored it, else left out.
    fn built_in(&mut self, id: &'a str) {
        if !self.style.store {
            self.warnings.push(Warning::new(
                Warning::DROPPED_CONTENT,
                "built-in tool calls and results are not sent back with `store: false` (the server kept \
                 nothing to refer to; the answer that used them is sent)",
            ));
        } else if self.referenced.insert(id) {
            self.push("assistant", json!({ "type": "item_reference", "id": id }));
        }
    }
}
