//! The MCP side of `call_tool`: one streamable-HTTP client per server per session, kept.

use std::collections::HashMap;

use agent_client_protocol::v1::schema::McpServer;
use patchbay_http::reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::Value;

/// A session's MCP clients, by server name, connected on first use.
#[derive(Default)]
pub(crate) struct McpClients {
    servers: Vec<McpServer>,
    clients: HashMap<String, RunningService<RoleClient, ()>>,
}

impl std::fmt::Debug for McpClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClients")
            .field("servers", &self.servers)
            .field("connected", &self.clients.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl McpClients {
    pub(crate) fn new(servers: Vec<McpServer>) -> Self {
        Self {
            servers,
            clients: HashMap::new(),
        }
    }

    /// Call tool `name` on server `server`: the MCP `CallToolResult` as JSON, or why not.
    pub(crate) async fn call(&mut self, server: &str, name: &str, input: &Value) -> Result<Value, String> {
        if !self.clients.contains_key(server) {
            let client = self.connect(server).await?;
            self.clients.insert(server.to_owned(), client);
        }
        let client = self
            .clients
            .get(server)
            .ok_or_else(|| format!("MCP server `{server}` is not connected"))?;
        let mut params = CallToolRequestParams::new(name.to_owned());
        params.arguments = match input {
            Value::Object(map) => Some(map.clone()),
            Value::Null => None,
            other => return Err(format!("tool input must be a JSON object, got {other}")),
        };
        let result = client
            .call_tool(params)
            .await
            .map_err(|e| format!("MCP server `{server}`: `{name}` failed: {e}"))?;
        serde_json::to_value(result).map_err(|e| e.to_string())
    }

    async fn connect(&self, server: &str) -> Result<RunningService<RoleClient, ()>, String> {
        let config = self
            .servers
            .iter()
            .find_map(|s| match s {
                McpServer::Http(http) if http.name == server => Some(Ok(http)),
                McpServer::Sse(sse) if sse.name == server => Some(Err("sse")),
                McpServer::Stdio(stdio) if stdio.name == server => Some(Err("stdio")),
                _ => None,
            })
            .ok_or_else(|| format!("no MCP server `{server}` in the session"))?
            .map_err(|kind| format!("MCP server `{server}` is a {kind} server; the fake agent only calls http ones"))?;
        let mut headers = HashMap::new();
        for header in &config.headers {
            let name = HeaderName::try_from(header.name.as_str())
                .map_err(|_| format!("MCP server `{server}`: bad header name `{}`", header.name))?;
            let value = HeaderValue::try_from(header.value.as_str())
                .map_err(|_| format!("MCP server `{server}`: bad value for header `{}`", header.name))?;
            headers.insert(name, value);
        }
        let http = patchbay_http::client_builder()
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        let transport = StreamableHttpClientTransport::with_client(
            http,
            StreamableHttpClientTransportConfig::with_uri(config.url.as_str()).custom_headers(headers),
        );
        ().serve(transport)
            .await
            .map_err(|e| format!("MCP server `{server}`: handshake failed: {e}"))
    }
}

/// The text blocks of a `CallToolResult` (as JSON), as ACP tool call content.
pub(crate) fn text_content(result: &Value) -> Vec<Value> {
    result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .map(text_block)
        .collect()
}

/// One text block of ACP tool call content.
pub(crate) fn text_block(text: &str) -> Value {
    serde_json::json!({"type": "content", "content": {"type": "text", "text": text}})
}
