//! The control protocol on stdin/stdout: requests we send (`initialize`, `interrupt`...), and
//! requests the CLI sends us (`can_use_tool` for the approval handler, `mcp_message` for the
//! in-process host tool server, answered with rmcp's model types).

use std::sync::Arc;

use patchbay_core::{
    ToolContext, ToolResult, ToolSet, context::Approval, context::ApprovalHandler, context::ApprovalRequest,
};
use patchbay_mcp::rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, ErrorCode, ErrorData, Implementation, InitializeResult, ListToolsResult,
    ServerCapabilities, ServerJsonRpcMessage, ServerResult,
};
use patchbay_mcp::{spec_to_mcp, to_call_tool_result};
use serde_json::{Value, json};

/// The id of our `initialize` request.
pub(crate) const INIT_ID: &str = "patchbay_init";

/// A control request line we send (`{"type":"control_request","request_id","request"}`).
pub fn request_line(request_id: &str, request: Value) -> String {
    json!({ "type": "control_request", "request_id": request_id, "request": request }).to_string()
}

/// A success answer to a CLI control request.
pub fn success_line(request_id: &str, response: Value) -> String {
    json!({
        "type": "control_response",
        "response": { "subtype": "success", "request_id": request_id, "response": response },
    })
    .to_string()
}

/// An error answer to a CLI control request.
pub fn error_line(request_id: &str, error: &str) -> String {
    json!({
        "type": "control_response",
        "response": { "subtype": "error", "request_id": request_id, "error": error },
    })
    .to_string()
}

/// A user turn line.
pub fn user_line(content: Value, session_id: &str) -> String {
    json!({
        "type": "user",
        "message": { "role": "user", "content": content },
        "parent_tool_use_id": null,
        "session_id": session_id,
    })
    .to_string()
}

/// The answer to `can_use_tool` for an approval. A run pauses on [`Approval::Pause`] instead
/// of answering; where it cannot (the CLI never said its session), the call is denied.
pub fn permission_response(approval: &Approval, original_input: &Value) -> Value {
    match approval {
        Approval::Allow => json!({ "behavior": "allow", "updatedInput": original_input }),
        Approval::AllowWithInput(input) => json!({ "behavior": "allow", "updatedInput": input }),
        Approval::Deny { message } => json!({ "behavior": "deny", "message": message }),
        Approval::Pause => json!({ "behavior": "deny", "message": "this call waits for a person's approval" }),
    }
}

/// What a `can_use_tool` request asks about: the call, its tool's host name and its input.
pub fn approval_request(request: &Value, tool_name: String) -> ApprovalRequest {
    ApprovalRequest {
        tool_use_id: request
            .get("tool_use_id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        tool_name,
        input: request.get("input").cloned().unwrap_or_else(|| json!({})),
    }
}

/// Ask the approval handler about a call; no handler allows.
pub async fn decide(
    handler: Option<&Arc<dyn ApprovalHandler>>,
    request: &ApprovalRequest,
    cx: &ToolContext,
) -> Approval {
    match handler {
        Some(handler) => handler.approve(request, cx).await,
        None => Approval::Allow,
    }
}

/// What an `mcp_message` needs done: answered at once, or a tool to run.
pub enum McpWork {
    /// The JSON-RPC answer (or `None` for a notification).
    Reply(Option<Value>),
    /// Run tool `name` with `input`, then answer with [`call_reply`].
    Call {
        /// The JSON-RPC id to answer.
        id: patchbay_mcp::rmcp::model::RequestId,
        /// The host tool's name.
        name: String,
        /// The arguments.
        input: Value,
    },
}

/// Route one JSON-RPC message for the in-process host server (rmcp's types do the protocol).
pub fn route_mcp(message: &Value, tools: &ToolSet, server_name: &str) -> McpWork {
    let parsed: Result<ClientJsonRpcMessage, _> = serde_json::from_value(message.clone());
    let message = match parsed {
        Ok(message) => message,
        Err(e) => {
            let id = message.get("id").cloned();
            return McpWork::Reply(Some(json!({
                "jsonrpc": "2.0", "id": id,
                "error": { "code": -32600, "message": format!("invalid JSON-RPC message: {e}") },
            })));
        }
    };
    let Some((request, id)) = message.into_request() else {
        // Notifications (`notifications/initialized`...) and stray responses need no answer.
        return McpWork::Reply(None);
    };
    let result = match request {
        ClientRequest::InitializeRequest(init) => {
            let info = InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
                .with_protocol_version(init.params.protocol_version.clone())
                .with_server_info(Implementation::new(server_name.to_string(), env!("CARGO_PKG_VERSION")));
            Ok(ServerResult::InitializeResult(info))
        }
        ClientRequest::ListToolsRequest(_) => {
            let tools = tools.specs().map(spec_to_mcp).collect();
            Ok(ServerResult::ListToolsResult(ListToolsResult::with_all_items(tools)))
        }
        ClientRequest::CallToolRequest(call) => {
            let input = Value::Object(call.params.arguments.clone().unwrap_or_default());
            return McpWork::Call {
                id,
                name: call.params.name.to_string(),
                input,
            };
        }
        ClientRequest::PingRequest(_) => Ok(ServerResult::empty(())),
        other => Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("method `{}` is not served by the host tool server", other.method()),
            None,
        )),
    };
    let reply = match result {
        Ok(result) => ServerJsonRpcMessage::response(result, id),
        Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
    };
    McpWork::Reply(serde_json::to_value(reply).ok())
}

/// The JSON-RPC answer to a tool call.
pub fn call_reply(id: patchbay_mcp::rmcp::model::RequestId, result: &ToolResult) -> Option<Value> {
    let reply = ServerJsonRpcMessage::response(ServerResult::CallToolResult(to_call_tool_result(result)), id);
    serde_json::to_value(reply).ok()
}

/// The JSON-RPC error answer naming an unknown tool.
pub fn unknown_tool_reply(id: patchbay_mcp::rmcp::model::RequestId, name: &str) -> Option<Value> {
    let error = ErrorData::invalid_params(format!("unknown tool `{name}`"), None);
    serde_json::to_value(ServerJsonRpcMessage::error(error, Some(id))).ok()
}
