//! Structured output through the reference provider: `generate_object` and `stream_object`.

use futures::StreamExt;
use patchbay_core::{ErrorKind, Message, ProviderError, ProviderExt, Signal, object::ObjectError, object::ObjectEvent};
use patchbay_scripted::{Part, Script, ScriptedProvider, Turn};
use serde::Deserialize;
use serde_json::json;

/// A city's weather.
#[derive(Debug, PartialEq, Deserialize, schemars::JsonSchema)]
struct Weather {
    city: String,
    celsius: i32,
    tags: Vec<String>,
}

fn provider(text: &str) -> ScriptedProvider {
    ScriptedProvider::new(Script::new(vec![Turn::text(text)]))
}

async fn generate(provider: &ScriptedProvider) -> Result<Weather, ObjectError> {
    provider
        .generate_object::<Weather>(&[Message::user("Weather?")], "m", &Signal::new(), None)
        .await
}

#[tokio::test]
async fn generate_object_validates_and_deserializes_the_final_text_block() {
    let provider = ScriptedProvider::new(Script::new(vec![Turn::parts(vec![
        Part::text("Checking."),
        Part::text(r#"{"city": "Paris", "celsius": 21, "tags": ["sunny"]}"#),
    ])]));
    let weather = generate(&provider).await.expect("a valid object");
    assert_eq!(
        weather,
        Weather {
            city: "Paris".into(),
            celsius: 21,
            tags: vec!["sunny".into()],
        }
    );
    let asked = provider.requests()[0]
        .output_schema
        .clone()
        .expect("the schema was asked for");
    assert_eq!(asked.name, "Weather");
    assert_eq!(asked.description.as_deref(), Some("A city's weather."));
    assert_eq!(asked.schema["required"], json!(["city", "celsius", "tags"]));
}

#[tokio::test]
async fn a_reply_that_breaks_the_schema_is_invalid_with_its_raw_text_and_messages() {
    let raw = r#"{"city": "Paris", "celsius": "warm"}"#;
    let error = generate(&provider(raw)).await.expect_err("does not match");
    assert!(matches!(error, ObjectError::Invalid { .. }), "{error:?}");
    assert_eq!(error.raw_text(), Some(raw));
    let messages = error.validation_errors().join("\n");
    assert!(messages.contains("/celsius"), "{messages}");
    assert!(messages.contains("tags"), "{messages}");
    let as_provider: ProviderError = error.into();
    assert_eq!(as_provider.kind(), ErrorKind::Protocol);
}

#[tokio::test]
async fn a_reply_that_is_not_json_keeps_its_raw_text() {
    let error = generate(&provider("Sunny, I think.")).await.expect_err("not JSON");
    assert!(matches!(error, ObjectError::NotJson { .. }), "{error:?}");
    assert_eq!(error.raw_text(), Some("Sunny, I think."));
}

#[tokio::test]
async fn a_fenced_reply_is_read_inside_its_fence() {
    let text = "```json\n{\"city\": \"Oslo\", \"celsius\": -3, \"tags\": []}\n```";
    let weather = generate(&provider(text)).await.expect("fenced JSON");
    assert_eq!(weather.city, "Oslo");
}

#[tokio::test]
async fn a_failed_call_is_the_provider_error() {
    let provider = ScriptedProvider::new(Script::new(Vec::new()));
    let error = generate(&provider).await.expect_err("no turns");
    assert!(
        matches!(&error, ObjectError::Provider(e) if e.kind() == ErrorKind::Config),
        "{error:?}"
    );
    assert_eq!(error.raw_text(), None);
}

#[tokio::test]
async fn stream_object_yields_growing_partials_then_the_object() {
    let provider = provider(r#"{"city": "Paris", "celsius": 21, "tags": ["sunny", "dry"]}"#);
    let messages = [Message::user("Weather?")];
    let signal = Signal::new();
    let events: Vec<_> = provider
        .stream_object::<Weather>(&messages, "m", &signal, None)
        .collect()
        .await;
    let events: Vec<ObjectEvent<Weather>> = events.into_iter().map(|e| e.expect("no error")).collect();
    let partials: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            ObjectEvent::Partial(value) => Some(value.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(partials.first(), Some(&json!({})));
    assert!(partials.contains(&json!({"city": "Paris"})), "{partials:?}");
    assert!(
        partials.contains(&json!({"city": "Paris", "celsius": 21, "tags": ["sunny"]})),
        "{partials:?}"
    );
    assert!(
        partials.windows(2).all(|pair| pair[0] != pair[1]),
        "no repeats: {partials:?}"
    );
    assert_eq!(
        events.last(),
        Some(&ObjectEvent::Complete(Weather {
            city: "Paris".into(),
            celsius: 21,
            tags: vec!["sunny".into(), "dry".into()],
        }))
    );
}

#[tokio::test]
async fn stream_object_ends_with_the_validation_error() {
    let provider = provider(r#"{"city": 7}"#);
    let messages = [Message::user("Weather?")];
    let signal = Signal::new();
    let mut stream = provider.stream_object::<Weather>(&messages, "m", &signal, None);
    let mut last = None;
    while let Some(item) = stream.next().await {
        last = Some(item);
    }
    let error = last.expect("something").expect_err("invalid");
    assert_eq!(error.raw_text(), Some(r#"{"city": 7}"#));
    assert!(error.validation_errors().len() >= 2, "{:?}", error.validation_errors());
}
