//! The client set: connects MCP servers concurrently and turns their tools into patchbay tools.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use patchbay_core::{
    Event, RequestContext, Signal, ToolSet, ToolSource, Warning,
    agent::{AttachedTools, LiveTools},
    context::McpServerConfig,
    event::McpFailure,
};
use rmcp::model::ProtocolVersion;

use crate::call::McpTool;
use crate::child::StderrTail;
use crate::connection::{McpClient, Recipe, ToolNaming};
use crate::error::Error;
use crate::handler::Shared;
use crate::interact::{ElicitationHandler, Interact, SamplingHandler};
use crate::notices::Notices;
use crate::oauth::client::OAuthClient;
use crate::supervise::{RestartPolicy, watch};

#[derive(Clone)]
struct Options {
    connect_timeout: Duration,
    call_timeout: Option<Duration>,
    naming: ToolNaming,
    protocol_version: Option<ProtocolVersion>,
    interact: Interact,
    restart: RestartPolicy,
    /// OAuth per server name (`None`: every HTTP server without its own).
    oauth: Vec<(Option<String>, OAuthClient)>,
}

impl Options {
    fn oauth_for(&self, server: &str) -> Option<&OAuthClient> {
        let named = self.oauth.iter().find(|(name, _)| name.as_deref() == Some(server));
        named
            .or_else(|| self.oauth.iter().find(|(name, _)| name.is_none()))
            .map(|(_, client)| client)
    }
}

/// The default bound on connecting to one server (handshake plus tool listing).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A set of MCP servers whose tools a run can use; a [`ToolSource`] for [`patchbay_core::Agent`].
///
/// Connecting starts every server concurrently, each bounded by the connect timeout (10 s by
/// default). A server that is down, refuses, hangs or fails its handshake is reported (a
/// `mcp_server_failed` warning and an entry in `McpConnected.failed`) and the rest go on.
/// Header values (and stdio env values) may ask for request metadata: `${metadata.project_id}`
/// is replaced by the request's `project_id` (left out, with a warning, when the key is missing).
///
/// Stdio servers run in their own process group, with the request's environment and working
/// directory. Closing is guaranteed: [`McpConnections::close`] closes stdin, waits, then sends
/// SIGTERM and SIGKILL to the group; dropping the connections does the same in the background,
/// or kills the group at once outside a runtime. Unix only.
///
/// ```no_run
/// # async fn demo() {
/// use patchbay_core::{context::McpServerConfig, context::McpTransport};
/// use patchbay_mcp::McpClientSet;
/// let set = McpClientSet::new().with_server(McpServerConfig {
///     name: "everything".into(),
///     transport: McpTransport::Stdio { command: "mcp-server-everything".into(), args: vec!["stdio".into()], env: Default::default() },
/// });
/// let connections = set.connect().await;
/// let tools = connections.tools().await;
/// println!("{} tools, failed: {:?}", tools.len(), connections.failed());
/// connections.close().await;
/// # }
/// ```
#[derive(Clone)]
pub struct McpClientSet {
    servers: Vec<McpServerConfig>,
    options: Options,
}

impl Default for McpClientSet {
    fn default() -> Self {
        Self {
            servers: Vec::new(),
            options: Options {
                connect_timeout: DEFAULT_CONNECT_TIMEOUT,
                call_timeout: None,
                naming: ToolNaming::Plain,
                protocol_version: None,
                interact: Interact::default(),
                restart: RestartPolicy::default(),
                oauth: Vec::new(),
            },
        }
    }
}

impl fmt::Debug for McpClientSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpClientSet")
            .field("servers", &self.servers)
            .field("connect_timeout", &self.options.connect_timeout)
            .field("call_timeout", &self.options.call_timeout)
            .field("naming", &self.options.naming)
            .field("protocol_version", &self.options.protocol_version)
            .field("elicitation", &self.options.interact.elicitation.is_some())
            .field("sampling", &self.options.interact.sampling.is_some())
            .field("restart", &self.options.restart)
            .field("oauth", &self.options.oauth)
            .finish()
    }
}

