//! Mock wire servers on loopback: serve the shared scenarios in a wire format, replay recorded
//! streams, inject faults, and log every request.
//!
//! A [`WireFormat`] renders a scripted turn into SSE frames (or an HTTP error); [`MockServer`]
//! serves a queue of [`Serve`] items, one per POST, with a chosen [`Chunking`]. Four families
//! ship: [`anthropic`] (Messages), [`openai`] (chat completions), [`openai_responses`] (OpenAI's
//! Responses API, which Codex speaks too) and [`gemini`] (Google `streamGenerateContent`).

pub mod anthropic;
pub mod gemini;
pub mod openai;
pub mod openai_responses;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use patchbay_scripted::{End, Response as ScriptedResponse, Script, ScriptedError, Turn};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::snapshot::split_randomly;

/// A wire family's rendering of scripted turns: implement it to serve the shared scenarios
/// in a new wire format, then start a [`MockServer`] with it (or let
/// [`Case::mock`](crate::Case::mock) do so in a conformance target).
///
/// A scripted [`ScriptedResponse`] is a list of parts (text, thinking with a signature, tool
/// calls), an end (finish with a reason, an in-stream error, a truncation, a stall) and usage.
/// Render what a real server of the family would send for it: the same ids, the same order of
/// frames, the family's own finish reasons and error bodies. Stream text in [`deltas`] pieces
/// (word-sized, a huge text as one piece on one wire line) and give a scripted `retry_after_ms`
/// the way the family gives a wait: a `retry-after` header (seconds) for most, a body detail
/// where that is the family's way (Gemini's `RetryInfo`). The provider under test then has to
/// produce the events of the shared goldens from it. Every POST gets the next turn, so the
/// path and the request body do not matter; [`MockServer::requests`] keeps them for goldens.
/// The `model` given to [`render_response`](WireFormat::render_response) is the request body's
/// `model`, else the path's `models/{model}` (as Gemini asks), else `mock-model`.
///
/// ```
/// use patchbay_conformance::mock::WireFormat;
/// use patchbay_scripted::{End, Part, Response, ScriptedError};
///
/// /// A toy family: one JSON line per text part, then `{"done": true}`.
/// struct Lines;
///
/// impl WireFormat for Lines {
///     fn name(&self) -> &'static str {
///         "lines"
///     }
///     fn content_type(&self) -> &'static str {
///         "application/x-ndjson"
///     }
///     fn render_response(&self, response: &Response, model: &str) -> Vec<String> {
///         let mut lines: Vec<String> = response.parts.iter().filter_map(|part| match part {
///             Part::Text { text } => Some(format!("{}\n", serde_json::json!({"model": model, "text": text}))),
///             _ => None,
///         }).collect();
///         if matches!(response.end, End::Finish { .. }) {
///             lines.push("{\"done\":true}\n".to_string());
///         }
///         lines
///     }
///     fn render_failure(&self, error: &ScriptedError) -> (u16, Vec<(String, String)>, String) {
///         (error.status.unwrap_or(500), Vec::new(), serde_json::json!({"error": error.message}).to_string())
///     }
/// }
/// ```
pub trait WireFormat: Send + Sync + 'static {
    /// The family name (`anthropic`, `openai`, `openai-responses`, `gemini`).
    fn name(&self) -> &'static str;

    /// The `content-type` of a streamed response (default `text/event-stream`; JSON-lines
    /// families answer `application/x-ndjson`).
    fn content_type(&self) -> &'static str {
        "text/event-stream"
    }

    /// The pieces of a streamed response body, each written at once under
    /// [`Chunking::PerFrame`]: complete SSE frames ending in a blank line, or complete JSON
    /// lines. Honour `response.end`: `Finish` ends normally, `Error` ends with the family's
    /// in-stream error, `Truncate` and `Stall` leave out the terminal pieces (the server then
    /// closes or stalls).
    fn render_response(&self, response: &ScriptedResponse, model: &str) -> Vec<String>;

    /// The HTTP answer to a call that fails before streaming: status, headers, JSON body.
    fn render_failure(&self, error: &ScriptedError) -> (u16, Vec<(String, String)>, String);
}

