//! A protected MCP server with its own authorization server on one loopback port: the tool
//! server with a fixed bearer token, plus public routes for the protected resource metadata,
//! the authorization server metadata, registration, an authorization endpoint that approves at
//! once, and the token endpoint. Every credential it hands out has a recognizable value.

use std::sync::{Arc, Mutex};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use patchbay_mcp::ToolServer;
use serde_json::{Value, json};

pub(crate) const ACCESS_TOKEN: &str = "AT-SECRET-8c1f";
pub(crate) const REFRESH_TOKEN: &str = "RT-SECRET-2b7e";
pub(crate) const CODE: &str = "CODE-SECRET-51a0";
pub(crate) const CLIENT_SECRET: &str = "CS-SECRET-9d3c";
pub(crate) const CLIENT_ID: &str = "registered-client";

/// What the authorization server saw.
#[derive(Debug, Default, Clone)]
pub(crate) struct Seen {
    pub(crate) registrations: usize,
    pub(crate) authorizations: Vec<Value>,
    pub(crate) token_requests: Vec<(Option<String>, Value)>,
}

pub(crate) struct Protected {
    pub(crate) server: ToolServer,
    pub(crate) seen: Arc<Mutex<Seen>>,
}

impl Protected {
    pub(crate) fn url(&self) -> &str {
        self.server.url()
    }

    pub(crate) fn seen(&self) -> Seen {
        self.seen.lock().expect("lock").clone()
    }
}

type Shared = Arc<Mutex<Seen>>;

fn origin(headers: &HeaderMap) -> String {
    let host = headers.get("host").and_then(|h| h.to_str().ok()).unwrap_or_default();
    format!("http://{host}")
}

async fn resource_metadata(headers: HeaderMap) -> Json<Value> {
    let origin = origin(&headers);
    Json(json!({"resource": format!("{origin}/mcp"), "authorization_servers": [origin]}))
}

async fn server_metadata(headers: HeaderMap) -> Json<Value> {
    let origin = origin(&headers);
    Json(json!({
        "issuer": origin,
        "authorization_endpoint": format!("{origin}/authorize"),
        "token_endpoint": format!("{origin}/token"),
        "registration_endpoint": format!("{origin}/register"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic"],
    }))
}

async fn register(State(seen): State<Shared>, Json(body): Json<Value>) -> Response {
    seen.lock().expect("lock").registrations += 1;
    let answer = json!({
        "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET,
        "redirect_uris": body["redirect_uris"],
    });
    (StatusCode::CREATED, Json(answer)).into_response()
}

async fn authorize(State(seen): State<Shared>, Query(query): Query<Value>) -> Redirect {
    let redirect_uri = query["redirect_uri"].as_str().unwrap_or_default().to_owned();
    let state = query["state"].as_str().unwrap_or_default().to_owned();
    seen.lock().expect("lock").authorizations.push(query);
    let mut url = reqwest::Url::parse(&redirect_uri).expect("a redirect URI");
    url.query_pairs_mut()
        .append_pair("code", CODE)
        .append_pair("state", &state);
    Redirect::to(url.as_str())
}

async fn token(State(seen): State<Shared>, headers: HeaderMap, body: String) -> Json<Value> {
    let authorization = headers
        .get("authorization")
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned);
    let form = reqwest::Url::parse(&format!("http://form/?{body}")).expect("a form body");
    let body: serde_json::Map<String, Value> = form
        .query_pairs()
        .map(|(key, value)| (key.into_owned(), Value::from(value.into_owned())))
        .collect();
    let body = Value::Object(body);
    seen.lock().expect("lock").token_requests.push((authorization, body));
    Json(json!({
        "access_token": ACCESS_TOKEN,
        "refresh_token": REFRESH_TOKEN,
        "token_type": "Bearer",
        "expires_in": 3600,
    }))
}

/// Start the protected server (its tools are the tests' usual ones).
pub(crate) async fn protected() -> Protected {
    let seen = Shared::default();
    let routes = Router::new()
        .route("/.well-known/oauth-protected-resource/mcp", get(resource_metadata))
        .route("/.well-known/oauth-authorization-server", get(server_metadata))
        .route("/register", post(register))
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .with_state(seen.clone());
    let server = ToolServer::builder(crate::common::tools())
        .with_token(ACCESS_TOKEN)
        .allow_anonymous()
        .with_public_routes(routes)
        .start()
        .await
        .expect("the protected server starts");
    Protected { server, seen }
}
