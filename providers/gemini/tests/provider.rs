//! The provider over HTTP: a two-turn tool conversation sends every signature back byte for
//! byte; the URL of a model on both backends; Vertex AI's bearer token from a command, fetched
//! again after a `401`.

use std::time::Duration;

use futures::StreamExt;
use patchbay_conformance::mock::gemini::GeminiWire;
use patchbay_conformance::mock::{MockServer, Serve};
use patchbay_core::{Agent, ErrorKind, Event, FnTool, Message, Signal, ToolContext, ToolResult, ToolSet};
use patchbay_gemini::{Backend, GeminiConfig, GeminiProvider};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::{call, mock};

/// A signature as Gemini 3 sends them: long base64, with `+`, `/` and `=` that must survive.
const CALL_SIGNATURE: &str = "CiQB0e2Kb+6x/Pq3c2lnbmF0dXJlLW9mLXRoZS1jYWxs+/9w==";
const THOUGHT_SIGNATURE: &str = "EpcDCpQDAdHtim/thought+sig==";
const TEXT_SIGNATURE: &str = "Ei4KLAHR7YpW/text+signature==";

fn frame(chunk: Value) -> String {
    format!("data: {chunk}\r\n\r\n")
}

#[derive(Deserialize, schemars::JsonSchema)]
struct City {
    /// The city.
    city: String,
}

fn weather_tool() -> ToolSet {
    ToolSet::new().with(FnTool::new(
        "get_weather",
        "The weather in a city.",
        |input: City, _cx: ToolContext| async move { ToolResult::text(format!("Sunny in {}", input.city)) },
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_turn_tool_conversation_sends_every_signature_back_byte_for_byte() {
    let first = [
        frame(json!({"candidates": [{"content": {"role": "model", "parts": [
            {"text": "The user wants the weather.", "thought": true, "thoughtSignature": THOUGHT_SIGNATURE}]}}],
            "responseId": "r1", "modelVersion": "gemini-3-pro-preview"})),
        frame(json!({"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": CALL_SIGNATURE}]},
            "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": 5, "thoughtsTokenCount": 12}})),
    ]
    .concat();
    let second = [
        frame(json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "It is sunny in Paris."}]}}]})),
        frame(json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "", "thoughtSignature": TEXT_SIGNATURE}]},
            "finishReason": "STOP"}]})),
    ]
    .concat();
    let third = frame(
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "You're welcome."}]},
        "finishReason": "STOP"}]}),
    );
    let (server, provider) = mock(vec![Serve::sse(first), Serve::sse(second), Serve::sse(third)]).await;
    let agent = Agent::new(provider.clone(), "gemini-3-pro-preview").with_tools(weather_tool());
    let events: Vec<Event> = agent
        .stream(vec![Message::user("Weather in Paris?")], Signal::new())
        .map(|item| item.expect("no error"))
        .collect()
        .await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ToolCall { signature: Some(s), .. } if s == CALL_SIGNATURE)),
        "{events:#?}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "one request per step");
    let contents = &requests[1].body["contents"];
    assert_eq!(contents[0]["role"], "user");
    assert_eq!(contents[1]["role"], "model");
    let model_parts = contents[1]["parts"].as_array().expect("parts");
    let thought = model_parts
        .iter()
        .find(|p| p["thought"] == true)
        .expect("the thought goes back");
    assert_eq!(thought["thoughtSignature"], THOUGHT_SIGNATURE);
    let call = model_parts
        .iter()
        .find(|p| p.get("functionCall").is_some())
        .expect("the call goes back");
    assert_eq!(call["thoughtSignature"], CALL_SIGNATURE, "byte for byte");
    assert_eq!(
        call["functionCall"],
        json!({"name": "get_weather", "args": {"city": "Paris"}})
    );
    let answer = &contents[2]["parts"][0]["functionResponse"];
    assert_eq!(answer["name"], "get_weather");
    assert_eq!(answer["response"]["output"], "Sunny in Paris");

    // The answer's text signature (it came on an empty text part) goes back on that text.
    let messages: Vec<Message> = agent_messages(&events);
    let recording = call_with(&provider, messages).await;
    assert!(recording.error.is_none(), "{:?}", recording.error);
    let requests = server.requests();
    let last_model = requests[2].body["contents"]
        .as_array()
        .and_then(|contents| contents.iter().rev().find(|c| c["role"] == "model"))
        .cloned()
        .expect("the answer");
    assert_eq!(
        last_model["parts"],
        json!([{"text": "It is sunny in Paris.", "thoughtSignature": TEXT_SIGNATURE}])
    );
}

