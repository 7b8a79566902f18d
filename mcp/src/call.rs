//! Calling a server's tool: the `tools/call` request with the call's id and a progress token,
//! its progress routed to the tool's reporter, a 2026-07-28 `input_required` answer fulfilled
//! through the host's handlers and sent again, cancellation, and the patchbay result.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use patchbay_core::{Tool, ToolContext, ToolResult, ToolSpec};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotification, CancelledNotificationParam,
    ClientRequest, InputRequiredResult, JsonObject, RequestId, RequestMetaObject, ServerResult,
};
use rmcp::service::PeerRequestOptions;
use rmcp::{Peer, RoleClient};
use serde_json::Value;
use tracing::Instrument;

use crate::connection::McpClient;
use crate::convert::{META_TOOL_USE_ID, from_call_tool_result};
use crate::interact::fulfil;

/// The most `input_required` rounds one call goes through (rmcp's default too).
pub(crate) const MAX_INPUT_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;

/// What one `tools/call` request came back with.
enum Answer {
    Complete(CallToolResult),
    InputRequired(InputRequiredResult),
    Unsupported,
}

/// Sends `notifications/cancelled` for a request abandoned before its answer.
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let peer = self.peer.clone();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let param = CancelledNotificationParam::new(Some(id), Some("cancelled by the caller".into()));
                let _ = peer.send_notification(CancelledNotification::new(param).into()).await;
            });
        }
    }
}

impl McpClient {
    /// Call the server's tool `name` (its own, unprefixed name). The call is cancelled (the
    /// server gets `notifications/cancelled`) when `signal` fires or `timeout` runs out.
    ///
    /// The call id in `cx.tool_use_id`, if any, travels in `_meta["patchbay/toolUseId"]`; when
    /// `cx.progress` listens, the server's `notifications/progress` for the call reach it. An
    /// `input_required` answer (MCP 2026-07-28) is answered through the set's elicitation and
    /// sampling handlers and the call sent again, up to 10 rounds. While the server is being
    /// restarted the call fails at once with a result that says so.
    pub async fn call_tool(&self, name: &str, input: Value, cx: &ToolContext, timeout: Option<Duration>) -> ToolResult {
        let peer = match self.peer(&format!("`{name}`")) {
            Ok(peer) => peer,
            Err(message) => return ToolResult::error(message),
        };
        let arguments = match input {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return ToolResult::error(format!(
                    "MCP tool `{name}` takes a JSON object as input, got {}",
                    json_kind(&other)
                ));
            }
        };
        let mut params = CallToolRequestParams::new(name.to_owned());
        params.arguments = arguments;
        if let Some(id) = &cx.tool_use_id {
            let mut meta = JsonObject::new();
            meta.insert(META_TOOL_USE_ID.into(), Value::from(id.as_str()));
            params.meta = Some(RequestMetaObject::from(meta));
        }
        let span = tracing::info_span!("patchbay.mcp.call", server = %self.name, tool = %name);
        let call = maybe_timeout(timeout, self.call_rounds(&peer, params, cx)).instrument(span);
        let outcome = tokio::select! {
            outcome = call => outcome,
            _ = cx.signal.cancelled() => return ToolResult::aborted(),
        };
        match outcome {
            Some(Ok(result)) => from_call_tool_result(result),
            Some(Err(error)) if peer.is_transport_closed() => ToolResult::error(format!(
                "MCP server `{}` stopped during `{name}` ({error}); it is being restarted. The call was not sent again: it may have run",
                self.name
            )),
            Some(Err(error)) => ToolResult::error(format!("MCP server `{}`: `{name}` failed: {error}", self.name)),
            None => ToolResult::error(format!(
                "MCP server `{}`: `{name}` timed out after {:?} and was cancelled",
                self.name,
                timeout.unwrap_or_default()
            )),
        }
    }

    /// The call, again with the answers for as long as the server asks for input.
    async fn call_rounds(
        &self,
        peer: &Peer<RoleClient>,
        mut params: CallToolRequestParams,
        cx: &ToolContext,
    ) -> Result<CallToolResult, String> {
        for round in 0..MAX_INPUT_ROUNDS {
            match self.call_once(peer, params.clone(), cx).await? {
                Answer::Complete(result) => return Ok(result),
                Answer::Unsupported => {
                    return Err("the server answered with a task, which patchbay does not support".into());
                }
                Answer::InputRequired(asked) => {
                    let requests = asked.input_requests.unwrap_or_default();
                    if requests.is_empty() {
                        // Only state to echo: the server is not ready yet.
                        tokio::time::sleep(Duration::from_millis(50 << round.min(5))).await;
                    }
                    let answers = fulfil(&self.shared.interact, &self.name, requests).await?;
                    params.input_responses = (!answers.is_empty()).then_some(answers);
                    params.request_state = asked.request_state;
                }
            }
        }
        Err(format!("the server asked for input more than {MAX_INPUT_ROUNDS} times"))
    }

    /// One `tools/call` request, its progress routed to `cx.progress`; dropping it cancels it.
    async fn call_once(
        &self,
        peer: &Peer<RoleClient>,
        params: CallToolRequestParams,
        cx: &ToolContext,
    ) -> Result<Answer, String> {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|error| error.to_string())?;
        let _route = cx.progress.is_active().then(|| {
            self.shared
                .route_progress(handle.progress_token.clone(), cx.progress.clone())
        });
        let mut cancel = CancelOnDrop {
            peer: peer.clone(),
            id: Some(handle.id.clone()),
        };
        let response = handle.await_response().await;
        cancel.id = None;
        match response.map_err(|error| error.to_string())? {
            ServerResult::CallToolResult(result) => Ok(Answer::Complete(result)),
            ServerResult::InputRequiredResult(result) => Ok(Answer::InputRequired(result)),
            ServerResult::CreateTaskResult(_) => Ok(Answer::Unsupported),
            _ => Err("unexpected answer to tools/call".into()),
        }
    }
}

async fn maybe_timeout<F: std::future::Future>(timeout: Option<Duration>, future: F) -> Option<F::Output> {
    match timeout {
        Some(timeout) => tokio::time::timeout(timeout, future).await.ok(),
        None => Some(future.await),
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A tool of a connected MCP server.
pub(crate) struct McpTool {
    spec: ToolSpec,
    remote: String,
    client: Arc<McpClient>,
    call_timeout: Option<Duration>,
}

impl McpTool {
    pub(crate) fn new(spec: ToolSpec, remote: String, client: Arc<McpClient>, call_timeout: Option<Duration>) -> Self {
        Self {
            spec,
            remote,
            client,
            call_timeout,
        }
    }
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn execute(&self, input: Value, cx: &ToolContext) -> ToolResult {
        self.client.call_tool(&self.remote, input, cx, self.call_timeout).await
    }
}
