//! One connection to an MCP server: handshake, tool listing, calls, and a guaranteed close.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use http::{HeaderName, HeaderValue};
use patchbay_core::{RequestContext, ToolSpec, Warning, context::McpServerConfig, context::McpTransport};
use rmcp::model::ProtocolVersion;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{Peer, RoleClient, ServiceExt};

use crate::child::{ChildProcess, Spawn, StderrTail};
use crate::convert::spec_from_mcp;
use crate::error::Error;
use crate::handler::{Handler, Shared};
use crate::oauth::client::OAuthClient;

/// How long a graceful close waits at each step (stdin closed, then SIGTERM) before escalating.
pub const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// How MCP tools are named for the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolNaming {
    /// The tool's own name (default). A clash with a native tool or an earlier server's tool
    /// keeps the first and is reported.
    #[default]
    Plain,
    /// `mcp__<server>__<tool>`, as agent runtimes name them.
    Prefixed,
}

impl ToolNaming {
    pub(crate) fn name(self, server: &str, tool: &str) -> String {
        match self {
            Self::Plain => tool.to_owned(),
            Self::Prefixed => format!("mcp__{server}__{tool}"),
        }
    }
}

/// The parts of a connection that need closing.
#[derive(Default)]
pub(crate) struct Parts {
    pub(crate) service: Option<RunningService<RoleClient, Handler>>,
    pub(crate) child: Option<ChildProcess>,
}

impl Parts {
    pub(crate) async fn close(mut self) {
        if let Some(mut service) = self.service.take() {
            // Cancelling the service closes the transport: stdin for a child, the session for HTTP.
            let _ = service.close_with_timeout(CLOSE_GRACE).await;
        }
        if let Some(mut child) = self.child.take() {
            child.shutdown(CLOSE_GRACE).await;
        }
    }
}

/// Whether a connection can take calls now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Health {
    /// Connected.
    Up,
    /// The server stopped; restart `attempt` (1-based) of `of` is under way.
    Restarting { attempt: u32, of: u32 },
    /// The server stopped and was not brought back.
    Down { reason: String },
}

/// The connection a client uses now (replaced when the server is restarted).
pub(crate) struct Live {
    pub(crate) peer: Peer<RoleClient>,
    pub(crate) pid: Option<u32>,
    pub(crate) health: Health,
}

/// What it takes to connect to a server again (a restart).
#[derive(Clone)]
pub(crate) struct Recipe {
    pub(crate) server: McpServerConfig,
    pub(crate) context: RequestContext,
    /// OAuth for an HTTP server that asks for it (restarts authorize with it too).
    pub(crate) oauth: Option<OAuthClient>,
}

/// One connected MCP server.
pub struct McpClient {
    pub(crate) name: String,
    pub(crate) shared: Arc<Shared>,
    pub(crate) live: Mutex<Live>,
    pub(crate) parts: Mutex<Parts>,
    pub(crate) tools: tokio::sync::Mutex<Vec<rmcp::model::Tool>>,
    pub(crate) closed: AtomicBool,
    pub(crate) recipe: Recipe,
    pub(crate) stderr: StderrTail,
}

impl fmt::Debug for McpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpClient")
            .field("name", &self.name)
            .field("pid", &self.pid())
            .field("closed", &self.closed.load(Ordering::SeqCst))
            .finish_non_exhaustive()
    }
}

/// A served connection: the running service, the child process of a stdio server, and the
/// warnings of its configuration.
pub(crate) type Opened = (RunningService<RoleClient, Handler>, Option<ChildProcess>, Vec<Warning>);

