//! What goes on the wire: golden request bodies of the shared scenarios, message mapping,
//! headers, options, warnings.

use std::sync::Arc;

use futures::StreamExt;
use patchbay_conformance::mock::Serve;
use patchbay_conformance::mock::openai::OpenAiWire;
use patchbay_conformance::{Fixture, Target, snapshot_requests, summarize};
use patchbay_core::{
    ContentBlock, Event, ImageSource, Message, Provider, RequestContext, Role, Signal, ToolSet, Warning,
    context::Sampling, context::Session, tool::ToolContent,
};
use patchbay_openrouter::{Dialect, OpenRouterConfig, OpenRouterProvider, ResponseFormat};
use serde_json::{Value, json};

use crate::common::mock;

fn settings() -> insta::Settings {
    patchbay_conformance::settings_at(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots/requests").into())
}

/// Long strings (the huge line) as length plus hash.
fn shorten(value: &mut Value) {
    match value {
        Value::String(s) => *s = summarize(s),
        Value::Array(items) => items.iter_mut().for_each(shorten),
        Value::Object(map) => map.values_mut().for_each(shorten),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn golden_requests_of_the_shared_scenarios() {
    let target = Target::new("openrouter", |case| async move {
        let server = case.mock(OpenAiWire).await?;
        let config = OpenRouterConfig::new(server.url())
            .with_api_key("test-key")
            .with_dialect(Dialect::OpenRouter);
        Ok(Fixture::new(Arc::new(OpenRouterProvider::new(config)?)).with_guard(server))
    });
    snapshot_requests(&target, |request| {
        let mut body = request.body.clone();
        shorten(&mut body);
        json!({
            "method": request.method,
            "path": request.path,
            "authorization": request.header("authorization"),
            "accept": request.header("accept"),
            "body": body,
        })
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_referer_title_and_bearer_key() {
    let (server, _) = mock(vec![Serve::Turn(patchbay_scripted::Turn::text("hi"))]).await;
    let config = OpenRouterConfig::new(server.url())
        .with_api_key("sk-secret-value")
        .with_referer("https://example.app")
        .with_title("Example App")
        .with_header("X-Custom", "custom-secret");
    let provider = OpenRouterProvider::new(config).expect("builds");
    let debug = format!("{provider:?}");
    assert!(
        !debug.contains("sk-secret-value") && !debug.contains("custom-secret"),
        "{debug}"
    );
    let response = patchbay_core::ProviderExt::generate_text(&provider, "hello", "m", None)
        .await
        .expect("answers");
    assert_eq!(response, "hi");
    let request = &server.requests()[0];
    assert_eq!(request.path, "/chat/completions");
    assert_eq!(request.header("authorization"), Some("[redacted]"));
    assert_eq!(request.header("http-referer"), Some("https://example.app"));
    assert_eq!(request.header("x-title"), Some("Example App"));
    assert_eq!(request.header("x-custom"), Some("custom-secret"));
    // A generic server gets no OpenRouter-only fields.
    assert_eq!(request.body["stream_options"], json!({"include_usage": true}));
    assert!(request.body.get("usage").is_none());
}

fn body(dialect: Dialect, messages: &[Message], context: Option<&RequestContext>) -> (Value, Vec<String>) {
    let provider =
        OpenRouterProvider::new(OpenRouterConfig::new("http://127.0.0.1:9/v1").with_dialect(dialect)).expect("builds");
    let (body, warnings) = provider.request_body(messages, &ToolSet::new(), "m", context);
    (body, warnings.into_iter().map(|w| w.code).collect())
}

fn sampling(max_tokens: u32, top_k: u32, budget: u32) -> Sampling {
    let mut sampling = Sampling::default();
    sampling.max_tokens = Some(max_tokens);
    sampling.top_k = Some(top_k);
    sampling.thinking_budget = Some(budget);
    sampling
}

fn conversation() -> Vec<Message> {
    vec![
        Message::user("look at this"),
        Message::new(
            Role::Assistant,
            vec![
                ContentBlock::Thinking {
                    text: "I should look.".into(),
                    signature: Some("sig-1".into()),
                },
                ContentBlock::RedactedThinking {
                    data: json!({"type": "reasoning.encrypted", "data": "blob", "id": "rs_1", "format": "openai-responses-v1"})
                        .to_string(),
                },
                ContentBlock::text("Looking."),
                ContentBlock::tool_use("call_a", "screenshot", json!({"page": 1})),
                ContentBlock::tool_use("call_b", "fetch", json!({})),
            ],
        ),
        Message::new(
            Role::User,
            vec![
                ContentBlock::ToolResult {
                    tool_use_id: "call_a".into(),
                    content: vec![
                        ToolContent::text("here it is"),
                        ToolContent::Image {
                            media_type: "image/png".into(),
                            data: "iVBORw0KGgo=".into(),
                        },
                    ],
                    is_error: false,
                    cache_control: None,
                },
                ContentBlock::ToolResult {
                    tool_use_id: "call_b".into(),
                    content: vec![ToolContent::Json { value: json!({"status": 404}) }],
                    is_error: true,
                    cache_control: None,
                },
                ContentBlock::text("and this photo"),
                ContentBlock::Image {
                    media_type: "image/jpeg".into(),
                    source: ImageSource::Url {
                        url: "https://example.com/p.jpg".into(),
                    },
                    cache_control: None,
                },
            ],
        ),
    ]
}

#[test]
fn openrouter_body_round_trips_reasoning_and_maps_tool_results() {
    let context = RequestContext::new()
        .with_system("be brief")
        .with_sampling(sampling(100, 5, 2048))
        .with_provider_options(
            "openrouter",
            json!({"provider": {"order": ["anthropic"], "allow_fallbacks": false}, "reasoning": {"effort": "high"}}),
        );
    let (body, warnings) = body(Dialect::OpenRouter, &conversation(), Some(&context));
    assert!(warnings.is_empty(), "{warnings:?}");
    settings().bind(|| insta::assert_json_snapshot!("openrouter_mapping", body));
    let messages = body["messages"].as_array().expect("messages");
    let roles: Vec<&str> = messages.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(
        roles,
        vec!["system", "user", "assistant", "tool", "tool", "user", "user"]
    );
    let details = &messages[2]["reasoning_details"];
    assert_eq!(details[0]["signature"], "sig-1");
    assert_eq!(details[1]["id"], "rs_1");
    assert_eq!(body["provider"]["order"][0], "anthropic");
    // Provider options override what patchbay set.
    assert_eq!(body["reasoning"], json!({"effort": "high"}));
    assert_eq!(body["usage"], json!({"include": true}));
}

#[test]
fn other_servers_get_warnings_instead_of_unknown_fields() {
    let context = RequestContext::new()
        .with_session(Session::Resume { id: "s".into() })
        .with_sampling(sampling(100, 5, 1000));
    let (body, warnings) = body(Dialect::OpenAi, &conversation(), Some(&context));
    assert_eq!(body["max_completion_tokens"], 100);
    assert!(body.get("top_k").is_none() && body.get("usage").is_none() && body.get("reasoning").is_none());
    assert!(body["messages"][1]["reasoning_details"].is_null());
    assert_eq!(
        warnings,
        vec![
            "reasoning_not_sent",
            "unsupported_option",
            "unsupported_option",
            "unsupported_option"
        ]
    );
}

#[test]
fn mcp_servers_nobody_attached_are_reported_as_ignored() {
    let server = patchbay_core::context::McpServerConfig {
        name: "docs".into(),
        transport: patchbay_core::context::McpTransport::Http {
            url: "http://127.0.0.1:9/mcp".into(),
            headers: Default::default(),
        },
    };
    let context = RequestContext::new().with_mcp_server(server);
    for dialect in [Dialect::OpenRouter, Dialect::OpenAi, Dialect::Generic] {
        let (_, warnings) = body(dialect, &[Message::user("hi")], Some(&context));
        assert_eq!(warnings, ["mcp_servers_ignored"], "{dialect:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warnings_reach_started() {
    let (server, provider) = mock(vec![Serve::Turn(patchbay_scripted::Turn::text("ok"))]).await;
    let context = RequestContext::new().with_session(Session::New { id: None });
    let stream = provider
        .create_response(
            &[Message::user("hi")],
            &ToolSet::new(),
            "m",
            &Signal::new(),
            Some(&context),
        )
        .await
        .expect("starts");
    let events: Vec<_> = stream.collect().await;
    match &events[0] {
        Ok(Event::Started { warnings, .. }) => assert_eq!(warnings[0].code, "unsupported_option"),
        other => panic!("expected Started, got {other:?}"),
    }
    drop(server);
}

fn structured(dialect: Dialect, format: ResponseFormat) -> (Value, Vec<Warning>) {
    let config = OpenRouterConfig::new("http://127.0.0.1:9/v1")
        .with_dialect(dialect)
        .with_response_format(format);
    let provider = OpenRouterProvider::new(config).expect("builds");
    let context = RequestContext::new()
        .with_system("Be brief.")
        .with_output_schema(patchbay_conformance::weather_schema());
    provider.request_body(&[Message::user("Weather?")], &ToolSet::new(), "m", Some(&context))
}

#[test]
fn structured_output_is_a_json_schema_response_format_strict_where_the_dialect_takes_it() {
    for dialect in [Dialect::OpenAi, Dialect::OpenRouter] {
        let (body, warnings) = structured(dialect, ResponseFormat::JsonSchema);
        let format = &body["response_format"];
        assert_eq!(format["type"], "json_schema");
        assert_eq!(format["json_schema"]["name"], "weather");
        assert_eq!(format["json_schema"]["description"], "The current weather in a city.");
        assert_eq!(format["json_schema"]["strict"], true);
        assert_eq!(
            format["json_schema"]["schema"],
            patchbay_conformance::weather_schema().schema
        );
        assert!(warnings.is_empty(), "{warnings:?}");
    }
    let (body, warnings) = structured(Dialect::Generic, ResponseFormat::JsonSchema);
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert!(body["response_format"]["json_schema"].get("strict").is_none());
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].code, Warning::UNSUPPORTED_OPTION);
    assert!(warnings[0].message.contains("strict"), "{warnings:?}");
}

#[test]
fn json_object_mode_asks_for_the_schema_in_a_system_message_and_warns() {
    let (body, warnings) = structured(Dialect::Generic, ResponseFormat::JsonObject);
    assert_eq!(body["response_format"], json!({"type": "json_object"}));
    let messages = body["messages"].as_array().expect("messages");
    assert_eq!(messages[0], json!({"role": "system", "content": "Be brief."}));
    assert_eq!(messages[1]["role"], "system");
    let instruction = messages[1]["content"].as_str().expect("text");
    assert!(
        instruction.contains("`weather`") && instruction.contains("\"conditions\""),
        "{instruction}"
    );
    assert_eq!(messages[2]["role"], "user");
    let codes: Vec<&str> = warnings.iter().map(|w| w.code.as_str()).collect();
    assert_eq!(codes, [Warning::UNSUPPORTED_OPTION]);
}

#[test]
fn a_response_format_in_the_provider_options_wins() {
    let provider = OpenRouterProvider::new(OpenRouterConfig::new("http://127.0.0.1:9/v1")).expect("builds");
    let context = RequestContext::new()
        .with_output_schema(patchbay_conformance::weather_schema())
        .with_provider_options("openrouter", json!({"response_format": {"type": "text"}}));
    let (body, _) = provider.request_body(&[Message::user("hi")], &ToolSet::new(), "m", Some(&context));
    assert_eq!(body["response_format"], json!({"type": "text"}));
}