impl McpClientSet {
    /// An empty set (10 s connect timeout, no call timeout, plain tool names).
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a server.
    pub fn with_server(mut self, server: McpServerConfig) -> Self {
        self.servers.push(server);
        self
    }

    /// Add servers.
    pub fn with_servers(mut self, servers: impl IntoIterator<Item = McpServerConfig>) -> Self {
        self.servers.extend(servers);
        self
    }

    /// Bound each server's connection (handshake plus tool listing).
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.options.connect_timeout = timeout;
        self
    }

    /// Bound each `tools/call`; on expiry the MCP request is cancelled and the tool fails.
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.options.call_timeout = Some(timeout);
        self
    }

    /// Choose how tools are named for the model.
    pub fn with_naming(mut self, naming: ToolNaming) -> Self {
        self.options.naming = naming;
        self
    }

    /// The protocol version to propose in `initialize` (default: rmcp's newest,
    /// 2026-07-28). The server answers with the version it speaks and patchbay goes on in
    /// that one ([`McpClient::protocol_version`]); propose `2025-11-25` to a peer that
    /// insists on being asked for it (the conformance suite does).
    pub fn with_protocol_version(mut self, version: ProtocolVersion) -> Self {
        self.options.protocol_version = Some(version);
        self
    }

    /// Answer servers' elicitation requests (form mode) with `handler` (default: decline,
    /// and the capability is not announced). [`AcceptDefaults`](crate::AcceptDefaults) accepts
    /// with the schema's defaults.
    pub fn with_elicitation(mut self, handler: impl ElicitationHandler + 'static) -> Self {
        self.options.interact.elicitation = Some(Arc::new(handler));
        self
    }

    /// Answer servers' sampling requests with `handler` (default: refused, and the capability
    /// is not announced). [`ProviderSampling`](crate::ProviderSampling) answers with a provider.
    pub fn with_sampling(mut self, handler: impl SamplingHandler + 'static) -> Self {
        self.options.interact.sampling = Some(Arc::new(handler));
        self
    }

    /// How a server that stopped is restarted (default: [`RestartPolicy::default`]).
    pub fn with_restart(mut self, policy: RestartPolicy) -> Self {
        self.options.restart = policy;
        self
    }

    /// Authorize with `client` (OAuth 2.1) when the HTTP server named `server` asks for it
    /// (a `401`, or a `403` asking for more scope). A server without OAuth that answers `401`
    /// fails with [`Error::Unauthorized`](crate::Error::Unauthorized).
    pub fn with_oauth(mut self, server: impl Into<String>, client: OAuthClient) -> Self {
        self.options.oauth.push((Some(server.into()), client));
        self
    }

    /// Authorize with `client` for every HTTP server (configured here or in the request's
    /// context) that has no [`with_oauth`](Self::with_oauth) of its own. Tokens are kept per
    /// server URL.
    pub fn with_oauth_for_all(mut self, client: OAuthClient) -> Self {
        self.options.oauth.push((None, client));
        self
    }

    /// The configured servers.
    pub fn servers(&self) -> &[McpServerConfig] {
        &self.servers
    }

    /// Connect the configured servers.
    pub async fn connect(&self) -> McpConnections {
        self.connect_with(&RequestContext::default(), &Signal::new()).await
    }

    /// Connect the configured servers plus `context.mcp_servers`, with the context's metadata
    /// (for header templates), environment and working directory (for stdio servers).
    /// Cancelling `signal` abandons the servers still connecting (reported as failed).
    pub async fn connect_with(&self, context: &RequestContext, signal: &Signal) -> McpConnections {
        let mut warnings = Vec::new();
        let mut seen = HashSet::new();
        let mut servers = Vec::new();
        for server in self.servers.iter().chain(&context.mcp_servers) {
            if seen.insert(server.name.clone()) {
                servers.push(server);
            } else {
                warnings.push(Warning::new(
                    "duplicate_mcp_server",
                    format!(
                        "MCP server `{}` is configured twice; the later one was ignored",
                        server.name
                    ),
                ));
            }
        }
        let timeout = self.options.connect_timeout;
        let notices = Arc::new(Notices::default());
        let attempts = servers.iter().map(|server| {
            let stderr = StderrTail::default();
            let shared = Shared::new(
                server.name.clone(),
                notices.clone(),
                self.options.interact.clone(),
                self.options.protocol_version.clone(),
            );
            let oauth = self.options.oauth_for(&server.name);
            // The user's time to authorize does not count against the connect timeout.
            let timeout = timeout + oauth.map(OAuthClient::authorization_budget).unwrap_or_default();
            let recipe = Recipe {
                server: (*server).clone(),
                context: context.clone(),
                oauth: oauth.cloned(),
            };
            async move {
                let connect = McpClient::connect(recipe, shared, stderr.clone());
                let outcome = tokio::select! {
                    outcome = tokio::time::timeout(timeout, connect) => match outcome {
                        Ok(outcome) => outcome,
                        Err(_) => Err(Error::Timeout { server: server.name.clone(), timeout, stderr: stderr.text() }),
                    },
                    _ = signal.cancelled() => Err(Error::Cancelled { server: server.name.clone() }),
                };
                outcome.map_err(|error| (server.name.clone(), error))
            }
        });
        let mut clients = Vec::new();
        let mut failed = Vec::new();
        for outcome in futures::future::join_all(attempts).await {
            match outcome {
                Ok((client, client_warnings)) => {
                    warnings.extend(client_warnings);
                    let client = Arc::new(client);
                    watch(&client, self.options.restart, timeout);
                    clients.push(client);
                }
                Err((name, error)) => {
                    let message = error_chain(&error);
                    tracing::warn!(server = %name, "MCP server failed: {message}");
                    warnings.push(Warning::new("mcp_server_failed", message.clone()));
                    failed.push(McpFailure { name, error: message });
                }
            }
        }
        McpConnections {
            clients,
            failed,
            warnings,
            options: self.options.clone(),
            notices,
        }
    }
}

