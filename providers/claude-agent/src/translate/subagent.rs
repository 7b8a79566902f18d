//! A sub-agent's lines (`parent_tool_use_id` set): each whole `assistant` or `user` message
//! becomes [`Event::SubagentMessage`] with the call that started it and its type (the
//! `subagent_type` of that `Task` / `Agent` call); its `stream_event` partials are skipped
//! (its whole messages follow them).

use patchbay_core::{ContentBlock, Event, ImageSource, Message, Role};
use serde_json::{Value, json};

use super::Translator;
use crate::NAME;
use crate::blocks::result_of;

/// The CLI's tools that start a sub-agent (`Agent`; `Task` in older CLIs).
const SUBAGENT_TOOLS: [&str; 2] = ["Agent", "Task"];

impl Translator {
    /// Note a call that starts a sub-agent: its type names the sub-agent's messages.
    pub(super) fn note_subagent_call(&mut self, id: &str, name: &str, input: &Value) {
        if !SUBAGENT_TOOLS.contains(&name) {
            return;
        }
        if let Some(kind) = input.get("subagent_type").and_then(Value::as_str) {
            self.subagents.insert(id.to_string(), kind.to_string());
        }
    }

    /// A sub-agent's whole message (`assistant` or `user`).
    pub(super) fn subagent_message(&mut self, line: &Value, role: Role) {
        let parent = line
            .get("parent_tool_use_id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let content = match line.pointer("/message/content") {
            Some(Value::String(text)) => vec![ContentBlock::text(text.clone())],
            Some(Value::Array(blocks)) => blocks.iter().map(|block| self.subagent_block(block)).collect(),
            _ => Vec::new(),
        };
        self.start(None, None);
        let subagent = self.subagents.get(&parent).cloned();
        self.emit(Event::SubagentMessage {
            parent_tool_use_id: parent,
            subagent,
            message: Message::new(role, content),
        });
    }

    /// One block of a sub-agent's message: tool names mapped like the main agent's.
    fn subagent_block(&mut self, block: &Value) -> ContentBlock {
        let str_of = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or("").to_string();
        let opt_str = |key: &str| block.get(key).and_then(Value::as_str).map(str::to_string);
        match block.get("type").and_then(Value::as_str).unwrap_or("") {
            "text" => ContentBlock::Text {
                text: str_of("text"),
                citations: block
                    .get("citations")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
                cache_control: None,
                signature: None,
            },
            "thinking" => ContentBlock::Thinking {
                text: str_of("thinking"),
                signature: opt_str("signature").filter(|s| !s.is_empty()),
            },
            "redacted_thinking" => ContentBlock::RedactedThinking { data: str_of("data") },
            "tool_use" => {
                let (name, executed_by) = self.map_tool_name(&str_of("name"));
                let id = str_of("id");
                let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
                // A sub-agent may start sub-agents of its own.
                self.note_subagent_call(&id, &name, &input);
                ContentBlock::ToolUse {
                    id,
                    name,
                    input,
                    executed_by,
                    signature: None,
                }
            }
            "tool_result" => {
                let result = result_of(block);
                ContentBlock::ToolResult {
                    tool_use_id: str_of("tool_use_id"),
                    is_error: result.is_error(),
                    content: result.content,
                    cache_control: None,
                }
            }
            "image" if block.pointer("/source/type").and_then(Value::as_str) == Some("base64") => ContentBlock::Image {
                media_type: block
                    .pointer("/source/media_type")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                source: ImageSource::Base64 {
                    data: block
                        .pointer("/source/data")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                },
                cache_control: None,
            },
            _ => ContentBlock::Opaque {
                provider: NAME.into(),
                data: block.clone(),
            },
        }
    }
}
