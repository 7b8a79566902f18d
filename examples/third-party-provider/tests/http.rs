//! The provider over HTTP: the request it sends, HTTP errors, and hostile servers
//! (`patchbay_conformance::raw`): no redirect followed, nothing stalls or grows without bound.

use std::sync::Arc;
use std::time::Duration;

use patchbay_conformance::Recording;
use patchbay_conformance::hardening::{HttpWire, check_hardening};
use patchbay_conformance::mock::{MockServer, Serve};
use patchbay_conformance::raw::{RawServer, Step};
use patchbay_core::{
    ContentBlock, ErrorKind, ImageSource, Message, Provider, RequestContext, Role, Signal, ToolResult, ToolSet,
    context::Sampling,
};
use patchbay_ollama::mock::OllamaWire;
use patchbay_ollama::{OllamaConfig, OllamaProvider};
use patchbay_scripted::Turn;
use serde_json::json;

/// Longer than any limit these tests set: a call still running then hangs.
const HANG: Duration = Duration::from_secs(20);

fn provider(base: &str, config: impl FnOnce(OllamaConfig) -> OllamaConfig) -> Arc<OllamaProvider> {
    let config = config(OllamaConfig::default().with_base_url(base));
    Arc::new(OllamaProvider::new(config).expect("builds"))
}

async fn call(provider: &OllamaProvider, messages: &[Message], context: Option<&RequestContext>) -> Recording {
    let tools = ToolSet::new();
    let signal = Signal::new();
    let run = Recording::call(provider, messages, &tools, "llama3.2", &signal, context);
    tokio::time::timeout(HANG, run).await.expect("the call hung")
}

#[tokio::test]
async fn the_request_is_an_ollama_chat_body() {
    let server = MockServer::builder(OllamaWire)
        .serve([Serve::Turn(Turn::text("Sunny."))])
        .start()
        .await
        .expect("mock");
    let provider = provider(&server.url(), |config| {
        config.with_api_key(Some("sk-HOSTED".to_string().into()))
    });
    let image = ContentBlock::Image {
        media_type: "image/png".into(),
        source: ImageSource::Base64 {
            data: "iVBORw0KGgo=".into(),
        },
        cache_control: None,
    };
    let messages = [
        Message::new(Role::User, vec![ContentBlock::text("Weather in Paris?"), image]),
        Message::new(
            Role::Assistant,
            vec![
                ContentBlock::Thinking {
                    text: "Check it.".into(),
                    signature: Some("sig".into()),
                },
                ContentBlock::tool_use("call_1", "get_weather", json!({"city": "Paris"})),
            ],
        ),
        Message::new(
            Role::User,
            vec![ContentBlock::ToolResult {
                tool_use_id: "call_1".into(),
                content: ToolResult::text("Sunny, 21°C.").content,
                is_error: false,
                cache_control: None,
            }],
        ),
    ];
    let mut sampling = Sampling::default();
    sampling.max_tokens = Some(256);
    sampling.temperature = Some(0.5);
    sampling.stop_sequences = vec!["END".into()];
    sampling.thinking_budget = Some(1024);
    let context = RequestContext::new()
        .with_system("Be terse.")
        .with_sampling(sampling)
        .with_provider_options("ollama", json!({"keep_alive": "10m"}));
    let tools = ToolSet::new().with(patchbay_core::FnTool::new(
        "get_weather",
        "Weather for a city.",
        |_: serde_json::Value, _| async { ToolResult::text("x") },
    ));
    let stream = provider
        .create_response(&messages, &tools, "llama3.2", &Signal::new(), Some(&context))
        .await;
    let recording = Recording::collect(stream.expect("a stream")).await;
    assert_eq!(recording.text(), "Sunny.");
    let requests = server.requests();
    let request = &requests[0];
    assert_eq!(request.path, "/api/chat");
    assert_eq!(request.header("authorization"), Some("[redacted]"));
    let body = &request.body;
    assert_eq!(body["stream"], true);
    assert_eq!(body["think"], true);
    assert_eq!(body["keep_alive"], "10m");
    assert_eq!(
        body["options"],
        json!({"num_predict": 256, "temperature": 0.5, "stop": ["END"]})
    );
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["function"]["name"], "get_weather");
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["role"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool"]);
    assert_eq!(body["messages"][1]["images"], json!(["iVBORw0KGgo="]));
    assert_eq!(body["messages"][2]["thinking"], "Check it.");
    assert_eq!(
        body["messages"][2]["tool_calls"][0]["function"]["arguments"],
        json!({"city": "Paris"})
    );
    assert_eq!(
        body["messages"][3],
        json!({"role": "tool", "tool_name": "get_weather", "content": "Sunny, 21°C."})
    );
    let Some(patchbay_core::Event::Started { warnings, .. }) = recording.events.first() else {
        panic!("Started first");
    };
    assert!(
        warnings.iter().any(|w| w.message.contains("thinking_budget")),
        "{warnings:?}"
    );
}