#[async_trait]
impl ToolSource for McpClientSet {
    async fn attach(&self, context: &RequestContext, signal: &Signal) -> AttachedTools {
        self.connect_with(context, signal).await.into_attached().await
    }

    /// `attach` connects `context.mcp_servers` too.
    fn attaches_context_servers(&self) -> bool {
        true
    }
}

/// An error with its sources, one line.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

/// The live connections of one [`McpClientSet::connect`]: their tools, what failed, and a
/// guaranteed close (explicit [`close`](Self::close), or on drop).
pub struct McpConnections {
    clients: Vec<Arc<McpClient>>,
    failed: Vec<McpFailure>,
    warnings: Vec<Warning>,
    options: Options,
    notices: Arc<Notices>,
}

impl fmt::Debug for McpConnections {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpConnections")
            .field("connected", &self.connected())
            .field("failed", &self.failed)
            .field("warnings", &self.warnings)
            .finish()
    }
}

impl McpConnections {
    /// Names of the servers that connected, in configuration order.
    pub fn connected(&self) -> Vec<String> {
        self.clients.iter().map(|client| client.name().to_owned()).collect()
    }

    /// Servers that failed, with the reason.
    pub fn failed(&self) -> &[McpFailure] {
        &self.failed
    }

    /// Warnings so far (failures, duplicate servers, missing metadata for headers).
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// The connected client named `name`.
    pub fn client(&self, name: &str) -> Option<&McpClient> {
        self.clients
            .iter()
            .find(|client| client.name() == name)
            .map(Arc::as_ref)
    }

