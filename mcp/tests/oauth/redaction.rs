//! No credential in `Debug` output: the client, its redirects and prompts, the client set.

use patchbay_mcp::McpClientSet;
use patchbay_mcp::oauth::{
    AuthorizationPrompt, AuthorizationRedirect, HostedRedirect, MemoryTokenStore, OAuthClient, TokenStore,
};

use super::flow::AutoApprove;

#[tokio::test]
async fn debug_output_shows_no_secret_code_state_or_token() {
    let oauth = OAuthClient::new(AutoApprove)
        .with_client_id("pre-registered")
        .with_client_secret("CS-SECRET-debug");
    let set = McpClientSet::new().with_oauth("s", oauth.clone());
    let redirect = AuthorizationRedirect::new("CODE-SECRET-debug", "STATE-SECRET-debug");
    let prompt = AuthorizationPrompt::new(
        "s",
        "https://m/mcp",
        "https://as/authorize?state=STATE-SECRET-debug&code_challenge=x",
    );
    let store = MemoryTokenStore::new();
    let stored = serde_json::from_value(serde_json::json!({
        "client_id": "c",
        "token_response": {"access_token": "AT-SECRET-debug", "token_type": "bearer"},
    }))
    .expect("present");
    store.save("https://m/mcp", stored).await.expect("save");
    let hosted = HostedRedirect::new("https://app/cb", |_| {});
    let text = format!(
        "{oauth:?} {set:?} {redirect:?} {prompt:?} {store:?} {:?} {hosted:?}",
        store.load("https://m/mcp").await.expect("load")
    );
    for secret in ["CS-SECRET", "CODE-SECRET", "STATE-SECRET", "AT-SECRET"] {
        assert!(!text.contains(secret), "`{secret}` shows in {text}");
    }
    assert!(
        text.contains("pre-registered") && text.contains("https://m/mcp"),
        "{text}"
    );
}
