//! A loopback reverse proxy that adds the orchestrator's bearer token, for the official MCP
//! conformance suite: `conformance server --url URL` sends no `Authorization` header and takes
//! no header option, while the orchestrator's `/mcp` always asks for its token (that check
//! stays on; the servers bind loopback and require a token). The suite talks to this proxy,
//! which forwards each request unchanged but for the token and its own address.
//!
//! What it forwards: the method, path, query, headers and body of every request, to the same
//! path on the orchestrator. A `Host` or `Origin` naming the proxy itself (`127.0.0.1:<port>`,
//! `localhost:<port>`) is rewritten to name the orchestrator, as if the suite had called it
//! directly; any other value passes unchanged, so the orchestrator's own DNS-rebinding and
//! origin checks still judge it. The answer comes back with its status and headers, and its
//! body as a stream (an SSE answer streams, it is not buffered). Hop-by-hop headers are dropped
//! both ways.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use http::header::{AUTHORIZATION, HOST, HeaderMap, HeaderValue, ORIGIN};
use http::{HeaderName, StatusCode};

/// The largest request body forwarded (JSON-RPC messages are far smaller).
const MAX_REQUEST_BYTES: usize = 16 * 1024 * 1024;

/// Headers that belong to one connection, not to the request or answer.
const HOP_BY_HOP: [&str; 7] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// The running proxy; stops when dropped.
pub(crate) struct TokenProxy {
    url: String,
    task: tokio::task::JoinHandle<()>,
}

impl TokenProxy {
    /// Listen on `127.0.0.1:0` and forward to the server of `upstream` (an MCP URL such as
    /// `http://127.0.0.1:4000/mcp`) with `Authorization: Bearer <token>`.
    pub(crate) async fn start(upstream: &str, token: &str) -> Self {
        let upstream = reqwest::Url::parse(upstream).unwrap_or_else(|e| panic!("{upstream}: {e}"));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("bind the proxy: {e}"));
        let port = listener.local_addr().expect("the proxy's address").port();
        let upstream_port = upstream.port_or_known_default().expect("the orchestrator's port");
        let mut bearer = HeaderValue::from_str(&format!("Bearer {token}")).expect("a token HTTP allows");
        bearer.set_sensitive(true);
        let state = Arc::new(Forward {
            client: patchbay_http::client_builder()
                .no_proxy()
                .build()
                .unwrap_or_else(|e| panic!("HTTP client: {e}")),
            origin: format!("http://127.0.0.1:{upstream_port}"),
            own_port: port,
            upstream_port,
            bearer,
        });
        let app = axum::Router::new().fallback(forward).with_state(state);
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .await
                .unwrap_or_else(|e| panic!("the proxy: {e}"));
        });
        Self {
            url: format!("http://127.0.0.1:{port}{}", upstream.path()),
            task,
        }
    }

    /// The URL to give the suite: the upstream's path on the proxy.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }
}

impl Drop for TokenProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct Forward {
    client: reqwest::Client,
    /// `http://127.0.0.1:<upstream port>`.
    origin: String,
    own_port: u16,
    upstream_port: u16,
    bearer: HeaderValue,
}

impl Forward {
    /// `value` with the proxy's own `127.0.0.1:<port>` or `localhost:<port>` (after an
    /// optional `http://`) made the upstream's; `None` when it names anything else.
    fn own_to_upstream(&self, value: &HeaderValue) -> Option<HeaderValue> {
        let text = value.to_str().ok()?;
        let (scheme, authority) = match text.strip_prefix("http://") {
            Some(rest) => ("http://", rest),
            None => ("", text),
        };
        let (host, port) = authority.rsplit_once(':')?;
        let own = port == self.own_port.to_string() && (host == "127.0.0.1" || host.eq_ignore_ascii_case("localhost"));
        if !own {
            return None;
        }
        HeaderValue::from_str(&format!("{scheme}{host}:{}", self.upstream_port)).ok()
    }
}

/// Drop the hop-by-hop headers of `headers`, and those its `Connection` header names.
fn end_to_end(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(http::header::CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
}

async fn forward(State(proxy): State<Arc<Forward>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut headers = parts.headers;
    end_to_end(&mut headers);
    for name in [HOST, ORIGIN] {
        if let Some(value) = headers.get(&name).and_then(|v| proxy.own_to_upstream(v)) {
            headers.insert(name, value);
        }
    }
    headers.insert(AUTHORIZATION, proxy.bearer.clone());
    let body = match axum::body::to_bytes(body, MAX_REQUEST_BYTES).await {
        Ok(body) => body,
        Err(e) => return (StatusCode::BAD_REQUEST, format!("proxy: the request body: {e}")).into_response(),
    };
    let sent = proxy
        .client
        .request(parts.method, format!("{}{path}", proxy.origin))
        .headers(headers)
        .body(body)
        .send()
        .await;
    let answer = match sent {
        Ok(answer) => answer,
        Err(e) => return (StatusCode::BAD_GATEWAY, format!("proxy: {e}")).into_response(),
    };
    let status = answer.status();
    let mut headers = answer.headers().clone();
    end_to_end(&mut headers);
    let mut response = Response::new(Body::from_stream(answer.bytes_stream()));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// The proxy adds the token, maps its own `Host` to the upstream's and leaves another one
/// alone, and hands an SSE answer on event by event while the upstream still holds it open.
pub(crate) async fn the_proxy_adds_the_token_and_streams_an_sse_answer() {
    use futures::StreamExt;

    let (seen_tx, mut seen) = tokio::sync::mpsc::unbounded_channel::<HeaderMap>();
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let released = Arc::new(tokio::sync::Mutex::new(Some(released)));
    let upstream = axum::Router::new().route(
        "/mcp",
        axum::routing::any(move |headers: HeaderMap| {
            let released = released.clone();
            async move {
                seen_tx.send(headers).unwrap();
                let second = async move {
                    if let Some(released) = released.lock().await.take() {
                        let _ = released.await;
                    }
                    Ok::<_, std::io::Error>("data: two\n\n")
                };
                let events = futures::stream::once(async { Ok("data: one\n\n") }).chain(futures::stream::once(second));
                (
                    [(http::header::CONTENT_TYPE, "text/event-stream")],
                    Body::from_stream(events),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream_port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move { axum::serve(listener, upstream).await.unwrap() });
    let proxy = TokenProxy::start(&format!("http://127.0.0.1:{upstream_port}/mcp"), "sesame").await;
    let client = patchbay_http::client_builder().no_proxy().build().unwrap();

    let answer = client.get(proxy.url()).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.headers()[http::header::CONTENT_TYPE], "text/event-stream");
    let headers = seen.recv().await.unwrap();
    assert_eq!(headers[AUTHORIZATION], "Bearer sesame");
    assert_eq!(headers[HOST], format!("127.0.0.1:{upstream_port}"));
    let mut body = answer.bytes_stream();
    let first = tokio::time::timeout(std::time::Duration::from_secs(10), body.next())
        .await
        .expect("the first event arrives while the upstream holds the answer open")
        .unwrap()
        .unwrap();
    assert_eq!(first, "data: one\n\n");
    release.send(()).unwrap();
    let rest: Vec<_> = body.map(|chunk| chunk.unwrap()).collect().await;
    assert_eq!(rest.concat(), b"data: two\n\n");

    // Another host is the upstream's to judge: it passes unchanged.
    let answer = client
        .get(proxy.url())
        .header(HOST, "evil.example.com")
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(seen.recv().await.unwrap()[HOST], "evil.example.com");
    server.abort();
}
