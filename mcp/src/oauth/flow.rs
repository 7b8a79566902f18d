//! One server's authorization state: rmcp's [`AuthorizationManager`] shared with the
//! transport, and the two ways of asking the user (a first authorization on `401`, a scope
//! step-up on `403 insufficient_scope`), each through the host's handler.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::transport::auth::{
    AuthorizationManager, AuthorizationMetadata, AuthorizationRequest, AuthorizationSession, OAuthClientConfig,
    WWWAuthenticateParams,
};
use tracing::instrument::WithSubscriber;

use crate::oauth::client::OAuthClient;
use crate::oauth::error::OAuthError;
use crate::oauth::handler::{AuthorizationPrompt, AuthorizationRedirect};
use crate::oauth::http::PatchbayOAuthHttp;
use crate::oauth::legacy;
use crate::oauth::store::ServerStore;

/// What the server answered that asks for the user.
#[derive(Debug)]
pub(crate) enum Challenge {
    /// `401` with this `WWW-Authenticate` value.
    Unauthorized(String),
    /// `403 insufficient_scope` asking for this scope.
    InsufficientScope(Option<String>),
}

/// The authorization state of one connected server.
pub(crate) struct Flow {
    server: String,
    url: String,
    client: OAuthClient,
    http: Arc<PatchbayOAuthHttp>,
    manager: Arc<tokio::sync::Mutex<AuthorizationManager>>,
    /// Bumped on every completed authorization, so a request that saw an older one retries
    /// instead of sending the user again.
    generation: AtomicU64,
    /// Whether the client was registered (or configured) in this process, which a step-up
    /// needs (a client restored from the store has no redirect URI of this run).
    configured: AtomicBool,
    error: Mutex<Option<OAuthError>>,
}

impl Flow {
    /// The manager for `url`, its credentials restored from the client's store when it has some.
    pub(crate) async fn manager(
        server: &str,
        url: &str,
        client: &OAuthClient,
    ) -> Result<(AuthorizationManager, Arc<PatchbayOAuthHttp>), OAuthError> {
        let http = Arc::new(PatchbayOAuthHttp::new()?);
        let mut manager = new_manager(url, client, &http).await?;
        let mut restored = manager.initialize_from_store().await;
        if let Err(error) = &restored
            && legacy::is_issuer_mismatch(error)
            && let Some(metadata) = legacy::same_origin_metadata(&http, url).await?
        {
            manager.set_metadata(metadata);
            restored = manager.initialize_from_store().await;
        }
        match restored {
            Ok(true) => restore_client_secret(&mut manager, client).await?,
            Ok(false) => {}
            Err(error) => tracing::warn!(server, "cannot restore the stored OAuth credentials: {error}"),
        }
        Ok((manager, http))
    }

    pub(crate) fn new(
        server: &str,
        url: &str,
        client: &OAuthClient,
        http: Arc<PatchbayOAuthHttp>,
        manager: Arc<tokio::sync::Mutex<AuthorizationManager>>,
    ) -> Self {
        Self {
            server: server.to_owned(),
            url: url.to_owned(),
            client: client.clone(),
            http,
            manager,
            generation: AtomicU64::new(0),
            configured: AtomicBool::new(false),
            error: Mutex::new(None),
        }
    }

    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    pub(crate) fn max_authorizations(&self) -> u32 {
        self.client.max_authorizations
    }

    /// Keep `error` for the connection to report (the transport's own error type cannot carry it).
    pub(crate) fn fail(&self, error: OAuthError) {
        tracing::warn!(server = %self.server, "OAuth: {error}");
        *self.error.lock().unwrap_or_else(|p| p.into_inner()) = Some(error);
    }

