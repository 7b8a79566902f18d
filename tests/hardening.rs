//! Every HTTP provider against hostile loopback servers (issue 11): no redirect is followed,
//! nothing stalls forever, nothing grows without bound, `retry-after` dates count. One test per
//! behaviour, run over each HTTP provider the registry builds.

use std::sync::Arc;
use std::time::{Duration, Instant};

use patchbay::Registry;
use patchbay_conformance::Recording;
use patchbay_conformance::raw::{RawServer, Step};
use patchbay_core::{ErrorKind, Event, Limit, Message, Provider, ProviderError, Signal, ToolSet};
use serde_json::{Value, json};

/// Longer than any limit these tests set: a call still running then hangs.
const HANG: Duration = Duration::from_secs(20);

/// One HTTP provider: its registry name, how to point it at a server, and its wire.
struct Http {
    name: &'static str,
    /// A first content event's bytes (the stream has started).
    start: &'static str,
    /// A keep-alive that carries no content.
    keepalive: &'static str,
    /// A line start of a data frame (an endless line follows it).
    data_prefix: &'static str,
}

const ANTHROPIC: Http = Http {
    name: "anthropic",
    start: "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\
            \"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":1,\
            \"output_tokens\":0}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\
            \"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\
            \"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n",
    keepalive: "event: ping\ndata: {\"type\":\"ping\"}\n\n",
    data_prefix: "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"",
};

const OPENROUTER: Http = Http {
    name: "openrouter",
    start: "data: {\"id\":\"r1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n",
    keepalive: ": OPENROUTER PROCESSING\n\n",
    data_prefix: "data: {\"id\":\"r1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"",
};

const PROVIDERS: [Http; 2] = [ANTHROPIC, OPENROUTER];

impl Http {
    /// The provider pointed at `base` with a recognisable key and `options` on top.
    fn build(&self, base: &str, options: Value) -> Arc<dyn Provider> {
        let mut all = match self.name {
            "anthropic" => json!({ "base_url": base, "api_key": "sk-HARDENING-KEY" }),
            _ => json!({ "base_url": format!("{base}/v1"), "api_key": "sk-HARDENING-KEY", "dialect": "generic" }),
        };
        if let (Value::Object(all), Value::Object(extra)) = (&mut all, options) {
            all.extend(extra);
        }
        Registry::compiled().build(self.name, &all).expect("provider builds")
    }

    /// A `200` event stream's head.
    fn stream_head(&self) -> Step {
        Step::head("200 OK", &[("content-type", "text/event-stream")])
    }
}

/// Call `provider` once and collect its events and the error that ended it, failing the test
/// if the whole call takes longer than [`HANG`].
async fn call(provider: &dyn Provider) -> (Vec<Event>, Option<ProviderError>) {
    let (messages, tools, signal) = ([Message::user("hi")], ToolSet::new(), Signal::new());
    let run = Recording::call(provider, &messages, &tools, "m", &signal, None);
    let Recording { events, error } = tokio::time::timeout(HANG, run).await.expect("the call hung");
    (events, error)
}

fn fast() -> Value {
    json!({ "read_timeout_ms": 300, "content_timeout_ms": 1500 })
}

#[tokio::test]
async fn no_provider_follows_a_redirect_and_the_other_host_receives_nothing() {
    for http in PROVIDERS {
        let other = RawServer::start(vec![Step::Stall]).await;
        let location = format!(
            "{}/v1/messages",
            other.url().replace("http://", "http://user:sk-LOCATION@")
        );
        let first = RawServer::start(vec![Step::head("307 Temporary Redirect", &[("location", &location)])]).await;
        let provider = http.build(first.url(), json!({ "headers": { "x-custom": "sk-CUSTOM-HEADER" } }));
        let (events, error) = call(provider.as_ref()).await;
        let error = error.expect("a redirect is an error");
        assert!(events.is_empty(), "{}", http.name);
        assert_eq!(error.kind(), ErrorKind::Config, "{}: {error}", http.name);
        assert_eq!(error.status(), Some(307), "{}", http.name);
        let other_address = other.url().trim_start_matches("http://");
        assert!(
            error.message().contains(other_address),
            "{}: names the location: {error}",
            http.name
        );
        assert!(!error.to_string().contains("sk-LOCATION"), "{}: {error}", http.name);
        // The other host never hears from us (give a follow-up request time to arrive).
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(other.connections(), 0, "{}: the other host was contacted", http.name);
        assert_eq!(first.connections(), 1, "{}", http.name);
    }
}

