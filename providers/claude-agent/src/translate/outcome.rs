//! The end of a turn: `user` tool results, and the `result` line (`Finish` or a typed error).

use patchbay_core::kit::kind_for_status;
use patchbay_core::{ErrorKind, Event, FinishReason, ProviderError};
use serde_json::{Value, json};

use super::Translator;
use crate::NAME;
use crate::blocks::{kind_from_text, result_of, usage_of};

impl Translator {
    pub(super) fn user(&mut self, line: &Value) {
        if Self::is_subagent(line) {
            self.subagent_message(line, patchbay_core::Role::User);
            return;
        }
        let Some(blocks) = line.pointer("/message/content").and_then(Value::as_array) else {
            tracing::debug!("a user line without tool results");
            return;
        };
        self.close_unstreamed();
        for block in blocks {
            if block.get("type").and_then(Value::as_str) != Some("tool_result") {
                continue;
            }
            let id = block
                .get("tool_use_id")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if self.output.as_ref().is_some_and(|output| output.calls.contains(&id)) {
                // The CLI's acknowledgement of the structured output: not a host-visible call.
                continue;
            }
            if self.abandoned.contains(&id) {
                tracing::debug!(id, "a tool result for a call abandoned before its input was complete");
                continue;
            }
            let result = self.host_results.remove(&id).unwrap_or_else(|| result_of(block));
            if self.open_calls.contains(&id) {
                // The CLI answers a call whose input never completed: it was abandoned.
                self.abandon(id, result);
                continue;
            }
            let name = self.tools.get(&id).map(|(name, _)| name.clone()).unwrap_or_default();
            self.start(None, None);
            self.emit(Event::ToolResult { id, name, result });
        }
    }

    pub(super) fn result(&mut self, line: &Value) -> Result<(), ProviderError> {
        self.close_unstreamed();
        self.abandon_open_calls("the run ended");
        let subtype = line.get("subtype").and_then(Value::as_str).unwrap_or("");
        let is_error = line.get("is_error").and_then(Value::as_bool).unwrap_or(false);
        if let Some(id) = line.get("session_id").and_then(Value::as_str) {
            self.session_id = Some(id.to_string());
        }
        let reason = match subtype {
            "error_max_turns" => Some(FinishReason::Other("max_turns".into())),
            "error_max_budget_usd" => Some(FinishReason::Other("max_budget_usd".into())),
            _ if self.prompt_blocked => Some(FinishReason::Other("blocked".into())),
            _ => None,
        };
        if reason.is_none() && (is_error || subtype.starts_with("error")) {
            self.usage_before_error(line);
            return Err(self.result_error(line, subtype));
        }
        let reason = reason
            .or_else(|| self.pending_step.take().map(|(reason, _)| reason))
            .or_else(|| self.last_reason.clone())
            .or_else(|| {
                line.get("stop_reason")
                    .and_then(Value::as_str)
                    .map(patchbay_anthropic::finish_reason)
            })
            .unwrap_or(FinishReason::Stop);
        let mut usage = self.finished_usage;
        if usage.is_empty()
            && let Some(total) = line.get("usage")
        {
            usage = usage_of(total);
        }
        usage.cost_usd = line.get("total_cost_usd").and_then(Value::as_f64).or(usage.cost_usd);
        self.start(None, None);
        self.deliver_structured_output(line);
        if let (Some(messages), Some(session)) = (self.marker_messages, self.session_id.clone()) {
            let data = json!({ "type": "session", "session_id": session, "messages": messages });
            self.emit(Event::Opaque {
                index: 0,
                provider: NAME.into(),
                data,
            });
        }
        let metrics = self.recorder.finish();
        self.queue.push_back(Event::Finish { reason, usage, metrics });
        self.done = true;
        Ok(())
    }

    /// The turn pauses for a person's decision on these calls: `ApprovalRequested`, then
    /// `Finish` (reason `ToolUse`) with the usage so far. The translator stays in the turn
    /// (the CLI waits on the unanswered permission) for [`Translator::resume`].
    pub fn pause(&mut self, calls: Vec<patchbay_core::context::ApprovalRequest>) {
        self.close_unstreamed();
        self.start(None, None);
        // The message that asked for the tools ended: this `Finish` ends its step.
        if self.pending_step.take().is_some() {
            self.step += 1;
        }
        let usage = std::mem::take(&mut self.finished_usage);
        self.emit(Event::ApprovalRequested { calls });
        let metrics = self.recorder.finish();
        self.queue.push_back(Event::Finish {
            reason: FinishReason::ToolUse,
            usage,
            metrics,
        });
        self.started = false;
        self.next_index = 0;
    }

    /// The paused turn goes on in a later call: `Started` at once (the resumed stream's first
    /// event), usage counted from the pause, and that call's session marker.
    pub fn resume(&mut self, marker_messages: Option<usize>) {
        self.recorder = patchbay_core::kit::MetricsRecorder::start();
        self.marker_messages = marker_messages;
        self.start(None, None);
    }

    /// A run that ends in an error after output still reports what it used: the usage the
    /// messages reported (the `result`'s own when they reported none) with the run's
    /// `total_cost_usd`, as a last `Usage`. A run that failed before any output stays a bare
    /// error (a retry layer may retry it).
    fn usage_before_error(&mut self, line: &Value) {
        if !self.started {
            return;
        }
        let mut usage = self.finished_usage.sum(&self.current_usage);
        if usage.is_empty()
            && let Some(total) = line.get("usage")
        {
            usage = usage_of(total);
        }
        usage.cost_usd = line.get("total_cost_usd").and_then(Value::as_f64).or(usage.cost_usd);
        if !usage.is_empty() {
            self.emit(Event::Usage(usage));
        }
    }

    /// The `result`'s `structured_output` as the final text block, unless the output tool's
    /// block already delivered it.
    fn deliver_structured_output(&mut self, line: &Value) {
        let Some(output) = self.output.as_mut() else {
            return;
        };
        let Some(object) = line.get("structured_output").filter(|v| !v.is_null()) else {
            return;
        };
        if output.delivered {
            return;
        }
        output.delivered = true;
        let index = self.next_index;
        self.emit(Event::TextDelta {
            index,
            text: object.to_string(),
        });
    }

    fn result_error(&self, line: &Value, subtype: &str) -> ProviderError {
        let text = line
            .get("result")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| {
                line.get("errors")
                    .and_then(Value::as_array)
                    .map(|errors| errors.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("; "))
            });
        let text = match (text.filter(|t| !t.is_empty()), self.synthetic.is_empty()) {
            (Some(text), _) => text,
            (None, false) => self.synthetic.join(" "),
            (None, true) => format!("the CLI reported `{subtype}`"),
        };
        let status = line
            .get("api_error_status")
            .and_then(Value::as_u64)
            .and_then(|s| u16::try_from(s).ok());
        let mid_message = self.message.as_ref().is_some_and(|m| !m.is_done());
        let kind = match status {
            Some(status) => kind_for_status(status),
            None if mid_message => ErrorKind::Protocol,
            None if subtype == "error_during_execution" => ErrorKind::Process,
            None => kind_from_text(&text),
        };
        let mut error = ProviderError::new(kind, text);
        if let Some(status) = status {
            error = error.with_status(status);
        }
        if let Some(code) = line.get("api_error_type").and_then(Value::as_str) {
            error = error.with_provider_code(code);
        }
        if let Some(id) = &self.api_request_id {
            error = error.with_request_id(id.clone());
        }
        error
    }
}