/// Start (stdio) or reach (HTTP) `recipe`'s server and handshake with it.
pub(crate) async fn open(recipe: &Recipe, handler: Handler, stderr: &StderrTail) -> Result<Opened, Error> {
    let Recipe { server, context, oauth } = recipe;
    let name = &server.name;
    let mut warnings = Vec::new();
    match &server.transport {
        McpTransport::Http { url, headers } => {
            let headers = header_map(name, headers, &context.metadata, &mut warnings)?;
            Ok((
                serve_http(name, url, headers, handler, oauth.as_ref()).await?,
                None,
                warnings,
            ))
        }
        McpTransport::Stdio { command, args, env } => {
            let spawn = Spawn {
                server: name,
                command,
                args,
                env: stdio_env(name, env, context, &mut warnings),
                working_dir: context.working_dir.as_deref(),
                stderr: stderr.clone(),
            };
            let (service, child) = serve_stdio(name, spawn, handler, stderr).await?;
            Ok((service, Some(child), warnings))
        }
    }
}

/// The server's tools, all pages.
pub(crate) async fn list_tools(name: &str, peer: &Peer<RoleClient>) -> Result<Vec<rmcp::model::Tool>, Error> {
    peer.list_all_tools().await.map_err(|source| Error::ListTools {
        server: name.to_owned(),
        source: Box::new(source),
    })
}

impl McpClient {
    pub(crate) async fn connect(
        recipe: Recipe,
        shared: Arc<Shared>,
        stderr: StderrTail,
    ) -> Result<(Self, Vec<Warning>), Error> {
        let handler = Handler { shared: shared.clone() };
        let (service, child, warnings) = open(&recipe, handler, &stderr).await?;
        let peer = service.peer().clone();
        let pid = child.as_ref().and_then(ChildProcess::pid);
        let parts = Parts {
            service: Some(service),
            child,
        };
        let tools = list_tools(&recipe.server.name, &peer).await?;
        let client = Self {
            name: recipe.server.name.clone(),
            shared,
            live: Mutex::new(Live {
                peer,
                pid,
                health: Health::Up,
            }),
            parts: Mutex::new(parts),
            tools: tokio::sync::Mutex::new(tools),
            closed: AtomicBool::new(false),
            recipe,
            stderr,
        };
        Ok((client, warnings))
    }

    /// The server's configured name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The process id (and process group id) of a stdio server (the current one, after a restart).
    pub fn pid(&self) -> Option<u32> {
        self.live.lock().unwrap_or_else(|p| p.into_inner()).pid
    }

    /// The protocol version the server and patchbay agreed on.
    pub fn protocol_version(&self) -> Option<ProtocolVersion> {
        let peer = self.live.lock().unwrap_or_else(|p| p.into_inner()).peer.clone();
        peer.peer_info().map(|info| info.protocol_version.clone())
    }

    /// Whether the server can take calls now (false while it is being restarted, or after
    /// it stopped for good or was closed).
    pub fn is_available(&self) -> bool {
        !self.closed.load(Ordering::SeqCst) && self.health() == Health::Up
    }

    pub(crate) fn health(&self) -> Health {
        self.live.lock().unwrap_or_else(|p| p.into_inner()).health.clone()
    }

