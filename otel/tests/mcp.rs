//! Host tools served over MCP stay in the caller's trace: the tool server's spans are children of
//! the span that registered the call's context (an agent runtime's model call).

use patchbay_core::{Message, RequestContext, ToolContext, tool::ToolStatus};
use patchbay_mcp::{McpClientSet, ToolServer};
use serde_json::json;
use tracing::Instrument;

use crate::support::{Memory, attribute, names, serial, span, weather_tools};

#[tokio::test]
async fn a_tool_served_over_mcp_is_a_child_of_the_model_call_that_registered_it() {
    let _serial = serial().await;
    let memory = Memory::new();
    memory
        .record(async {
            let server = ToolServer::start(weather_tools()).await.expect("server starts");
            let call = patchbay_core::telemetry::chat_span("claude-agent", "sonnet", &[Message::user("hi")], None);
            // The provider registers the call's context inside its model call's span.
            let guard = call.in_scope(|| server.register(&RequestContext::new()));
            let connections = McpClientSet::new()
                .with_server(guard.server_config("host"))
                .connect()
                .instrument(tracing::info_span!("elsewhere"))
                .await;
            assert_eq!(connections.failed(), []);
            let tools = connections.tools().await;
            let tool = tools.get("get_weather").expect("listed");
            let cx = ToolContext::new().with_tool_use_id("toolu_9");
            // The CLI's request arrives on the server's own task, outside the model call's span.
            let result = tool
                .execute(json!({"city": "Paris"}), &cx)
                .instrument(tracing::info_span!("elsewhere"))
                .await;
            assert_eq!(result.status, ToolStatus::Completed, "{result:?}");
            connections.close().await;
            drop(guard);
            drop(call);
            server.shutdown().await;
        })
        .await;

    let spans = memory.finished_spans();
    let chat = span(&spans, "chat sonnet");
    let served = span(&spans, "patchbay.mcp.tool");
    let tool = span(&spans, "execute_tool get_weather");
    assert_eq!(
        served.parent_span_id,
        chat.span_context.span_id(),
        "{:?}",
        names(&spans)
    );
    assert_eq!(tool.parent_span_id, served.span_context.span_id());
    assert_eq!(tool.span_context.trace_id(), chat.span_context.trace_id(), "one trace");
    assert_eq!(attribute(tool, "gen_ai.tool.call.id").as_deref(), Some("toolu_9"));
}
