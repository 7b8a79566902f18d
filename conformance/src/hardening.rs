//! [`check_hardening`]: an HTTP provider against hostile loopback servers ([`RawServer`]): no
//! redirect is followed and the other host hears nothing, a silent server or a stalled stream
//! hits the read timeout, a stalled or huge error body ends in bounded time, an endless line is
//! a typed error at the cap, keep-alives alone cannot hold a stream open, and a `retry-after`
//! given as an HTTP date counts. Every provider that speaks HTTP runs it, in-tree or not.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use patchbay_core::kit::StreamLimits;
use patchbay_core::{ErrorKind, Event, Limit, Message, Provider, Signal, ToolSet};

use crate::normalize::Recording;
use crate::raw::{RawServer, Step};

/// Longer than any limit these checks set: a call still running then hangs.
const HANG: Duration = Duration::from_secs(20);

/// What the checks need to know of a wire: the pieces of a stream they send raw.
#[derive(Debug, Clone, Copy)]
pub struct HttpWire {
    /// The provider's `NAME` (every error must carry it).
    pub name: &'static str,
    /// The `content-type` of a streamed `200` (`text/event-stream`, `application/x-ndjson`).
    pub content_type: &'static str,
    /// Bytes that start a stream and carry a first text delta (`Hi`).
    pub start: &'static str,
    /// A keep-alive that carries no content.
    pub keepalive: &'static str,
    /// The start of a data line that carries text: an endless line follows it.
    pub data_prefix: &'static str,
}

/// Builds the provider under test pointed at a server's base URL (`http://127.0.0.1:PORT`),
/// with these limits.
pub type BuildHttp = Arc<dyn Fn(&str, StreamLimits) -> Arc<dyn Provider> + Send + Sync>;

/// What a timeout may run past its limit on a loaded machine, beyond the tenth it is allowed.
const SLACK: Duration = Duration::from_millis(150);

/// Short limits: a read timeout of 300 ms and a content timeout of 1.5 s.
fn fast() -> StreamLimits {
    StreamLimits::default()
        .with_read_timeout(Some(Duration::from_millis(300)))
        .with_content_timeout(Some(Duration::from_millis(1500)))
}

/// One call with a short conversation; panics if it runs past [`HANG`].
async fn call(provider: &dyn Provider) -> Recording {
    let (messages, tools, signal) = ([Message::user("hi")], ToolSet::new(), Signal::new());
    let run = Recording::call(provider, &messages, &tools, "m", &signal, None);
    tokio::time::timeout(HANG, run).await.expect("the call hung")
}

/// One call like [`call`], also answering how long after the last event the error came.
async fn call_timed(provider: &dyn Provider) -> (Recording, Duration) {
    let (messages, tools, signal) = ([Message::user("hi")], ToolSet::new(), Signal::new());
    let run = async {
        let mut recording = Recording::default();
        let mut last = Instant::now();
        match provider.create_response(&messages, &tools, "m", &signal, None).await {
            Ok(mut stream) => {
                while let Some(item) = stream.next().await {
                    match item {
                        Ok(event) => {
                            recording.events.push(event);
                            last = Instant::now();
                        }
                        Err(error) => {
                            recording.error = Some(error);
                            break;
                        }
                    }
                }
            }
            Err(error) => recording.error = Some(error),
        }
        (recording, last.elapsed())
    };
    tokio::time::timeout(HANG, run).await.expect("the call hung")
}

/// A timeout fired no earlier than its limit after the last event, and within a tenth more
/// (plus [`SLACK`]).
fn assert_fired_at_limit(name: &str, silence: Duration, limit: Option<Duration>) {
    let limit = limit.expect("a limit");
    assert!(
        silence >= limit && silence <= limit + limit / 10 + SLACK,
        "{name}: the error came {silence:?} after the last event, the limit is {limit:?}"
    );
}

