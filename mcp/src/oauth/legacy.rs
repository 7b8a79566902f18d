//! The 2025-03-26 revision's discovery, where rmcp is stricter than servers of that time.
//!
//! That revision puts the authorization server at the MCP server's origin and its metadata at
//! `<origin>/.well-known/oauth-authorization-server`. rmcp checks the metadata's `issuer`
//! against that URL (RFC 8414 §3.3), so a server whose endpoints live under a path (issuer
//! `<origin>/oauth`) is refused with an issuer mismatch. Such metadata is accepted here when its
//! issuer has the MCP server's own origin: the server vouches for it, as the revision assumes.

use reqwest::Url;
use rmcp::transport::auth::{AuthError, AuthorizationMetadata};

use crate::oauth::error::OAuthError;
use crate::oauth::http::PatchbayOAuthHttp;

/// The metadata at the origin of `server_url`, when its issuer has that origin too.
pub(crate) async fn same_origin_metadata(
    http: &PatchbayOAuthHttp,
    server_url: &str,
) -> Result<Option<AuthorizationMetadata>, OAuthError> {
    let invalid = || OAuthError::Url {
        url: server_url.to_owned(),
    };
    let server = Url::parse(server_url).map_err(|_| invalid())?;
    let well_known = server
        .join("/.well-known/oauth-authorization-server")
        .map_err(|_| invalid())?;
    let mut request = reqwest::Request::new(reqwest::Method::GET, well_known.clone());
    request
        .headers_mut()
        .insert(http::header::ACCEPT, http::HeaderValue::from_static("application/json"));
    let response = http
        .send(request, false)
        .await
        .map_err(|source| OAuthError::Authorization {
            message: format!("cannot fetch {well_known}"),
            source: Some(source),
        })?;
    if !response.status().is_success() {
        return Ok(None);
    }
    let Ok(metadata) = serde_json::from_slice::<AuthorizationMetadata>(response.body()) else {
        return Ok(None);
    };
    let same_origin = |url: &str| Url::parse(url).is_ok_and(|url| url.origin() == server.origin());
    let vouched = metadata.issuer.as_deref().is_some_and(same_origin)
        && same_origin(&metadata.authorization_endpoint)
        && same_origin(&metadata.token_endpoint);
    Ok(vouched.then_some(metadata))
}

/// Whether rmcp refused the metadata for its issuer alone.
pub(crate) fn is_issuer_mismatch(error: &AuthError) -> bool {
    matches!(error, AuthError::AuthorizationServerMismatch { .. })
}
