//! Every provider crate has the same shape: the registry builds each one from JSON options
//! through its crate's `factory()`, refuses an unknown option key the same way, and the name it
//! answers to is the crate's `NAME`.

use patchbay::{ErrorKind, Registry};
use serde_json::{Value, json};

/// Each compiled-in provider with options that build it offline (no key from the environment
/// is needed: every value is given).
fn buildable() -> Vec<(&'static str, Value)> {
    #[allow(unused_mut)]
    let mut all: Vec<(&'static str, Value)> = Vec::new();
    #[cfg(feature = "scripted")]
    all.push((patchbay::scripted::NAME, json!({ "text": "hi" })));
    #[cfg(feature = "anthropic")]
    all.push((
        patchbay::anthropic::NAME,
        json!({ "api_key": "sk-ant-test", "base_url": "http://127.0.0.1:9", "read_timeout_ms": 1000 }),
    ));
    #[cfg(feature = "openrouter")]
    all.push((
        patchbay::openrouter::NAME,
        json!({ "api_key": "sk-or-test", "base_url": "http://127.0.0.1:9", "connect_timeout_ms": 1000 }),
    ));
    #[cfg(feature = "claude-agent")]
    all.push((
        patchbay::claude_agent::NAME,
        json!({ "cli_path": "/usr/bin/true", "keep_alive_ms": 500 }),
    ));
    all
}

#[test]
fn every_factory_builds_its_provider_from_options() {
    let registry = Registry::compiled();
    for (name, options) in buildable() {
        assert!(registry.names().contains(&name), "{name} is not registered");
        let provider = registry
            .build(name, &options)
            .unwrap_or_else(|e| panic!("{name} does not build from {options}: {e}"));
        assert_eq!(provider.info().name, name, "the provider's name is its crate's NAME");
        let factory = registry.factories().iter().find(|f| f.name == name).expect("listed");
        assert!(!factory.description.is_empty(), "{name} describes its options");
    }
}

#[test]
fn every_factory_refuses_an_unknown_option_naming_it() {
    let registry = Registry::compiled();
    for (name, mut options) in buildable() {
        options["no_such_option"] = json!("sk-secret-value");
        let Err(error) = registry.build(name, &options) else {
            panic!("{name} accepted an unknown option");
        };
        assert_eq!(error.kind(), ErrorKind::Config, "{name}: {error}");
        assert_eq!(error.facts().provider.as_deref(), Some(name), "{name}: {error:?}");
        let message = error.to_string();
        assert!(message.contains("no_such_option"), "{name} names the key: {message}");
        assert!(
            !message.contains("sk-secret-value"),
            "{name} quotes no value: {message}"
        );
    }
}

#[test]
fn every_factory_refuses_a_wrong_type() {
    let registry = Registry::compiled();
    for (name, options) in buildable() {
        let Some((key, _)) = options.as_object().and_then(|o| o.iter().next()) else {
            continue;
        };
        let mut wrong = options.clone();
        wrong[key.as_str()] = json!([1, 2, 3]);
        assert!(
            registry.build(name, &wrong).is_err(),
            "{name} accepted a list for `{key}`"
        );
    }
}