/// A call option of the wrong type, or options that are not an object, are an `InvalidRequest`
/// of `ollama` before any I/O, naming the key and never quoting the value: the same kind every
/// provider crate gives a bad call option.
#[tokio::test]
async fn a_bad_call_option_is_an_invalid_request_naming_the_key_not_the_value() {
    let server = RawServer::start(vec![Step::Stall]).await;
    let provider = provider(server.url(), |config| config);
    for (options, key) in [
        (json!({"think": ["sk-CANARY"]}), "think"),
        (json!("sk-CANARY"), "object"),
    ] {
        let context = RequestContext::new().with_provider_options("ollama", options);
        let recording = call(&provider, &[Message::user("hi")], Some(&context)).await;
        let error = recording.error.expect("refused");
        assert_eq!(error.kind(), ErrorKind::InvalidRequest, "{error}");
        assert_eq!(error.facts().provider.as_deref(), Some("ollama"));
        let text = format!("{error} {error:?}");
        assert!(text.contains(key) && !text.contains("CANARY"), "{text}");
    }
}

#[tokio::test]
async fn an_unknown_call_option_and_an_image_url_fail_before_any_io() {
    let server = RawServer::start(vec![Step::Stall]).await;
    let provider = provider(server.url(), |config| config);
    let context = RequestContext::new().with_provider_options("ollama", json!({"thinkk": true}));
    let recording = call(&provider, &[Message::user("hi")], Some(&context)).await;
    assert_eq!(recording.error.map(|e| e.kind()), Some(ErrorKind::InvalidRequest));
    let image = ContentBlock::Image {
        media_type: "image/png".into(),
        source: ImageSource::Url {
            url: "https://example.com/cat.png".into(),
        },
        cache_control: None,
    };
    let recording = call(&provider, &[Message::new(Role::User, vec![image])], None).await;
    let error = recording.error.expect("an image by URL is refused");
    assert_eq!(
        (error.kind(), error.facts().message_index),
        (ErrorKind::InvalidRequest, Some(0))
    );
    assert_eq!(server.connections(), 0);
}

#[tokio::test]
async fn an_http_error_keeps_its_kind_status_message_and_retry_after() {
    let server = MockServer::builder(OllamaWire)
        .serve([
            Serve::status(
                404,
                r#"{"error":"model \"llama9\" not found, try pulling it first"}"#,
                None,
            ),
            Serve::status(429, r#"{"error":"too many requests"}"#, Some(3)),
        ])
        .start()
        .await
        .expect("mock");
    let provider = provider(&server.url(), |config| config);
    let error = call(&provider, &[Message::user("hi")], None).await.error.expect("404");
    assert_eq!((error.kind(), error.status()), (ErrorKind::InvalidRequest, Some(404)));
    assert!(error.message().contains("not found"), "{error}");
    assert_eq!(error.facts().provider.as_deref(), Some("ollama"));
    let error = call(&provider, &[Message::user("hi")], None).await.error.expect("429");
    assert_eq!(error.kind(), ErrorKind::RateLimited);
    assert_eq!(error.retry_after(), Some(Duration::from_secs(3)));
}

/// The conformance crate's hostile servers: refused redirect, read and content timeouts,
/// stalled and huge error bodies, an endless line, `retry-after` dates.
#[tokio::test]
async fn hostile_servers() {
    let wire = HttpWire {
        name: patchbay_ollama::NAME,
        content_type: "application/x-ndjson",
        start: "{\"message\":{\"role\":\"assistant\",\"content\":\"Hi\"},\"done\":false}\n",
        keepalive: "\n",
        data_prefix: "{\"message\":{\"role\":\"assistant\",\"content\":\"",
    };
    check_hardening(
        wire,
        Arc::new(|base: &str, limits| {
            let config = OllamaConfig::default()
                .with_base_url(base)
                .with_api_key(Some("sk-KEY".to_string().into()))
                .with_limits(limits);
            Arc::new(OllamaProvider::new(config).expect("builds")) as Arc<dyn Provider>
        }),
    )
    .await;
}

#[tokio::test]
async fn a_server_that_is_not_there_is_a_transport_error_without_credentials() {
    let gone = RawServer::start(Vec::new()).await;
    let url = gone.url().replace("http://", "http://user:sk-PW@");
    drop(gone);
    let provider = provider(&url, |config| config);
    let error = call(&provider, &[Message::user("hi")], None)
        .await
        .error
        .expect("refused");
    assert_eq!(error.kind(), ErrorKind::Transport, "{error}");
    let mut chain = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        chain.push_str(&format!(" / {cause}"));
        source = cause.source();
    }
    assert!(!chain.contains("sk-PW"), "{chain}");
}
