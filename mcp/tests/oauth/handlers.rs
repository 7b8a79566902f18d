//! The authorization handlers: the loopback listener and the web host's hosted redirect.

use std::time::Duration;

use patchbay_mcp::oauth::{
    AuthorizationHandler, AuthorizationPrompt, AuthorizationRedirect, HostedRedirect, LoopbackRedirect, OAuthError,
};

fn prompt(state: &str) -> AuthorizationPrompt {
    AuthorizationPrompt::new(
        "s",
        "https://mcp.example/mcp",
        format!("https://as.example/authorize?state={state}&x=1"),
    )
}

async fn get(url: String) -> (u16, String) {
    let client = patchbay_http::client_builder().build().expect("build");
    let response = client.get(url).send().await.expect("send");
    (response.status().as_u16(), response.text().await.expect("text"))
}

#[tokio::test]
async fn the_loopback_listener_ignores_other_paths_and_states_until_its_redirect_comes() {
    let loopback = LoopbackRedirect::bind()
        .expect("present")
        .with_opener(|_| Ok(()))
        .with_timeout(Duration::from_secs(10));
    let base = format!("http://{}", loopback.addr());
    assert_eq!(loopback.uri(), format!("{base}/callback"));
    let browser = tokio::spawn(async move {
        assert_eq!(get(format!("{base}/favicon.ico")).await.0, 404);
        assert_eq!(get(format!("{base}/callback?code=c&state=other")).await.0, 400);
        let (status, page) = get(format!(
            "{base}/callback?code=the-code&state=s1&iss=https%3A%2F%2Fas.example"
        ))
        .await;
        assert_eq!(status, 200);
        assert!(page.contains("Authorized"));
    });
    let redirect = loopback.authorize(prompt("s1")).await.expect("authorize");
    browser.await.expect("the browser task");
    assert_eq!(
        (redirect.code(), redirect.state(), redirect.issuer()),
        ("the-code", "s1", Some("https://as.example"))
    );
}

#[tokio::test]
async fn the_loopback_listener_reports_a_refusal() {
    let loopback = LoopbackRedirect::bind()
        .expect("present")
        .with_opener(|_| Ok(()))
        .with_timeout(Duration::from_secs(10));
    let url = format!("{}?error=access_denied&error_description=no&state=s2", loopback.uri());
    let browser = tokio::spawn(get(url));
    let error = loopback.authorize(prompt("s2")).await.expect_err("an error");
    assert!(
        matches!(&error, OAuthError::Denied { error, .. } if error == "access_denied"),
        "{error:?}"
    );
    assert_eq!(browser.await.expect("the browser task").0, 200);
}

#[tokio::test]
async fn the_loopback_listener_gives_up_after_its_timeout() {
    let loopback = LoopbackRedirect::bind()
        .expect("present")
        .with_opener(|_| Ok(()))
        .with_timeout(Duration::from_millis(50));
    let error = loopback.authorize(prompt("s3")).await.expect_err("an error");
    assert!(matches!(error, OAuthError::Timeout(_)), "{error:?}");
}

#[tokio::test]
async fn a_hosted_redirect_completes_the_authorization_with_the_same_state() {
    let (sender, mut prompts) = tokio::sync::mpsc::unbounded_channel();
    let hosted = HostedRedirect::new(
        "https://app.example/oauth/callback",
        move |prompt: AuthorizationPrompt| {
            let _ = sender.send(prompt);
        },
    );
    assert_eq!(
        hosted.redirect_uri().await.expect("redirect_uri"),
        "https://app.example/oauth/callback"
    );
    let route = hosted.clone();
    let waiting = tokio::spawn(async move { hosted.authorize(prompt("s4")).await });
    let shown = prompts.recv().await.expect("recv");
    assert_eq!(shown.state(), "s4");
    // The host's route gets the request URI; an unknown state is refused and changes nothing.
    assert!(route.complete("/oauth/callback?code=c&state=unknown").is_err());
    route.complete("/oauth/callback?code=c4&state=s4").expect("complete");
    let redirect = waiting.await.expect("the task").expect("the redirect");
    assert_eq!((redirect.code(), redirect.state()), ("c4", "s4"));
}

#[test]
fn a_redirect_reads_code_state_issuer_and_errors() {
    let redirect =
        AuthorizationRedirect::from_url("http://127.0.0.1:5/callback?code=a%2Bb&state=s&iss=x").expect("from_url");
    assert_eq!(
        (redirect.code(), redirect.state(), redirect.issuer()),
        ("a+b", "s", Some("x"))
    );
    let missing = AuthorizationRedirect::from_url("/callback?state=s").expect_err("an error");
    assert!(matches!(missing, OAuthError::MissingParameter("code")));
    let refused = AuthorizationRedirect::from_url("/callback?error=access_denied&state=s").expect_err("an error");
    assert_eq!(refused.to_string(), "the authorization server refused: access_denied");
}
