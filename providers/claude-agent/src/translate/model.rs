//! Model messages: `stream_event` partials through patchbay-anthropic's translator, and
//! `assistant` lines translated from their blocks when no partials came; steps between them.

use patchbay_core::{Event, ExecutedBy, FinishReason, ProviderError, ToolResult, Usage, tool::ToolStatus};
use serde_json::{Value, json};

use super::Translator;
use crate::NAME;
use crate::blocks::usage_of;
use patchbay_anthropic::sources::{citation_source, result_sources};

impl Translator {
    pub(super) fn stream_event(&mut self, line: &Value) -> Result<(), ProviderError> {
        if Self::is_subagent(line) {
            // A sub-agent's partials; its whole messages follow (see `subagent.rs`).
            return Ok(());
        }
        let Some(event) = line.get("event") else {
            return Err(ProviderError::protocol("a `stream_event` line without `event`"));
        };
        if event.get("type").and_then(Value::as_str) == Some("message_start") {
            self.close_unstreamed();
            if let Some(old) = self.message.take()
                && !old.is_done()
            {
                tracing::warn!("a model message started before the previous one ended; dropping the rest of it");
                self.abandon_open_calls("the model message was restarted");
            }
            self.flush_step();
            if let Some(id) = event.pointer("/message/id").and_then(Value::as_str) {
                self.streamed.insert(id.to_string());
            }
            self.current_usage = Usage::default();
            let mut message = patchbay_anthropic::Translator::new().with_model(self.requested_model.clone());
            if self.output.is_some() {
                message = message.with_output_tool(super::OUTPUT_TOOL);
            }
            self.message = Some(message);
        }
        self.note_output_block(event);
        let Some(message) = self.message.as_mut() else {
            tracing::debug!("a stream event outside a message");
            return Ok(());
        };
        message.push_value(event)?;
        let mut events = Vec::new();
        while let Some(event) = message.next_event() {
            events.push(event);
        }
        for event in events {
            self.message_event(event);
        }
        Ok(())
    }

    fn message_event(&mut self, event: Event) {
        if let Event::ToolCallDelta { id, .. } | Event::ToolCall { id, .. } = &event
            && self.abandoned.contains(id)
        {
            tracing::debug!(id, "input of a call already answered as abandoned");
            return;
        }
        match event {
            Event::Started { response_id, model, .. } => self.start(response_id, Some(model)),
            Event::Usage(usage) => {
                self.current_usage = usage;
                let total = self.finished_usage.sum(&usage);
                self.emit(Event::Usage(total));
            }
            Event::Finish { reason, usage, .. } => {
                self.finished_usage.accumulate(&usage);
                self.current_usage = Usage::default();
                self.last_reason = Some(reason.clone());
                self.pending_step = Some((reason, usage));
            }
            Event::ToolCallStart { id, name } => {
                let (name, by) = self.map_tool_name(&name);
                self.tools.insert(id.clone(), (name.clone(), by));
                self.open_calls.push(id.clone());
                self.emit(Event::ToolCallStart { id, name });
            }
            Event::ToolCall {
                id,
                name,
                input,
                executed_by,
                ..
            } => {
                let (name, by) = if executed_by == ExecutedBy::Host {
                    self.map_tool_name(&name)
                } else {
                    (name, executed_by)
                };
                self.call(id, name, input, by);
            }
            other => self.emit(other),
        }
    }

    fn call(&mut self, id: String, name: String, input: Value, by: ExecutedBy) {
        self.open_calls.retain(|open| *open != id);
        self.tools.insert(id.clone(), (name.clone(), by));
        self.last_tool = Some(name.clone());
        self.note_subagent_call(&id, &name, &input);
        if by == ExecutedBy::Host && !self.running.remove(&id) {
            let orphan = self.orphans.iter().position(|(n, i, _)| *n == name && *i == input);
            match orphan {
                Some(pos) => {
                    let (_, _, result) = self.orphans.remove(pos);
                    self.host_results.insert(id.clone(), result);
                }
                None => self.host_calls.push((id.clone(), name.clone(), input.clone())),
            }
        }
        self.emit(Event::ToolCall {
            id,
            name,
            input,
            executed_by: by,
            signature: None,
        });
    }

    /// Answers every call whose input never completed with an `Aborted` result: the CLI dropped
    /// the message it belonged to (`why`), so its `ToolCall` will never come.
    pub(super) fn abandon_open_calls(&mut self, why: &str) {
        for id in std::mem::take(&mut self.open_calls) {
            let text = format!("The call was abandoned before its input was complete: {why}.");
            self.abandon(id, ToolResult::with_status(ToolStatus::Aborted, text));
        }
    }

    /// Closes the started call `id` with `result` (status `Aborted`, marked abandoned).
    pub(super) fn abandon(&mut self, id: String, mut result: ToolResult) {
        self.open_calls.retain(|open| *open != id);
        result.status = ToolStatus::Aborted;
        result.metadata = Some(match result.metadata.take() {
            Some(metadata) => json!({ "abandoned": true, "result": metadata }),
            None => json!({ "abandoned": true }),
        });
        let name = self.tools.get(&id).map(|(name, _)| name.clone()).unwrap_or_default();
        self.abandoned.insert(id.clone());
        self.emit(Event::ToolResult { id, name, result });
    }

