//! The whole flow against the in-process authorization server: discovery, registration,
//! consent, the token exchange, the token on every request, tokens kept between runs.

use async_trait::async_trait;
use patchbay_mcp::oauth::{
    AuthorizationHandler, AuthorizationPrompt, AuthorizationRedirect, FileTokenStore, LoopbackRedirect, OAuthClient,
    OAuthError,
};
use patchbay_mcp::{McpClientSet, McpConnections};
use serde_json::json;

use super::capture::Capture;
use super::mock::{self, ACCESS_TOKEN, CLIENT_ID, CLIENT_SECRET, CODE, Protected, REFRESH_TOKEN};
use crate::common::{call, http};

/// Approves at once: fetches the authorization URL and reads the redirect's `Location`.
pub(crate) struct AutoApprove;

#[async_trait]
impl AuthorizationHandler for AutoApprove {
    async fn redirect_uri(&self) -> Result<String, OAuthError> {
        Ok("http://127.0.0.1:1/callback".into())
    }

    async fn authorize(&self, prompt: AuthorizationPrompt) -> Result<AuthorizationRedirect, OAuthError> {
        let client = patchbay_http::client_builder().build().expect("a client");
        let response = client
            .get(prompt.url())
            .send()
            .await
            .expect("the authorization endpoint answers");
        let location = response.headers()["location"].to_str().expect("a location").to_owned();
        AuthorizationRedirect::from_url(&location)
    }
}

/// Refuses to be asked: for runs that must not need the user.
struct NeverAsk;

#[async_trait]
impl AuthorizationHandler for NeverAsk {
    async fn redirect_uri(&self) -> Result<String, OAuthError> {
        Ok("http://127.0.0.1:1/callback".into())
    }

    async fn authorize(&self, _prompt: AuthorizationPrompt) -> Result<AuthorizationRedirect, OAuthError> {
        Err(OAuthError::Denied {
            error: "access_denied".into(),
            description: Some("the user said no".into()),
        })
    }
}

/// The mock's server, named `protected`, in a client set of its own.
fn protected_set(protected: &Protected) -> McpClientSet {
    McpClientSet::new().with_server(http("protected", protected.url(), &[]))
}

/// `set` connected, asserting that `protected` is (`run` heads the failure message).
async fn connect_protected(set: McpClientSet, run: &str) -> McpConnections {
    let connections = set.connect().await;
    assert_eq!(
        connections.connected(),
        ["protected"],
        "{run}: {:?}",
        connections.failed()
    );
    connections
}

#[tokio::test]
async fn a_401_is_answered_by_discovery_registration_consent_and_the_token() {
    let protected = mock::protected().await;
    let set = protected_set(&protected).with_oauth("protected", OAuthClient::new(AutoApprove));
    let connections = connect_protected(set, "failed").await;
    let result = call(&connections.tools().await, "echo", json!({"message": "hi"})).await;
    assert!(!result.is_error(), "{result:?}");

    let seen = protected.seen();
    assert_eq!(seen.registrations, 1);
    let [authorization] = &seen.authorizations[..] else {
        panic!("one authorization: {seen:?}")
    };
    assert_eq!(authorization["code_challenge_method"], "S256");
    assert_eq!(authorization["client_id"], CLIENT_ID);
    assert_eq!(authorization["resource"], protected.url());
    let [(basic, body)] = &seen.token_requests[..] else {
        panic!("one token request: {seen:?}")
    };
    let expected = format!("{CLIENT_ID}:{CLIENT_SECRET}");
    assert_eq!(basic.as_deref(), Some(format!("Basic {}", base64(&expected)).as_str()));
    assert_eq!(body["code"], CODE);
    assert_eq!(body["resource"], protected.url());
    assert!(body["code_verifier"].as_str().is_some_and(|v| v.len() >= 43));
    connections.close().await;
}