/// The conversation an agent run ends with, taken from its events (a step's tool results
/// follow its assistant message, whenever the loop reported them).
fn agent_messages(events: &[Event]) -> Vec<Message> {
    let mut builder = patchbay_core::kit::ContentBuilder::default();
    let mut messages = vec![Message::user("Weather in Paris?")];
    let mut results = Vec::new();
    for event in events {
        match event {
            Event::StepFinished { .. } => {
                messages.push(Message::new(patchbay_core::Role::Assistant, builder.take()));
            }
            Event::ToolResult { id, result, .. } => results.push(patchbay_core::ContentBlock::ToolResult {
                tool_use_id: id.clone(),
                content: result.content.clone(),
                is_error: result.is_error(),
                cache_control: None,
            }),
            other => builder.push(other),
        }
        if matches!(event, Event::StepFinished { .. } | Event::ToolResult { .. })
            && messages
                .last()
                .is_some_and(|m| m.role == patchbay_core::Role::Assistant)
            && !results.is_empty()
        {
            messages.push(Message::new(patchbay_core::Role::User, std::mem::take(&mut results)));
        }
    }
    messages.push(Message::new(patchbay_core::Role::Assistant, builder.finish()));
    messages.push(Message::user("Thanks!"));
    messages
}

async fn call_with(provider: &GeminiProvider, messages: Vec<Message>) -> patchbay_conformance::Recording {
    call(provider, &messages, &ToolSet::new(), None).await
}

#[test]
fn models_are_addressed_on_both_backends() {
    let api = GeminiProvider::new(GeminiConfig::gemini_api("k")).expect("builds");
    assert_eq!(
        api.endpoint("gemini-2.5-flash"),
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(
        api.endpoint("tunedModels/mine"),
        "https://generativelanguage.googleapis.com/v1beta/tunedModels/mine:streamGenerateContent?alt=sse"
    );
    let vertex =
        GeminiProvider::new(GeminiConfig::vertex("proj", "us-central1").with_access_token("t")).expect("builds");
    assert_eq!(
        vertex.endpoint("gemini-2.5-pro"),
        "https://us-central1-aiplatform.googleapis.com/v1/projects/proj/locations/us-central1/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    );
}

/// A token command that prints `token-N`, N counting its runs.
fn counting_command(dir: &std::path::Path) -> Vec<String> {
    let count = dir.join("runs");
    let script = format!(
        "echo x >> {0}; echo \"token-$(wc -l < {0} | tr -d ' ')\"",
        count.display()
    );
    vec!["sh".into(), "-c".into(), script]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vertex_sends_the_command_token_and_fetches_a_new_one_after_a_401() {
    let unauthorized = json!({"error": {"code": 401, "message": "Request had invalid authentication credentials.",
        "status": "UNAUTHENTICATED"}});
    let server = MockServer::builder(GeminiWire)
        .serve([
            Serve::sse(frame(
                json!({"candidates": [{"content": {"parts": [{"text": "one"}]}, "finishReason": "STOP"}]}),
            )),
            Serve::status(401, unauthorized.to_string(), None),
            Serve::sse(frame(
                json!({"candidates": [{"content": {"parts": [{"text": "three"}]}, "finishReason": "STOP"}]}),
            )),
        ])
        .start()
        .await
        .expect("mock starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let config = GeminiConfig::new(format!(
        "{}/v1/projects/p/locations/global/publishers/google",
        server.url()
    ))
    .with_backend(Backend::VertexAi)
    .with_token_command(counting_command(dir.path()))
    .with_token_ttl(Duration::from_secs(3600));
    let provider = GeminiProvider::new(config).expect("builds");
    let messages = [Message::user("hi")];
    assert_eq!(call(&provider, &messages, &ToolSet::new(), None).await.text(), "one");
    let refused = call(&provider, &messages, &ToolSet::new(), None).await;
    assert_eq!(refused.error.map(|e| e.kind()), Some(ErrorKind::Auth));
    assert_eq!(call(&provider, &messages, &ToolSet::new(), None).await.text(), "three");
    let runs = std::fs::read_to_string(dir.path().join("runs")).expect("the command ran");
    assert_eq!(
        runs.lines().count(),
        2,
        "kept between calls, fetched again after the 401"
    );
    // The mock redacts credentials it records; the header was there on every request.
    for request in server.requests() {
        assert!(
            request.headers.iter().any(|(name, _)| name == "authorization"),
            "{:?}",
            request.headers
        );
        assert!(
            request
                .path
                .contains("/publishers/google/models/gemini-3-pro-preview:streamGenerateContent")
        );
    }
}

/// The call's span names the semantic conventions' system: `gcp.gemini` on the Gemini API,
/// `gcp.vertex_ai` on Vertex AI.
#[test]
fn the_span_names_the_google_system() {
    for (backend, system) in [(Backend::GeminiApi, "gcp.gemini"), (Backend::VertexAi, "gcp.vertex_ai")] {
        let capture = patchbay_conformance::logs::LogCapture::new();
        tracing::subscriber::with_default(capture.subscriber(), || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async {
                let body =
                    frame(json!({"candidates": [{"content": {"parts": [{"text": "hi"}]}, "finishReason": "STOP"}]}));
                let server = MockServer::builder(GeminiWire)
                    .serve([Serve::sse(body)])
                    .start()
                    .await
                    .expect("mock starts");
                let mut config = GeminiConfig::new(format!("{}/v1beta", server.url()))
                    .with_backend(backend)
                    .with_api_key("AIza-test");
                if backend == Backend::VertexAi {
                    config = config.with_access_token("ya29.test");
                }
                let provider = GeminiProvider::new(config).expect("builds");
                let recording = call(&provider, &[Message::user("hi")], &ToolSet::new(), None).await;
                assert_eq!(recording.text(), "hi");
            });
        });
        let logged = capture.text();
        assert!(logged.contains(&format!("gen_ai.provider.name={system}")), "{logged}");
    }
}