    /// The peer to send to, or why there is none (a message for a failed result).
    pub(crate) fn peer(&self, what: &str) -> Result<Peer<RoleClient>, String> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(format!("MCP server `{}` is closed", self.name));
        }
        let live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        match &live.health {
            Health::Up => Ok(live.peer.clone()),
            Health::Restarting { attempt, of } => Err(format!(
                "MCP server `{}` stopped and is being restarted (attempt {attempt} of {of}); {what} is unavailable until it is back: try again shortly",
                self.name
            )),
            Health::Down { reason } => Err(format!(
                "MCP server `{}` stopped and could not be restarted ({reason}); {what} is unavailable",
                self.name
            )),
        }
    }

    /// Whether the connection in use is gone (the stdio server exited, the transport closed).
    pub(crate) fn connection_lost(&self) -> bool {
        let live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        live.health == Health::Up && live.peer.is_transport_closed()
    }

    /// The server's tools as specs, listed again if the server announced a change.
    pub async fn tool_specs(&self) -> Vec<ToolSpec> {
        self.specs(ToolNaming::Plain)
            .await
            .into_iter()
            .map(|(spec, _)| spec)
            .collect()
    }

    /// Whether the server announced `tools/list_changed` since its tools were last listed.
    pub(crate) fn tools_stale(&self) -> bool {
        self.shared.tools_changed.load(Ordering::SeqCst)
    }

    pub(crate) async fn specs(&self, naming: ToolNaming) -> Vec<(ToolSpec, String)> {
        let mut tools = self.tools.lock().await;
        if self.shared.tools_changed.swap(false, Ordering::SeqCst)
            && let Ok(peer) = self.peer("tools/list")
        {
            match list_tools(&self.name, &peer).await {
                Ok(fresh) => *tools = fresh,
                Err(error) => tracing::warn!(server = %self.name, "tools/list after list_changed failed: {error}"),
            }
        }
        tools
            .iter()
            .map(|tool| {
                (
                    spec_from_mcp(tool, naming.name(&self.name, &tool.name)),
                    tool.name.to_string(),
                )
            })
            .collect()
    }

    pub(crate) fn take_parts(&self) -> Parts {
        self.closed.store(true, Ordering::SeqCst);
        self.parts
            .lock()
            .map(|mut parts| std::mem::take(&mut *parts))
            .unwrap_or_default()
    }

    /// Close this connection and wait (see [`McpConnections::close`](crate::McpConnections::close)).
    pub async fn close(&self) {
        self.take_parts().close().await;
    }
}

/// One HTTP client for every connection of the process, on patchbay-http's TLS setup (rustls
/// with ring and the system roots, loaded once per process). Like rmcp's own default client it
/// keeps no idle connections (a reused connection can stall on delayed ACKs against stateful
/// servers) and follows only same-origin 307/308 redirects. A build error is kept, so every
/// connect reports it with its cause.
fn shared_http_client() -> Result<reqwest::Client, Arc<reqwest::Error>> {
    static CLIENT: OnceLock<Result<reqwest::Client, Arc<reqwest::Error>>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            let policy = reqwest::redirect::Policy::custom(|attempt| {
                let keeps_body = matches!(
                    attempt.status(),
                    reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
                );
                let same_origin = attempt
                    .previous()
                    .first()
                    .is_some_and(|first| first.origin() == attempt.url().origin());
                if !keeps_body || !same_origin {
                    attempt.stop()
                } else if attempt.previous().len() > 10 {
                    attempt.error("more than 10 redirects")
                } else {
                    attempt.follow()
                }
            });
            patchbay_http::client_builder()
                .pool_max_idle_per_host(0)
                .redirect(policy)
                .build()
                .map_err(|error| {
                    tracing::warn!("cannot build the shared HTTP client: {error}");
                    Arc::new(error)
                })
        })
        .clone()
}

/// A failed handshake with server `server`, with the tail of its stderr when it has one.
fn handshake_error(server: &str, source: Box<dyn std::error::Error + Send + Sync>, stderr: Option<String>) -> Error {
    Error::Handshake {
        server: server.to_owned(),
        stderr,
        source,
    }
}

/// Handshake with a streamable-HTTP server, sending `headers` with every request (and,
/// with `oauth`, authorizing when the server asks).
async fn serve_http(
    name: &str,
    url: &str,
    headers: HashMap<HeaderName, HeaderValue>,
    handler: Handler,
    oauth: Option<&OAuthClient>,
) -> Result<RunningService<RoleClient, Handler>, Error> {
    let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers);
    // Never rmcp's `from_config`: its default client panics without a process-wide
    // rustls provider, which patchbay does not install.
    let client = shared_http_client().map_err(|source| handshake_error(name, Box::new(source), None))?;
    if let Some(oauth) = oauth {
        return crate::oauth::serve_with_oauth(name, url, config, client, oauth, handler).await;
    }
    let transport = StreamableHttpClientTransport::with_client(client, config);
    handler.serve(transport).await.map_err(|e| {
        if e.is_authorization_required() {
            Error::Unauthorized {
                server: name.to_owned(),
            }
        } else {
            handshake_error(name, Box::new(e), None)
        }
    })
}

