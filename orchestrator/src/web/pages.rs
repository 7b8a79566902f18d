//! The web view's routes (served without the token; each checks what it needs): the page
//! shell, its script and style, the 401 page, and the login link and form.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;

use super::auth::{Keys, form_value, same_origin};

/// The page shell: the script renders the sessions, a session, or the jobs into it.
const SHELL: &str = include_str!("shell.html");
/// The script of every page.
const SCRIPT: &str = include_str!("app.js");
/// The style of every page.
const STYLE: &str = include_str!("style.css");

/// The largest login form accepted.
const MAX_FORM_BYTES: usize = 4096;

/// Pages allow only their own script, style and requests; no page may frame them.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                   img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

pub(super) fn routes(keys: Arc<Keys>) -> Router {
    Router::new()
        .route("/", get(shell))
        .route("/web/sessions/{id}", get(shell))
        .route("/web/sessions/by-name/{name}", get(shell))
        .route(
            "/web/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route(
            "/web/style.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE) }),
        )
        .route("/login", get(login_link).post(login_form))
        .layer(DefaultBodyLimit::max(MAX_FORM_BYTES))
        .with_state(keys)
}

/// An HTML page with the headers every page carries.
fn page(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (header::CACHE_CONTROL, "no-store"),
        (header::CONTENT_SECURITY_POLICY, CSP),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        // The login link's code must not travel on in a Referer to another site; within the
        // own origin a referrer is harmless, and with `no-referrer` Chromium posts the token
        // form with `Origin: null`, which the same-origin check refuses.
        (header::REFERRER_POLICY, "same-origin"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body,
    )
        .into_response()
}

/// A small page of the login kind: a title, a message, and the token form.
fn login_page(status: StatusCode, title: &str, message: &str) -> Response {
    page(
        status,
        format!(
            r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} · patchbay orchestrator</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/web/style.css">
</head>
<body>
<header class="top"><a class="brand" href="/">patchbay <span>orchestrator</span></a></header>
<main class="narrow">
<h1>{title}</h1>
<p>{message}</p>
<form class="card login" method="post" action="/login">
<label for="token">Bearer token</label>
<input id="token" name="token" type="password" autocomplete="off" required>
<button type="submit">Log in</button>
</form>
<p class="muted">The token is the <code>token:</code> line that <code>patchbay-orchestrator serve</code> printed
(or <code>PATCHBAY_ORCHESTRATOR_TOKEN</code>). Logging in sets a cookie for this browser only.</p>
</main>
</body>
</html>
"#
        ),
    )
}

/// The 401 of a page asked for without a session cookie or the token.
fn unauthorized() -> Response {
    login_page(
        StatusCode::UNAUTHORIZED,
        "Log in",
        "This page needs a login. Open the one-time link on the <code>web:</code> line that \
         <code>patchbay-orchestrator serve</code> printed, or paste the bearer token below.",
    )
}

/// `/`, `/web/sessions/{id}` and `/web/sessions/by-name/{name}`: the shell for a logged-in browser (or a bearer client).
async fn shell(State(keys): State<Arc<Keys>>, headers: HeaderMap) -> Response {
    if !keys.may_view(&headers) {
        return unauthorized();
    }
    page(StatusCode::OK, SHELL.to_owned())
}

#[derive(Debug, Deserialize)]
struct LoginQuery {
    #[serde(default)]
    code: Option<String>,
}

/// `GET /login?code=`: use up the one-time code, set the cookie, go to `/`. Without a code:
/// the token form.
async fn login_link(State(keys): State<Arc<Keys>>, Query(query): Query<LoginQuery>) -> Response {
    let Some(code) = query.code else {
        return login_page(
            StatusCode::OK,
            "Log in",
            "Paste the bearer token to open the web view in this browser.",
        );
    };
    if !keys.redeem(&code) {
        tracing::info!("web view: a login link was refused (used up, expired or unknown)");
        return login_page(
            StatusCode::UNAUTHORIZED,
            "This login link cannot be used",
            "Each login link works once, for ten minutes. Paste the bearer token below instead.",
        );
    }
    tracing::info!("web view: logged in with a one-time link");
    logged_in(&keys)
}

/// `POST /login` (form-encoded `token=`): the token instead of a link.
async fn login_form(State(keys): State<Arc<Keys>>, headers: HeaderMap, body: Bytes) -> Response {
    // A login form posted from another site would log this browser in as the attacker.
    if !same_origin(&headers) {
        return login_page(
            StatusCode::FORBIDDEN,
            "Log in",
            "This form was sent from another site: open this page and send it from here.",
        );
    }
    let is_form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/x-www-form-urlencoded"));
    let token = std::str::from_utf8(&body)
        .ok()
        .filter(|_| is_form)
        .and_then(|body| form_value(body, "token"));
    match token {
        Some(token) if keys.is_token(token.trim()) => {
            tracing::info!("web view: logged in with the token");
            logged_in(&keys)
        }
        _ => {
            tracing::info!("web view: a login with a wrong token was refused");
            login_page(
                StatusCode::UNAUTHORIZED,
                "Log in",
                "That is not the token. Paste the whole <code>token:</code> value.",
            )
        }
    }
}

/// `303` to `/` with a new session cookie.
fn logged_in(keys: &Keys) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    headers.insert(header::LOCATION, HeaderValue::from_static("/"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    if let Ok(cookie) = HeaderValue::from_str(&keys.open_session()) {
        headers.insert(header::SET_COOKIE, cookie);
    }
    response
}
