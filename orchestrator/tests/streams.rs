//! A full house locks no one out (issue 25): one token holder following a session over and
//! over cannot take the listener's connections from the API, the MCP endpoint or the web
//! view. Event streams beyond the budget (per credential, and in all) are answered `429` at
//! once, and real requests are answered while the admitted streams are held open.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use patchbay::mcp::McpClientSet;
use patchbay::{context::McpServerConfig, context::McpTransport};
use patchbay_orchestrator::Orchestrator;
use patchbay_orchestrator::api::StreamLimits;
use patchbay_orchestrator::blueprint::Blueprints;
use patchbay_orchestrator::http::{HttpOptions, Serving, serve};
use patchbay_orchestrator::store::SqliteStore;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

// Shared with the API tests, which use every blueprint; these use one.
#[path = "api/fixtures.rs"]
#[allow(dead_code)]
mod fixtures;

type Fallible<T> = Result<T, Box<dyn std::error::Error>>;

/// The longest any single wait in these tests lasts.
const LIMIT: Duration = Duration::from_secs(20);

struct Site {
    _dir: TempDir,
    _orchestrator: Orchestrator,
    serving: Serving,
    base: String,
    client: reqwest::Client,
    /// The session the followers follow (its run stalls, so its stream stays open).
    session_id: String,
}

impl Site {
    async fn start(options: HttpOptions) -> Fallible<Self> {
        let dir = tempfile::tempdir()?;
        let store = SqliteStore::open(dir.path().join("data")).await?;
        let mut blueprints = Blueprints::new();
        blueprints.add(fixtures::stall_blueprint()?, Path::new("test-blueprints.toml"))?;
        let orchestrator = Orchestrator::builder(Arc::new(store), blueprints)
            .project_dir(dir.path())
            .start()
            .await?;
        let serving = serve(&orchestrator, options).await?;
        let base = format!("http://{}", serving.server.addr());
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            reqwest::header::AUTHORIZATION,
            format!("Bearer {}", serving.server.token()).parse()?,
        );
        let client = patchbay_http::client_builder()
            .default_headers(headers)
            .pool_max_idle_per_host(0)
            .timeout(LIMIT)
            .build()?;
        let mut site = Self {
            _dir: dir,
            _orchestrator: orchestrator,
            serving,
            base,
            client,
            session_id: String::new(),
        };
        let start = json!({"type": "start_session", "session_name": "followed", "prompt": "hi", "agent_name": "stall"});
        let (status, job) = site.send(site.client.post(site.url("/jobs")).json(&start)).await?;
        assert_eq!(status, StatusCode::CREATED, "{job}");
        let (status, session) = site
            .send(site.client.get(site.url("/sessions/by-name/followed")))
            .await?;
        assert_eq!(status, StatusCode::OK, "{session}");
        site.session_id = session["session_id"].as_str().ok_or("a session id")?.to_owned();
        Ok(site)
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn events_path(&self) -> String {
        format!("/sessions/{}/events", self.session_id)
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> Fallible<(StatusCode, Value)> {
        let response = request.send().await?;
        let status = response.status();
        let text = response.text().await?;
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Ok((status, body))
    }

    /// A follower on a fresh connection with `credential` (a whole header line): the status of
    /// its answer (`None` when the connection was closed or reset first) and the connection,
    /// kept open as a client holding its streams would.
    async fn follow(&self, credential: &str) -> (Option<u16>, TcpStream) {
        let addr = self.serving.server.addr();
        let mut stream = TcpStream::connect(addr).await.expect("the kernel accepts");
        let request = format!(
            "GET {} HTTP/1.1\r\nHost: {addr}\r\n{credential}\r\nAccept: text/event-stream\r\n\r\n",
            self.events_path()
        );
        let status = async {
            stream.write_all(request.as_bytes()).await.ok()?;
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                if stream.read(&mut byte).await.ok()? == 0 {
                    return None;
                }
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head);
            head.split(' ').nth(1)?.parse::<u16>().ok()
        };
        let status = tokio::time::timeout(LIMIT, status).await.ok().flatten();
        (status, stream)
    }

    fn bearer(&self) -> String {
        format!("Authorization: Bearer {}", self.serving.server.token())
    }

    /// Log in to the web view with a one-time link: the cookie pair a browser sends back.
    async fn login(&self) -> Fallible<String> {
        let plain = patchbay_http::client_builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(LIMIT)
            .build()?;
        let response = plain.get(self.serving.web.login_url()).send().await?;
        let set = response
            .headers()
            .get(reqwest::header::SET_COOKIE)
            .ok_or("a Set-Cookie header")?
            .to_str()?;
        Ok(set.split(';').next().unwrap_or_default().trim().to_owned())
    }

