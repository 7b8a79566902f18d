//! A plain rmcp server (no patchbay layers) doing the same work as our `echo`: the baseline of
//! the benchmark, and a server whose tool list changes (`grow` adds a tool and notifies).

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tokio_util::sync::CancellationToken;

use crate::common::start_rmcp;

#[derive(Clone, Default)]
pub(crate) struct Plain {
    extra: Arc<Mutex<Vec<String>>>,
}

fn schema(properties: serde_json::Value) -> Arc<JsonObject> {
    let value = serde_json::json!({"type": "object", "properties": properties});
    Arc::new(value.as_object().cloned().unwrap_or_default())
}

impl ServerHandler for Plain {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = vec![
            Tool::new(
                "echo",
                "Echo the message back.",
                schema(serde_json::json!({"message": {"type": "string"}})),
            ),
            Tool::new("grow", "Add a tool.", schema(serde_json::json!({}))),
        ];
        let extra = self.extra.lock().map(|names| names.clone()).unwrap_or_default();
        tools.extend(
            extra
                .into_iter()
                .map(|name| Tool::new(name, "Added later.", schema(serde_json::json!({})))),
        );
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        match request.name.as_ref() {
            "echo" => {
                let message = request
                    .arguments
                    .as_ref()
                    .and_then(|args| args.get("message"))
                    .and_then(|m| m.as_str())
                    .unwrap_or_default()
                    .to_owned();
                Ok(CallToolResult::success(vec![ContentBlock::text(message)]).into())
            }
            "grow" => {
                if let Ok(mut extra) = self.extra.lock() {
                    let name = format!("extra_{}", extra.len() + 1);
                    extra.push(name);
                }
                let _ = context.peer.notify_tool_list_changed().await;
                Ok(CallToolResult::success(vec![ContentBlock::text("grown")]).into())
            }
            other => Ok(CallToolResult::success(vec![ContentBlock::text(other.to_owned())]).into()),
        }
    }
}

/// Serve `Plain` on 127.0.0.1; returns the URL and the token that stops it.
pub(crate) async fn start_plain(stateful: bool) -> (String, CancellationToken) {
    start_rmcp(Plain::default(), stateful).await
}
