//! The client set: connects MCP servers concurrently and turns their tools into patchbay tools.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use patchbay_core::{
    RequestContext, Signal, ToolSet, ToolSource, Warning, agent::AttachedTools, context::McpServerConfig,
    event::McpFailure,
};

use crate::child::StderrTail;
use crate::connection::{McpClient, McpTool, ToolNaming};
use crate::error::Error;

#[derive(Debug, Clone)]
struct Options {
    connect_timeout: Duration,
    call_timeout: Option<Duration>,
    naming: ToolNaming,
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
        let attempts = servers.iter().map(|server| {
            let stderr = StderrTail::default();
            async move {
                let connect = McpClient::connect(server, context, stderr.clone());
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
                    clients.push(Arc::new(client));
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
        let mut tools = ToolSet::new();
        let mut warnings = Vec::new();
        for client in &self.clients {
            for (spec, remote) in client.specs(self.options.naming).await {
                let tool = McpTool::new(spec, remote, client.clone(), self.options.call_timeout);
                warnings.extend(tools.insert(Arc::new(tool)));
            }
        }
        (tools, warnings)
    }

    /// Everything a run needs: the tools, the report, and `self` as the guard that closes
    /// the connections when the run ends.
    pub async fn into_attached(self) -> AttachedTools {
        let (tools, clash_warnings) = self.tool_set().await;
        let mut warnings = self.warnings.clone();
        warnings.extend(clash_warnings);
        AttachedTools {
            tools,
            connected: self.connected(),
            failed: self.failed.clone(),
            warnings,
            guard: Some(Box::new(self)),
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
