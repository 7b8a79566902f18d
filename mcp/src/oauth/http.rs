//! The HTTP client rmcp's OAuth state machine sends its requests with (discovery,
//! registration, token exchange, refresh): patchbay-http's TLS setup, bounded bodies.

use std::time::Duration;

use futures::StreamExt;
use rmcp::transport::auth::{OAuthHttpClient, OAuthHttpClientFuture, OAuthHttpRedirectPolicy, OAuthHttpRequest};

use crate::oauth::error::OAuthError;

const MAX_BODY: usize = 1024 * 1024;
const MAX_REDIRECTS: usize = 10;
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Two clients on patchbay-http's TLS setup (rmcp's default client needs a process-wide
/// rustls provider, which patchbay does not install): one following redirects (discovery,
/// registration), one stopping at them (token requests).
pub(crate) struct PatchbayOAuthHttp {
    follow: reqwest::Client,
    stop: reqwest::Client,
}

impl PatchbayOAuthHttp {
    pub(crate) fn new() -> Result<Self, OAuthError> {
        let build = |policy| {
            patchbay_http::client_builder()
                .redirect(policy)
                .timeout(DEFAULT_TIMEOUT)
                .build()
                .map_err(|error| OAuthError::authorization(format!("cannot build the OAuth HTTP client: {error}")))
        };
        Ok(Self {
            follow: build(reqwest::redirect::Policy::limited(MAX_REDIRECTS))?,
            stop: build(reqwest::redirect::Policy::none())?,
        })
    }
}

#[derive(Debug, thiserror::Error)]
#[error("the OAuth response body is over {MAX_BODY} bytes")]
struct BodyTooLarge;

impl PatchbayOAuthHttp {
    /// Send `request`, following redirects or not, and read the body (at most 1 MiB).
    pub(crate) async fn send(
        &self,
        request: reqwest::Request,
        follow: bool,
    ) -> Result<http::Response<Vec<u8>>, Box<dyn std::error::Error + Send + Sync>> {
        let client = if follow { &self.follow } else { &self.stop };
        let response = client.execute(request).await?;
        let mut builder = http::Response::builder()
            .status(response.status())
            .version(response.version());
        for (name, value) in response.headers() {
            builder = builder.header(name, value);
        }
        let mut body = Vec::new();
        let mut chunks = response.bytes_stream();
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk?;
            if chunk.len() > MAX_BODY - body.len() {
                return Err(Box::new(BodyTooLarge));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(builder.body(body)?)
    }
}

impl OAuthHttpClient for PatchbayOAuthHttp {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(async move {
            let OAuthHttpRequest {
                request,
                redirect_policy,
                timeout,
                ..
            } = request;
            let mut request = reqwest::Request::try_from(request)?;
            if let Some(timeout) = timeout {
                *request.timeout_mut() = Some(timeout);
            }
            let follow = !matches!(redirect_policy, OAuthHttpRedirectPolicy::Stop);
            self.send(request, follow).await
        })
    }
}
