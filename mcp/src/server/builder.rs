//! [`ToolServerBuilder`]: what a server serves (tools, resources, prompts) and how (port,
//! token, sessions, limits), then binding it.

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use patchbay_core::{RequestContext, ToolSet};
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::auth::{Auth, Authorizer, own_hosts, require_own_host, require_token};
use crate::contexts::{ContextRegistry, HostContext, fresh_id};
use crate::error::Error;
use crate::listen::Limits;
use crate::server::handler::{Handler, Shared};
use crate::server::prompts::{Prompt, Prompts};
use crate::server::resources::{Resource, ResourceTemplate, Resources};
use crate::server::running::ToolServer;
use crate::server::subscriptions::ResourceUpdates;

/// Builds a [`ToolServer`].
#[derive(Clone)]
pub struct ToolServerBuilder {
    tools: ToolSet,
    require_context: bool,
    stateful: bool,
    token: Option<String>,
    origins: Vec<String>,
    limits: Limits,
    port: u16,
    metadata_headers: Vec<(http::HeaderName, String)>,
    routes: Option<axum::Router>,
    public_routes: Option<axum::Router>,
    authorizer: Option<Authorizer>,
    /// The name and version the server announces in `initialize`.
    server_info: (String, String),
    /// The largest MCP request accepted, in bytes.
    max_request_bytes: usize,
    resources: Resources,
    prompts: Prompts,
    updates: ResourceUpdates,
    /// Serve without the bearer token ([`without_token`](Self::without_token)).
    open: bool,
}

impl fmt::Debug for ToolServerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolServerBuilder")
            .field("tools", &self.tools)
            .field("require_context", &self.require_context)
            .field("stateful", &self.stateful)
            .field("origins", &self.origins)
            .field("limits", &self.limits)
            .field("port", &self.port)
            .field("metadata_headers", &self.metadata_headers)
            .field("routes", &self.routes.is_some())
            .field("public_routes", &self.public_routes.is_some())
            .field("authorizer", &self.authorizer.is_some())
            .field("server_info", &self.server_info)
            .field("max_request_bytes", &self.max_request_bytes)
            .field("resources", &self.resources)
            .field("prompts", &self.prompts)
            .field("open", &self.open)
            .finish_non_exhaustive()
    }
}

impl ToolServerBuilder {
    /// Serve `tools/call` without a registered context too: such calls (no
    /// `x-patchbay-context` header) get an empty context plus whatever metadata the
    /// `x-patchbay-meta-*` headers carry, so any holder of the token chooses that metadata:
    /// tools must not trust it (only the keys of a request's [`Grant`](crate::Grant), written over it, are
    /// vouched for). Off by default. Calls under a registered context never read those
    /// headers (the registered metadata is the whole metadata), and an unknown context id is
    /// refused either way.
    pub fn allow_anonymous(mut self) -> Self {
        self.require_context = false;
        self
    }

    /// Keep MCP sessions (`Mcp-Session-Id`, server-to-client streams). Off by default: every
    /// POST is answered on its own with JSON, which is faster and needs no session cleanup.
    pub fn stateful(mut self, stateful: bool) -> Self {
        self.stateful = stateful;
        self
    }

    /// Accept requests from these browser origins (`http://localhost:5173`, `:*` for any port).
    /// By default a request carrying any `Origin` header is refused: the server is for local
    /// programs, and a web page should not reach it.
    pub fn allow_origins(mut self, origins: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.origins.extend(origins.into_iter().map(Into::into));
        self
    }

    /// For calls without a registered context (see [`allow_anonymous`](Self::allow_anonymous)),
    /// copy the value of the request header `header` into the metadata under `key`
    /// (`X-Agent-Session-Name` → `agent_session_name`, say). Like the `x-patchbay-meta-*`
    /// headers, any holder of the token chooses it: it says who the caller claims to be, not
    /// who it is. A header that is not valid UTF-8 is ignored; calls under a registered context
    /// never read it; a [`Grant`](crate::Grant)'s metadata of the same key is written over it (the header is
    /// then ignored). An invalid header name is ignored with a warning.
    pub fn metadata_header(mut self, header: &str, key: impl Into<String>) -> Self {
        match http::HeaderName::try_from(header) {
            Ok(name) => self.metadata_headers.push((name, key.into())),
            Err(_) => tracing::warn!(header, "not a valid HTTP header name: ignored"),
        }
        self
    }

