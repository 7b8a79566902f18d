//! The output items: a call opened by `output_item.added`, and every item finished by
//! `output_item.done` (messages, reasoning, function calls, built-in tools, the rest as
//! `Opaque`).

use patchbay_core::tool::{ExecutedBy, ToolResult, ToolStatus};
use patchbay_core::{Event, ProviderError};
use serde_json::{Value, json};

use super::builtin;
use super::{OpenCall, Translator};
use crate::NAME;

impl Translator {
    /// `output_item.added`: a function or built-in call starts.
    pub(super) fn item_added(&mut self, output: usize, item: &Value) {
        let kind = item.get("type").and_then(Value::as_str).unwrap_or_default();
        if kind == "function_call" || builtin::name_of(kind).is_some() {
            self.open_call(output, kind, item);
        }
    }

    /// Open the call of item `output` (`kind` a function call or a built-in one): its id, name
    /// and block, and `ToolCallStart`. Returns its slot.
    fn open_call(&mut self, output: usize, kind: &str, item: &Value) -> usize {
        if let Some(slot) = self.calls.iter().position(|call| call.output == output) {
            return slot;
        }
        let text = |key: &str| item.get(key).and_then(Value::as_str);
        let host = kind == "function_call";
        let (id, name) = if host {
            self.host_calls += 1;
            (
                self.ids.id(text("call_id")),
                text("name").unwrap_or_default().to_string(),
            )
        } else {
            let name = match (kind, text("name")) {
                ("mcp_call", Some(name)) => name,
                _ => builtin::name_of(kind).unwrap_or(kind),
            };
            (self.ids.id(text("id")), name.to_string())
        };
        let index = self.new_index();
        self.emit(Event::ToolCallStart {
            id: id.clone(),
            name: name.clone(),
        });
        self.calls.push(OpenCall {
            output,
            id,
            name,
            index,
            arguments: String::new(),
            host,
        });
        self.calls.len() - 1
    }

    /// `output_item.done`: the item is complete.
    pub(super) fn item_done(&mut self, output: usize, item: &Value) -> Result<(), ProviderError> {
        let kind = item.get("type").and_then(Value::as_str).unwrap_or_default();
        match kind {
            "message" => {
                let parts = item.get("content").and_then(Value::as_array);
                for (part, content) in parts.into_iter().flatten().enumerate() {
                    let refusal = content.get("type").and_then(Value::as_str) == Some("refusal");
                    let key = if refusal { "refusal" } else { "text" };
                    self.refused |= refusal;
                    if let Some(text) = content.get(key).and_then(Value::as_str) {
                        self.whole_text(output, part, text);
                    }
                    // Annotations the stream did not announce one by one.
                    let annotations = content.get("annotations").and_then(Value::as_array);
                    if let Some(annotations) = annotations.filter(|list| !list.is_empty()) {
                        let slot = self.text_block(output, part);
                        let (index, seen) = (self.texts[slot].index, self.texts[slot].annotations);
                        self.texts[slot].annotations = annotations.len().max(seen);
                        for annotation in annotations.iter().skip(seen) {
                            self.annotation(annotation, index);
                        }
                    }
                }
            }
            "reasoning" => {
                let has_text = self
                    .reasoning
                    .iter()
                    .any(|block| block.output == output && block.emitted);
                if !has_text {
                    for (key, summary) in [("summary", true), ("content", false)] {
                        let parts = item.get(key).and_then(Value::as_array);
                        for (at, part) in parts.into_iter().flatten().enumerate() {
                            if let Some(text) = part.get("text").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                                self.reasoning_text(output, (summary, at), text, false);
                            }
                        }
                    }
                }
                let signature = item.get("encrypted_content").and_then(Value::as_str);
                if let Some(signature) = signature.filter(|s| !s.is_empty()) {
                    let slot = self.reasoning_block(output);
                    let index = self.reasoning[slot].index;
                    self.emit(Event::ReasoningSignature {
                        index,
                        signature: signature.to_string(),
                    });
                }
            }
            "function_call" => {
                let slot = self.open_call(output, kind, item);
                if let Some(arguments) = item.get("arguments").and_then(Value::as_str) {
                    self.whole_arguments(output, arguments);
                }
                let call = self.calls.remove(slot);
                self.finish_call(call);
            }
            _ if builtin::name_of(kind).is_some() => {
                let slot = self.open_call(output, kind, item);
                let call = self.calls.remove(slot);
                let found = builtin::read(kind, item, call.index);
                self.emit(Event::ToolCall {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    input: found.input,
                    executed_by: ExecutedBy::Provider,
                    signature: None,
                });
                self.emit(Event::ToolResult {
                    id: call.id,
                    name: call.name,
                    result: found.result,
                });
                for mut source in found.sources {
                    self.sources += 1;
                    source.id = self.sources.to_string();
                    self.emit(Event::Source(source));
                }
            }
            _ => {
                let index = self.new_index();
                self.emit(Event::Opaque {
                    index,
                    provider: NAME.to_string(),
                    data: item.clone(),
                });
            }
        }
        Ok(())
    }

    /// A host call's arguments are complete: its `ToolCall`, or, when they are not JSON, an
    /// `Aborted` result holding them.
    fn finish_call(&mut self, call: OpenCall) {
        let trimmed = call.arguments.trim();
        let input = if trimmed.is_empty() {
            Ok(json!({}))
        } else {
            serde_json::from_str::<Value>(trimmed).map(|input| if input.is_null() { json!({}) } else { input })
        };
        match input {
            Ok(input) => self.emit(Event::ToolCall {
                id: call.id,
                name: call.name,
                input,
                executed_by: ExecutedBy::Host,
                signature: None,
            }),
            Err(_) => self.abort_call(call, "the call's arguments are not valid JSON"),
        }
    }

    /// End a started call that will not complete.
    pub(super) fn abort_call(&mut self, call: OpenCall, why: &str) {
        if call.host {
            self.host_calls = self.host_calls.saturating_sub(1);
        }
        let result =
            ToolResult::with_status(ToolStatus::Aborted, why).with_metadata(json!({ "arguments": call.arguments }));
        self.emit(Event::ToolResult {
            id: call.id,
            name: call.name,
            result,
        });
    }
}