    /// A streamed `content_block_start` of the output tool: the object is on its way as text.
    fn note_output_block(&mut self, event: &Value) {
        let Some(output) = self.output.as_mut() else {
            return;
        };
        let block = event
            .get("content_block")
            .filter(|_| event["type"] == "content_block_start");
        if let Some(block) = block.filter(|b| b["type"] == "tool_use" && b["name"] == super::OUTPUT_TOOL) {
            output.delivered = true;
            output.calls.extend(block["id"].as_str().map(str::to_string));
        }
    }

    /// A model message ended earlier and another begins (or tools ran): that was a step.
    fn flush_step(&mut self) {
        if let Some((reason, usage)) = self.pending_step.take() {
            // A step never ends with a call left open (a message the CLI dropped mid-call).
            self.abandon_open_calls("the step ended first");
            self.next_index = 0;
            self.emit(Event::StepFinished {
                step: self.step,
                reason,
                usage,
            });
            self.step += 1;
        }
    }

    pub(super) fn close_unstreamed(&mut self) {
        if let Some((_, _, usage, tools)) = self.unstreamed.take() {
            let reason = if tools {
                FinishReason::ToolUse
            } else {
                FinishReason::Stop
            };
            self.finished_usage.accumulate(&usage);
            self.last_reason = Some(reason.clone());
            self.pending_step = Some((reason, usage));
        }
    }

    pub(super) fn assistant(&mut self, line: &Value) -> Result<(), ProviderError> {
        let message = line.get("message").unwrap_or(&Value::Null);
        if Self::is_subagent(line) {
            self.subagent_message(line, patchbay_core::Role::Assistant);
            return Ok(());
        }
        if message.get("model").and_then(Value::as_str) == Some("<synthetic>") {
            // An API error the CLI turned into a message: its request id names the failed call.
            if let Some(id) = line.get("request_id").and_then(Value::as_str) {
                self.api_request_id = Some(id.to_string());
            }
            for block in message.get("content").and_then(Value::as_array).into_iter().flatten() {
                if let Some(text) = block.get("text").and_then(Value::as_str) {
                    self.synthetic.push(text.to_string());
                }
            }
            return Ok(());
        }
        let id = message.get("id").and_then(Value::as_str).unwrap_or("").to_string();
        if self.streamed.contains(&id) {
            return Ok(());
        }
        // No partials for this message: translate its blocks.
        if self.unstreamed.as_ref().is_none_or(|(open, ..)| *open != id) {
            self.close_unstreamed();
            self.flush_step();
            self.unstreamed = Some((id.clone(), 0, Usage::default(), false));
            self.unstreamed_sources = 0;
        }
        let model = message.get("model").and_then(Value::as_str).map(str::to_string);
        self.start(Some(id), model);
        if let Some(usage) = message.get("usage") {
            let usage = usage_of(usage);
            if let Some(open) = self.unstreamed.as_mut() {
                open.2 = usage;
            }
        }
        for block in message.get("content").and_then(Value::as_array).into_iter().flatten() {
            let index = match self.unstreamed.as_mut() {
                Some(open) => {
                    open.1 += 1;
                    open.1 - 1
                }
                None => 0,
            };
            self.full_block(index, block);
        }
        Ok(())
    }

    fn full_block(&mut self, index: usize, block: &Value) {
        let str_of = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or("").to_string();
        match block.get("type").and_then(Value::as_str).unwrap_or("") {
            "text" => {
                self.emit(Event::TextDelta {
                    index,
                    text: str_of("text"),
                });
                for citation in block.get("citations").and_then(Value::as_array).into_iter().flatten() {
                    let id = self.next_source_id();
                    let source = citation_source(id, index, citation.clone(), patchbay_anthropic::NAME);
                    self.emit(Event::Source(source));
                }
            }
            "thinking" => {
                self.emit(Event::ReasoningDelta {
                    index,
                    text: str_of("thinking"),
                });
                let signature = str_of("signature");
                if !signature.is_empty() {
                    self.emit(Event::ReasoningSignature { index, signature });
                }
            }
            "redacted_thinking" => self.emit(Event::RedactedReasoning {
                index,
                data: str_of("data"),
            }),
            "tool_use" if self.output.is_some() && str_of("name") == super::OUTPUT_TOOL => {
                let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
                if let Some(output) = self.output.as_mut() {
                    output.delivered = true;
                    output.calls.insert(str_of("id"));
                }
                self.emit(Event::TextDelta {
                    index,
                    text: input.to_string(),
                });
            }
            "tool_use" => {
                let (name, by) = self.map_tool_name(&str_of("name"));
                let id = str_of("id");
                if let Some(open) = self.unstreamed.as_mut() {
                    open.3 = true;
                }
                self.emit(Event::ToolCallStart {
                    id: id.clone(),
                    name: name.clone(),
                });
                let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
                self.call(id, name, input, by);
            }
            _ => {
                self.emit(Event::Opaque {
                    index,
                    provider: NAME.into(),
                    data: block.clone(),
                });
                for source in result_sources(block, index, patchbay_anthropic::NAME, || self.next_source_id()) {
                    self.emit(Event::Source(source));
                }
            }
        }
    }

    fn next_source_id(&mut self) -> String {
        self.unstreamed_sources += 1;
        self.unstreamed_sources.to_string()
    }
}