/// The environment of a stdio server: the request's, then the server's own with metadata
/// templates filled (a missing value becomes empty, with a warning).
fn stdio_env(
    name: &str,
    env: &BTreeMap<String, String>,
    context: &RequestContext,
    warnings: &mut Vec<Warning>,
) -> BTreeMap<String, String> {
    let mut full_env = context.env.clone();
    for (key, value) in env {
        let value = fill_template(value, &context.metadata).unwrap_or_else(|missing| {
            warnings.push(missing_metadata(name, key, &missing));
            String::new()
        });
        full_env.insert(key.clone(), value);
    }
    full_env
}

/// Start a stdio server and handshake over its stdin and stdout.
async fn serve_stdio(
    name: &str,
    spawn: Spawn<'_>,
    handler: Handler,
    stderr: &StderrTail,
) -> Result<(RunningService<RoleClient, Handler>, ChildProcess), Error> {
    let (child, stdout, stdin) = ChildProcess::spawn(spawn)?;
    // `child` is dropped (group killed) if the handshake fails or is abandoned.
    let service = handler
        .serve((stdout, stdin))
        .await
        .map_err(|e| handshake_error(name, Box::new(e), stderr.text()))?;
    Ok((service, child))
}

fn missing_metadata(server: &str, key: &str, missing: &str) -> Warning {
    Warning::new(
        "mcp_missing_metadata",
        format!("MCP server `{server}`: `{key}` asks for metadata `{missing}`, which the request does not carry"),
    )
}

/// Replace every `${metadata.KEY}` in `template`; `Err(KEY)` names the first missing key.
pub(crate) fn fill_template(template: &str, metadata: &BTreeMap<String, String>) -> Result<String, String> {
    const OPEN: &str = "${metadata.";
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find(OPEN) {
        let after = &rest[start + OPEN.len()..];
        let Some(end) = after.find('}') else { break };
        let key = &after[..end];
        let value = metadata.get(key).ok_or_else(|| key.to_owned())?;
        out.push_str(&rest[..start]);
        out.push_str(value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn header_map(
    server: &str,
    headers: &BTreeMap<String, String>,
    metadata: &BTreeMap<String, String>,
    warnings: &mut Vec<Warning>,
) -> Result<HashMap<HeaderName, HeaderValue>, Error> {
    let mut map = HashMap::new();
    for (name, template) in headers {
        let value = match fill_template(template, metadata) {
            Ok(value) => value,
            Err(missing) => {
                warnings.push(missing_metadata(server, name, &missing));
                continue;
            }
        };
        let header = HeaderName::try_from(name.as_str()).map_err(|_| Error::Config {
            server: server.to_owned(),
            message: format!("`{name}` is not a valid HTTP header name"),
        })?;
        // The value is never shown: it may be a secret.
        let mut value = HeaderValue::try_from(value).map_err(|_| Error::Config {
            server: server.to_owned(),
            message: format!("the value of header `{name}` is not a valid HTTP header value"),
        })?;
        value.set_sensitive(true);
        map.insert(header, value);
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_fill_and_report_missing_keys() {
        let metadata = BTreeMap::from([("project_id".to_owned(), "p1".to_owned())]);
        assert_eq!(fill_template("${metadata.project_id}", &metadata), Ok("p1".into()));
        assert_eq!(
            fill_template("a-${metadata.project_id}-b", &metadata),
            Ok("a-p1-b".into())
        );
        assert_eq!(fill_template("plain", &metadata), Ok("plain".into()));
        assert_eq!(fill_template("${metadata.thread}", &metadata), Err("thread".into()));
        assert_eq!(
            fill_template("${metadata.open", &metadata),
            Ok("${metadata.open".into())
        );
    }
}
