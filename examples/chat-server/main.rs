//! A chat backend on patchbay in one file: the browser posts what `useChat` posts, the answer
//! streams back as the AI SDK's UI message stream, a tool call that needs approval pauses the run
//! and a later request resumes it, and a reconnecting client gets the rest of the answer.
//!
//! ```text
//! cargo run --example chat-server                          # offline: the scripted demo model
//! cargo run --example chat-server --features anthropic -- --provider anthropic   # ANTHROPIC_API_KEY
//! ```
//!
//! It prints its URL (loopback, with a token: every request needs it) and serves:
//! - `GET /?token=...`: a minimal page that renders text, tool activity, sources and an
//!   approval button;
//! - `POST /api/chat`: the body `useChat`'s default transport sends (`{id, messages, trigger,
//!   messageId}`), answered with a UI message stream (`x-vercel-ai-ui-message-stream: v1`);
//!   messages whose tool parts carry an approval answer resume the chat's paused run;
//! - `GET /api/chat/{id}/stream`: the chat's current answer again, from the start or after
//!   `Last-Event-ID` (`204` when there is none), as the AI SDK's `resumeStream` asks.

mod demo;

use std::collections::HashMap;
use std::convert::Infallible;
use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt;
use patchbay::agent::PausedRun;
use patchbay::context::PauseFor;
use patchbay::{Agent, EventStream, Provider, Registry, RequestContext, Signal, Transcript};
use patchbay_resume::{RegistryLimits, ReplayLog, ReplayLogs, Writer};
use patchbay_ui::{ChatRequest, UiStream};
use serde::Deserialize;

/// Runs at once; more are refused with `429` so no client can take the machine.
const MAX_RUNS: usize = 16;

/// What every request shares.
struct App {
    agent: Agent,
    token: String,
    /// Paused runs by chat id, until a later request answers them.
    paused: Mutex<HashMap<String, PausedRun>>,
    /// The answer of each chat's latest run, as UI message stream chunks (JSON text).
    logs: ReplayLogs<String>,
    runs: Arc<tokio::sync::Semaphore>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let provider_name = match args.as_slice() {
        [] => "scripted".to_string(),
        [flag, name] if flag == "--provider" => name.clone(),
        _ => {
            eprintln!("usage: chat-server [--provider NAME]   (default: scripted, offline)");
            return ExitCode::from(2);
        }
    };
    let (provider, model): (Arc<dyn Provider>, &str) = if provider_name == "scripted" {
        (demo::DemoModel::new(), "scripted-demo")
    } else {
        match Registry::compiled().build(&provider_name, &serde_json::Value::Null) {
            Ok(provider) => (provider, default_model(&provider_name)),
            Err(error) => {
                eprintln!("chat-server: {error}");
                return ExitCode::FAILURE;
            }
        }
    };
    let context = RequestContext::new()
        .with_system("You are a helpful assistant for a small team. Search before you answer.")
        .with_approval(Arc::new(PauseFor::tools([demo::NEEDS_APPROVAL])));
    let agent = Agent::new(provider, model)
        .with_tools(demo::tools())
        .with_context(context)
        .with_max_steps(8);
    let app = Arc::new(App {
        agent,
        token: uuid::Uuid::new_v4().simple().to_string(),
        paused: Mutex::new(HashMap::new()),
        logs: ReplayLogs::new(RegistryLimits::new()),
        runs: Arc::new(tokio::sync::Semaphore::new(MAX_RUNS)),
    });
    let listener = match tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port()))).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("chat-server: cannot listen on loopback: {error}");
            return ExitCode::FAILURE;
        }
    };
    let addr = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
    // Written, not printed: a reader that went away (a closed pipe) must not stop the server.
    let mut out = std::io::stdout();
    let _ = writeln!(out, "chat server on http://{addr}/?token={}", app.token);
    if provider_name == "scripted" {
        let _ = writeln!(
            out,
            "(offline: the scripted demo model; pass --provider NAME for a real one)"
        );
    }
    let _ = out.flush();
    let router = Router::new()
        .route("/", get(page))
        .route("/api/chat", post(chat))
        .route("/api/chat/{id}/stream", get(resume))
        .with_state(app);
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    match axum::serve(listener, router).with_graceful_shutdown(shutdown).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("chat-server: {error}");
            ExitCode::FAILURE
        }
    }
}

/// `PATCHBAY_CHAT_PORT`, else any free port.
fn port() -> u16 {
    std::env::var("PATCHBAY_CHAT_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(0)
}

fn default_model(provider: &str) -> &'static str {
    match provider {
        "anthropic" => "claude-sonnet-4-5",
        "openrouter" => "openai/gpt-4o-mini",
        "gemini" => "gemini-2.5-flash",
        "openai" => "gpt-5-mini",
        "claude-agent" => "sonnet",
        _ => "default",
    }
}

#[derive(Deserialize)]
struct TokenQuery {
    token: Option<String>,
}

/// Whether the request carries the server's token (bearer header, or `?token=` for the page).
fn authorized(app: &App, headers: &HeaderMap, query: Option<&str>) -> bool {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let given = bearer.or(query).unwrap_or("");
    // Compared in full whatever the first difference, so timing tells nothing.
    given.len() == app.token.len()
        && given
            .bytes()
            .zip(app.token.bytes())
            .fold(0, |acc, (a, b)| acc | (a ^ b))
            == 0
}

