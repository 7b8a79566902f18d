//! One connection to an MCP server: handshake, tool listing, calls, and a guaranteed close.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use http::{HeaderName, HeaderValue};
use patchbay_core::{
    RequestContext, Tool, ToolContext, ToolResult, ToolSpec, Warning, context::McpServerConfig, context::McpTransport,
};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, Implementation, JsonObject,
    RequestMetaObject,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt};
use serde_json::Value;
use tracing::Instrument;

use crate::child::{ChildProcess, Spawn, StderrTail};
use crate::convert::{META_TOOL_USE_ID, from_call_tool_result, spec_from_mcp};
use crate::error::Error;
#[derive(Clone)]
pub(crate) struct Handler {
    list_changed: Arc<AtomicBool>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.store(true, Ordering::SeqCst);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("patchbay", env!("CARGO_PKG_VERSION")),
        )
    }
}

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
    service: Option<RunningService<RoleClient, Handler>>,
    child: Option<ChildProcess>,
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

/// One connected MCP server.
pub struct McpClient {
    name: String,
    peer: Peer<RoleClient>,
    parts: Mutex<Parts>,
    pid: Option<u32>,
    tools: tokio::sync::Mutex<Vec<rmcp::model::Tool>>,
    list_changed: Arc<AtomicBool>,
    closed: AtomicBool,
}

impl fmt::Debug for McpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpClient")
            .field("name", &self.name)
            .field("pid", &self.pid)
            .field("closed", &self.closed.load(Ordering::SeqCst))
            .finish_non_exhaustive()
    }
}

impl McpClient {
    pub(crate) async fn connect(
        server: &McpServerConfig,
        context: &RequestContext,
        stderr: StderrTail,
    ) -> Result<(Self, Vec<Warning>), Error> {
        let name = server.name.clone();
        let list_changed = Arc::new(AtomicBool::new(false));
        let handler = Handler {
            list_changed: list_changed.clone(),
        };
        let mut warnings = Vec::new();
        let (service, child) = match &server.transport {
            McpTransport::Http { url, headers } => {
                let headers = header_map(&name, headers, &context.metadata, &mut warnings)?;
                (serve_http(&name, url, headers, handler).await?, None)
            }
            McpTransport::Stdio { command, args, env } => {
                let spawn = Spawn {
                    server: &name,
                    command,
                    args,
                    env: stdio_env(&name, env, context, &mut warnings),
                    working_dir: context.working_dir.as_deref(),
                    stderr: stderr.clone(),
                };
                let (service, child) = serve_stdio(&name, spawn, handler, &stderr).await?;
                (service, Some(child))
            }
        };
        let client = Self::with_tools(name, service, child, list_changed).await?;
        Ok((client, warnings))
    }

    /// The client over a served connection, once the server listed its tools.
    async fn with_tools(
        name: String,
        service: RunningService<RoleClient, Handler>,
        child: Option<ChildProcess>,
        list_changed: Arc<AtomicBool>,
    ) -> Result<Self, Error> {
        let peer = service.peer().clone();
        let pid = child.as_ref().and_then(ChildProcess::pid);
        let parts = Parts {
            service: Some(service),
            child,
        };
        let tools = peer.list_all_tools().await.map_err(|source| Error::ListTools {
            server: name.clone(),
            source: Box::new(source),
        })?;
        Ok(Self {
            name,
            peer,
            parts: Mutex::new(parts),
            pid,
            tools: tokio::sync::Mutex::new(tools),
            list_changed,
            closed: AtomicBool::new(false),
        })
    }

    /// The server's configured name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The process id (and process group id) of a stdio server.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// The server's tools as specs, listed again if the server announced a change.
    pub async fn tool_specs(&self) -> Vec<ToolSpec> {
        self.specs(ToolNaming::Plain)
            .await
            .into_iter()
            .map(|(spec, _)| spec)
            .collect()
    }

    pub(crate) async fn specs(&self, naming: ToolNaming) -> Vec<(ToolSpec, String)> {
        let mut tools = self.tools.lock().await;
        if self.list_changed.swap(false, Ordering::SeqCst) {
            match self.peer.list_all_tools().await {
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

    /// Call the server's tool `name` (its own, unprefixed name). The call is cancelled (the
    /// server gets `notifications/cancelled`) when `signal` fires or `timeout` runs out.
    ///
    /// The call id in `cx.tool_use_id`, if any, travels in `_meta["patchbay/toolUseId"]`.
    pub async fn call_tool(&self, name: &str, input: Value, cx: &ToolContext, timeout: Option<Duration>) -> ToolResult {
        let signal = &cx.signal;
        if self.closed.load(Ordering::SeqCst) {
            return ToolResult::error(format!("MCP server `{}` is closed", self.name));
        }
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
        // Dropping the request future sends `notifications/cancelled` to the server.
        let span = tracing::info_span!("patchbay.mcp.call", server = %self.name, tool = %name);
        let call = maybe_timeout(timeout, self.peer.call_tool_once(params)).instrument(span);
        let outcome = tokio::select! {
            outcome = call => outcome,
            _ = signal.cancelled() => return ToolResult::aborted(),
        };
        match outcome {
            Some(Ok(CallToolResponse::Complete(result))) => from_call_tool_result(result),
            Some(Ok(_)) => ToolResult::error(format!(
                "MCP server `{}` answered `{name}` with a request for input or a task, which patchbay does not support",
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

/// Handshake with a streamable-HTTP server, sending `headers` with every request.
async fn serve_http(
    name: &str,
    url: &str,
    headers: HashMap<HeaderName, HeaderValue>,
    handler: Handler,
) -> Result<RunningService<RoleClient, Handler>, Error> {
    let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers);
    // Never rmcp's `from_config`: its default client panics without a process-wide
    // rustls provider, which patchbay does not install.
    let client = shared_http_client().map_err(|source| handshake_error(name, Box::new(source), None))?;
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