/// Texts longer than this go out as one delta: one huge wire line, as the `huge_line` scenario
/// wants.
pub const ONE_DELTA_ABOVE: usize = 4096;

/// The deltas a wire mock streams a text part in, the convention the shared goldens rely on:
/// word-sized pieces as the scripted provider streams them
/// ([`word_deltas`](patchbay_scripted::word_deltas)), except that a text longer than
/// [`ONE_DELTA_ABOVE`] bytes is one piece.
pub fn deltas(text: &str) -> Vec<&str> {
    if text.len() > ONE_DELTA_ABOVE {
        return vec![text];
    }
    patchbay_scripted::word_deltas(text)
}

/// How the server writes a body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Chunking {
    /// One write per SSE frame (real servers flush per token).
    #[default]
    PerFrame,
    /// The whole body in one write.
    Whole,
    /// Writes cut at pseudo-random byte boundaries (1 to `max` bytes), deterministic per seed.
    Random {
        /// The seed.
        seed: u64,
        /// The largest write.
        max: usize,
    },
}

/// How a raw body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RawEnd {
    /// Close normally.
    #[default]
    Close,
    /// Keep the connection open, sending nothing, until the client goes away.
    Stall,
    /// Reset the connection (abort the body mid-stream).
    Reset,
}

/// One answer of the mock server.
#[derive(Debug, Clone)]
pub enum Serve {
    /// A scripted turn, rendered by the server's wire format.
    Turn(Turn),
    /// Raw bytes: a recorded stream, garbage, a huge line.
    Raw {
        /// HTTP status.
        status: u16,
        /// Extra headers.
        headers: Vec<(String, String)>,
        /// The body.
        body: Bytes,
        /// How the body ends.
        end: RawEnd,
    },
    /// Wait this long before answering anything (a slow or hung server).
    Delay(Duration, Box<Serve>),
    /// Answer with `serve`, but wait `wait` before write number `before` (0-based) of its body:
    /// the headers and the first `before` writes go out at once, the rest after the pause (a
    /// model slow to its first token after the stream began). With the default
    /// [`Chunking::PerFrame`] one write is one SSE frame. Nest for several pauses; a pause past
    /// the last write never happens.
    PauseBefore {
        /// The write to hold back.
        before: usize,
        /// How long.
        wait: Duration,
        /// The answer.
        serve: Box<Serve>,
    },
}

impl Serve {
    /// A recorded SSE body served with status 200.
    pub fn sse(body: impl Into<Bytes>) -> Self {
        Self::Raw {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: body.into(),
            end: RawEnd::Close,
        }
    }

    /// An HTTP error with a JSON body and optional `retry-after` (seconds).
    pub fn status(status: u16, body: impl Into<String>, retry_after: Option<u64>) -> Self {
        let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
        if let Some(seconds) = retry_after {
            headers.push(("retry-after".into(), seconds.to_string()));
        }
        Self::Raw {
            status,
            headers,
            body: Bytes::from(body.into()),
            end: RawEnd::Close,
        }
    }
}

/// A request the mock received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// The method.
    pub method: String,
    /// Path and query (`/v1/messages?beta=true`).
    pub path: String,
    /// Headers, lowercase names; the values of `authorization`, `x-api-key`, `api-key` and
    /// `x-goog-api-key` are redacted.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON (`Value::Null` if it was not JSON).
    pub body: Value,
}

