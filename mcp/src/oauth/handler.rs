//! The interactive step of an authorization as a host callback: send the user to the
//! authorization server, get back the redirect. A CLI host runs a loopback listener
//! ([`LoopbackRedirect`](crate::oauth::LoopbackRedirect)); a web host redirects its user and
//! receives the redirect on its own route ([`HostedRedirect`]).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use patchbay_core::kit::Secret;
use tokio::sync::oneshot;

use crate::oauth::error::OAuthError;

/// How long a handler waits for the user by default.
pub const DEFAULT_AUTHORIZATION_TIMEOUT: Duration = Duration::from_secs(300);

/// The host's part of an authorization: where the user comes back to, and sending the user
/// to the authorization server and back.
#[async_trait]
pub trait AuthorizationHandler: Send + Sync + 'static {
    /// The redirect URI, registered with the authorization server and sent with every
    /// authorization request (a loopback URL for a CLI, the host's own route for a web host).
    async fn redirect_uri(&self) -> Result<String, OAuthError>;

    /// Send the user to [`AuthorizationPrompt::url`] and return the redirect that comes back
    /// to [`redirect_uri`](Self::redirect_uri) with this prompt's
    /// [`state`](AuthorizationPrompt::state).
    async fn authorize(&self, prompt: AuthorizationPrompt) -> Result<AuthorizationRedirect, OAuthError>;
}

/// One authorization to present to the user: which server asks, and the URL to open.
#[derive(Clone)]
pub struct AuthorizationPrompt {
    server: String,
    server_url: String,
    url: String,
    state: Secret,
}

impl AuthorizationPrompt {
    /// The prompt for server `server` (its configured name) at `server_url`, to open `url`
    /// (an authorization URL carrying a `state` parameter).
    pub fn new(server: impl Into<String>, server_url: impl Into<String>, url: impl Into<String>) -> Self {
        let url = url.into();
        let state = query_value(&url, "state").unwrap_or_default();
        Self {
            server: server.into(),
            server_url: server_url.into(),
            url,
            state: Secret::new(state),
        }
    }

    /// The configured name of the MCP server that asks.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The MCP server's URL.
    pub fn server_url(&self) -> &str {
        &self.server_url
    }

    /// The authorization URL to open in the user's browser.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The `state` the redirect must carry back (a web host keys its pending authorizations by it).
    pub fn state(&self) -> &str {
        self.state.expose()
    }
}

impl fmt::Debug for AuthorizationPrompt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The query (state, PKCE challenge) stays out.
        let url = self.url.split('?').next().unwrap_or_default();
        f.debug_struct("AuthorizationPrompt")
            .field("server", &self.server)
            .field("server_url", &self.server_url)
            .field("url", &url)
            .finish_non_exhaustive()
    }
}

fn query_value(url: &str, key: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url).ok()?;
    parsed
        .query_pairs()
        .find(|(name, _)| name == key)
        .map(|(_, value)| value.into_owned())
}

/// What the authorization server sent back: the code, the state, and (RFC 9207) its issuer.
#[derive(Clone)]
pub struct AuthorizationRedirect {
    code: Secret,
    state: Secret,
    issuer: Option<String>,
}

impl AuthorizationRedirect {
    /// A redirect carrying `code` and `state`.
    pub fn new(code: impl Into<String>, state: impl Into<String>) -> Self {
        Self {
            code: Secret::new(code),
            state: Secret::new(state),
            issuer: None,
        }
    }

    /// With the `iss` parameter the authorization server sent.
    pub fn with_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// Read the redirect from the URL the user came back to: absolute, or a path with its
    /// query (`/oauth/callback?code=...&state=...`). An `error` parameter is
    /// [`OAuthError::Denied`].
    pub fn from_url(url: &str) -> Result<Self, OAuthError> {
        parse_redirect(url).1
    }

    /// The authorization code.
    pub fn code(&self) -> &str {
        self.code.expose()
    }

    /// The state.
    pub fn state(&self) -> &str {
        self.state.expose()
    }

    /// The issuer, if the server sent one.
    pub fn issuer(&self) -> Option<&str> {
        self.issuer.as_deref()
    }
}

impl fmt::Debug for AuthorizationRedirect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthorizationRedirect")
            .field("code", &self.code)
            .field("state", &self.state)
            .field("issuer", &self.issuer)
            .finish()
    }
}