    /// Bind this port of `127.0.0.1` instead of an OS-assigned one (`0`, the default).
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// Serve these routes on the same listener, next to `/mcp`, behind the same bearer token
    /// (or [`authorize_with`](Self::authorize_with)'s check) and connection limits (a
    /// service's JSON API beside its MCP endpoint).
    pub fn with_routes(mut self, routes: axum::Router) -> Self {
        self.routes = Some(match self.routes.take() {
            Some(existing) => existing.merge(routes),
            None => routes,
        });
        self
    }

    /// Serve these routes on the same listener WITHOUT the bearer token (a login page, static
    /// assets): they answer anyone who reaches the loopback port, so they must check what they
    /// need themselves. The connection limits and the `Host` check apply (the `Host` header
    /// must name the server's own `127.0.0.1:<port>` or `localhost:<port>`, else `403`, against
    /// DNS rebinding). A request whose path none of them matches goes on to `/mcp` and the
    /// [`with_routes`](Self::with_routes) routes (behind the token), so a public path shadows
    /// a guarded one of the same path, and a fallback of these routes is never used.
    pub fn with_public_routes(mut self, routes: axum::Router) -> Self {
        self.public_routes = Some(match self.public_routes.take() {
            Some(existing) => existing.merge(routes),
            None => routes,
        });
        self
    }

    /// Also serve a request without the right bearer token when `authorizer` accepts it (a
    /// browser's session cookie, say). It is asked only after the token check failed, and only
    /// for a request whose `Host` header names the server's own `127.0.0.1:<port>` or
    /// `localhost:<port>` (DNS rebinding); a refused request gets the usual `401`. The
    /// authorizer sees every path, `/mcp` included (where rmcp's own `Host` and `Origin`
    /// checks still apply after it), so it decides which paths its credential opens, and it
    /// must do its own checks against cross-site requests (an `Origin` check, a custom
    /// header) for the methods that change state. Replaces an authorizer set before.
    ///
    /// The [`Grant`](crate::Grant) it answers goes into the request's extensions (so the
    /// [`with_routes`](Self::with_routes) routes can tell what let the request in, and refuse
    /// a credential they do not take), and its metadata into every tool call of the request,
    /// written over what the headers or a registered context say: a credential bound to one
    /// caller makes the calls that caller's, whatever headers come with it. A request let in
    /// by the bearer token carries no grant.
    pub fn authorize_with(mut self, authorizer: Authorizer) -> Self {
        self.authorizer = Some(authorizer);
        self
    }

