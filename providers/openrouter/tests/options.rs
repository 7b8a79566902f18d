//! JSON options: the registry's way in (`from_options`, then `OpenRouterProvider::new`).

use std::error::Error as _;
use std::time::Duration;

use patchbay_core::{ErrorKind, Message, ProviderError, ToolSet};
use patchbay_openrouter::{Dialect, Error, NAME, OpenRouterConfig, OpenRouterProvider};
use serde_json::{Value, json};

const SECRET: &str = "sk-option-secret-9";

/// The error and every source under it, as text.
fn chain(error: &ProviderError) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(next) = source {
        text.push_str(&format!(" <- {next}"));
        source = next.source();
    }
    text
}

fn refused_key(options: Value) -> (String, ProviderError) {
    let key = match OpenRouterConfig::from_options(&options).expect_err("refused") {
        Error::Options { source } => source.key.unwrap_or_default(),
        other => panic!("expected Options, got {other:?}"),
    };
    let error = patchbay_openrouter::factory().build(&options).err().expect("refused");
    (key, error)
}

#[test]
fn options_build_the_provider_through_the_factory() {
    let options = json!({
        "base_url": "http://127.0.0.1:1234/v1/",
        "api_key": "k",
        "dialect": "openrouter",
        "title": "T",
        "headers": {"X-A": "b"},
        "include_usage": false,
    });
    let provider = OpenRouterProvider::new(OpenRouterConfig::from_options(&options).expect("valid")).expect("builds");
    assert_eq!(provider.config().base_url(), "http://127.0.0.1:1234/v1");
    assert_eq!(provider.config().dialect(), Dialect::OpenRouter);
    // Every field has a getter (the fields are private, as in every provider crate's config).
    let config = provider.config();
    assert_eq!((config.title(), config.referer()), (Some("T"), None));
    assert_eq!(config.headers(), [("X-A".to_string(), "b".to_string())]);
    assert!(!config.include_usage() && config.has_api_key());
    let (body, _) = provider.request_body(&[Message::user("x")], &ToolSet::new(), "m", None);
    assert!(body.get("stream_options").is_none());
    let built = patchbay_openrouter::factory().build(&options).expect("builds");
    assert_eq!(built.info().name, NAME);
    let error = patchbay_openrouter::factory()
        .build(&json!({"base_url": "ftp://x"}))
        .err()
        .expect("bad url");
    assert_eq!(error.kind(), ErrorKind::Config);
    assert_eq!(error.facts().provider.as_deref(), Some(NAME));
}

#[test]
fn an_unknown_key_is_refused_by_name_without_quoting_its_value() {
    let (key, error) = refused_key(json!({ "base_url": "http://127.0.0.1:9/v1", "api_kee": SECRET }));
    assert_eq!(key, "api_kee");
    assert_eq!(error.kind(), ErrorKind::Config);
    let text = chain(&error);
    assert!(text.contains("`api_kee`"), "{text}");
    assert!(!text.contains(SECRET), "{text}");
}

#[test]
fn a_wrong_type_is_refused_by_name_without_quoting_its_value() {
    for key in ["include_usage", "read_timeout_ms", "dialect", "title", "headers"] {
        let value = if key == "title" { json!([SECRET]) } else { json!(SECRET) };
        let (refused, error) = refused_key(json!({ "base_url": "http://127.0.0.1:9/v1", key: value }));
        assert_eq!(refused, key);
        let text = chain(&error);
        assert!(text.contains(&format!("`{key}`")), "{text}");
        assert!(!text.contains(SECRET), "{text}");
    }
}

/// An OpenRouter key pasted into the wrong field is refused without being quoted: the error
/// names the field, and neither it nor any source shows the value.
#[test]
fn a_key_pasted_in_the_wrong_field_is_refused_without_quoting_it() {
    const PASTED: &str = "sk-or-v1-5c0ffee0d15ea5e0ddba11ba5eba11c0ffee0d15ea5e0ddba11ba5eba11c0f";
    for (options, field) in [
        (json!({ "base_url": PASTED }), "base_url"),
        (json!({ "base_url": PASTED, "dialect": "generic" }), "base_url"),
        (json!({ "api_key_env": PASTED }), "api_key_env"),
    ] {
        let error = OpenRouterConfig::from_options(&options).expect_err("refused");
        let shown = format!("{error} {error:?}");
        assert!(shown.contains(field), "{shown}");
        assert!(!shown.contains(PASTED), "{shown}");
        let error = patchbay_openrouter::factory().build(&options).err().expect("refused");
        let shown = format!("{} {error:?}", chain(&error));
        assert_eq!(error.kind(), ErrorKind::Config);
        assert!(!shown.contains(PASTED), "{shown}");
    }
    // A config built in code is checked by `new`, with the same care.
    let error = OpenRouterProvider::new(OpenRouterConfig::new(PASTED)).expect_err("refused");
    let shown = format!("{} {error:?}", chain(&error));
    assert!(!shown.contains(PASTED), "{shown}");
}

#[test]
fn connect_timeout_ms_is_read_in_milliseconds_and_zero_turns_it_off() {
    let read = |options: Value| OpenRouterConfig::from_options(&options).expect("valid");
    let base = "http://127.0.0.1:9/v1";
    assert_eq!(
        read(json!({ "base_url": base, "connect_timeout_ms": 1500 })).connect_timeout(),
        Some(Duration::from_millis(1500))
    );
    assert_eq!(
        read(json!({ "base_url": base, "connect_timeout_ms": 0 })).connect_timeout(),
        None
    );
    assert_eq!(
        read(json!({ "base_url": base })).connect_timeout(),
        Some(Duration::from_secs(30))
    );
    let (key, _) = refused_key(json!({ "base_url": base, "connect_timeout_secs": 5 }));
    assert_eq!(key, "connect_timeout_secs");
}

#[test]
fn null_options_mean_the_environment_alone() {
    // Whatever this process's environment holds, `null` and `{}` read it exactly as `from_env`.
    let outcome = |result: Result<OpenRouterConfig, Error>| match result {
        Ok(config) => format!("{config:?}"),
        Err(error) => format!("error: {error}"),
    };
    let from_env = outcome(OpenRouterConfig::from_env());
    assert_eq!(outcome(OpenRouterConfig::from_options(&Value::Null)), from_env);
    assert_eq!(outcome(OpenRouterConfig::from_options(&json!({}))), from_env);
}

#[test]
fn options_that_are_not_an_object_are_refused() {
    let error = OpenRouterConfig::from_options(&json!(SECRET)).expect_err("a string");
    assert!(
        matches!(&error, Error::Options { source } if source.key.is_none()),
        "{error:?}"
    );
    assert!(!error.to_string().contains(SECRET));
}