/// The redirect's `state` (when it has one) and what it says.
pub(crate) fn parse_redirect(url: &str) -> (Option<String>, Result<AuthorizationRedirect, OAuthError>) {
    let base = reqwest::Url::parse("http://localhost/").expect("a valid base URL");
    let parsed = match reqwest::Url::parse(url).or_else(|_| base.join(url)) {
        Ok(parsed) => parsed,
        Err(_) => return (None, Err(OAuthError::MissingParameter("code"))),
    };
    let mut params: HashMap<String, String> = parsed.query_pairs().into_owned().collect();
    let state = params.remove("state");
    if let Some(error) = params.remove("error") {
        let description = params.remove("error_description");
        return (state, Err(OAuthError::Denied { error, description }));
    }
    let outcome = match (params.remove("code"), &state) {
        (None, _) => Err(OAuthError::MissingParameter("code")),
        (Some(_), None) => Err(OAuthError::MissingParameter("state")),
        (Some(code), Some(state)) => {
            let redirect = AuthorizationRedirect::new(code, state.clone());
            Ok(match params.remove("iss") {
                Some(issuer) => redirect.with_issuer(issuer),
                None => redirect,
            })
        }
    };
    (state, outcome)
}

type Waiters = HashMap<String, oneshot::Sender<Result<AuthorizationRedirect, OAuthError>>>;

/// The handler of a web host: it tells the host to send its user to the authorization URL
/// (`on_prompt`, which returns at once), and the host's own route at the redirect URI hands
/// the redirect back with [`complete`](Self::complete). Clones share the pending
/// authorizations, so the host keeps one clone for its route.
///
/// ```
/// use patchbay_mcp::oauth::{HostedRedirect, OAuthClient};
/// let redirect = HostedRedirect::new("https://app.example/oauth/callback", |prompt| {
///     // Push `prompt.url()` to the user's browser (a redirect, a link, an event...).
///     println!("authorize {}: {}", prompt.server(), prompt.url());
/// });
/// let oauth = OAuthClient::new(redirect.clone());
/// // In the `/oauth/callback` route: `redirect.complete(&request_uri)?`.
/// # let _ = oauth;
/// ```
#[derive(Clone)]
pub struct HostedRedirect {
    redirect_uri: String,
    on_prompt: Arc<dyn Fn(AuthorizationPrompt) + Send + Sync>,
    waiters: Arc<Mutex<Waiters>>,
    timeout: Duration,
}

impl fmt::Debug for HostedRedirect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostedRedirect")
            .field("redirect_uri", &self.redirect_uri)
            .field("pending", &self.waiters().len())
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl HostedRedirect {
    /// A handler whose users come back to `redirect_uri`; `on_prompt` sends them out.
    pub fn new(
        redirect_uri: impl Into<String>,
        on_prompt: impl Fn(AuthorizationPrompt) + Send + Sync + 'static,
    ) -> Self {
        Self {
            redirect_uri: redirect_uri.into(),
            on_prompt: Arc::new(on_prompt),
            waiters: Arc::default(),
            timeout: DEFAULT_AUTHORIZATION_TIMEOUT,
        }
    }

    /// How long an authorization waits for its redirect (5 minutes by default).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Hand over the redirect the host's route received (the request URI, with its query).
    /// An error when no pending authorization has its `state` (answer the browser 400).
    pub fn complete(&self, redirect_url: &str) -> Result<(), OAuthError> {
        let (state, outcome) = parse_redirect(redirect_url);
        let state = state.ok_or(OAuthError::MissingParameter("state"))?;
        let waiter = self
            .waiters()
            .remove(&state)
            .ok_or_else(|| OAuthError::authorization("no pending authorization has this state"))?;
        let _ = waiter.send(outcome);
        Ok(())
    }

    fn waiters(&self) -> std::sync::MutexGuard<'_, Waiters> {
        self.waiters.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait]
impl AuthorizationHandler for HostedRedirect {
    async fn redirect_uri(&self) -> Result<String, OAuthError> {
        Ok(self.redirect_uri.clone())
    }

    async fn authorize(&self, prompt: AuthorizationPrompt) -> Result<AuthorizationRedirect, OAuthError> {
        let state = prompt.state().to_owned();
        let (sender, receiver) = oneshot::channel();
        self.waiters().insert(state.clone(), sender);
        (self.on_prompt)(prompt);
        let outcome = tokio::time::timeout(self.timeout, receiver).await;
        self.waiters().remove(&state);
        match outcome {
            Ok(Ok(redirect)) => redirect,
            Ok(Err(_)) => Err(OAuthError::authorization("the pending authorization was dropped")),
            Err(_) => Err(OAuthError::Timeout(self.timeout)),
        }
    }
}
