//! Content block handlers: `content_block_start`, `content_block_delta` and
//! `content_block_stop`, and what they need (tool input, server tool results, merged deltas).

use std::borrow::Cow;

use patchbay_core::{Event, ExecutedBy, ProviderError, ToolResult, tool::ToolContent, tool::ToolStatus};
use serde_json::{Map, Value, json};

use super::{MAX_BLOCKS, Open, RawEvent, Translator};
use crate::NAME;
use crate::sources::{citation_source, result_sources};
use crate::wire::{Block, Delta};

impl Translator {
    pub(super) fn start_block(
        &mut self,
        index: usize,
        block: Block<'_>,
        raw: impl FnOnce() -> Option<Value>,
    ) -> Result<(), ProviderError> {
        self.content_seen = true;
        if index >= MAX_BLOCKS {
            return Err(Self::protocol(format!(
                "content block index {index} is beyond {MAX_BLOCKS}"
            )));
        }
        // A block index is used once per message, stopped or not: a restarted index would
        // repeat its events (a second `ToolCall` with the same id, found by fuzzing).
        if self.open_block(index).is_some() {
            return Err(Self::protocol(format!("content block {index} started twice")));
        }
        let open = match block.kind.as_ref() {
            "text" => {
                if let Some(text) = block.text.filter(|t| !t.is_empty()) {
                    self.emit(Event::TextDelta {
                        index,
                        text: text.into_owned(),
                    });
                }
                for citation in block.citations.unwrap_or_default() {
                    let id = self.next_source_id();
                    self.emit(Event::Source(citation_source(id, index, citation, NAME)));
                }
                Open::Text
            }
            "thinking" => {
                if let Some(text) = block.thinking.filter(|t| !t.is_empty()) {
                    self.emit(Event::ReasoningDelta {
                        index,
                        text: text.into_owned(),
                    });
                }
                if let Some(signature) = block.signature.filter(|s| !s.is_empty()) {
                    self.emit(Event::ReasoningSignature {
                        index,
                        signature: signature.into_owned(),
                    });
                }
                Open::Thinking
            }
            "redacted_thinking" => {
                let data = block.data.map(Cow::into_owned).unwrap_or_default();
                self.emit(Event::RedactedReasoning { index, data });
                Open::Done
            }
            "tool_use" if block.name.is_some() && block.name.as_deref() == self.output_tool.as_deref() => {
                self.output_answered = true;
                // A whole block (a non-streamed answer) carries its input at the start.
                if let Some(input) = block.input.filter(|v| !is_empty_object(v)) {
                    self.emit(Event::TextDelta {
                        index,
                        text: input.to_string(),
                    });
                }
                Open::Output
            }
            kind @ ("tool_use" | "server_tool_use" | "mcp_tool_use") => {
                let id = block.id.map(Cow::into_owned).unwrap_or_default();
                let name = block.name.map(Cow::into_owned).unwrap_or_default();
                if id.is_empty() {
                    return Err(Self::protocol(format!("`{kind}` block {index} has no id")));
                }
                let raw = if kind == "tool_use" {
                    self.host_calls = true;
                    None
                } else {
                    Some(raw().unwrap_or_else(|| json!({ "type": kind, "id": id, "name": name })))
                };
                self.emit(Event::ToolCallStart {
                    id: id.clone(),
                    name: name.clone(),
                });
                Open::Tool {
                    id,
                    name,
                    json: String::new(),
                    start_input: block.input.filter(|v| !is_empty_object(v)),
                    raw,
                }
            }
            kind => Open::Other {
                raw: raw().unwrap_or_else(|| json!({ "type": kind })),
            },
        };
        if self.blocks.len() <= index {
            self.blocks.resize_with(index + 1, || None);
        }
        self.blocks[index] = Some(open);
        Ok(())
    }

    /// The event of a content block delta, counted but not queued.
    pub(super) fn delta(
        &mut self,
        index: usize,
        delta: Delta<'_>,
        raw: RawEvent<'_>,
    ) -> Result<Option<Event>, ProviderError> {
        let Delta {
            kind,
            payload,
            citation,
            ..
        } = delta;
        if kind == "citations_delta" && matches!(self.open_block(index), Some(Open::Text)) {
            let Some(citation) = citation else {
                return Ok(None);
            };
            let id = self.next_source_id();
            let event = Event::Source(citation_source(id, index, *citation, NAME));
            self.count(&event);
            return Ok(Some(event));
        }
        let Some(open) = self.blocks.get_mut(index).and_then(Option::as_mut) else {
            return Err(Self::protocol(format!(
                "a delta for content block {index}, which never started"
            )));
        };
        if payload.is_empty() && matches!(open, Open::Text | Open::Thinking | Open::Tool { .. } | Open::Output) {
            // An empty delta (`thinking_delta` with "" before a signature...) carries nothing.
            return Ok(None);
        }
        let event = match (kind.as_ref(), open) {
            ("text_delta", Open::Text) => Event::TextDelta {
                index,
                text: payload.into_owned(),
            },
            ("thinking_delta", Open::Thinking) => Event::ReasoningDelta {
                index,
                text: payload.into_owned(),
            },
            ("signature_delta", Open::Thinking) => Event::ReasoningSignature {
                index,
                signature: payload.into_owned(),
            },
            ("input_json_delta", Open::Output) => Event::TextDelta {
                index,
                text: payload.into_owned(),
            },
            ("input_json_delta", Open::Tool { id, json, .. }) => {
                json.push_str(&payload);
                Event::ToolCallDelta {
                    id: id.clone(),
                    partial_json: payload.into_owned(),
                }
            }
            (_, Open::Other { raw: block }) => {
                // Unknown block kinds (`compaction`...): merge the delta's fields into the block.
                let value = raw.value().and_then(|mut v| v.get_mut("delta").map(Value::take));
                if let (Some(Value::Object(fields)), Value::Object(target)) = (value, block) {
                    merge_delta(target, fields);
                }
                return Ok(None);
            }
            (kind, open) => {
                return Err(Self::protocol(format!(
                    "a `{kind}` delta does not fit content block {index} ({})",
                    open_name(open)
                )));
            }
        };
        self.count(&event);
        Ok(Some(event))
    }

