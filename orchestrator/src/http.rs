//! Serving: the MCP endpoint, the JSON API and the web view on one loopback listener, and MCP
//! over stdio.

use patchbay::mcp::{ToolServer, ToolServerBuilder};
use patchbay::{RequestContext, mcp::Error as McpError};

use crate::api::{StreamBudget, StreamLimits};
use crate::scope::ScopedTokens;
use crate::secret::fresh_secret;
use crate::service::{CALLER_ENV, CALLER_HEADER, CALLER_METADATA_KEY, McpEndpoint, Orchestrator};
use crate::tools::agent_session_tools;
use crate::web::{WebLogin, WebView};

/// How to serve over HTTP.
#[derive(Clone, Default)]
pub struct HttpOptions {
    /// The port of `127.0.0.1` (0: any free one).
    pub port: u16,
    /// The bearer token (`None`: a fresh random one).
    pub token: Option<String>,
    /// How many event streams may be open at once, per credential and in all (see
    /// [`crate::api`], "Streams").
    pub streams: StreamLimits,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("port", &self.port)
            .field("streams", &self.streams)
            .finish_non_exhaustive()
    }
}

/// The MCP tool server for `orchestrator` (not started), with the caller header mapped.
pub fn mcp_builder(orchestrator: &Orchestrator) -> ToolServerBuilder {
    ToolServer::builder(agent_session_tools(orchestrator))
        .server_info("patchbay-orchestrator", env!("CARGO_PKG_VERSION"))
        .max_request_bytes(orchestrator.max_request_bytes())
        .allow_anonymous()
        .metadata_header(CALLER_HEADER, CALLER_METADATA_KEY)
}

/// What [`serve`] started: the listener and its web view.
#[derive(Debug)]
pub struct Serving {
    /// The listener: `/mcp`, the JSON API and the web view (its URL, token, shutdown).
    pub server: ToolServer,
    /// The web view's address and one-time login links.
    pub web: WebLogin,
}

/// Start the MCP endpoint (`/mcp`), the JSON API (see [`crate::api`]) and the web view (see
/// [`crate::web`]) on `127.0.0.1`, and tell runs where the MCP endpoint is. The bearer token
/// opens all three; a browser logs in with [`WebLogin::login_url`] (or pastes the token at
/// `/login`) and then uses a cookie. Runs get scoped tokens of their own sessions instead,
/// which open `/mcp` only, for their own subtree (see [`crate::scope`]).
pub async fn serve(orchestrator: &Orchestrator, options: HttpOptions) -> Result<Serving, McpError> {
    let token = options.token.unwrap_or_else(fresh_secret);
    let web = WebView::new(token.clone());
    let streams = StreamBudget::new(options.streams, Some(web.token_check()));
    let tokens = ScopedTokens::new();
    let server = mcp_builder(orchestrator)
        .port(options.port)
        .with_token(token)
        .with_routes(crate::api::routes_with(orchestrator.clone(), streams))
        .with_public_routes(web.routes())
        .authorize_with(tokens.authorizer_or(web.authorizer()))
        .start()
        .await?;
    orchestrator.set_mcp_endpoint(McpEndpoint {
        url: server.url().to_owned(),
        tokens,
    });
    let web = web.bound(server.addr());
    Ok(Serving { server, web })
}

/// [`serve`], keeping only the listener (the web view is served all the same; a browser logs
/// in with the token at `/login`).
pub async fn serve_http(orchestrator: &Orchestrator, options: HttpOptions) -> Result<ToolServer, McpError> {
    Ok(serve(orchestrator, options).await?.server)
}

/// Serve the tools over stdin/stdout until the client closes stdin; the caller's
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