    /// Announce this name and version in `initialize` (`serverInfo`) instead of
    /// `patchbay-mcp` and this crate's version: a service built on the tool server names
    /// itself.
    pub fn server_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.server_info = (name.into(), version.into());
        self
    }

    /// Refuse MCP requests larger than this many bytes (default
    /// [`DEFAULT_MAX_REQUEST_BYTES`](crate::DEFAULT_MAX_REQUEST_BYTES), 4 MiB) with a JSON-RPC
    /// error that states the limit (code `-32600`, the request's id when it comes before the
    /// limit), after reading the body, so the client gets an answer instead of a reset.
    pub fn max_request_bytes(mut self, bytes: usize) -> Self {
        self.max_request_bytes = bytes.max(1);
        self
    }

    /// Serve this resource (`resources/list`, `resources/read`, `resources/subscribe`). A
    /// resource of the same URI given before is replaced.
    pub fn resource(mut self, resource: Resource) -> Self {
        self.resources.fixed.retain(|r| r.uri() != resource.uri());
        self.resources.fixed.push(resource);
        self
    }

    /// Serve the resources under this template (`resources/templates/list`, and reads of the
    /// URIs it matches that no [`resource`](Self::resource) has).
    pub fn resource_template(mut self, template: ResourceTemplate) -> Self {
        self.resources.templates.push(template);
        self
    }

    /// Serve this prompt (`prompts/list`, `prompts/get`). A prompt of the same name given
    /// before is replaced.
    pub fn prompt(mut self, prompt: Prompt) -> Self {
        self.prompts.all.retain(|p| p.name() != prompt.name());
        self.prompts.all.push(prompt);
        self
    }

    /// The handle that tells subscribed clients a served resource changed
    /// (`notifications/resources/updated`), over HTTP and stdio alike.
    pub fn resource_updates(&self) -> ResourceUpdates {
        self.updates.clone()
    }

    /// Serve `/mcp` (and the [`with_routes`](Self::with_routes) routes) WITHOUT the bearer
    /// token: any local process can then call the tools. Requests from a page of the
    /// server's own origin (`http://127.0.0.1:<port>`, `http://localhost:<port>`) are
    /// accepted too, other origins still refused; the `Host` check stays (DNS rebinding). For
    /// test suites and demos that cannot send a token (the official MCP conformance suite),
    /// never for tools that touch anything that matters.
    pub fn without_token(mut self) -> Self {
        self.open = true;
        self
    }

    /// Use this bearer token instead of a fresh random one.
    pub fn with_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Close a connection whose request headers take longer than this to arrive: from the
    /// accept on a new connection, from the request's first byte on a kept-alive one
    /// (default [`DEFAULT_HEADER_READ_TIMEOUT`](crate::DEFAULT_HEADER_READ_TIMEOUT), 10 s).
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.limits.header_read = timeout;
        self
    }

    /// Close a kept-alive connection that waits this long for its next request with none in
    /// flight (default [`DEFAULT_IDLE_TIMEOUT`](crate::DEFAULT_IDLE_TIMEOUT), 60 s). A request
    /// in flight (a slow tool, a streamed answer) is never cut by it.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.limits.idle = timeout;
        self
    }

    /// Serve at most this many connections at once (at least 1; default
    /// [`DEFAULT_MAX_CONNECTIONS`](crate::DEFAULT_MAX_CONNECTIONS), 512). With the cap reached,
    /// a new connection is served in the place of the connection waiting longest for its
    /// request headers (a connection that sent nothing yet included), which is closed; if
    /// none is, in the place of the one idle longest between requests; only when every
    /// connection has a request in flight is the new one answered `503 Service Unavailable`
    /// with `Retry-After: 1` and closed, never reset. A warning (at most every 10 s) names the
    /// cap and counts both. Requests in flight are never cut, so routes serving long-lived
    /// streams should bound how many one client may hold (see the crate docs, "Limits").
    pub fn max_connections(mut self, max: usize) -> Self {
        self.limits.max_connections = max.clamp(1, u32::MAX as usize);
        self
    }

    /// Bind `127.0.0.1` (on an OS-assigned port unless [`port`](Self::port) named one) and serve on the current runtime until
    /// [`ToolServer::shutdown`] or drop.
    pub async fn start(self) -> Result<ToolServer, Error> {
        let (server, serve) = self.bind().await?;
        let task = tokio::spawn(serve);
        if let Ok(mut slot) = server.task.lock() {
            *slot = Some(task);
        }
        Ok(server)
    }

    /// Serve over stdin/stdout until the client closes stdin. Every call gets `context`
    /// (the process is the request).
    pub async fn serve_stdio(self, context: &RequestContext) -> Result<(), Error> {
        let (stdin, stdout) = rmcp::transport::stdio();
        self.serve_io(stdin, stdout, context).await
    }

    /// Serve over any byte stream pair (a pipe, a socket) until the client closes it. Every
    /// call gets `context`.
    pub async fn serve_io<R, W>(self, read: R, write: W, context: &RequestContext) -> Result<(), Error>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let handler = Handler::new(Arc::new(Shared {
            tools: self.tools,
            registry: ContextRegistry::default(),
            require_context: false,
            fixed: Some(Arc::new(HostContext::from_request(context, None))),
            metadata_headers: Vec::new(),
            server_info: self.server_info,
            resources: self.resources,
            prompts: self.prompts,
            updates: self.updates,
        }));
        let running = handler.serve((read, write)).await.map_err(|error| Error::Serve {
            message: format!("MCP handshake failed: {error}"),
            source: None,
        })?;
        let _ = running.waiting().await;
        Ok(())
    }

    async fn bind(self) -> Result<(ToolServer, impl Future<Output = ()> + Send + 'static), Error> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", self.port))
            .await
            .map_err(|source| Error::Serve {
                message: format!("cannot bind 127.0.0.1:{}", self.port),
                source: Some(source),
            })?;
        let addr = listener.local_addr().map_err(|source| Error::Serve {
            message: "no local address".into(),
            source: Some(source),
        })?;
        let token = self.token.unwrap_or_else(fresh_id);
        let registry = ContextRegistry::default();
        let shutdown = CancellationToken::new();
        // rmcp's own token ends its sessions and drops handlers still running: in stateless
        // mode it is cancelled only once the requests in flight were answered (see shutdown).
        let sessions = CancellationToken::new();
        let stateful = self.stateful;
        let updates = self.updates.clone();
        let shared = Arc::new(Shared {
            tools: self.tools,
            registry: registry.clone(),
            require_context: self.require_context,
            fixed: None,
            metadata_headers: self.metadata_headers,
            server_info: self.server_info,
            resources: self.resources,
            prompts: self.prompts,
            updates: self.updates,
        });
        let port = addr.port();
        let mut origins = self.origins;
        if self.open {
            // Without a token, a page of the server's own origin is as trusted as any caller.
            origins.extend([format!("http://127.0.0.1:{port}"), format!("http://localhost:{port}")]);
        }
        let config = StreamableHttpServerConfig::default()
            .with_allowed_hosts([format!("127.0.0.1:{port}"), format!("localhost:{port}")])
            .with_allowed_origins(origins)
            .enforce_origin_validation()
            .with_legacy_session_mode(self.stateful)
            .with_json_response(!self.stateful)
            .with_max_request_body_bytes(self.max_request_bytes)
            .with_cancellation_token(sessions.clone());
        let service: StreamableHttpService<Handler, LocalSessionManager> =
            StreamableHttpService::new(move || Ok(Handler::new(shared.clone())), Default::default(), config);
        let auth = Arc::new(Auth {
            expected: (!self.open).then(|| format!("Bearer {token}")),
            authorizer: self.authorizer,
            hosts: own_hosts(port),
        });
        let mut app = axum::Router::new()
            .nest_service("/mcp", service)
            .layer(axum::middleware::from_fn_with_state(
                self.max_request_bytes,
                crate::body_limit::limit_body,
            ));
        if let Some(routes) = self.routes {
            app = app.merge(routes);
        }
        let mut app = app.layer(axum::middleware::from_fn_with_state(auth.clone(), require_token));
        if let Some(public) = self.public_routes {
            // Whatever no public route matches goes to the guarded app, whose own fallback
            // (behind the token) answers unknown paths, as without public routes.
            app = public
                .layer(axum::middleware::from_fn_with_state(auth, require_own_host))
                .fallback_service(app);
        }
        let serve = crate::listen::serve(listener, app, self.limits, shutdown.clone());
        let server = ToolServer {
            url: format!("http://127.0.0.1:{port}/mcp"),
            addr,
            token,
            registry,
            updates,
            shutdown,
            sessions,
            stateful,
            task: Mutex::new(None),
        };
        Ok((server, serve))
    }
}