/// Runs every check on the provider `build` makes; panics on the first that fails, naming it.
///
/// ```no_run
/// # async fn demo(build: patchbay_conformance::hardening::BuildHttp) {
/// use patchbay_conformance::hardening::{HttpWire, check_hardening};
/// let wire = HttpWire {
///     name: "mine",
///     content_type: "application/x-ndjson",
///     start: "{\"message\":{\"content\":\"Hi\"},\"done\":false}\n",
///     keepalive: "\n",
///     data_prefix: "{\"message\":{\"content\":\"",
/// };
/// check_hardening(wire, build).await;
/// # }
/// ```
pub async fn check_hardening(wire: HttpWire, build: BuildHttp) {
    redirects_are_refused(&wire, &build).await;
    a_silent_server_hits_the_read_timeout(&wire, &build).await;
    a_stalled_stream_hits_the_read_timeout(&wire, &build).await;
    a_stalled_error_or_json_body_ends(&wire, &build).await;
    a_huge_error_body_is_not_read_whole(&wire, &build).await;
    an_endless_line_is_a_typed_error(&wire, &build).await;
    keepalives_alone_cannot_hold_a_stream(&wire, &build).await;
    retry_after_as_an_http_date_counts(&wire, &build).await;
}

fn stream_head(wire: &HttpWire) -> Step {
    Step::head("200 OK", &[("content-type", wire.content_type)])
}

/// A `307` to another host (with credentials in the location) is a `Config` error naming the
/// location without the credentials; the other host receives nothing.
pub async fn redirects_are_refused(wire: &HttpWire, build: &BuildHttp) {
    let name = wire.name;
    let other = RawServer::start(vec![Step::Stall]).await;
    let location = format!("{}/v1/x", other.url().replace("http://", "http://user:sk-LOCATION@"));
    let first = RawServer::start(vec![Step::head("307 Temporary Redirect", &[("location", &location)])]).await;
    let recording = call(build(first.url(), fast()).as_ref()).await;
    let error = recording.error.expect("a redirect is an error");
    assert!(recording.events.is_empty(), "{name}");
    assert_eq!(error.kind(), ErrorKind::Config, "{name}: {error}");
    assert_eq!(error.status(), Some(307), "{name}");
    let other_address = other.url().trim_start_matches("http://");
    assert!(
        error.message().contains(other_address),
        "{name}: names the location: {error}"
    );
    assert!(!error.to_string().contains("sk-LOCATION"), "{name}: {error}");
    // The other host never hears from us (give a follow-up request time to arrive).
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(other.connections(), 0, "{name}: the other host was contacted");
    assert_eq!(first.connections(), 1, "{name}");
}

/// A server that never answers is a `Transport` error naming `read_timeout`.
pub async fn a_silent_server_hits_the_read_timeout(wire: &HttpWire, build: &BuildHttp) {
    let name = wire.name;
    let server = RawServer::start(vec![Step::Stall]).await;
    let error = call(build(server.url(), fast()).as_ref())
        .await
        .error
        .expect("a timeout");
    assert_eq!(error.kind(), ErrorKind::Transport, "{name}: {error}");
    assert_eq!(error.limit(), Some(Limit::ReadTimeout), "{name}: {error}");
    assert!(
        error.to_string().contains("read_timeout"),
        "{name}: names the limit: {error}"
    );
}

/// A stream that stalls after its headers, or after its first text, hits the read timeout
/// (after the text: at its limit, not later); the text before the stall arrives first, and the
/// error carries the provider's name.
pub async fn a_stalled_stream_hits_the_read_timeout(wire: &HttpWire, build: &BuildHttp) {
    let name = wire.name;
    for (what, steps) in [
        ("after headers", vec![stream_head(wire), Step::Stall]),
        (
            "mid-stream",
            vec![stream_head(wire), Step::send(wire.start), Step::Stall],
        ),
    ] {
        let server = RawServer::start(steps).await;
        let (recording, silence) = call_timed(build(server.url(), fast()).as_ref()).await;
        let error = recording.error.expect("a timeout");
        assert_eq!(error.limit(), Some(Limit::ReadTimeout), "{name} {what}: {error}");
        assert_eq!(error.facts().provider.as_deref(), Some(name), "{name} {what}");
        if what == "mid-stream" {
            assert!(
                recording.events.iter().any(|e| matches!(e, Event::TextDelta { .. })),
                "{name} {what}: the text before the stall arrives first"
            );
            assert_fired_at_limit(&format!("{name} {what}"), silence, fast().read_timeout);
        }
    }
}

