//! [`OAuthClient`]: how patchbay authorizes with the MCP servers it is given.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use patchbay_core::kit::Secret;

use crate::oauth::error::OAuthError;
use crate::oauth::handler::{AuthorizationHandler, DEFAULT_AUTHORIZATION_TIMEOUT};
use crate::oauth::loopback::LoopbackRedirect;
use crate::oauth::store::{MemoryTokenStore, TokenStore};

/// How many times one MCP request may send the user to authorize (the first authorization
/// plus scope step-ups) before it fails.
pub const DEFAULT_MAX_AUTHORIZATIONS: u32 = 3;

/// OAuth 2.1 for remote MCP servers, on rmcp's `auth` support: how the client identifies
/// itself, where tokens are kept, and the host's interactive step. Give it to
/// [`McpClientSet::with_oauth`](crate::McpClientSet::with_oauth).
///
/// On a server's `401`, the client discovers the authorization server (protected resource
/// metadata from the challenge or the well-known URLs, then authorization server or OpenID
/// metadata, then the 2025-03-26 default endpoints), identifies itself (a pre-registered
/// client, else a client ID metadata document when the server supports one, else dynamic
/// registration), asks the host's [`AuthorizationHandler`] for the user's consent (PKCE S256,
/// the `resource` indicator, the scope the challenge names or else the resource's
/// `scopes_supported`), exchanges the code, keeps the tokens in the [`TokenStore`], and sends
/// the request again. A `403 insufficient_scope` asks again for the union of the granted and the
/// demanded scopes (step-up); an expired token is refreshed first. One request sends the user
/// at most [`max_authorizations`](Self::with_max_authorizations) times.
///
/// `Debug` shows no secret; tokens, codes, verifiers and the client secret never reach logs.
#[derive(Clone)]
pub struct OAuthClient {
    pub(crate) handler: Arc<dyn AuthorizationHandler>,
    pub(crate) store: Arc<dyn TokenStore>,
    pub(crate) client_id: Option<String>,
    pub(crate) client_secret: Option<Secret>,
    pub(crate) client_metadata_url: Option<String>,
    pub(crate) client_name: String,
    pub(crate) scopes: Vec<String>,
    pub(crate) max_authorizations: u32,
    pub(crate) authorization_timeout: Duration,
}

impl fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthClient")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("client_name", &self.client_name)
            .field("scopes", &self.scopes)
            .field("max_authorizations", &self.max_authorizations)
            .field("authorization_timeout", &self.authorization_timeout)
            .finish_non_exhaustive()
    }
}

impl OAuthClient {
    /// A client whose interactive step is `handler`, keeping tokens in memory, registering
    /// itself dynamically as "patchbay".
    pub fn new(handler: impl AuthorizationHandler) -> Self {
        Self {
            handler: Arc::new(handler),
            store: Arc::new(MemoryTokenStore::new()),
            client_id: None,
            client_secret: None,
            client_metadata_url: None,
            client_name: "patchbay".into(),
            scopes: Vec::new(),
            max_authorizations: DEFAULT_MAX_AUTHORIZATIONS,
            authorization_timeout: DEFAULT_AUTHORIZATION_TIMEOUT,
        }
    }

    /// The CLI setup in one call: a [`LoopbackRedirect`] on a free port that prints the URL
    /// and opens the browser, tokens in memory.
    pub fn loopback() -> Result<Self, OAuthError> {
        Ok(Self::new(LoopbackRedirect::bind()?.with_browser()))
    }

    /// Keep tokens in `store` (a [`FileTokenStore`](crate::oauth::FileTokenStore), a keychain...).
    pub fn with_store(mut self, store: impl TokenStore) -> Self {
        self.store = Arc::new(store);
        self
    }

    /// Use a client registered with the authorization server beforehand (no registration).
    pub fn with_client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// The secret of the pre-registered client (sent as the server's metadata asks:
    /// `client_secret_basic`, or `client_secret_post` when it supports only that).
    pub fn with_client_secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(Secret::new(secret.into()));
        self
    }

    /// The HTTPS URL of this client's ID metadata document, used as its client id with
    /// authorization servers that support client ID metadata documents.
    pub fn with_client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// The `client_name` sent with dynamic registration ("patchbay" by default).
    pub fn with_client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// Ask for these scopes instead of the ones the server names.
    pub fn with_scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// How many times one request may send the user to authorize (3 by default; at least 1).
    pub fn with_max_authorizations(mut self, max: u32) -> Self {
        self.max_authorizations = max.max(1);
        self
    }

    /// How long the user has for one authorization (5 minutes by default). A server with OAuth
    /// gets this much more than the client set's connect timeout for each authorization its
    /// connection may need.
    pub fn with_authorization_timeout(mut self, timeout: Duration) -> Self {
        self.authorization_timeout = timeout;
        self
    }

    /// The time a connection may spend waiting for the user.
    pub(crate) fn authorization_budget(&self) -> Duration {
        self.authorization_timeout.saturating_mul(self.max_authorizations)
    }
}