impl RecordedRequest {
    /// The value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

struct Shared {
    wire: Arc<dyn WireFormat>,
    queue: Mutex<VecDeque<Serve>>,
    repeat_last: Option<Serve>,
    chunking: Chunking,
    requests: Mutex<Vec<RecordedRequest>>,
    shutdown: CancellationToken,
}

/// A mock wire server on `127.0.0.1:<random port>`; stops when dropped.
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for MockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockServer")
            .field("addr", &self.addr)
            .field("wire", &self.shared.wire.name())
            .finish()
    }
}

/// Builds a [`MockServer`].
pub struct MockServerBuilder {
    wire: Arc<dyn WireFormat>,
    items: Vec<Serve>,
    repeat_last: bool,
    chunking: Chunking,
}

impl MockServerBuilder {
    /// Serve these items, one per POST.
    pub fn serve(mut self, items: impl IntoIterator<Item = Serve>) -> Self {
        self.items.extend(items);
        self
    }

    /// Serve the turns of a script (honouring its `repeat_last`).
    pub fn script(mut self, script: &Script) -> Self {
        self.items.extend(script.turns.iter().cloned().map(Serve::Turn));
        self.repeat_last |= script.repeat_last;
        self
    }

    /// Answer every POST past the end with the last item.
    pub fn repeat_last(mut self) -> Self {
        self.repeat_last = true;
        self
    }

    /// Set the chunking.
    pub fn chunking(mut self, chunking: Chunking) -> Self {
        self.chunking = chunking;
        self
    }

    /// Bind to loopback and start serving.
    pub async fn start(self) -> std::io::Result<MockServer> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let repeat_last = if self.repeat_last {
            self.items.last().cloned()
        } else {
            None
        };
        let shared = Arc::new(Shared {
            wire: self.wire,
            queue: Mutex::new(self.items.into()),
            repeat_last,
            chunking: self.chunking,
            requests: Mutex::new(Vec::new()),
            shutdown: CancellationToken::new(),
        });
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let shutdown = shared.shutdown.clone();
        tokio::spawn(async move {
            let server = axum::serve(listener, app).with_graceful_shutdown(async move { shutdown.cancelled().await });
            if let Err(error) = server.await {
                tracing::warn!(%error, "mock server stopped with an error");
            }
        });
        Ok(MockServer { addr, shared })
    }
}

impl MockServer {
    /// A builder for a server speaking `wire`.
    pub fn builder(wire: impl WireFormat) -> MockServerBuilder {
        MockServerBuilder {
            wire: Arc::new(wire),
            items: Vec::new(),
            repeat_last: false,
            chunking: Chunking::default(),
        }
    }

    /// `http://127.0.0.1:<port>` (no trailing slash).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// Queue more items.
    pub fn push(&self, item: Serve) {
        if let Ok(mut queue) = self.shared.queue.lock() {
            queue.push_back(item);
        }
    }

    /// Stop serving (also done on drop); open streams are closed.
    pub fn shutdown(&self) {
        self.shared.shutdown.cancel();
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.shared.shutdown.cancel();
    }
}

fn redact(name: &str, value: &HeaderValue) -> String {
    match name {
        "authorization" | "x-api-key" | "api-key" | "x-goog-api-key" => "[redacted]".into(),
        _ => String::from_utf8_lossy(value.as_bytes()).into_owned(),
    }
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let method = request.method().clone();
    let path = request
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    if method == Method::HEAD || method == Method::GET {
        return StatusCode::OK.into_response();
    }
    if path.contains("/count_tokens") {
        // Token counting is not a model call: answer it without using up a scripted turn.
        let body = Bytes::from_static(br#"{"input_tokens":10}"#);
        let headers = [("content-type".to_string(), "application/json".to_string())];
        return body_response(200, &headers, vec![body], RawEnd::Close, Pauses::new(), &shared);
    }
    let headers: Vec<(String, String)> = request
        .headers()
        .iter()
        .map(|(name, value)| (name.as_str().to_string(), redact(name.as_str(), value)))
        .collect();
    let body = match axum::body::to_bytes(request.into_body(), 256 * 1024 * 1024).await {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        Err(_) => Value::Null,
    };
    let model = model_of(&body, &path);
    if let Ok(mut requests) = shared.requests.lock() {
        requests.push(RecordedRequest {
            method: method.to_string(),
            path,
            headers,
            body,
        });
    }
    let item = shared
        .queue
        .lock()
        .ok()
        .and_then(|mut queue| queue.pop_front())
        .or_else(|| shared.repeat_last.clone());
    match item {
        Some(item) => serve(&shared, item, &model).await,
        None => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "mock: no scripted answer left for this request",
        )
            .into_response(),
    }
}

