//! Message-level events: `message_start` (the response id, model, initial usage and any
//! complete blocks), `message_delta` (cumulative usage, the stop reason) and `message_stop`
//! (the `Finish` event).

use std::borrow::Cow;

use patchbay_core::{Event, FinishReason, ProviderError};
use serde::Deserialize;
use serde_json::{Value, json};

use super::blocks::tool_input;
use super::{Open, RawEvent, Translator};
use crate::NAME;
use crate::wire::{Block, StreamEvent};

/// The patchbay finish reason of an Anthropic `stop_reason`.
pub fn finish_reason(stop_reason: &str) -> FinishReason {
    match stop_reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "tool_use" => FinishReason::ToolUse,
        "refusal" => FinishReason::Refusal,
        other => FinishReason::Other(other.to_string()),
    }
}

impl Translator {
    /// `Started` (once), the initial usage, and the complete blocks a message may carry.
    pub(super) fn message_start(&mut self, event: StreamEvent<'_>) -> Result<(), ProviderError> {
        let message = event.message.map(|m| *m).unwrap_or_default();
        if self.started {
            if self.content_seen {
                return Err(Self::protocol(
                    "a second `message_start` arrived inside a message that had already begun",
                ));
            }
            tracing::debug!("ignoring a repeated message_start");
            return Ok(());
        }
        self.started = true;
        if let Some(model) = message.model.as_deref().filter(|m| !m.is_empty()) {
            self.model = model.to_string();
        }
        let event = Event::Started {
            response_id: message.id.map(Cow::into_owned),
            model: self.model.clone(),
            session_id: None,
            warnings: std::mem::take(&mut self.warnings),
        };
        self.emit(event);
        if let Some(usage) = &message.usage {
            self.usage.update(&usage.to_usage());
            if !self.usage.is_empty() {
                let event = Event::Usage(self.usage);
                self.emit(event);
            }
        }
        if let Some(reason) = message.stop_reason {
            self.stop_reason = Some(reason.into_owned());
        }
        // A message may arrive with complete blocks (programmatic tool calls, non-streamed
        // answers): each is a block that starts and stops at once.
        for (index, value) in message.content.iter().enumerate() {
            let block = Block::deserialize(value)
                .map_err(|e| Self::protocol(format!("content block {index} of `message_start` is malformed: {e}")))?;
            self.start_block(index, block, || Some(value.clone()))?;
            self.stop_block(index)?;
        }
        Ok(())
    }

    /// The stop reason and the cumulative usage of a `message_delta`, and what the wire says
    /// about the stop beyond its reason (the stop sequence that fired, a refusal's
    /// `stop_details`) as one `Opaque {"type": "stop_details"}`.
    pub(super) fn message_delta(&mut self, event: StreamEvent<'_>, raw: RawEvent<'_>) {
        if let Some(reason) = event
            .delta
            .as_ref()
            .and_then(|d| d.stop_reason.as_deref().map(|r| r.as_ref()))
        {
            self.stop_reason = Some(reason.to_string());
        }
        if let Some(usage) = event.usage.as_deref() {
            self.usage.update(&usage.to_usage());
            let event = Event::Usage(self.usage);
            self.emit(event);
            if let Some(counts) = usage.server_tool_use.as_ref().filter(|c| has_nonzero(c)) {
                let index = self.next_index();
                let data = json!({ "type": "server_tool_usage", "server_tool_use": counts });
                self.emit(Event::Opaque {
                    index,
                    provider: NAME.into(),
                    data,
                });
            }
        }
        if let Some(data) = raw
            .value()
            .and_then(|mut v| v.get_mut("delta").map(Value::take))
            .and_then(stop_details)
        {
            let index = self.next_index();
            self.emit(Event::Opaque {
                index,
                provider: NAME.into(),
                data,
            });
        }
    }

    /// Close the blocks still open (a tool call with incomplete input is an error), then
    /// queue `Finish`.
    pub(super) fn message_stop(&mut self) -> Result<(), ProviderError> {
        let open: Vec<usize> = self
            .blocks
            .iter()
            .enumerate()
            .filter(|(_, b)| matches!(b, Some(open) if !matches!(open, Open::Done)))
            .map(|(i, _)| i)
            .collect();
        for index in open {
            if let Some(Some(Open::Tool {
                id, json, start_input, ..
            })) = self.blocks.get(index)
                && tool_input(id, json, start_input.clone()).is_err()
            {
                let reason = self.stop_reason.as_deref().unwrap_or("none");
                return Err(Self::protocol(format!(
                    "the response ended (stop_reason `{reason}`) inside tool call `{id}`: its input is incomplete"
                )));
            }
            self.stop_block(index)?;
        }
        let reason = match self.stop_reason.as_deref() {
            // The forced output tool answered and no host tool waits for a result: done.
            Some("tool_use") if self.output_answered && !self.host_calls => FinishReason::Stop,
            Some(reason) => finish_reason(reason),
            None => FinishReason::Other("unknown".into()),
        };
        let mut metrics = self.recorder.finish();
        metrics.events = self.events + 1;
        metrics.text_chars = self.text_chars;
        metrics.reasoning_chars = self.reasoning_chars;
        self.queue.push_back(Event::Finish {
            reason,
            usage: self.usage,
            metrics,
        });
        self.done = true;
        Ok(())
    }
}

/// `{"type": "stop_details", "stop_sequence", "stop_details"}` from a `message_delta`'s delta,
/// with the fields it has (a non-empty stop sequence, a `stop_details` object); `None` if neither.
fn stop_details(mut delta: Value) -> Option<Value> {
    let mut data = serde_json::Map::new();
    if let Some(sequence) = delta
        .get_mut("stop_sequence")
        .filter(|s| s.as_str().is_some_and(|s| !s.is_empty()))
    {
        data.insert("stop_sequence".into(), sequence.take());
    }
    if let Some(details) = delta.get_mut("stop_details").filter(|d| d.is_object()) {
        data.insert("stop_details".into(), details.take());
    }
    if data.is_empty() {
        return None;
    }
    data.insert("type".into(), "stop_details".into());
    Some(Value::Object(data))
}

fn has_nonzero(counts: &Value) -> bool {
    match counts {
        Value::Object(map) => map.values().any(|v| v.as_u64().is_some_and(|n| n > 0)),
        _ => false,
    }
}
