//! A recording proxy in front of the orchestrator's MCP endpoint: a peer is pointed at it
//! instead, every request is passed on (headers and body as sent, answers streamed back as they
//! come), and each POST is kept with the JSON-RPC messages of its answer, so a test sees what
//! the peer sent (a `progressToken`?) and what it was answered (progress notifications?).

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// One POST the proxy passed on.
#[derive(Debug, Clone, Default)]
pub(crate) struct Exchange {
    /// The JSON-RPC message sent (`Null` when the body was not JSON).
    pub(crate) request: Value,
    /// The answer's content type.
    pub(crate) content_type: String,
    /// The messages of the answer, in order: the SSE events' data, or the one JSON body.
    pub(crate) answer: Vec<Value>,
}

impl Exchange {
    /// Whether the request is a `tools/call` of `tool`.
    pub(crate) fn calls(&self, tool: &str) -> bool {
        self.request["method"] == "tools/call" && self.request["params"]["name"] == tool
    }

    /// The request's `_meta.progressToken`, if it sent one.
    pub(crate) fn progress_token(&self) -> Option<&Value> {
        self.request["params"]["_meta"]
            .get("progressToken")
            .filter(|token| !token.is_null())
    }

    /// The `message`s of the progress notifications in the answer.
    pub(crate) fn progress(&self) -> Vec<String> {
        self.answer
            .iter()
            .filter(|m| m["method"] == "notifications/progress")
            .map(|m| m["params"]["message"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// The text of the answer's tool result.
    pub(crate) fn result_text(&self) -> String {
        let result = self.answer.iter().find(|m| m.get("result").is_some());
        result
            .and_then(|m| m["result"]["content"].as_array())
            .into_iter()
            .flatten()
            .filter_map(|c| c["text"].as_str())
            .collect()
    }
}

type Exchanges = Arc<Mutex<Vec<Arc<Mutex<Exchange>>>>>;

#[derive(Clone)]
struct Shared {
    target: String,
    client: reqwest::Client,
    exchanges: Exchanges,
}

/// The proxy on loopback; stops when dropped.
pub(crate) struct McpRecorder {
    /// Where peers connect instead of the endpoint.
    pub(crate) url: String,
    exchanges: Exchanges,
    stop: CancellationToken,
}

impl McpRecorder {
    /// A proxy passing every request on to `target` (the MCP endpoint's URL).
    pub(crate) async fn start(target: &str) -> Self {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let shared = Shared {
            target: target.to_owned(),
            client: patchbay_http::client_builder().build().unwrap(),
            exchanges: Exchanges::default(),
        };
        let exchanges = shared.exchanges.clone();
        let app = Router::new().fallback(forward).with_state(shared);
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move { stopped.cancelled().await })
                .await;
        });
        Self { url, exchanges, stop }
    }

    /// Every POST passed on so far, in order.
    pub(crate) fn exchanges(&self) -> Vec<Exchange> {
        let all = self.exchanges.lock().map(|e| e.clone()).unwrap_or_default();
        all.iter().filter_map(|e| e.lock().ok().map(|e| e.clone())).collect()
    }
}

impl Drop for McpRecorder {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Headers that belong to one hop (and `Host`, which names the proxy).
fn hop_by_hop(name: &header::HeaderName) -> bool {
    [
        header::HOST,
        header::CONTENT_LENGTH,
        header::CONNECTION,
        header::TRANSFER_ENCODING,
    ]
    .contains(name)
}

fn copy_headers(from: &HeaderMap) -> HeaderMap {
    from.iter()
        .filter(|(name, _)| !hop_by_hop(name))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

async fn forward(State(shared): State<Shared>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 64 << 20).await else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let sent = shared
        .client
        .request(parts.method.clone(), &shared.target)
        .headers(copy_headers(&parts.headers))
        .body(bytes.clone())
        .send()
        .await;
    let answer = match sent {
        Ok(answer) => answer,
        Err(error) => return (StatusCode::BAD_GATEWAY, error.to_string()).into_response(),
    };
    let status = answer.status();
    let headers = copy_headers(answer.headers());
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let exchange = Arc::new(Mutex::new(Exchange {
        request: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        content_type: content_type.clone(),
        answer: Vec::new(),
    }));
    if parts.method == axum::http::Method::POST
        && let Ok(mut all) = shared.exchanges.lock()
    {
        all.push(exchange.clone());
    }
    // Pass each chunk on as it comes, noting the complete messages.
    let sse = content_type.starts_with("text/event-stream");
    let mut buffer = String::new();
    let stream = answer.bytes_stream().map(move |chunk| {
        if let Ok(bytes) = &chunk {
            buffer.push_str(&String::from_utf8_lossy(bytes));
            let messages = if sse {
                sse_events(&mut buffer)
            } else {
                json_body(&mut buffer)
            };
            if let Ok(mut exchange) = exchange.lock() {
                exchange.answer.extend(messages);
            }
        }
        chunk
    });
    let mut response = Response::new(Body::from_stream(stream));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// The data of each complete SSE event in `buffer` (taken out of it), as JSON.
fn sse_events(buffer: &mut String) -> Vec<Value> {
    let mut out = Vec::new();
    while let Some(end) = buffer.find("\n\n") {
        let event: String = buffer.drain(..end + 2).collect();
        let data: Vec<&str> = event
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(str::trim_start)
            .collect();
        if let Ok(message) = serde_json::from_str(&data.join("\n")) {
            out.push(message);
        }
    }
    out
}

/// The body once it is one complete JSON value (taken out of `buffer`).
fn json_body(buffer: &mut String) -> Vec<Value> {
    match serde_json::from_str::<Value>(buffer) {
        Ok(message) => {
            buffer.clear();
            vec![message]
        }
        Err(_) => Vec::new(),
    }
}
