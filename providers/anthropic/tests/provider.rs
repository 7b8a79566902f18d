//! The provider over HTTP against the mock server: errors, faults, headers, config.

use std::sync::Arc;
use std::time::Duration;

use patchbay_anthropic::{AnthropicConfig, AnthropicProvider};
use patchbay_conformance::hardening::{self, BuildHttp, HttpWire};
use patchbay_conformance::mock::anthropic::AnthropicWire;
use patchbay_conformance::mock::{MockServer, RawEnd, Serve};
use patchbay_core::kit::StreamLimits;
use patchbay_core::{
    ErrorKind, Event, FinishReason, Message, Provider, RequestContext, Signal, ToolSet, context::McpServerConfig,
    context::McpTransport, context::Session,
};
use serde_json::json;

use crate::common::{provider, record};

const HELLO: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude-test\",\"content\":[],\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n\
event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n";
const END: &str = "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n\
event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

async fn serve(items: Vec<Serve>) -> MockServer {
    MockServer::builder(AnthropicWire)
        .serve(items)
        .start()
        .await
        .expect("mock starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_errors_carry_kind_status_request_id_and_retry_after() {
    let cases = [
        (
            401,
            json!({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}),
            ErrorKind::Auth,
        ),
        (
            400,
            json!({"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 300000 tokens > 200000 maximum"}}),
            ErrorKind::ContextTooLong,
        ),
        (
            400,
            json!({"type":"error","error":{"type":"invalid_request_error","message":"messages: field required"}}),
            ErrorKind::InvalidRequest,
        ),
        (
            429,
            json!({"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}),
            ErrorKind::RateLimited,
        ),
        (
            529,
            json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}),
            ErrorKind::Overloaded,
        ),
        (
            500,
            json!({"type":"error","error":{"type":"api_error","message":"Internal server error"}}),
            ErrorKind::Server,
        ),
        (503, json!("not json at all"), ErrorKind::Overloaded),
    ];
    for (status, body, kind) in cases {
        let server = serve(vec![Serve::Raw {
            status,
            headers: vec![
                ("content-type".into(), "application/json".into()),
                ("request-id".into(), "req_123".into()),
                ("retry-after".into(), "7".into()),
            ],
            body: body.to_string().into(),
            end: RawEnd::Close,
        }])
        .await;
        let recording = record(&*provider(&server.url()), &Signal::new()).await;
        let error = recording.error.expect("an error");
        assert!(recording.events.is_empty());
        assert_eq!(error.kind(), kind, "status {status}");
        assert_eq!(error.status(), Some(status));
        assert_eq!(error.request_id(), Some("req_123"));
        assert_eq!(error.retry_after(), Some(Duration::from_secs(7)));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_ms_wins_over_retry_after() {
    let server = serve(vec![Serve::Raw {
        status: 429,
        headers: vec![
            ("retry-after".into(), "2".into()),
            ("retry-after-ms".into(), "1500".into()),
        ],
        body: "{}".into(),
        end: RawEnd::Close,
    }])
    .await;
    let error = record(&*provider(&server.url()), &Signal::new())
        .await
        .error
        .expect("an error");
    assert_eq!(error.kind(), ErrorKind::RateLimited);
    assert_eq!(error.retry_after(), Some(Duration::from_millis(1500)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_events_mid_stream_are_typed() {
    for (wire_type, kind) in [
        ("overloaded_error", ErrorKind::Overloaded),
        ("rate_limit_error", ErrorKind::RateLimited),
        ("api_error", ErrorKind::Server),
        ("something_new_error", ErrorKind::Server),
    ] {
        let body = format!(
            "{HELLO}event: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"{wire_type}\",\"message\":\"boom\"}}}}\n\n"
        );
        let server = serve(vec![Serve::sse(body)]).await;
        let recording = record(&*provider(&server.url()), &Signal::new()).await;
        let error = recording.error.expect("an error");
        assert_eq!(error.kind(), kind);
        assert_eq!(error.facts().provider_code.as_deref(), Some(wire_type));
        assert!(matches!(recording.events.last(), Some(Event::TextDelta { .. })));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_end_the_stream_with_the_right_kind() {
    // Garbage, a reset, and an end without message_stop.
    let garbage = Serve::sse(format!("{HELLO}this is not SSE\n\ndata: {{not json\n\n"));
    let reset = Serve::Raw {
        status: 200,
        headers: vec![("content-type".into(), "text/event-stream".into())],
        body: HELLO.into(),
        end: RawEnd::Reset,
    };
    let truncated = Serve::sse(HELLO);
    for (serve_item, kind) in [
        (garbage, ErrorKind::Protocol),
        (reset, ErrorKind::Transport),
        (truncated, ErrorKind::Protocol),
    ] {
        let server = serve(vec![serve_item]).await;
        let recording = record(&*provider(&server.url()), &Signal::new()).await;
        assert_eq!(recording.error.as_ref().map(|e| e.kind()), Some(kind));
        assert!(recording.validate().is_ok());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_stream_hits_the_read_timeout() {
    let server = serve(vec![Serve::Raw {
        status: 200,
        headers: vec![("content-type".into(), "text/event-stream".into())],
        body: HELLO.into(),
        end: RawEnd::Stall,
    }])
    .await;
    let config = AnthropicConfig::new("k")
        .with_base_url(server.url())
        .with_read_timeout(Some(Duration::from_millis(300)));
    let provider = AnthropicProvider::new(config).expect("config");
    let recording = record(&provider, &Signal::new()).await;
    assert_eq!(recording.error.map(|e| e.kind()), Some(ErrorKind::Transport));
    assert!(recording.events.iter().any(|e| matches!(e, Event::TextDelta { .. })));
}

/// After text has flowed, a stall ends at the read timeout and pings alone at the content
/// timeout, each at its setting (both once fired at twice it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_fire_at_their_setting_after_text_flowed() {
    let wire = HttpWire {
        name: patchbay_anthropic::NAME,
        content_type: "text/event-stream",
        start: HELLO,
        keepalive: "event: ping\ndata: {\"type\":\"ping\"}\n\n",
        data_prefix: "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"",
    };
    let build: BuildHttp = Arc::new(|base: &str, limits: StreamLimits| {
        let config = AnthropicConfig::new("k").with_base_url(base).with_limits(limits);
        Arc::new(AnthropicProvider::new(config).expect("config")) as Arc<dyn Provider>
    });
    hardening::a_stalled_stream_hits_the_read_timeout(&wire, &build).await;
    hardening::keepalives_alone_cannot_hold_a_stream(&wire, &build).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_that_never_come_hit_the_read_timeout() {
    let server = serve(vec![Serve::Delay(Duration::from_secs(30), Box::new(Serve::sse(HELLO)))]).await;
    let config = AnthropicConfig::new("k")
        .with_base_url(server.url())
        .with_read_timeout(Some(Duration::from_millis(200)));
    let provider = AnthropicProvider::new(config).expect("config");
    let started = std::time::Instant::now();
    let recording = record(&provider, &Signal::new()).await;
    assert_eq!(recording.error.map(|e| e.kind()), Some(ErrorKind::Transport));
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ten_megabyte_line_arrives_intact() {
    let text = "x".repeat(10 * 1024 * 1024);
    let delta = json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text": text}});
    let head = HELLO.replace("\"Hello\"", "\"\"");
    let body = format!("{head}event: content_block_delta\ndata: {delta}\n\n{END}");
    let server = serve(vec![Serve::sse(body)]).await;
    let recording = record(&*provider(&server.url()), &Signal::new()).await;
    assert!(recording.error.is_none(), "{:?}", recording.error);
    let received: usize = recording
        .events
        .iter()
        .map(|e| match e {
            Event::TextDelta { text, .. } => text.len(),
            _ => 0,
        })
        .sum();
    assert_eq!(received, text.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_answer_to_a_streamed_request_is_translated_whole() {
    let message = json!({
        "id": "msg_json", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [{"type": "text", "text": "Hi!"}, {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 9},
    });
    let server = serve(vec![Serve::status(200, message.to_string(), None)]).await;
    let recording = record(&*provider(&server.url()), &Signal::new()).await;
    assert!(recording.error.is_none(), "{:?}", recording.error);
    assert!(recording.validate().is_ok());
    assert!(matches!(
        recording.events.last(),
        Some(Event::Finish {
            reason: FinishReason::ToolUse,
            ..
        })
    ));
    assert!(
        recording
            .events
            .iter()
            .any(|e| matches!(e, Event::ToolCall { input, .. } if input["city"] == "Paris"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_carry_the_headers_and_warnings_reach_started() {
    let server = serve(vec![Serve::sse(format!("{HELLO}{END}"))]).await;
    let config = AnthropicConfig::new("sk-test-secret")
        .with_base_url(format!("{}/", server.url()))
        .with_beta("beta-one");
    let provider = AnthropicProvider::new(config).expect("config");
    let unattached = McpServerConfig {
        name: "docs".into(),
        transport: McpTransport::Http {
            url: "http://127.0.0.1:9/mcp".into(),
            headers: Default::default(),
        },
    };
    let context = RequestContext::new()
        .with_session(Session::Resume { id: "s1".into() })
        .with_mcp_server(unattached)
        .with_provider_options("anthropic", json!({"betas": ["beta-two"], "service_tier": "auto"}));
    let stream = provider
        .create_response(
            &[Message::user("hi")],
            &ToolSet::new(),
            "claude-test",
            &Signal::new(),
            Some(&context),
        )
        .await
        .expect("a stream");
    let events: Vec<Event> = futures::StreamExt::collect::<Vec<_>>(stream)
        .await
        .into_iter()
        .map(|item| item.expect("no error"))
        .collect();
    let Some(Event::Started {
        warnings, response_id, ..
    }) = events.first()
    else {
        panic!("Started first: {events:?}");
    };
    assert_eq!(response_id.as_deref(), Some("msg_1"));
    let codes: Vec<&str> = warnings.iter().map(|w| w.code.as_str()).collect();
    assert_eq!(codes, ["unsupported_option", "mcp_servers_ignored"], "{warnings:?}");
    let requests = server.requests();
    let request = &requests[0];
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some("[redacted]"));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("anthropic-beta"), Some("beta-one,beta-two"));
    assert_eq!(request.body["service_tier"], "auto");
    assert_eq!(request.body["stream"], true);
}

#[test]
fn config_never_shows_secrets_and_needs_a_key_for_the_public_api() {
    let config = AnthropicConfig::new("sk-ant-very-secret").with_header("x-custom", "hidden-value");
    let provider = AnthropicProvider::new(config).expect("config");
    let debug = format!("{provider:?}");
    assert!(
        !debug.contains("sk-ant-very-secret") && !debug.contains("hidden-value"),
        "{debug}"
    );
    let error = AnthropicProvider::new(AnthropicConfig::default()).expect_err("no key");
    assert_eq!(error.kind(), ErrorKind::Config);
    let factory = patchbay_anthropic::factory();
    let built = factory
        .build(&json!({"api_key": "k", "base_url": "http://127.0.0.1:9", "betas": ["b"]}))
        .expect("builds from options");
    assert_eq!(built.info().name, "anthropic");
    let error = factory
        .build(&json!({"connect_timeout_ms": "soon"}))
        .err()
        .expect("bad option");
    assert_eq!(error.kind(), ErrorKind::Config);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_rejected_before_any_io() {
    let provider = provider("http://127.0.0.1:9");
    let result = provider
        .create_response(&[], &ToolSet::new(), "m", &Signal::new(), None)
        .await;
    assert_eq!(result.err().map(|e| e.kind()), Some(ErrorKind::InvalidRequest));
    let options = RequestContext::new().with_provider_options("anthropic", json!("not an object"));
    let result = provider
        .create_response(
            &[Message::user("hi")],
            &ToolSet::new(),
            "m",
            &Signal::new(),
            Some(&options),
        )
        .await;
    assert_eq!(result.err().map(|e| e.kind()), Some(ErrorKind::InvalidRequest));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fixture_served_over_http_gives_the_same_events_as_the_translator() {
    use patchbay_conformance::mock::Chunking;
    use patchbay_conformance::mock::anthropic::{load_fixture, split_responses};

    let mut paths = Vec::new();
    let mut dirs = vec![crate::common::fixtures_dir()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("fixture dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path)
            } else {
                paths.push(path)
            }
        }
    }
    paths.sort();
    for (seed, path) in paths.iter().enumerate() {
        let body = load_fixture(path).expect("fixture");
        let bodies = split_responses(&body);
        let expected = crate::common::replay(&std::fs::read(path).expect("fixture"));
        let server = MockServer::builder(AnthropicWire)
            .serve(bodies.iter().cloned().map(Serve::sse))
            .chunking(Chunking::Random {
                seed: seed as u64,
                max: 97,
            })
            .start()
            .await
            .expect("mock starts");
        let provider = provider(&server.url());
        for (index, want) in expected.iter().enumerate().take(bodies.len()) {
            let got = record(&*provider, &Signal::new()).await;
            let model_of = |events: &[Event]| match events.first() {
                Some(Event::Started { model, .. }) => model.clone(),
                _ => String::new(),
            };
            let mut got_events = crate::common::without_timings(&got.events);
            if model_of(&want.events).is_empty() {
                // The translator alone has no requested model to fall back on.
                if let Some(Event::Started { model, .. }) = got_events.first_mut() {
                    model.clear();
                }
            }
            assert_eq!(
                got_events,
                crate::common::without_timings(&want.events),
                "{}, response {index}",
                path.display()
            );
            assert_eq!(
                got.error.map(|e| e.kind()),
                want.error.as_ref().map(|e| e.kind()),
                "{}",
                path.display()
            );
        }
    }
}
