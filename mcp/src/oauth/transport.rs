//! The streamable-HTTP client of a server with OAuth: rmcp's [`AuthClient`] (the bearer token,
//! a silent refresh when the server rejects it), plus the answer to a challenge: authorize, or
//! step up the scope, then send the same request again, a bounded number of times.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::auth::{AuthClient, AuthError};
use rmcp::transport::common::client_side_sse::BoxedSseResponse;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError, StreamableHttpPostResponse,
};
use rmcp::{ClientHandler, RoleClient, ServiceExt};

use crate::error::Error;
use crate::oauth::client::OAuthClient;
use crate::oauth::error::OAuthError;
use crate::oauth::flow::{Challenge, Flow, is_insufficient_scope};

type HttpError = StreamableHttpError<reqwest::Error>;

/// Handshake with `url` over streamable HTTP, authorizing with `oauth` when the server asks.
pub(crate) async fn serve_with_oauth<H: ClientHandler>(
    name: &str,
    url: &str,
    config: StreamableHttpClientTransportConfig,
    client: reqwest::Client,
    oauth: &OAuthClient,
    handler: H,
) -> Result<RunningService<RoleClient, H>, Error> {
    let oauth_error = |source| Error::OAuth {
        server: name.to_owned(),
        source: Box::new(source),
    };
    let (manager, http) = Flow::manager(name, url, oauth).await.map_err(oauth_error)?;
    let auth = AuthClient::new(client, manager);
    let flow = Arc::new(Flow::new(name, url, oauth, http, auth.auth_manager.clone()));
    let transport = StreamableHttpClientTransport::with_client(
        OAuthHttp {
            auth,
            flow: flow.clone(),
        },
        config,
    );
    handler.serve(transport).await.map_err(|error| match flow.take_error() {
        Some(source) => oauth_error(source),
        None if error.is_authorization_required() => Error::Unauthorized {
            server: name.to_owned(),
        },
        None => Error::Handshake {
            server: name.to_owned(),
            stderr: None,
            source: Box::new(error),
        },
    })
}

/// The SSE event size limit rmcp's reqwest client applies when it is given none (rmcp keeps
/// the constant private; its transport config starts from it).
fn default_max_sse_event_size() -> usize {
    StreamableHttpClientTransportConfig::default().max_sse_event_size
}

/// rmcp's [`AuthClient`] over reqwest, answering challenges through the server's [`Flow`].
#[derive(Clone)]
pub(crate) struct OAuthHttp {
    auth: AuthClient<reqwest::Client>,
    flow: Arc<Flow>,
}

impl OAuthHttp {
    /// Run `call`; on a `401` or a `403 insufficient_scope` ask the user (at most
    /// `max_authorizations` times) and run it again.
    async fn answering_challenges<T, F, Fut>(&self, uri: &str, call: F) -> Result<T, HttpError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, HttpError>>,
    {
        let max = self.flow.max_authorizations();
        let mut authorizations = 0;
        // Retries after another request's authorization are bounded too.
        for _ in 0..max * 2 + 2 {
            let seen = self.flow.generation();
            let error = match call().await {
                Err(error) => error,
                done => return done,
            };
            let challenge = match &error {
                StreamableHttpError::AuthRequired(required) => {
                    Challenge::Unauthorized(required.www_authenticate_header.clone())
                }
                StreamableHttpError::InsufficientScope(insufficient)
                    if is_insufficient_scope(&insufficient.www_authenticate_header, uri) =>
                {
                    Challenge::InsufficientScope(insufficient.required_scope.clone())
                }
                _ => return Err(error),
            };
            if authorizations >= max {
                let scope = match challenge {
                    Challenge::InsufficientScope(scope) => scope,
                    Challenge::Unauthorized(_) => None,
                };
                self.flow.fail(OAuthError::TooManyAuthorizations {
                    attempts: authorizations,
                    scope,
                });
                return Err(error);
            }
            match self.flow.respond(challenge, seen).await {
                Ok(true) => authorizations += 1,
                Ok(false) => {}
                Err(failure) => {
                    self.flow.fail(failure);
                    return Err(error);
                }
            }
        }
        Err(StreamableHttpError::Auth(AuthError::AuthorizationFailed(
            "the server kept refusing after other requests authorized".into(),
        )))
    }
}

impl StreamableHttpClient for OAuthHttp {
    type Error = reqwest::Error;

    /// As [`post_message_with_max_sse_event_size`](Self::post_message_with_max_sse_event_size)
    /// with reqwest's default limit (what reqwest's own `post_message` applies).
    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let max = default_max_sse_event_size();
        self.post_message_with_max_sse_event_size(uri, message, session_id, auth_header, custom_headers, max)
            .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.answering_challenges(&uri, || {
            self.auth.post_message_with_max_sse_event_size(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                auth_header.clone(),
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }

    /// Closing a session never sends the user to authorize.
    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        self.auth
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    /// As [`get_stream_with_max_sse_event_size`](Self::get_stream_with_max_sse_event_size)
    /// with reqwest's default limit (what reqwest's own `get_stream` applies).
    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxedSseResponse, HttpError> {
        let max = default_max_sse_event_size();
        self.get_stream_with_max_sse_event_size(uri, session_id, last_event_id, auth_header, custom_headers, max)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxedSseResponse, HttpError> {
        self.answering_challenges(&uri, || {
            self.auth.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                auth_header.clone(),
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}