/// A forecast, as structured output asks for it.
#[derive(Debug, PartialEq, Deserialize, schemars::JsonSchema)]
struct Forecast {
    /// The city.
    city: String,
    /// Degrees Celsius.
    celsius: f64,
}

/// `generate_object` asks with `responseMimeType` and `responseJsonSchema` and reads the JSON
/// the model streamed as text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generate_object_asks_for_a_json_schema_and_reads_the_answer() {
    use patchbay_core::ProviderExt;
    let body = [
        frame(json!({"candidates": [{"content": {"parts": [{"text": "{\"city\": \"Paris\", "}]}}]})),
        frame(
            json!({"candidates": [{"content": {"parts": [{"text": "\"celsius\": 21.5}"}]}, "finishReason": "STOP"}]}),
        ),
    ]
    .concat();
    let (server, provider) = mock(vec![Serve::sse(body)]).await;
    let forecast: Forecast = provider
        .generate_object(
            &[Message::user("Weather in Paris?")],
            "gemini-2.5-flash",
            &Signal::new(),
            None,
        )
        .await
        .expect("an object");
    assert_eq!(
        forecast,
        Forecast {
            city: "Paris".into(),
            celsius: 21.5
        }
    );
    let config = &server.requests()[0].body["generationConfig"];
    assert_eq!(config["responseMimeType"], "application/json");
    assert_eq!(config["responseJsonSchema"]["required"], json!(["city", "celsius"]));
}

/// A bad conversation or call option is refused before the token command runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_before_the_token_command_runs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = GeminiConfig::vertex("p", "global").with_token_command(counting_command(dir.path()));
    let provider = GeminiProvider::new(config).expect("builds");
    let assistant_last = [Message::user("hi"), Message::assistant("hello")];
    let refused = call(&provider, &assistant_last, &ToolSet::new(), None).await;
    assert_eq!(refused.error.map(|e| e.kind()), Some(ErrorKind::InvalidRequest));
    let context = patchbay_core::RequestContext::new()
        .with_provider_options(patchbay_gemini::NAME, json!({ "thinking_level": 3 }));
    let refused = call(&provider, &[Message::user("hi")], &ToolSet::new(), Some(&context)).await;
    assert_eq!(refused.error.map(|e| e.kind()), Some(ErrorKind::InvalidRequest));
    assert!(!dir.path().join("runs").exists(), "the token command never ran");
}
