//! Filling a span's response attributes from the events that pass.

use std::collections::HashMap;
use std::time::Instant;

use crate::error::{ErrorKind, ProviderError};
use crate::event::{Event, Usage};
use crate::tool::ToolResult;

use super::capture::captures_content;
use super::content::{OutputMessages, finish_reason};
use super::tools::{provider_tool_span, record_tool_arguments, record_tool_result};

/// Fills in a [`chat_span`](super::chat_span)'s or [`agent_span`](super::agent_span)'s response
/// attributes from the stream's items: the response id and model from `Started`, the time to the
/// first chunk of content, the usage (the last one reported), the finish reason, and for an error
/// `error.type` (the [`ErrorKind`](crate::ErrorKind)) with the error status. The answer itself is
/// kept for `gen_ai.output.messages` only while content is captured.
///
/// Tools the provider runs itself (`ToolCall` with [`ExecutedBy::Provider`](crate::ExecutedBy):
/// an agent runtime's own tools, a server tool) get an `execute_tool` span of their own, a
/// child of this one, from their `ToolCall` to their `ToolResult` as the stream passes them
/// (`gen_ai.tool.type` `extension`; aborted if the stream fails first); host tools have theirs
/// from [`run_tool`](crate::kit::run_tool).
#[derive(Debug)]
pub struct SpanRecorder {
    span: tracing::Span,
    started: Instant,
    first_chunk: bool,
    time_to_first_chunk: bool,
    usage: Usage,
    output: Option<OutputMessages>,
    /// The open spans of provider-run tools by call id; `None`: no such spans.
    tools: Option<HashMap<String, tracing::Span>>,
}

impl SpanRecorder {
    /// A recorder for `span`, its clock starting now (when the request is about to go out).
    pub fn new(span: tracing::Span) -> Self {
        let output = (captures_content() && !span.is_disabled()).then(OutputMessages::default);
        Self {
            span,
            started: Instant::now(),
            first_chunk: false,
            time_to_first_chunk: true,
            usage: Usage::default(),
            output,
            tools: Some(HashMap::new()),
        }
    }

    /// Leave out `gen_ai.response.time_to_first_chunk` (an agent run is not one request).
    pub fn without_time_to_first_chunk(mut self) -> Self {
        self.time_to_first_chunk = false;
        self
    }

    /// Open no spans for provider-run tools (an agent run: its model calls' spans have them).
    pub fn without_tool_spans(mut self) -> Self {
        self.tools = None;
        self
    }

    /// The span.
    pub fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// Note one item of the stream.
    pub fn observe(&mut self, item: Result<&Event, &ProviderError>) {
        if self.span.is_disabled() {
            return;
        }
        match item {
            Ok(event) => self.event(event),
            Err(error) => self.error(error),
        }
    }

    fn event(&mut self, event: &Event) {
        if let Some(output) = &mut self.output {
            output.push(event);
        }
        match event {
            Event::Started {
                response_id,
                model,
                session_id,
                ..
            } => {
                if let Some(id) = response_id {
                    self.span.record("gen_ai.response.id", id.as_str());
                }
                if !model.is_empty() {
                    self.span.record("gen_ai.response.model", model.as_str());
                }
                if let Some(session) = session_id {
                    self.span.record("gen_ai.conversation.id", session.as_str());
                }
            }
            Event::ToolCall {
                id,
                name,
                input,
                executed_by,
                ..
            } => {
                self.first_chunk();
                if let (Some(tools), false) = (&mut self.tools, executed_by.is_host()) {
                    let span = provider_tool_span(&self.span, name, id);
                    record_tool_arguments(&span, input);
                    tools.insert(id.clone(), span);
                }
            }
            Event::ToolResult { id, result, .. } => {
                if let Some(span) = self.tools.as_mut().and_then(|tools| tools.remove(id)) {
                    record_tool_result(&span, result);
                }
            }
            Event::TextDelta { .. }
            | Event::ReasoningDelta { .. }
            | Event::RedactedReasoning { .. }
            | Event::ToolCallStart { .. } => self.first_chunk(),
            Event::Usage(usage) => self.usage = *usage,
            Event::Finish { reason, usage, .. } => {
                let usage = if usage.is_empty() { self.usage } else { *usage };
                self.record_usage(&usage);
                let reasons = serde_json::to_string(&[finish_reason(reason)]).unwrap_or_default();
                self.span.record("gen_ai.response.finish_reasons", reasons.as_str());
                if let Some(output) = self.output.take() {
                    let messages = output.finish(reason);
                    self.span.record("gen_ai.output.messages", messages.as_str());
                }
            }
            _ => {}
        }
    }

    fn first_chunk(&mut self) {
        if !self.first_chunk {
            self.first_chunk = true;
            if self.time_to_first_chunk {
                let seconds = self.started.elapsed().as_secs_f64();
                self.span.record("gen_ai.response.time_to_first_chunk", seconds);
            }
        }
    }

    fn error(&mut self, error: &ProviderError) {
        // Provider-run tools still open end with the stream: aborted.
        for (_, span) in self.tools.iter_mut().flat_map(HashMap::drain) {
            record_tool_result(&span, &ToolResult::aborted());
        }
        let usage = self.usage;
        self.record_usage(&usage);
        self.span.record("error.type", error_type(error.kind()).as_str());
        self.span.record("otel.status_code", "error");
        self.span.record("otel.status_description", error.message());
    }

    fn record_usage(&self, usage: &Usage) {
        let span = &self.span;
        if usage.input.is_some() || usage.cache_read.is_some() || usage.cache_write.is_some() {
            let all = [usage.input, usage.cache_read, usage.cache_write]
                .into_iter()
                .flatten()
                .fold(0u64, u64::saturating_add);
            span.record("gen_ai.usage.input_tokens", int(all));
        }
        if let Some(output) = usage.output {
            span.record("gen_ai.usage.output_tokens", int(output));
        }
        if let Some(read) = usage.cache_read {
            span.record("gen_ai.usage.cache_read.input_tokens", int(read));
        }
        if let Some(write) = usage.cache_write {
            span.record("gen_ai.usage.cache_creation.input_tokens", int(write));
        }
        if let Some(reasoning) = usage.reasoning {
            span.record("gen_ai.usage.reasoning.output_tokens", int(reasoning));
        }
        if let Some(cost) = usage.cost_usd {
            span.record("patchbay.cost_usd", cost);
        }
    }
}

/// A count as a signed integer: OpenTelemetry attributes have no unsigned type, and
/// `tracing-opentelemetry` would turn a `u64` field into text.
fn int(count: u64) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

/// An error kind as `error.type`: its name in snake case (`rate_limited`, `context_too_long`).
pub(super) fn error_type(kind: ErrorKind) -> String {
    let mut out = String::new();
    for (i, c) in kind.as_str().chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}
