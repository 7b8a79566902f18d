//! How the tool server lets requests in: its bearer token, else an [`Authorizer`] (a second
//! credential such as a browser's cookie or a narrower token), which may also vouch for who
//! the caller is with a [`Grant`].

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// A second way in for requests without the bearer token (see
/// [`ToolServerBuilder::authorize_with`](crate::ToolServerBuilder::authorize_with)): it sees the
/// request's method, URI, headers and extensions (not its body) and answers `None` to refuse
/// it, or the [`Grant`] to serve it under.
pub type Authorizer = Arc<dyn Fn(&http::request::Parts) -> Option<Grant> + Send + Sync>;

/// What an [`Authorizer`] vouches for when it lets a request in: metadata its credential
/// proves (the caller's identity, its scope). The tool server puts the grant in the request's
/// extensions (routes served beside `/mcp` read it there), and every tool call of the request
/// gets its metadata over whatever the request's headers claim: over the
/// [`metadata_header`](crate::ToolServerBuilder::metadata_header) headers, the
/// `x-patchbay-meta-*` headers, and a registered context's metadata. An empty grant (the
/// default) vouches for nothing and changes no metadata.
///
/// ```
/// use patchbay_mcp::Grant;
/// let grant = Grant::new().with_metadata("agent_session_name", "reviewer");
/// assert_eq!(grant.metadata()["agent_session_name"], "reviewer");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grant {
    metadata: BTreeMap<String, String>,
}

impl Grant {
    /// A grant vouching for nothing: the request is served as with the bearer token.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also vouch for `key` = `value` in the metadata of the request's tool calls.
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// The metadata vouched for.
    pub fn metadata(&self) -> &BTreeMap<String, String> {
        &self.metadata
    }

    /// `metadata` with this grant's entries written over it.
    pub(crate) fn apply(&self, metadata: &mut BTreeMap<String, String>) {
        metadata.extend(self.metadata.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
}

/// How requests are let in: the bearer token, else the [`Authorizer`] for a request naming
/// the server's own host.
pub(crate) struct Auth {
    /// `Bearer <token>`; `None` lets every request in (a server built `without_token`).
    pub(crate) expected: Option<String>,
    pub(crate) authorizer: Option<Authorizer>,
    /// `127.0.0.1:<port>` and `localhost:<port>`.
    pub(crate) hosts: [String; 2],
}

impl Auth {
    /// Whether the `Host` header names this server (as rmcp checks it on `/mcp`).
    fn own_host(&self, headers: &http::HeaderMap) -> bool {
        headers
            .get(http::header::HOST)
            .and_then(|host| host.to_str().ok())
            .is_some_and(|host| self.hosts.iter().any(|own| own.eq_ignore_ascii_case(host)))
    }
}

/// `127.0.0.1:<port>` and `localhost:<port>`.
pub(crate) fn own_hosts(port: u16) -> [String; 2] {
    [format!("127.0.0.1:{port}"), format!("localhost:{port}")]
}

/// The check in front of `/mcp` and the guarded routes: the bearer token, else the
/// authorizer's grant (put in the request's extensions), else `401`.
pub(crate) async fn require_token(State(auth): State<Arc<Auth>>, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let on_mcp = path == "/mcp" || path.starts_with("/mcp/");
    let given = request
        .headers()
        .get(http::header::AUTHORIZATION)
        .map(|value| value.as_bytes())
        .unwrap_or_default();
    let Some(expected) = &auth.expected else {
        return next.run(request).await;
    };
    if constant_time_eq(given, expected.as_bytes()) {
        return next.run(request).await;
    }
    if let Some(authorizer) = &auth.authorizer
        && auth.own_host(request.headers())
    {
        let (mut parts, body) = request.into_parts();
        if let Some(grant) = authorizer(&parts) {
            parts.extensions.insert(grant);
            return next.run(Request::from_parts(parts, body)).await;
        }
    }
    let message = "missing or wrong bearer token (Authorization: Bearer <token>)";
    let body = if on_mcp {
        serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32001, "message": message}})
    } else {
        // The routes beside `/mcp` (a JSON API) answer in the usual REST error shape.
        serde_json::json!({"error": {"code": "unauthorized", "message": message}})
    };
    (
        http::StatusCode::UNAUTHORIZED,
        [(http::header::WWW_AUTHENTICATE, "Bearer")],
        axum::Json(body),
    )
        .into_response()
}

/// The `Host` check of the public routes (no token asked).
pub(crate) async fn require_own_host(State(auth): State<Arc<Auth>>, request: Request, next: Next) -> Response {
    if auth.own_host(request.headers()) {
        return next.run(request).await;
    }
    (
        http::StatusCode::FORBIDDEN,
        "Forbidden: the Host header must name this server (127.0.0.1 or localhost with its port)",
    )
        .into_response()
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