    pub(super) fn stop_block(&mut self, index: usize) -> Result<(), ProviderError> {
        let Some(open) = self.blocks.get_mut(index).and_then(|slot| slot.replace(Open::Done)) else {
            tracing::debug!(index, "ignoring content_block_stop of a block that never started");
            return Ok(());
        };
        match open {
            Open::Text | Open::Thinking | Open::Output | Open::Done => {}
            Open::Tool {
                id,
                name,
                json,
                start_input,
                raw,
            } => {
                let input = tool_input(&id, &json, start_input)?;
                let executed_by = if raw.is_some() {
                    ExecutedBy::Provider
                } else {
                    ExecutedBy::Host
                };
                if let Some(mut raw) = raw {
                    if let Value::Object(map) = &mut raw {
                        map.insert("input".into(), input.clone());
                    }
                    self.provider_calls.insert(id.clone(), name.clone());
                    self.emit(Event::ToolCall {
                        id,
                        name,
                        input,
                        executed_by,
                        signature: None,
                    });
                    self.emit(Event::Opaque {
                        index,
                        provider: NAME.into(),
                        data: raw,
                    });
                } else {
                    self.emit(Event::ToolCall {
                        id,
                        name,
                        input,
                        executed_by,
                        signature: None,
                    });
                }
            }
            Open::Other { raw } => {
                let call = raw
                    .get("tool_use_id")
                    .and_then(Value::as_str)
                    .and_then(|id| self.provider_calls.get(id).map(|name| (id.to_string(), name.clone())));
                let result = call.as_ref().map(|_| server_tool_result(&raw));
                let sources = result_sources(&raw, index, NAME, || self.next_source_id());
                self.emit(Event::Opaque {
                    index,
                    provider: NAME.into(),
                    data: raw,
                });
                if let (Some((id, name)), Some(result)) = (call, result) {
                    self.emit(Event::ToolResult { id, name, result });
                }
                for source in sources {
                    self.emit(Event::Source(source));
                }
            }
        }
        Ok(())
    }
}

fn open_name(open: &Open) -> &'static str {
    match open {
        Open::Text => "text",
        Open::Thinking => "thinking",
        Open::Tool { .. } => "tool call",
        Open::Other { .. } => "other",
        Open::Output => "structured output",
        Open::Done => "already stopped",
    }
}

fn is_empty_object(value: &Value) -> bool {
    matches!(value, Value::Object(map) if map.is_empty())
}

pub(super) fn tool_input(id: &str, json: &str, start_input: Option<Value>) -> Result<Value, ProviderError> {
    let trimmed = json.trim();
    if trimmed.is_empty() {
        return Ok(start_input.unwrap_or_else(|| Value::Object(Map::new())));
    }
    serde_json::from_str(trimmed).map_err(|e| {
        ProviderError::protocol(format!("the input of tool call `{id}` is not valid JSON: {e}")).with_provider(NAME)
    })
}

fn merge_delta(target: &mut Map<String, Value>, fields: Map<String, Value>) {
    for (key, value) in fields {
        if key == "type" {
            continue;
        }
        match (target.get_mut(&key), value) {
            (Some(Value::String(existing)), Value::String(more)) => existing.push_str(&more),
            (_, value) => {
                target.insert(key, value);
            }
        }
    }
}

/// A server tool's result block as a patchbay tool result: text blocks stay text, anything
/// else is kept as JSON; an `*_error` content or `is_error: true` is a failure.
fn server_tool_result(raw: &Value) -> ToolResult {
    let content = raw.get("content").cloned().unwrap_or(Value::Null);
    let failed = raw.get("is_error").and_then(Value::as_bool).unwrap_or(false)
        || content
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| t.ends_with("_error"))
        || content.get("error_code").is_some();
    let pieces = match &content {
        Value::Array(items)
            if items
                .iter()
                .all(|i| i.get("type").and_then(Value::as_str) == Some("text")) =>
        {
            items
                .iter()
                .map(|i| ToolContent::text(i.get("text").and_then(Value::as_str).unwrap_or_default()))
                .collect()
        }
        Value::String(text) => vec![ToolContent::text(text.clone())],
        Value::Null => Vec::new(),
        other => vec![ToolContent::Json { value: other.clone() }],
    };
    ToolResult {
        content: pieces,
        status: if failed {
            ToolStatus::Failed
        } else {
            ToolStatus::Completed
        },
        metadata: None,
    }
}