    /// Real requests, each on a fresh connection: `GET /agents`, a resume, an MCP `tools/list`.
    async fn real_requests_are_answered(&self) -> Fallible<()> {
        let (status, agents) = self.send(self.client.get(self.url("/agents"))).await?;
        assert_eq!(status, StatusCode::OK, "{agents}");
        let resume = json!({"type": "resume_session", "session_name": "followed", "prompt": "more"});
        let (status, job) = self.send(self.client.post(self.url("/jobs")).json(&resume)).await?;
        assert_eq!(status, StatusCode::CREATED, "{job}");
        let headers = BTreeMap::from([(
            "Authorization".to_owned(),
            format!("Bearer {}", self.serving.server.token()),
        )]);
        let connections = McpClientSet::new()
            .with_server(McpServerConfig {
                name: "orchestrator".to_owned(),
                transport: McpTransport::Http {
                    url: self.serving.server.url().to_owned(),
                    headers,
                },
            })
            .connect()
            .await;
        assert_eq!(connections.failed(), [], "the MCP endpoint is reachable");
        let tools = connections.tools().await;
        assert!(tools.get("start_agent_session").is_some(), "tools/list answered");
        connections.close().await;
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn six_hundred_followers_leave_the_api_and_mcp_reachable() -> Fallible<()> {
    let site = Site::start(HttpOptions::default()).await?;
    let bearer = site.bearer();
    let mut held = Vec::new();
    let (mut following, mut refused, mut cut) = (0, 0, 0);
    for _ in 0..600 {
        let (status, stream) = site.follow(&bearer).await;
        match status {
            Some(200) => following += 1,
            Some(429) => refused += 1,
            other => {
                eprintln!("follower answered {other:?}");
                cut += 1;
            }
        }
        held.push(stream);
    }
    eprintln!("600 followers: {following} following, {refused} refused with 429, {cut} cut off");
    // And a local process, no token, holding half-open connections (a partial request line).
    for _ in 0..500 {
        let mut stream = TcpStream::connect(site.serving.server.addr()).await?;
        stream.write_all(b"GET /agents HT").await?;
        held.push(stream);
    }
    site.real_requests_are_answered().await?;
    assert_eq!(cut, 0, "a follower was reset instead of answered");
    assert_eq!(
        (following, refused),
        (64, 536),
        "the default budget: 64 streams per credential"
    );
    drop(held);
    site.serving.server.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn streams_over_the_budget_are_refused_429_per_credential_and_in_all() -> Fallible<()> {
    let streams = StreamLimits {
        per_credential: 3,
        total: 5,
    };
    let site = Site::start(HttpOptions {
        streams,
        ..HttpOptions::default()
    })
    .await?;
    let bearer = site.bearer();
    let mut held = Vec::new();
    for _ in 0..3 {
        let (status, stream) = site.follow(&bearer).await;
        assert_eq!(status, Some(200), "a stream within the budget");
        held.push(stream);
    }
    // The token's fourth stream: 429 at once, in the API's error shape, with Retry-After.
    let response = site.client.get(site.url(&site.events_path())).send().await?;
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry = response.headers().get("retry-after").and_then(|v| v.to_str().ok());
    assert!(retry.is_some_and(|v| v.parse::<u32>().is_ok()), "{retry:?}");
    let body: Value = response.json().await?;
    assert_eq!(body["error"]["code"], "too_many_streams", "{body}");

    // A web-view login is a credential of its own, up to the total over all credentials.
    let cookie = format!("Cookie: {}", site.login().await?);
    let mut statuses = Vec::new();
    for _ in 0..3 {
        let (status, stream) = site.follow(&cookie).await;
        statuses.push(status);
        held.push(stream);
    }
    assert_eq!(
        statuses,
        [Some(200), Some(200), Some(429)],
        "the cookie's streams, the total being 5"
    );
    site.real_requests_are_answered().await?;

    // A stream whose client goes away gives its place back.
    drop(held.swap_remove(0));
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        let (status, stream) = site.follow(&bearer).await;
        if status == Some(200) {
            held.push(stream);
            break;
        }
        assert_eq!(status, Some(429));
        assert!(tokio::time::Instant::now() < deadline, "the place was never given back");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(held);
    site.serving.server.shutdown().await;
    Ok(())
}
