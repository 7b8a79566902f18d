//! [`McpCaller`]: the MCP client that called a tool, which the tool can ask for input
//! (elicitation) or for a model's answer (sampling) while it runs.
// Sampling is deprecated by rmcp for 2026-07-28 (SEP-2577); it is the 2025-11-25 way.
#![allow(deprecated)]

use std::fmt;

use patchbay_core::ToolContext;
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult, ElicitationSchema,
    Implementation, SamplingMessage,
};
use rmcp::{Peer, RoleServer};
use serde_json::Value;

use crate::error::Error;

/// The MCP client that called the running tool, found in the tool's
/// [`ToolContext::extensions`] when the tool server runs it for an MCP call
/// (`McpCaller::of(cx)`). A tool asks it for what only the client has: the user's input
/// (`elicitation/create`) or a model's answer (`sampling/createMessage`). Both are requests
/// from the server to the client, so they need a server that can reach the client while the
/// call runs: stdio, or HTTP with [`stateful`](crate::ToolServerBuilder::stateful) sessions.
///
/// ```no_run
/// use patchbay_core::{ToolContext, ToolResult};
/// use patchbay_mcp::McpCaller;
///
/// async fn ask(cx: &ToolContext) -> ToolResult {
///     let Some(caller) = McpCaller::of(cx) else {
///         return ToolResult::error("not called over MCP");
///     };
///     let schema = serde_json::json!({
///         "type": "object",
///         "properties": {"name": {"type": "string"}},
///         "required": ["name"]
///     });
///     match caller.elicit("Who are you?", schema).await {
///         Ok(answer) => ToolResult::text(format!("{:?}: {:?}", answer.action, answer.content)),
///         Err(error) => ToolResult::error(error.to_string()),
///     }
/// }
/// ```
#[derive(Clone)]
pub struct McpCaller {
    peer: Peer<RoleServer>,
}

impl fmt::Debug for McpCaller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpCaller")
            .field("client", &self.client().map(|client| client.name))
            .finish_non_exhaustive()
    }
}

impl McpCaller {
    pub(crate) fn new(peer: Peer<RoleServer>) -> Self {
        Self { peer }
    }

    /// The caller of the tool running with `cx`, when it runs for an MCP call.
    pub fn of(cx: &ToolContext) -> Option<&Self> {
        cx.extensions.get::<Self>()
    }

    /// The client's name and version, as it announced them in `initialize`.
    pub fn client(&self) -> Option<Implementation> {
        self.peer.peer_info().map(|info| info.client_info.clone())
    }

    /// Whether the client declared the `elicitation` capability.
    pub fn can_elicit(&self) -> bool {
        self.peer
            .peer_info()
            .is_some_and(|info| info.capabilities.elicitation.is_some())
    }

    /// Whether the client declared the `sampling` capability.
    pub fn can_sample(&self) -> bool {
        self.peer
            .peer_info()
            .is_some_and(|info| info.capabilities.sampling.is_some())
    }

    /// Ask the user, through the client, for the fields of `requested_schema` (a JSON Schema
    /// object of primitive properties, with defaults, enums and titled choices as MCP allows:
    /// `elicitation/create` in form mode) with `message` shown. The answer says whether the
    /// user accepted (`content` then holds the fields), declined or cancelled. Fails with
    /// [`Error::Caller`] when the client cannot elicit, the schema is not one MCP allows, or
    /// the request fails.
    pub async fn elicit(&self, message: impl Into<String>, requested_schema: Value) -> Result<ElicitResult, Error> {
        if !self.can_elicit() {
            return Err(Error::caller("the client did not declare the elicitation capability"));
        }
        let requested_schema: ElicitationSchema = serde_json::from_value(requested_schema)
            .map_err(|error| Error::caller(format!("not an elicitation schema: {error}")))?;
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: message.into(),
            requested_schema,
        };
        self.peer
            .create_elicitation(params)
            .await
            .map_err(|error| Error::caller(format!("elicitation/create failed: {error}")))
    }

    /// Ask the client's model for a message (`sampling/createMessage`). Fails with
    /// [`Error::Caller`] when the client cannot sample or the request fails.
    pub async fn sample(&self, params: CreateMessageRequestParams) -> Result<CreateMessageResult, Error> {
        if !self.can_sample() {
            return Err(Error::caller("the client did not declare the sampling capability"));
        }
        self.peer
            .create_message(params)
            .await
            .map_err(|error| Error::caller(format!("sampling/createMessage failed: {error}")))
    }

    /// Ask the client's model to answer `prompt` (one user message, at most `max_tokens`):
    /// the text of its answer (empty when it answered without text).
    pub async fn sample_text(&self, prompt: impl Into<String>, max_tokens: u32) -> Result<String, Error> {
        let params = CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], max_tokens);
        let result = self.sample(params).await?;
        Ok(result
            .message
            .content
            .iter()
            .filter_map(|block| block.as_text().map(|text| text.text.as_str()))
            .collect())
    }
}