    pub(crate) fn take_error(&self) -> Option<OAuthError> {
        self.error.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// Answer `challenge`, seen by a request sent at generation `seen`: `false` when another
    /// request authorized meanwhile (retry without asking), `true` once the user authorized.
    pub(crate) async fn respond(&self, challenge: Challenge, seen: u64) -> Result<bool, OAuthError> {
        let mut manager = self.manager.lock().await;
        if self.generation() != seen {
            return Ok(false);
        }
        match challenge {
            Challenge::Unauthorized(header) => self.authorize(&mut manager, Some(&header), None).await?,
            Challenge::InsufficientScope(scope) if self.configured.load(Ordering::SeqCst) => {
                let url = manager
                    .request_scope_upgrade(scope.as_deref().unwrap_or_default())
                    .await?;
                let redirect = self.consent(url).await?;
                exchange(&manager, &redirect).await?;
            }
            Challenge::InsufficientScope(scope) => {
                // Restored from the store: a new authorization for the granted plus the asked scope.
                let mut scopes = manager.get_current_scopes().await;
                scopes.extend(scope.iter().flat_map(|s| s.split_whitespace().map(str::to_owned)));
                self.authorize(&mut manager, None, Some(scopes)).await?;
            }
        }
        self.generation.fetch_add(1, Ordering::SeqCst);
        Ok(true)
    }

    /// A full authorization on a new manager (discovery, registration, consent, exchange),
    /// which replaces `manager` once discovery and registration succeeded.
    async fn authorize(
        &self,
        manager: &mut AuthorizationManager,
        challenge: Option<&str>,
        scopes: Option<Vec<String>>,
    ) -> Result<(), OAuthError> {
        let mut fresh = new_manager(&self.url, &self.client, &self.http).await?;
        let metadata = discover(&mut fresh, &self.http, &self.url, challenge).await?;
        fresh.set_metadata(metadata);
        let request = self.request(scopes).await?;
        let session = match AuthorizationSession::new(fresh, request).await {
            Ok(session) => session,
            Err((returned, error)) => {
                *manager = returned;
                return Err(error.into());
            }
        };
        self.configured.store(true, Ordering::SeqCst);
        let consent = self.consent(session.get_authorization_url().to_owned()).await;
        let outcome = match consent {
            Ok(redirect) => exchange(&session.auth_manager, &redirect).await,
            Err(error) => Err(error),
        };
        *manager = session.auth_manager;
        outcome
    }

    /// What the client asks for: its identity, its redirect URI, the scopes.
    async fn request(&self, scopes: Option<Vec<String>>) -> Result<AuthorizationRequest, OAuthError> {
        let client = &self.client;
        let mut request =
            AuthorizationRequest::new(client.handler.redirect_uri().await?).with_client_name(&client.client_name);
        if let Some(id) = &client.client_id {
            request = request.with_preregistered_client(id);
            if let Some(secret) = &client.client_secret {
                request = request.with_client_secret(secret.expose());
            }
        }
        if let Some(url) = &client.client_metadata_url {
            request = request.with_client_metadata_url(url);
        }
        Ok(match scopes {
            Some(scopes) => request.with_scopes(scopes),
            None if !client.scopes.is_empty() => request.with_scopes(client.scopes.clone()),
            // The challenge's scope, else the resource's `scopes_supported`, else none.
            None => request.with_initial_scope_selection(),
        })
    }

    /// Send the user to `url` through the host's handler.
    async fn consent(&self, url: String) -> Result<AuthorizationRedirect, OAuthError> {
        let prompt = AuthorizationPrompt::new(&self.server, &self.url, url);
        tracing::info!(server = %self.server, "MCP server asks for authorization");
        let timeout = self.client.authorization_timeout;
        tokio::time::timeout(timeout, self.client.handler.authorize(prompt))
            .await
            .map_err(|_| OAuthError::Timeout(timeout))?
    }
}

/// Whether a `403`'s `WWW-Authenticate` value asks for more scope.
pub(crate) fn is_insufficient_scope(header: &str, url: &str) -> bool {
    reqwest::Url::parse(url)
        .map(|base| WWWAuthenticateParams::parse(header, &base).is_insufficient_scope())
        .unwrap_or(false)
}

/// The authorization server's metadata, discovered from `challenge` (rmcp), or with the
/// 2025-03-26 revision's same-origin metadata when rmcp refuses that for its issuer.
async fn discover(
    manager: &mut AuthorizationManager,
    http: &PatchbayOAuthHttp,
    url: &str,
    challenge: Option<&str>,
) -> Result<AuthorizationMetadata, OAuthError> {
    match manager.resolve_metadata_from_challenge(challenge).await {
        Ok(resolution) => Ok(resolution.metadata),
        Err(error) if legacy::is_issuer_mismatch(&error) => match legacy::same_origin_metadata(http, url).await? {
            Some(metadata) => {
                tracing::info!(url, "using the 2025-03-26 same-origin authorization server metadata");
                Ok(metadata)
            }
            None => Err(error.into()),
        },
        Err(error) => Err(error.into()),
    }
}

async fn new_manager(
    url: &str,
    client: &OAuthClient,
    http: &Arc<PatchbayOAuthHttp>,
) -> Result<AuthorizationManager, OAuthError> {
    let mut manager = AuthorizationManager::new_with_oauth_http_client(url, http.clone()).await?;
    manager.set_credential_store(ServerStore {
        store: client.store.clone(),
        server: url.to_owned(),
    });
    Ok(manager)
}

/// rmcp restores a stored client by its id alone; a pre-registered client gets its secret
/// and this run's redirect URI back, so refreshes authenticate as before.
async fn restore_client_secret(manager: &mut AuthorizationManager, client: &OAuthClient) -> Result<(), OAuthError> {
    let (Some(id), Some(secret)) = (&client.client_id, &client.client_secret) else {
        return Ok(());
    };
    let (stored_id, _) = manager.get_credentials().await?;
    if &stored_id == id {
        let redirect_uri = client.handler.redirect_uri().await?;
        manager.configure_client(OAuthClientConfig::new(id, redirect_uri).with_client_secret(secret.expose()))?;
    }
    Ok(())
}

/// Exchange the redirect's code for tokens. rmcp logs the code at debug level, so its events
/// are not emitted during the exchange.
async fn exchange(manager: &AuthorizationManager, redirect: &AuthorizationRedirect) -> Result<(), OAuthError> {
    manager
        .exchange_code_for_token_with_issuer(redirect.code(), redirect.state(), redirect.issuer())
        .with_subscriber(tracing::subscriber::NoSubscriber::default())
        .await?;
    Ok(())
}
