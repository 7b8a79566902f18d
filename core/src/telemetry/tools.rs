//! The spans of tool executions: a host tool's (`function`) and a provider-run tool's
//! (`extension`), with their arguments and results.

use tracing::field::Empty;

use super::capture::captures_content;
use super::content::tool_result;
use crate::tool::{ToolResult, ToolStatus};

/// The span of one tool execution: `execute_tool` (exported as `execute_tool {name}`).
/// [`record_tool_result`] sets its status when the tool returns.
pub fn tool_span(name: &str, description: &str, call_id: Option<&str>) -> tracing::Span {
    let span = tracing::Span::current();
    tool_span_in(&span, "function", name, description, call_id)
}

/// The span of a tool the provider runs itself (see [`SpanRecorder`]), a child of `parent`:
/// `gen_ai.tool.type` `extension` (the agent side runs it, not the host).
pub(super) fn provider_tool_span(parent: &tracing::Span, name: &str, call_id: &str) -> tracing::Span {
    tool_span_in(parent, "extension", name, "", Some(call_id))
}

/// An `execute_tool` span under `parent`, with `gen_ai.tool.type` `kind`.
fn tool_span_in(
    parent: &tracing::Span,
    kind: &'static str,
    name: &str,
    description: &str,
    call_id: Option<&str>,
) -> tracing::Span {
    let span = tracing::info_span!(
        parent: parent,
        "execute_tool",
        otel.name = %format_args!("execute_tool {name}"),
        otel.kind = "internal",
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %name,
        gen_ai.tool.type = kind,
        gen_ai.tool.description = Empty,
        gen_ai.tool.call.id = Empty,
        gen_ai.tool.call.arguments = Empty,
        gen_ai.tool.call.result = Empty,
        patchbay.tool.status = Empty,
        error.type = Empty,
    );
    if !description.is_empty() {
        span.record("gen_ai.tool.description", description);
    }
    if let Some(id) = call_id {
        span.record("gen_ai.tool.call.id", id);
    }
    span
}

/// Record the tool's input on its span (only while content is captured).
pub fn record_tool_arguments(span: &tracing::Span, input: &serde_json::Value) {
    if captures_content() && !span.is_disabled() {
        span.record("gen_ai.tool.call.arguments", input.to_string().as_str());
    }
}

/// Record how a tool call ended: `patchbay.tool.status`, and for a call that did not complete
/// `error.type` (`failed`, `denied`, `aborted`) and the error status; the result itself only
/// while content is captured.
pub fn record_tool_result(span: &tracing::Span, result: &ToolResult) {
    if span.is_disabled() {
        return;
    }
    let status = match result.status {
        ToolStatus::Completed => "completed",
        ToolStatus::Failed => "failed",
        ToolStatus::Denied => "denied",
        ToolStatus::Aborted => "aborted",
    };
    span.record("patchbay.tool.status", status);
    if result.status != ToolStatus::Completed {
        span.record("error.type", status);
        span.record("otel.status_code", "error");
        span.record(
            "otel.status_description",
            format!("the tool call ended {status}").as_str(),
        );
    }
    if captures_content() {
        span.record("gen_ai.tool.call.result", tool_result(result).as_str());
    }
}
