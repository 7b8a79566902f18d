//! The running server: its address and token, the context registry, shutdown.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::sync::Mutex;

use patchbay_core::{RequestContext, ToolSet};
use tokio_util::sync::CancellationToken;

use crate::contexts::{ContextGuard, ContextRegistry, HostContext};
use crate::listen::SHUTDOWN_GRACE;
use crate::server::subscriptions::ResourceUpdates;

/// A running MCP tool server on `127.0.0.1`, serving a [`ToolSet`] over streamable HTTP.
///
/// Every request must carry `Authorization: Bearer <token>` (or pass the builder's
/// [`authorize_with`](crate::ToolServerBuilder::authorize_with) check; routes given to
/// [`with_public_routes`](crate::ToolServerBuilder::with_public_routes) need neither); the `Host`
/// header must name the server's own loopback address; a request to `/mcp` from a browser
/// (`Origin` header) is refused unless its origin was allowed. A caller registers its request context
/// ([`register`](Self::register)) and hands the guard's headers to its MCP client; each call
/// then runs with that context's metadata, extensions and working directory in its
/// [`ToolContext`](patchbay_core::ToolContext), exactly as in-process. Calls with an unknown or expired context id are
/// refused with an MCP error, as are calls without one (unless
/// [`allow_anonymous`](crate::ToolServerBuilder::allow_anonymous)).
///
/// The metadata of a registered context is fixed at registration: under an
/// `x-patchbay-context` header the `x-patchbay-meta-*` headers are ignored (never merged), so
/// a holder of the token cannot add keys such as `role` that tools may trust. (A guard's own
/// headers carry the metadata too; the server does not read them.)
///
/// Connections are bounded (see the crate docs, "Limits"): a header-read timeout, an idle
/// timeout and a cap on concurrent connections, each set on the [`ToolServerBuilder`](crate::ToolServerBuilder).
///
/// A call whose `_meta` carries a `progressToken` gets the tool's
/// [`ToolProgress`](patchbay_core::tool::ToolProgress) reports as `notifications/progress` before
/// its answer (see the crate docs, "Progress"); the tool's [`ToolLog`](patchbay_core::tool::ToolLog)
/// messages go out as `notifications/message` at or above the level the client set.
pub struct ToolServer {
    pub(super) url: String,
    pub(super) addr: SocketAddr,
    pub(super) token: String,
    pub(super) registry: ContextRegistry,
    pub(super) updates: ResourceUpdates,
    pub(super) shutdown: CancellationToken,
    pub(super) sessions: CancellationToken,
    pub(super) stateful: bool,
    pub(super) task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl fmt::Debug for ToolServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolServer")
            .field("url", &self.url)
            .field("contexts", &self.registry.len())
            .finish_non_exhaustive()
    }
}

impl ToolServer {
    /// The endpoint, `http://127.0.0.1:<port>/mcp`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The bearer token every request must carry (a secret: never log it). A server built
    /// [`without_token`](crate::ToolServerBuilder::without_token) has one too, but asks for none.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Tell the clients subscribed to the resource `uri` (`resources/subscribe`) that it
    /// changed (`notifications/resources/updated`); how many sessions were told. The same as
    /// [`ResourceUpdates::updated`] on [`ToolServerBuilder::resource_updates`](crate::ToolServerBuilder::resource_updates).
    pub async fn resource_updated(&self, uri: &str) -> usize {
        self.updates.updated(uri).await
    }

    /// Register `context` (metadata, extensions, working directory) for calls with the
    /// server's own tools. Dropping the guard unregisters it.
    pub fn register(&self, context: &RequestContext) -> ContextGuard {
        self.register_host(HostContext::from_request(context, None), &context.metadata)
    }

    /// Register `context` with the tools calls under it may use (instead of the server's own).
    pub fn register_with_tools(&self, context: &RequestContext, tools: ToolSet) -> ContextGuard {
        self.register_host(HostContext::from_request(context, Some(tools)), &context.metadata)
    }

    fn register_host(&self, host: HostContext, metadata: &BTreeMap<String, String>) -> ContextGuard {
        let (id, map) = self.registry.register(host);
        ContextGuard::new(id, map, self.url.clone(), &self.token, metadata)
    }

    /// Number of registered contexts.
    pub fn contexts(&self) -> usize {
        self.registry.len()
    }

    /// Stop accepting, wait (up to 5 s) until the requests in flight are answered, and end
    /// open sessions (a stateful server's at once: their streams would hold the wait).
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        if self.stateful {
            // Open server-to-client streams would hold their connections for the whole grace.
            self.sessions.cancel();
        }
        let task = self.task.lock().ok().and_then(|mut slot| slot.take());
        if let Some(mut task) = task
            && tokio::time::timeout(SHUTDOWN_GRACE, &mut task).await.is_err()
        {
            task.abort();
        }
        self.sessions.cancel();
    }
}

impl Drop for ToolServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
        self.sessions.cancel();
    }
}
