//! Configuration from registry options: unknown keys and wrong types are refused by name,
//! never quoting the value; `null` is the environment alone; no `Debug` shows a key.

use std::time::Duration;

use patchbay_anthropic::{AnthropicConfig, AnthropicProvider, Auth, Error};
use patchbay_core::{ErrorKind, ProviderError};
use serde_json::json;

const KEY: &str = "sk-ant-CANARY-0b1c";

/// Every way an error can be shown: its `Display`, `Debug`, and the chain of sources.
fn shown(error: &(dyn std::error::Error + 'static)) -> String {
    let mut out = format!("{error} {error:?}");
    let mut source = error.source();
    while let Some(next) = source {
        out.push_str(&format!(" | {next} {next:?}"));
        source = next.source();
    }
    out
}

#[test]
fn from_options_refuses_an_unknown_key_by_name_without_its_value() {
    let error = AnthropicConfig::from_options(&json!({"api_kee": KEY})).expect_err("unknown key");
    assert!(
        matches!(&error, Error::Options { source } if source.key.as_deref() == Some("api_kee")),
        "{error:?}"
    );
    let provider_error = ProviderError::from(error);
    assert_eq!(provider_error.kind(), ErrorKind::Config);
    assert_eq!(provider_error.facts().provider.as_deref(), Some("anthropic"));
    let text = shown(&provider_error);
    assert!(text.contains("api_kee"), "{text}");
    assert!(!text.contains("CANARY"), "{text}");
}

#[test]
fn from_options_refuses_a_wrong_type_by_name_without_its_value() {
    for (options, key) in [
        (json!({"connect_timeout_ms": KEY}), "connect_timeout_ms"),
        (json!({"api_key": [KEY]}), "api_key"),
        (json!({"betas": [KEY, 1]}), "betas"),
        (json!({"headers": {"x-extra": [KEY]}}), "headers"),
        (
            json!({"version": "v", "default_max_tokens": 1u64 << 40}),
            "default_max_tokens",
        ),
    ] {
        let error = AnthropicConfig::from_options(&options).expect_err("wrong type");
        assert!(
            matches!(&error, Error::Options { source } if source.key.as_deref() == Some(key)),
            "{error:?}"
        );
        let text = shown(&ProviderError::from(error));
        assert!(text.contains(key), "{text}");
        assert!(!text.contains("CANARY") && !text.contains("1099511627776"), "{text}");
    }
    let error = AnthropicConfig::from_options(&json!([KEY])).expect_err("not an object");
    assert!(
        matches!(&error, Error::Options { source } if source.key.is_none()),
        "{error:?}"
    );
}

/// A key pasted into `base_url` is refused without being quoted: the error names the option,
/// and neither it nor any source shows the value.
#[test]
fn a_key_pasted_as_the_base_url_is_refused_without_quoting_it() {
    let error = AnthropicConfig::from_options(&json!({"base_url": KEY})).expect_err("not a URL");
    assert!(matches!(error, Error::BaseUrl { .. }), "{error:?}");
    let text = shown(&ProviderError::from(error));
    assert!(text.contains("base_url"), "{text}");
    assert!(!text.contains("CANARY"), "{text}");
    // A config built in code is checked by `new`, with the same care.
    let error = AnthropicProvider::new(AnthropicConfig::new("k").with_base_url(KEY)).expect_err("not a URL");
    let text = shown(&error);
    assert!(!text.contains("CANARY"), "{text}");
}

#[test]
fn from_options_accepts_null_and_an_empty_object_as_the_environment_alone() {
    let defaults = format!("{:?}", AnthropicConfig::from_env().expect("the environment"));
    for options in [json!(null), json!({})] {
        let config = AnthropicConfig::from_options(&options).expect("accepted");
        assert_eq!(format!("{config:?}"), defaults);
    }
    let config = AnthropicConfig::from_options(&json!({"api_key": null, "read_timeout_ms": null})).expect("nulls");
    assert_eq!(format!("{config:?}"), defaults);
}

#[test]
fn from_options_reads_every_key_and_zero_turns_a_limit_off() {
    let config = AnthropicConfig::from_options(&json!({
        "auth_token": KEY,
        "base_url": "http://127.0.0.1:9",
        "version": "2099-01-01",
        "betas": ["one", "two"],
        "headers": {"x-extra": "value"},
        "connect_timeout_ms": 1500,
        "read_timeout_ms": 0,
        "content_timeout_ms": 2000,
        "request_timeout_ms": 0,
        "max_line_bytes": 1024,
        "max_error_body_bytes": 512,
        "default_max_tokens": 99,
    }))
    .expect("every key");
    assert_eq!(*config.auth(), Auth::Bearer(patchbay_core::kit::Secret::new(KEY)));
    assert_eq!(config.base_url(), "http://127.0.0.1:9");
    assert_eq!(config.version(), "2099-01-01");
    assert_eq!(config.betas(), ["one", "two"]);
    assert!(config.headers().contains(&("x-extra".into(), "value".into())));
    assert_eq!(config.connect_timeout(), Duration::from_millis(1500));
    assert_eq!(config.limits().read_timeout, None);
    assert_eq!(config.limits().content_timeout, Some(Duration::from_secs(2)));
    assert_eq!(config.request_timeout(), None);
    assert_eq!(
        (config.limits().max_line_bytes, config.limits().max_error_body_bytes),
        (1024, 512)
    );
    assert_eq!(config.default_max_tokens(), 99);
}

#[test]
fn from_options_refuses_a_base_url_that_does_not_parse_without_its_credentials() {
    let error =
        AnthropicConfig::from_options(&json!({"base_url": format!("http://user:{KEY}@[::1")})).expect_err("bad URL");
    assert!(matches!(error, Error::BaseUrl { .. }), "{error:?}");
    let text = shown(&ProviderError::from(error));
    assert!(text.contains("base_url") && !text.contains("CANARY"), "{text}");
}

#[test]
fn debug_of_a_config_with_a_key_shows_no_key() {
    let configs = [
        AnthropicConfig::new(KEY),
        AnthropicConfig::default().with_auth_token(KEY),
        AnthropicConfig::from_options(&json!({"api_key": KEY})).expect("options"),
    ];
    for config in configs {
        let debug = format!("{config:?} {:#?} {:?}", config, config.auth());
        assert!(!debug.contains("CANARY"), "{debug}");
    }
}