static GLOBAL: OnceLock<ToolServer> = OnceLock::new();
static GLOBAL_INIT: Mutex<()> = Mutex::new(());

impl ToolServer {
    /// A builder for a server of `tools` (the tools of calls whose context brings none).
    pub fn builder(tools: ToolSet) -> ToolServerBuilder {
        ToolServerBuilder {
            tools,
            require_context: true,
            stateful: false,
            token: None,
            origins: Vec::new(),
            limits: Limits::default(),
            port: 0,
            metadata_headers: Vec::new(),
            routes: None,
            public_routes: None,
            authorizer: None,
            server_info: ("patchbay-mcp".to_owned(), env!("CARGO_PKG_VERSION").to_owned()),
            max_request_bytes: crate::body_limit::DEFAULT_MAX_REQUEST_BYTES,
            resources: Resources::default(),
            prompts: Prompts::default(),
            updates: ResourceUpdates::default(),
            open: false,
        }
    }

    /// Start a server of `tools` with the defaults.
    pub async fn start(tools: ToolSet) -> Result<Self, Error> {
        Self::builder(tools).start().await
    }

    /// The process-wide server, started on first use on a thread of its own (so it outlives
    /// any one runtime). It has no tools of its own: register contexts with
    /// [`register_with_tools`](Self::register_with_tools).
    pub fn global() -> Result<&'static ToolServer, Error> {
        if let Some(server) = GLOBAL.get() {
            return Ok(server);
        }
        let _init = GLOBAL_INIT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(server) = GLOBAL.get() {
            return Ok(server);
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let builder = Self::builder(ToolSet::new());
        std::thread::Builder::new()
            .name("patchbay-mcp-server".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(source) => {
                        let _ = tx.send(Err(Error::Serve {
                            message: "cannot start a runtime".into(),
                            source: Some(source),
                        }));
                        return;
                    }
                };
                runtime.block_on(async move {
                    match builder.bind().await {
                        Ok((server, serve)) => {
                            let _ = tx.send(Ok(server));
                            serve.await;
                        }
                        Err(error) => {
                            let _ = tx.send(Err(error));
                        }
                    }
                });
            })
            .map_err(|source| Error::Serve {
                message: "cannot start the server thread".into(),
                source: Some(source),
            })?;
        let server = rx.recv().map_err(|_| Error::Serve {
            message: "the server thread stopped before binding".into(),
            source: None,
        })??;
        Ok(GLOBAL.get_or_init(|| server))
    }
}