#[tokio::test]
async fn the_loopback_listener_receives_the_redirect() {
    let protected = mock::protected().await;
    // The "browser": fetch the URL and follow the redirect to the listener.
    let redirect = LoopbackRedirect::bind().expect("bind").with_opener(|prompt| {
        let url = prompt.url().to_owned();
        tokio::spawn(async move {
            let client = patchbay_http::client_builder()
                .redirect(reqwest::redirect::Policy::limited(3))
                .build()
                .expect("present");
            let page = client.get(url).send().await.expect("send").text().await.expect("text");
            assert!(page.contains("Authorized"), "{page}");
        });
        Ok(())
    });
    let uri = redirect.uri();
    let set = protected_set(&protected).with_oauth_for_all(OAuthClient::new(redirect));
    let connections = connect_protected(set, "failed").await;
    assert_eq!(protected.seen().authorizations[0]["redirect_uri"], uri.as_str());
    connections.close().await;
}

#[tokio::test]
async fn tokens_in_a_file_store_spare_the_next_run_an_authorization() {
    let protected = mock::protected().await;
    let folder = tempfile::tempdir().expect("tempdir");
    let path = folder.path().join("tokens.json");
    // The second run's handler refuses: it must not be asked.
    for (run, oauth) in [OAuthClient::new(AutoApprove), OAuthClient::new(NeverAsk)]
        .into_iter()
        .enumerate()
    {
        let set = protected_set(&protected).with_oauth("protected", oauth.with_store(FileTokenStore::new(&path)));
        let connections = connect_protected(set, &format!("run {run}")).await;
        connections.close().await;
    }
    assert_eq!(protected.seen().authorizations.len(), 1);
}

#[tokio::test]
async fn a_refused_authorization_fails_the_server_with_the_reason() {
    let protected = mock::protected().await;
    let set = protected_set(&protected).with_oauth("protected", OAuthClient::new(NeverAsk));
    let connections = set.connect().await;
    let [failure] = connections.failed() else {
        panic!("one failure: {connections:?}")
    };
    assert!(
        failure.error.contains("OAuth authorization failed"),
        "{}",
        failure.error
    );
    assert!(
        failure.error.contains("access_denied (the user said no)"),
        "{}",
        failure.error
    );
}

#[tokio::test]
async fn a_server_without_oauth_that_answers_401_stays_unauthorized() {
    let protected = mock::protected().await;
    let connections = protected_set(&protected).connect().await;
    let [failure] = connections.failed() else {
        panic!("one failure: {connections:?}")
    };
    assert!(
        failure.error.contains("authorization refused (HTTP 401/403)"),
        "{}",
        failure.error
    );
    assert!(protected.seen().authorizations.is_empty());
}

/// A current-thread runtime (the test's), so the rmcp tasks it spawns log to the capture too.
#[tokio::test]
async fn no_credential_reaches_the_logs_at_any_level() {
    let capture = Capture::default();
    let _default = tracing::subscriber::set_default(capture.clone());
    let protected = mock::protected().await;
    let set = protected_set(&protected).with_oauth("protected", OAuthClient::new(AutoApprove));
    let connections = connect_protected(set, "failed").await;
    let _ = call(&connections.tools().await, "echo", json!({"message": "hi"})).await;
    connections.close().await;

    let logs = capture.text();
    assert!(logs.contains("asks for authorization"), "the capture works: {logs}");
    let seen = protected.seen();
    let verifier = seen.token_requests[0].1["code_verifier"]
        .as_str()
        .expect("as_str")
        .to_owned();
    let state = seen.authorizations[0]["state"].as_str().expect("as_str").to_owned();
    for secret in [ACCESS_TOKEN, REFRESH_TOKEN, CODE, CLIENT_SECRET, &verifier, &state] {
        assert!(!logs.contains(secret), "`{secret}` is in the logs:\n{logs}");
    }
}

fn base64(text: &str) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = text.as_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
