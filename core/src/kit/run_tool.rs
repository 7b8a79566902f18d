//! A host tool's run: its span, its panics and the call's cancellation turned into results.

use serde_json::Value;

use crate::tool::{Tool, ToolContext, ToolResult};

/// Run a tool the way every executor in patchbay does (the agent loop, the MCP tool server, an
/// agent runtime's in-process host tools): a panic becomes a `Failed` result instead of taking the
/// caller down, and cancellation of `cx.signal` ends the call with an `Aborted` result. The
/// tool's own future is polled first, so a tool that watches its signal returns its own result.
///
/// The call runs inside an `execute_tool` span (exported to OpenTelemetry as
/// `execute_tool {name}`, see [`telemetry::tool_span`](crate::telemetry::tool_span)) that
/// records the call id and how the call ended.
pub async fn run_tool(tool: &dyn Tool, input: Value, cx: &ToolContext) -> ToolResult {
    use futures::FutureExt;
    use tracing::Instrument;
    let spec = tool.spec();
    let name = &spec.name;
    let span = crate::telemetry::tool_span(name, &spec.description, cx.tool_use_id.as_deref());
    crate::telemetry::record_tool_arguments(&span, &input);
    let execute = std::panic::AssertUnwindSafe(tool.execute(input, cx)).catch_unwind();
    let run = async {
        tokio::select! {
            biased;
            result = execute => result.unwrap_or_else(|_| {
                tracing::error!(tool = %name, "tool panicked");
                ToolResult::error(format!("tool `{name}` panicked"))
            }),
            _ = cx.signal.cancelled() => ToolResult::aborted(),
        }
    };
    let result = run.instrument(span.clone()).await;
    crate::telemetry::record_tool_result(&span, &result);
    result
}