fn refused() -> Response {
    (StatusCode::UNAUTHORIZED, "a valid token is required\n").into_response()
}

async fn page(State(app): State<Arc<App>>, headers: HeaderMap, Query(query): Query<TokenQuery>) -> Response {
    if !authorized(&app, &headers, query.token.as_deref()) {
        return refused();
    }
    Html(include_str!("page.html")).into_response()
}

/// `POST /api/chat`: a new run, or the chat's paused run resumed with the decisions the
/// messages carry.
async fn chat(State(app): State<Arc<App>>, headers: HeaderMap, body: Bytes) -> Response {
    if !authorized(&app, &headers, None) {
        return refused();
    }
    let request = match ChatRequest::from_json(&body) {
        Ok(request) => request,
        Err(error) => return (StatusCode::BAD_REQUEST, format!("not a chat request: {error}\n")).into_response(),
    };
    let Ok(permit) = app.runs.clone().try_acquire_owned() else {
        return (StatusCode::TOO_MANY_REQUESTS, "too many runs at once\n").into_response();
    };
    // One run per chat at a time: a second request while one streams is refused.
    let writer = match app.logs.create(request.id.clone()) {
        Ok(writer) => writer,
        Err(error @ patchbay_resume::Error::Full { .. }) => {
            return (StatusCode::SERVICE_UNAVAILABLE, format!("{error}\n")).into_response();
        }
        Err(error) => return (StatusCode::CONFLICT, format!("{error}\n")).into_response(),
    };
    let log = writer.log();
    let decisions = request.decisions();
    let paused = if decisions.is_empty() {
        None
    } else {
        app.paused.lock().unwrap_or_else(|e| e.into_inner()).remove(&request.id)
    };
    let (stream, transcript, ui) = match paused {
        // The resumed run continues the assistant message the client shows.
        Some(paused) => {
            let (stream, transcript) = app.agent.resume_stream(paused, decisions, Signal::new());
            let ui = match request.last_assistant() {
                Some(message) => UiStream::new().continuing(message),
                None => UiStream::new(),
            };
            (stream, transcript, ui)
        }
        None => {
            let (stream, transcript) = app.agent.stream_with_transcript(request.to_messages(), Signal::new());
            (stream, transcript, UiStream::new())
        }
    };
    tokio::spawn(drive(
        app.clone(),
        request.id.clone(),
        (stream, transcript, ui),
        writer,
        permit,
    ));
    sse(&log, 0)
}

/// Run the answer into the chat's log: the run goes on when the client goes away, so a
/// reconnecting client gets all of it. A paused run is kept before the stream ends, so the
/// approval a client sends right after it finds the run.
async fn drive(
    app: Arc<App>,
    chat_id: String,
    (mut stream, transcript, mut ui): (EventStream, Transcript, UiStream),
    log: Writer<String>,
    _permit: tokio::sync::OwnedSemaphorePermit,
) {
    let append = |chunks: Vec<patchbay_ui::UiChunk>| {
        for chunk in chunks {
            if let Ok(json) = serde_json::to_string(&chunk) {
                log.append(json);
            }
        }
    };
    while let Some(item) = stream.next().await {
        append(match &item {
            Ok(event) => ui.push(event),
            Err(error) => ui.error(error),
        });
        if ui.is_ended() {
            break;
        }
    }
    // A stream that ended without `Finish` or an error still ends the message.
    append(ui.end());
    if let Some(paused) = transcript.paused() {
        app.paused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(chat_id, paused);
    }
    log.append("[DONE]".to_string());
    log.close();
}

/// `GET /api/chat/{id}/stream`: the chat's latest answer, after `Last-Event-ID` when given.
async fn resume(State(app): State<Arc<App>>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    if !authorized(&app, &headers, None) {
        return refused();
    }
    let header = headers.get(patchbay_resume::LAST_EVENT_ID).map(HeaderValue::as_bytes);
    let after = match patchbay_resume::last_event_id(header, None) {
        Ok(after) => after,
        Err(error) => return (StatusCode::BAD_REQUEST, format!("{error}\n")).into_response(),
    };
    match app.logs.get(&id) {
        Some(log) => sse(&log, after),
        None => StatusCode::NO_CONTENT.into_response(),
    }
}

/// The log from after `after` as a UI message stream response (each frame's id is its place
/// in the log, for `Last-Event-ID`).
fn sse(log: &ReplayLog<String>, after: u64) -> Response {
    let frames = match log.reader(after) {
        // A reader that fell behind the log's bounds ends there; the client sees the stream end.
        Ok(reader) => reader
            .take_while(|item| std::future::ready(item.is_ok()))
            .filter_map(|item| std::future::ready(item.ok()))
            .map(|(seq, json)| Ok::<_, Infallible>(patchbay_resume::frame(Some(seq), None, &json))),
        Err(error) => return (StatusCode::GONE, format!("{error}\n")).into_response(),
    };
    let mut response = Response::new(Body::from_stream(frames));
    let headers = response.headers_mut();
    // The AI SDK's own response headers (connection handling is the server's).
    for (name, value) in patchbay_ui::sse::HEADERS {
        if name != "connection" {
            headers.insert(name, HeaderValue::from_static(value));
        }
    }
    response
}