    /// The servers' log messages (`notifications/message`) and patchbay's notices about them
    /// (a server stopped, is restarting, restarted) since the last call, as transient
    /// [`Event::Log`]s, oldest first (at most 256 wait; older ones are dropped). An agent run
    /// drains them itself (see [`LiveTools`]).
    pub fn take_events(&self) -> Vec<Event> {
        self.notices.take()
    }

    /// Resolves when [`take_events`](Self::take_events) may have something.
    pub async fn events_ready(&self) {
        self.notices.ready().await;
    }

    /// The tools of every connected server, in server order. A server that announced
    /// `tools/list_changed` is listed again first. Name clashes keep the first tool.
    pub async fn tools(&self) -> ToolSet {
        let (tools, warnings) = self.tool_set().await;
        for warning in warnings {
            tracing::warn!(code = %warning.code, "{}", warning.message);
        }
        tools
    }

    async fn tool_set(&self) -> (ToolSet, Vec<Warning>) {
        tool_set(&self.clients, &self.options).await
    }

    /// Everything a run needs: the tools, the report, and `self` as the guard that closes
    /// the connections when the run ends.
    pub async fn into_attached(self) -> AttachedTools {
        let (tools, clash_warnings) = self.tool_set().await;
        let mut warnings = self.warnings.clone();
        warnings.extend(clash_warnings);
        let live = Arc::new(Live {
            clients: self.clients.clone(),
            notices: self.notices.clone(),
            options: self.options.clone(),
        });
        AttachedTools {
            tools,
            connected: self.connected(),
            failed: self.failed.clone(),
            warnings,
            guard: Some(Box::new(self)),
            live: Some(live),
        }
    }

    /// Close every connection and wait: HTTP sessions end, stdio servers get stdin closed,
    /// then SIGTERM, then SIGKILL (each step after [`CLOSE_GRACE`](crate::CLOSE_GRACE)), with their descendants.
    pub async fn close(mut self) {
        let clients = std::mem::take(&mut self.clients);
        futures::future::join_all(clients.iter().map(|client| client.close())).await;
    }
}

impl Drop for McpConnections {
    fn drop(&mut self) {
        let clients = std::mem::take(&mut self.clients);
        if clients.is_empty() {
            return;
        }
        // Close gracefully in the background when a runtime is there; if that task never runs
        // (the runtime shuts down), dropping the clients kills the processes.
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                let parts: Vec<_> = clients.iter().map(|client| client.take_parts()).collect();
                handle.spawn(async move {
                    futures::future::join_all(parts.into_iter().map(|parts| parts.close())).await;
                });
            }
            Err(_) => {
                for client in &clients {
                    drop(client.take_parts());
                }
            }
        }
    }
}

/// The live side of attached connections: log messages and notices, and the tools again once
/// a server announced `tools/list_changed` (or was restarted).
struct Live {
    clients: Vec<Arc<McpClient>>,
    notices: Arc<Notices>,
    options: Options,
}

#[async_trait]
impl LiveTools for Live {
    fn take_events(&self) -> Vec<Event> {
        self.notices.take()
    }

    async fn events_ready(&self) {
        self.notices.ready().await;
    }

    async fn changed_tools(&self) -> Option<ToolSet> {
        if !self.clients.iter().any(|client| client.tools_stale()) {
            return None;
        }
        let (tools, warnings) = tool_set(&self.clients, &self.options).await;
        for warning in warnings {
            tracing::warn!(code = %warning.code, "{}", warning.message);
        }
        Some(tools)
    }
}

async fn tool_set(clients: &[Arc<McpClient>], options: &Options) -> (ToolSet, Vec<Warning>) {
    let mut tools = ToolSet::new();
    let mut warnings = Vec::new();
    for client in clients {
        for (spec, remote) in client.specs(options.naming).await {
            let tool = McpTool::new(spec, remote, client.clone(), options.call_timeout);
            warnings.extend(tools.insert(Arc::new(tool)));
        }
    }
    (tools, warnings)
}
