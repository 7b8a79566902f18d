//! Serving: the MCP endpoint and the JSON API on one loopback listener, and MCP over stdio.

use patchbay::mcp::{ToolServer, ToolServerBuilder};
use patchbay::{RequestContext, mcp::Error as McpError};

use crate::service::{CALLER_ENV, CALLER_HEADER, CALLER_METADATA_KEY, McpEndpoint, Orchestrator};
use crate::tools::agent_session_tools;

/// How to serve over HTTP.
#[derive(Clone, Default)]
pub struct HttpOptions {
    /// The port of `127.0.0.1` (0: any free one).
    pub port: u16,
    /// The bearer token (`None`: a fresh random one).
    pub token: Option<String>,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

/// The MCP tool server for `orchestrator` (not started), with the caller header mapped.
pub fn mcp_builder(orchestrator: &Orchestrator) -> ToolServerBuilder {
    ToolServer::builder(agent_session_tools(orchestrator))
        .allow_anonymous()
        .metadata_header(CALLER_HEADER, CALLER_METADATA_KEY)
}

/// Start the MCP endpoint (`/mcp`) and the JSON API (see [`crate::api`]) on `127.0.0.1`, and
/// tell runs where the MCP endpoint is.
pub async fn serve_http(orchestrator: &Orchestrator, options: HttpOptions) -> Result<ToolServer, McpError> {
    let mut builder = mcp_builder(orchestrator)
        .port(options.port)
        .with_routes(crate::api::routes(orchestrator.clone()));
    if let Some(token) = options.token {
        builder = builder.with_token(token);
    }
    let server = builder.start().await?;
    orchestrator.set_mcp_endpoint(McpEndpoint {
        url: server.url().to_owned(),
        token: server.token().to_owned(),
    });
    Ok(server)
}

/// Serve the seven tools over stdin/stdout until the client closes stdin; the caller's
/// session name is `AGENT_SESSION_NAME` of this process.
pub async fn serve_stdio(orchestrator: &Orchestrator) -> Result<(), McpError> {
    let mut context = RequestContext::new();
    if let Ok(caller) = std::env::var(CALLER_ENV)
        && !caller.trim().is_empty()
    {
        context = context.with_metadata(CALLER_METADATA_KEY, caller.trim());
    }
    mcp_builder(orchestrator).serve_stdio(&context).await
}
