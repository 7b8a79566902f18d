//! `OllamaConfig::from_options` and the factory: one shape, unknown keys refused, no secrets.

use std::time::Duration;

use patchbay_core::ErrorKind;
use patchbay_ollama::{Error, OllamaConfig};
use serde_json::json;

#[test]
fn an_unknown_key_is_refused_by_name() {
    let error = OllamaConfig::from_options(&json!({"base_url": "http://box:1", "colour": "sk-VALUE"}))
        .expect_err("unknown key");
    let Error::Options { source: options } = &error else {
        panic!("an options error: {error:?}");
    };
    assert_eq!(options.key.as_deref(), Some("colour"));
    assert!(options.message.contains("colour"), "{options}");
    assert!(!error.to_string().contains("sk-VALUE"), "{error}");
}

#[test]
fn a_wrong_type_names_the_key_and_never_quotes_the_value() {
    let error = OllamaConfig::from_options(&json!({"read_timeout_ms": "sk-SECRET"})).expect_err("wrong type");
    let text = error.to_string();
    assert!(text.contains("read_timeout_ms"), "{text}");
    assert!(!text.contains("sk-SECRET"), "{text}");
    assert!(matches!(error, Error::Options { ref source } if source.key.as_deref() == Some("read_timeout_ms")));
}

#[test]
fn null_and_empty_options_are_the_environment_alone() {
    for options in [json!(null), json!({})] {
        let config = OllamaConfig::from_options(&options).expect("valid");
        let env = OllamaConfig::from_env().expect("valid environment");
        assert_eq!(config.base_url(), env.base_url());
    }
    assert!(
        OllamaConfig::from_options(&json!(["base_url"])).is_err(),
        "not an object"
    );
}

#[test]
fn options_set_url_key_and_limits_and_zero_turns_a_timeout_off() {
    let config = OllamaConfig::from_options(&json!({
        "base_url": "gpu-box",
        "api_key": "sk-HOSTED",
        "read_timeout_ms": 0,
        "content_timeout_ms": 2500,
        "connect_timeout_ms": 0,
        "max_line_bytes": 4096,
    }))
    .expect("valid");
    assert_eq!(config.base_url(), "http://gpu-box:11434");
    assert_eq!(config.api_key().map(|key| key.expose()), Some("sk-HOSTED"));
    assert_eq!(config.limits().read_timeout, None);
    assert_eq!(config.limits().content_timeout, Some(Duration::from_millis(2500)));
    assert_eq!(config.connect_timeout(), None);
    assert_eq!(config.limits().max_line_bytes, 4096);
    assert!(!format!("{config:?}").contains("sk-HOSTED"));
    assert!(OllamaConfig::from_options(&json!({"max_line_bytes": 0})).is_err());
}

#[test]
fn a_bad_base_url_is_a_config_error_without_its_value() {
    let error = OllamaConfig::from_options(&json!({"base_url": "ftp://user:sk-PW@box"})).expect_err("ftp");
    assert!(matches!(error, Error::BaseUrl { origin: "base_url", .. }));
    assert!(!error.to_string().contains("sk-PW"));
}

#[test]
fn the_factory_builds_from_options_and_refuses_unknown_keys_as_config_errors() {
    let factory = patchbay_ollama::factory();
    let provider = factory
        .build(&json!({"base_url": "http://127.0.0.1:9"}))
        .expect("builds");
    assert_eq!(provider.info().name, "ollama");
    assert!(provider.info().capabilities.reasoning);
    let Err(error) = factory.build(&json!({"model": "llama3"})) else {
        panic!("an unknown key is refused");
    };
    assert_eq!(error.kind(), ErrorKind::Config);
    assert_eq!(error.facts().provider.as_deref(), Some("ollama"));
    assert!(
        std::error::Error::source(&error).is_some(),
        "keeps the crate's error as its source"
    );
}

#[test]
fn debug_shows_no_key_and_no_url_credentials() {
    let config = OllamaConfig::default()
        .with_base_url("http://user:sk-PW@box:1")
        .with_api_key(Some("sk-KEY".to_string().into()));
    let provider = patchbay_ollama::OllamaProvider::new(config).expect("builds");
    let debug = format!("{provider:?}");
    assert!(!debug.contains("sk-PW") && !debug.contains("sk-KEY"), "{debug}");
}

/// Set in the child process of [`a_variable_that_is_not_unicode_is_error_env_naming_it`].
const CHILD: &str = "PATCHBAY_PARITY_CHILD";

/// A key with a stray byte, as `OLLAMA_API_KEY`: `from_env` and `from_options` refuse it with
/// `Error::Env` naming the variable (the variant every provider crate uses), a `Config` error
/// that never shows the value. The variable is set in a child process running
/// [`env_child_refuses_its_variable`] (this process's environment is not changed).
#[cfg(unix)]
#[test]
fn a_variable_that_is_not_unicode_is_error_env_naming_it() {
    use std::os::unix::ffi::OsStrExt;
    let exe = std::env::current_exe().expect("the test binary");
    let output = std::process::Command::new(exe)
        .args(["--exact", "config::env_child_refuses_its_variable", "--test-threads=1"])
        .env(CHILD, "1")
        .env("OLLAMA_API_KEY", std::ffi::OsStr::from_bytes(b"sk-CANARY-\xff"))
        .output()
        .expect("the child runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The child half of [`a_variable_that_is_not_unicode_is_error_env_naming_it`]; in any other
/// process it has nothing to check.
#[test]
fn env_child_refuses_its_variable() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    for result in [OllamaConfig::from_env(), OllamaConfig::from_options(&json!({}))] {
        let error = result.expect_err("not Unicode");
        assert!(
            matches!(&error, Error::Env { name, .. } if name == "OLLAMA_API_KEY"),
            "{error:?}"
        );
        let error = patchbay_core::ProviderError::from(error);
        assert_eq!(error.kind(), ErrorKind::Config);
        let mut shown = format!("{error} {error:?}");
        let mut source = std::error::Error::source(&error);
        while let Some(next) = source {
            shown.push_str(&format!(" | {next} {next:?}"));
            source = next.source();
        }
        assert!(shown.contains("OLLAMA_API_KEY") && !shown.contains("CANARY"), "{shown}");
    }
}