#[tokio::test]
async fn a_server_that_never_answers_hits_the_read_timeout() {
    for http in PROVIDERS {
        let server = RawServer::start(vec![Step::Stall]).await;
        let (_, error) = call(http.build(server.url(), fast()).as_ref()).await;
        let error = error.expect("a timeout");
        assert_eq!(error.kind(), ErrorKind::Transport, "{}: {error}", http.name);
        assert_eq!(error.limit(), Some(Limit::ReadTimeout), "{}: {error}", http.name);
        assert!(
            error.to_string().contains("read_timeout"),
            "{}: names the limit: {error}",
            http.name
        );
    }
}

#[tokio::test]
async fn a_stream_that_stalls_after_headers_or_mid_stream_hits_the_read_timeout() {
    for http in PROVIDERS {
        for (what, steps) in [
            ("after headers", vec![http.stream_head(), Step::Stall]),
            (
                "mid-stream",
                vec![http.stream_head(), Step::send(http.start), Step::Stall],
            ),
        ] {
            let server = RawServer::start(steps).await;
            let (events, error) = call(http.build(server.url(), fast()).as_ref()).await;
            let error = error.expect("a timeout");
            assert_eq!(error.limit(), Some(Limit::ReadTimeout), "{} {what}: {error}", http.name);
            assert_eq!(
                error.facts().provider.as_deref(),
                Some(http.name),
                "{} {what}",
                http.name
            );
            if what == "mid-stream" {
                assert!(
                    events.iter().any(|e| matches!(e, Event::TextDelta { .. })),
                    "{} {what}: the text before the stall arrives first",
                    http.name
                );
            }
        }
    }
}

#[tokio::test]
async fn a_stalled_error_body_or_json_body_ends_in_bounded_time() {
    for http in PROVIDERS {
        let stalled_error = vec![
            Step::head(
                "500 Internal Server Error",
                &[("content-type", "application/json"), ("content-length", "1000")],
            ),
            Step::send("{\"error\":"),
            Step::Stall,
        ];
        let server = RawServer::start(stalled_error).await;
        let (_, error) = call(http.build(server.url(), fast()).as_ref()).await;
        let error = error.expect("an error");
        assert_eq!(
            error.status(),
            Some(500),
            "{}: the HTTP error, from what arrived: {error}",
            http.name
        );

        let stalled_json = vec![
            Step::head(
                "200 OK",
                &[("content-type", "application/json"), ("content-length", "1000")],
            ),
            Step::send("{\"id\":"),
            Step::Stall,
        ];
        let server = RawServer::start(stalled_json).await;
        let (_, error) = call(http.build(server.url(), fast()).as_ref()).await;
        let error = error.expect("an error");
        assert_eq!(error.limit(), Some(Limit::ReadTimeout), "{}: {error}", http.name);
    }
}

#[tokio::test]
async fn a_huge_error_body_is_not_read_whole() {
    for http in PROVIDERS {
        let huge = vec![
            Step::head(
                "500 Internal Server Error",
                &[("content-type", "text/plain"), ("content-length", "1073741824")],
            ),
            Step::Endless(vec![b'x'; 64 * 1024]),
        ];
        let server = RawServer::start(huge).await;
        let (_, error) = call(http.build(server.url(), fast()).as_ref()).await;
        let error = error.expect("an error");
        assert_eq!(error.status(), Some(500), "{}", http.name);
        // The client stops after 64 KiB; socket buffers hold a few MiB at most.
        let written = server.bytes_written();
        assert!(written < 32 << 20, "{}: the server wrote {written} bytes", http.name);
    }
}