/// An error body or a whole-JSON body that stalls ends in bounded time: the HTTP error from
/// what arrived, or the read timeout.
pub async fn a_stalled_error_or_json_body_ends(wire: &HttpWire, build: &BuildHttp) {
    let name = wire.name;
    let json = [("content-type", "application/json"), ("content-length", "1000")];
    let server = RawServer::start(vec![
        Step::head("500 Internal Server Error", &json),
        Step::send("{\"error\":"),
        Step::Stall,
    ])
    .await;
    let error = call(build(server.url(), fast()).as_ref())
        .await
        .error
        .expect("an error");
    assert_eq!(
        error.status(),
        Some(500),
        "{name}: the HTTP error, from what arrived: {error}"
    );
    let server = RawServer::start(vec![Step::head("200 OK", &json), Step::send("{\"id\":"), Step::Stall]).await;
    let error = call(build(server.url(), fast()).as_ref())
        .await
        .error
        .expect("an error");
    assert_eq!(error.limit(), Some(Limit::ReadTimeout), "{name}: {error}");
}

/// A gigabyte error body is not read whole (the client stops at its cap).
pub async fn a_huge_error_body_is_not_read_whole(wire: &HttpWire, build: &BuildHttp) {
    let name = wire.name;
    let server = RawServer::start(vec![
        Step::head(
            "500 Internal Server Error",
            &[("content-type", "text/plain"), ("content-length", "1073741824")],
        ),
        Step::Endless(vec![b'x'; 64 * 1024]),
    ])
    .await;
    let error = call(build(server.url(), fast()).as_ref())
        .await
        .error
        .expect("an error");
    assert_eq!(error.status(), Some(500), "{name}");
    // The client stops after 64 KiB; socket buffers hold a few MiB at most.
    let written = server.bytes_written();
    assert!(written < 32 << 20, "{name}: the server wrote {written} bytes");
}

/// An endless line is a `Protocol` error naming the line limit, at the cap.
pub async fn an_endless_line_is_a_typed_error(wire: &HttpWire, build: &BuildHttp) {
    let name = wire.name;
    let server = RawServer::start(vec![
        stream_head(wire),
        Step::send(wire.start),
        Step::send(wire.data_prefix),
        Step::Endless(vec![b'a'; 64 * 1024]),
    ])
    .await;
    let limits = StreamLimits::default()
        .with_read_timeout(Some(Duration::from_secs(5)))
        .with_max_line_bytes(1 << 20);
    let error = call(build(server.url(), limits).as_ref())
        .await
        .error
        .expect("an error");
    assert_eq!(error.kind(), ErrorKind::Protocol, "{name}: {error}");
    assert_eq!(error.limit(), Some(Limit::LineLength), "{name}: {error}");
    let written = server.bytes_written();
    assert!(written < 64 << 20, "{name}: the server wrote {written} bytes");
}

/// Keep-alives every 50 ms cannot hold a stream open past the content timeout, which fires at
/// its limit after the last event, not later.
pub async fn keepalives_alone_cannot_hold_a_stream(wire: &HttpWire, build: &BuildHttp) {
    let name = wire.name;
    let server = RawServer::start(vec![
        stream_head(wire),
        Step::send(wire.start),
        Step::Every(wire.keepalive.as_bytes().to_vec(), Duration::from_millis(50)),
    ])
    .await;
    let (recording, silence) = call_timed(build(server.url(), fast()).as_ref()).await;
    let error = recording.error.expect("an error");
    assert_eq!(error.kind(), ErrorKind::Transport, "{name}: {error}");
    assert_eq!(error.limit(), Some(Limit::ContentTimeout), "{name}: {error}");
    assert!(
        recording.events.iter().any(|e| matches!(e, Event::TextDelta { .. })),
        "{name}"
    );
    assert_fired_at_limit(name, silence, fast().content_timeout);
}

/// A `429` whose `retry-after` is an HTTP date 30 s ahead is `RateLimited` with that wait.
pub async fn retry_after_as_an_http_date_counts(wire: &HttpWire, build: &BuildHttp) {
    let name = wire.name;
    // Whole seconds: the header has no finer resolution.
    let at = httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(30));
    let server = RawServer::start(vec![Step::head(
        "429 Too Many Requests",
        &[("retry-after", &at), ("content-length", "0")],
    )])
    .await;
    let error = call(build(server.url(), fast()).as_ref())
        .await
        .error
        .expect("an error");
    assert_eq!(error.kind(), ErrorKind::RateLimited, "{name}");
    let wait = error.retry_after().expect("a wait");
    assert!(
        (Duration::from_secs(28)..=Duration::from_secs(31)).contains(&wait),
        "{name}: {wait:?}"
    );
}