/// The model a request asks for: the body's `model`, else the path's `models/{model}` segment
/// (Gemini's `/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse`), else
/// `mock-model`.
fn model_of(body: &Value, path: &str) -> String {
    if let Some(model) = body.get("model").and_then(Value::as_str) {
        return model.to_string();
    }
    let path = path.split('?').next().unwrap_or_default();
    path.split('/')
        .skip_while(|segment| *segment != "models")
        .nth(1)
        .map(|segment| segment.split(':').next().unwrap_or(segment))
        .filter(|model| !model.is_empty())
        .unwrap_or("mock-model")
        .to_string()
}

/// Pauses inside a body: before write `.0`, wait `.1`.
type Pauses = Vec<(usize, Duration)>;

async fn serve(shared: &Arc<Shared>, mut item: Serve, model: &str) -> Response {
    let mut pauses = Pauses::new();
    loop {
        match item {
            Serve::Delay(wait, inner) => {
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = shared.shutdown.cancelled() => return StatusCode::SERVICE_UNAVAILABLE.into_response(),
                }
                item = *inner;
            }
            Serve::PauseBefore { before, wait, serve } => {
                pauses.push((before, wait));
                item = *serve;
            }
            _ => break,
        }
    }
    match item {
        Serve::Turn(Turn::Fail(error)) => {
            let (status, headers, body) = shared.wire.render_failure(&error);
            let body = Bytes::from(body);
            respond(status, &headers, body, RawEnd::Close, Chunking::Whole, pauses, shared)
        }
        Serve::Turn(Turn::Respond(response)) => {
            let end = match response.end {
                End::Stall => RawEnd::Stall,
                _ => RawEnd::Close,
            };
            let frames = shared.wire.render_response(&response, model);
            let headers = vec![("content-type".to_string(), shared.wire.content_type().to_string())];
            let chunks: Vec<Bytes> = match shared.chunking {
                Chunking::PerFrame => frames.into_iter().map(Bytes::from).collect(),
                chunking => chunk(Bytes::from(frames.concat()), chunking),
            };
            body_response(200, &headers, chunks, end, pauses, shared)
        }
        Serve::Raw {
            status,
            headers,
            body,
            end,
        } => respond(status, &headers, body, end, shared.chunking, pauses, shared),
        Serve::Delay(..) | Serve::PauseBefore { .. } => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

fn chunk(body: Bytes, chunking: Chunking) -> Vec<Bytes> {
    match chunking {
        Chunking::Whole | Chunking::PerFrame => vec![body],
        Chunking::Random { seed, max } => split_randomly(&body, seed, max).into_iter().map(Bytes::from).collect(),
    }
}

fn respond(
    status: u16,
    headers: &[(String, String)],
    body: Bytes,
    end: RawEnd,
    chunking: Chunking,
    pauses: Pauses,
    shared: &Arc<Shared>,
) -> Response {
    let chunks = match chunking {
        Chunking::PerFrame => split_frames(body),
        other => chunk(body, other),
    };
    body_response(status, headers, chunks, end, pauses, shared)
}

/// Split a body after each blank line (SSE frame, `\n\n` or `\r\n\r\n`) or, in a body without
/// one, after each newline (JSON lines).
fn split_frames(body: Bytes) -> Vec<Bytes> {
    let bytes = body.as_ref();
    // Whether the line ending at `i` (a `\n`) is blank.
    let blank = |i: usize| match i {
        0 => false,
        _ if bytes[i - 1] == b'\n' => true,
        1 => false,
        _ => bytes[i - 1] == b'\r' && bytes[i - 2] == b'\n',
    };
    let newlines = || {
        bytes
            .iter()
            .enumerate()
            .filter(|(_, byte)| **byte == b'\n')
            .map(|(i, _)| i)
    };
    let sse = newlines().any(blank);
    let mut chunks = Vec::new();
    let mut start = 0;
    for i in newlines() {
        if !sse || blank(i) {
            chunks.push(body.slice(start..i + 1));
            start = i + 1;
        }
    }
    if start < bytes.len() {
        chunks.push(body.slice(start..));
    }
    chunks
}

fn body_response(
    status: u16,
    headers: &[(String, String)],
    chunks: Vec<Bytes>,
    end: RawEnd,
    pauses: Pauses,
    shared: &Arc<Shared>,
) -> Response {
    let shutdown = shared.shutdown.clone();
    let paused = shutdown.clone();
    let head = futures::stream::iter(chunks.into_iter().enumerate()).then(move |(write, chunk)| {
        let wait: Duration = pauses
            .iter()
            .filter(|(before, _)| *before == write)
            .map(|(_, wait)| *wait)
            .sum();
        let paused = paused.clone();
        async move {
            if !wait.is_zero() {
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = paused.cancelled() => {}
                }
            }
            Ok::<Bytes, std::io::Error>(chunk)
        }
    });
    let body = match end {
        RawEnd::Close => Body::from_stream(head),
        RawEnd::Stall => Body::from_stream(head.chain(futures::stream::once(async move {
            shutdown.cancelled().await;
            Err(std::io::Error::other("mock server shut down during a stall"))
        }))),
        RawEnd::Reset => Body::from_stream(head.chain(futures::stream::once(async {
            Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "mock: reset mid-stream",
            ))
        }))),
    };
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let map: &mut HeaderMap = response.headers_mut();
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::try_from(name.as_str()),
            HeaderValue::try_from(value.as_str()),
        ) {
            map.insert(name, value);
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_comes_from_the_body_else_from_a_gemini_path() {
        let path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse";
        assert_eq!(model_of(&serde_json::json!({ "model": "m" }), path), "m");
        assert_eq!(model_of(&Value::Null, path), "gemini-2.5-flash");
        assert_eq!(model_of(&Value::Null, "/v1beta/models/gemini-pro"), "gemini-pro");
        assert_eq!(model_of(&Value::Null, "/v1/chat/completions"), "mock-model");
        assert_eq!(model_of(&Value::Null, "/v1beta/models/"), "mock-model");
    }

    #[test]
    fn frames_split_after_blank_lines_of_either_ending() {
        let split = |body: &'static str| -> Vec<Bytes> { split_frames(Bytes::from(body)) };
        assert_eq!(split("data: a\n\ndata: b\n\n"), ["data: a\n\n", "data: b\n\n"]);
        assert_eq!(
            split("data: a\r\n\r\ndata: b\r\n\r\n"),
            ["data: a\r\n\r\n", "data: b\r\n\r\n"]
        );
        assert_eq!(
            split("event: x\ndata: a\n\ndata: b"),
            ["event: x\ndata: a\n\n", "data: b"]
        );
        assert_eq!(split("{\"a\":1}\n{\"b\":2}\n"), ["{\"a\":1}\n", "{\"b\":2}\n"]);
    }

    #[test]
    fn a_gemini_key_is_redacted() {
        let value = HeaderValue::from_static("AIza-secret");
        assert_eq!(redact("x-goog-api-key", &value), "[redacted]");
        assert_eq!(redact("x-other", &value), "AIza-secret");
    }
}