#[tokio::test]
async fn an_endless_line_is_a_typed_error_at_the_cap() {
    for http in PROVIDERS {
        let endless = vec![
            http.stream_head(),
            Step::send(http.start),
            Step::send(http.data_prefix),
            Step::Endless(vec![b'a'; 64 * 1024]),
        ];
        let server = RawServer::start(endless).await;
        let options = json!({ "read_timeout_ms": 5000, "max_line_bytes": 1 << 20 });
        let (_, error) = call(http.build(server.url(), options).as_ref()).await;
        let error = error.expect("an error");
        assert_eq!(error.kind(), ErrorKind::Protocol, "{}: {error}", http.name);
        assert_eq!(error.limit(), Some(Limit::LineLength), "{}: {error}", http.name);
        let written = server.bytes_written();
        assert!(written < 64 << 20, "{}: the server wrote {written} bytes", http.name);
    }
}

#[tokio::test]
async fn keepalives_alone_cannot_keep_a_stream_open() {
    for http in PROVIDERS {
        let pings = vec![
            http.stream_head(),
            Step::send(http.start),
            Step::Every(http.keepalive.as_bytes().to_vec(), Duration::from_millis(50)),
        ];
        let server = RawServer::start(pings).await;
        let started = Instant::now();
        let (events, error) = call(http.build(server.url(), fast()).as_ref()).await;
        let error = error.expect("an error");
        assert_eq!(error.kind(), ErrorKind::Transport, "{}: {error}", http.name);
        assert_eq!(error.limit(), Some(Limit::ContentTimeout), "{}: {error}", http.name);
        assert!(
            events.iter().any(|e| matches!(e, Event::TextDelta { .. })),
            "{}",
            http.name
        );
        assert!(started.elapsed() < HANG, "{}", http.name);
    }
}

#[tokio::test]
async fn retry_after_as_an_http_date_is_honoured() {
    for http in PROVIDERS {
        // Whole seconds: the header has no finer resolution.
        let now = std::time::SystemTime::now();
        let at = httpdate::fmt_http_date(now + Duration::from_secs(30));
        let server = RawServer::start(vec![Step::head(
            "429 Too Many Requests",
            &[("retry-after", &at), ("content-length", "0")],
        )])
        .await;
        let (_, error) = call(http.build(server.url(), fast()).as_ref()).await;
        let error = error.expect("an error");
        assert_eq!(error.kind(), ErrorKind::RateLimited, "{}", http.name);
        let wait = error.retry_after().expect("a wait");
        assert!(
            (Duration::from_secs(28)..=Duration::from_secs(31)).contains(&wait),
            "{}: {wait:?}",
            http.name
        );
    }
}

#[tokio::test]
async fn absurd_usage_numbers_cost_their_value_not_the_stream() {
    let bodies = [
        (
            ANTHROPIC,
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\
             \"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":1e30,\
             \"output_tokens\":-5,\"cache_read_input_tokens\":\"many\"}}}\n\nevent: content_block_start\ndata: \
             {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
             event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\
             \"text_delta\",\"text\":\"Hi\"}}\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\",\
             \"index\":0}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\
             \"end_turn\"},\"usage\":{\"output_tokens\":18446744073709551616}}\n\nevent: message_stop\ndata: \
             {\"type\":\"message_stop\"}\n\n",
        ),
        (
            OPENROUTER,
            "data: {\"id\":\"r1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\
             \"finish_reason\":\"stop\"}]}\n\ndata: {\"id\":\"r1\",\"choices\":[],\"usage\":{\"prompt_tokens\":1e30,\
             \"completion_tokens\":-5,\"prompt_tokens_details\":{\"cached_tokens\":18446744073709551616}}}\n\n\
             data: [DONE]\n\n",
        ),
    ];
    for (http, body) in bodies {
        let server = RawServer::start(vec![http.stream_head(), Step::send(body)]).await;
        let (events, error) = call(http.build(server.url(), fast()).as_ref()).await;
        assert!(error.is_none(), "{}: {error:?}", http.name);
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::TextDelta { text, .. } if text == "Hi")),
            "{}",
            http.name
        );
        let usage = events
            .iter()
            .rev()
            .find_map(|e| match e {
                Event::Usage(usage) => Some(*usage),
                _ => None,
            })
            .expect("usage");
        // Past u64::MAX saturates, negative is 0, a string is unknown.
        if http.name == "anthropic" {
            assert_eq!(usage.output, Some(u64::MAX), "{usage:?}");
        } else {
            assert_eq!((usage.cache_read, usage.output), (Some(u64::MAX), Some(0)), "{usage:?}");
        }
    }
}
