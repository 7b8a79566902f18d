//! Options and environment with a fake environment (no process variables touched).

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{Value, json};

use super::{Dialect, OPENROUTER_BASE_URL, OpenRouterConfig};
use crate::error::Error;

/// `from_options` over a fake environment.
fn read(options: &Value, vars: &[(&str, &str)]) -> Result<OpenRouterConfig, Error> {
    let vars: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    OpenRouterConfig::from_options_in(options, &|name| Ok(vars.get(name).cloned()))
}

fn bad_option_key(error: Error) -> String {
    match error {
        Error::Options { source } => source.key.unwrap_or_default(),
        other => panic!("expected Options, got {other:?}"),
    }
}

#[test]
fn an_unknown_key_is_refused_by_name_without_its_value() {
    let error = read(&json!({ "base_url": "http://h/v1", "api_kee": "sk-secret-1" }), &[]).expect_err("unknown");
    let message = error.to_string();
    assert!(message.contains("api_kee"), "{message}");
    assert!(!message.contains("sk-secret-1"), "{message}");
    assert_eq!(bad_option_key(error), "api_kee");
}

#[test]
fn a_wrong_type_is_refused_by_name_without_its_value() {
    for key in ["include_usage", "connect_timeout_ms", "headers", "dialect", "base_url"] {
        let value = if key == "base_url" {
            json!(["sk-secret-2"])
        } else {
            json!("sk-secret-2")
        };
        let options = json!({ "title": "app", key: value });
        let error = read(&options, &[("OPENAI_BASE_URL", "http://h/v1")]).expect_err(key);
        let message = error.to_string();
        assert!(message.contains(key), "{message}");
        assert!(!message.contains("sk-secret-2"), "{message}");
        assert_eq!(bad_option_key(error), key);
    }
}

#[test]
fn options_that_are_not_an_object_are_refused_without_quoting_them() {
    let error = read(&json!("sk-secret-3"), &[]).expect_err("a string");
    assert!(
        matches!(&error, Error::Options { source } if source.key.is_none()),
        "{error:?}"
    );
    assert!(!error.to_string().contains("sk-secret-3"));
}

#[test]
fn connect_timeout_ms_sets_the_connect_timeout_and_zero_turns_it_off() {
    let base = [("OPENAI_BASE_URL", "http://h/v1")];
    assert_eq!(
        read(&Value::Null, &base).expect("env").connect_timeout(),
        Some(Duration::from_secs(30))
    );
    let config = read(&json!({ "connect_timeout_ms": 2500 }), &base).expect("valid");
    assert_eq!(config.connect_timeout(), Some(Duration::from_millis(2500)));
    let config = read(&json!({ "connect_timeout_ms": 0 }), &base).expect("valid");
    assert_eq!(config.connect_timeout(), None);
    let error = read(&json!({ "connect_timeout_secs": 2 }), &base).expect_err("the old key");
    assert_eq!(bad_option_key(error), "connect_timeout_secs");
}

#[test]
fn null_and_an_empty_object_mean_the_environment_alone() {
    let env = [("OPENROUTER_API_KEY", "sk-or")];
    for options in [Value::Null, json!({})] {
        let config = read(&options, &env).expect("from the environment");
        assert_eq!(config.base_url(), OPENROUTER_BASE_URL);
        assert_eq!(config.dialect(), Dialect::OpenRouter);
        assert_eq!(config.api_key.as_ref().map(|k| k.expose()), Some("sk-or"));
        assert!(matches!(read(&options, &[]), Err(Error::MissingKey)));
    }
    let config = read(&Value::Null, &[("OPENAI_API_KEY", "sk-oa")]).expect("OpenAI");
    assert_eq!(config.dialect(), Dialect::OpenAi);
    let config = read(&Value::Null, &[("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")]).expect("local");
    assert_eq!(config.dialect(), Dialect::Generic);
    assert!(!config.has_api_key());
    let error = read(&Value::Null, &[("OPENAI_BASE_URL", "ftp://u:sk-secret-4@h")]).expect_err("not http");
    assert!(
        matches!(
            error,
            Error::BaseUrl {
                origin: "OPENAI_BASE_URL"
            }
        ),
        "{error:?}"
    );
    assert!(!format!("{error} {error:?}").contains("sk-secret-4"));
}

#[test]
fn options_override_the_environment() {
    let env = [("OPENROUTER_API_KEY", "sk-or"), ("OPENAI_BASE_URL", "http://env/v1")];
    let options = json!({ "base_url": "http://opt/v1/", "api_key": "sk-opt", "read_timeout_ms": 0 });
    let config = read(&options, &env).expect("valid");
    assert_eq!(config.base_url(), "http://opt/v1");
    assert_eq!(config.api_key.as_ref().map(|k| k.expose()), Some("sk-opt"));
    assert_eq!(config.limits().read_timeout, None);
}

#[test]
fn the_dialect_names_the_key_variable_and_the_default_url() {
    // A proxy in front of OpenRouter reads OpenRouter's key.
    let env = [("OPENROUTER_API_KEY", "sk-or"), ("OPENAI_API_KEY", "sk-oa")];
    let options = json!({ "base_url": "http://proxy/v1", "dialect": "openrouter" });
    let config = read(&options, &env).expect("valid");
    assert_eq!(config.api_key.as_ref().map(|k| k.expose()), Some("sk-or"));
    let config = read(&json!({ "dialect": "openai" }), &env).expect("valid");
    assert_eq!(config.base_url(), super::OPENAI_BASE_URL);
    assert_eq!(config.api_key.as_ref().map(|k| k.expose()), Some("sk-oa"));
    assert!(matches!(
        read(&json!({ "dialect": "generic" }), &env),
        Err(Error::MissingBaseUrl)
    ));
}

#[test]
fn api_key_env_names_the_variable_and_an_unset_one_is_an_error() {
    let env = [("MY_KEY", "sk-mine"), ("OPENROUTER_API_KEY", "sk-or")];
    let config = read(&json!({ "api_key_env": "MY_KEY" }), &env).expect("valid");
    assert_eq!(config.api_key.as_ref().map(|k| k.expose()), Some("sk-mine"));
    let error = read(&json!({ "api_key_env": "NOT_SET" }), &env).expect_err("unset");
    assert!(matches!(&error, Error::MissingKeyVariable), "{error:?}");
}
