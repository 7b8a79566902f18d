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
    #[cfg(feature = "gemini")]
    all.push((
        patchbay::gemini::NAME,
        json!({ "api_key": "AIza-test", "base_url": "http://127.0.0.1:9", "connect_timeout_ms": 1000 }),
    ));
    #[cfg(feature = "openai")]
    all.push((
        patchbay::openai::NAME,
        json!({ "api_key": "sk-test", "base_url": "http://127.0.0.1:9", "connect_timeout_ms": 1000 }),
    ));
    #[cfg(feature = "claude-agent")]
    all.push((
        patchbay::claude_agent::NAME,
        json!({ "cli_path": "/usr/bin/true", "keep_alive_ms": 500 }),
    ));
    // An agent runtime: a preset names the agent (its program is looked up only when a call
    // starts), no key is needed.
    #[cfg(feature = "acp")]
    all.push((
        patchbay::acp::NAME,
        json!({ "agent": "gemini", "init_timeout_ms": 1000 }),
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

/// The in-tree provider crates (the scripted test double reads no call options and no
/// environment), each with the variable a non-Unicode value is put in by
/// [`a_variable_that_is_not_unicode_is_the_same_error_env_in_every_crate`].
#[allow(unused_mut, clippy::vec_init_then_push)] // each push is behind its provider's feature
fn provider_crates() -> Vec<(&'static str, &'static str)> {
    let mut all: Vec<(&'static str, &'static str)> = Vec::new();
    #[cfg(feature = "anthropic")]
    all.push((patchbay::anthropic::NAME, "ANTHROPIC_API_KEY"));
    #[cfg(feature = "openrouter")]
    all.push((patchbay::openrouter::NAME, "OPENROUTER_API_KEY"));
    #[cfg(feature = "claude-agent")]
    all.push((patchbay::claude_agent::NAME, patchbay::claude_agent::CLI_ENV));
    #[cfg(feature = "gemini")]
    all.push((patchbay::gemini::NAME, "GEMINI_API_KEY"));
    #[cfg(feature = "openai")]
    all.push((patchbay::openai::NAME, "OPENAI_API_KEY"));
    #[cfg(feature = "acp")]
    all.push((patchbay::acp::NAME, patchbay::acp::AGENT_ENV));
    all
}

/// A call's provider options that cannot be read (not an object; for the crates that read
/// keys, a known key of the wrong type) are an `InvalidRequest` of that provider, before any
/// I/O (nothing listens at the base URL, and the CLI is `true`), naming what is wrong and never
/// quoting the value: the same kind in every crate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_provider_refuses_a_bad_call_option_as_an_invalid_request() {
    use futures::StreamExt;
    let registry = Registry::compiled();
    let known_key_of_wrong_type = |name: &str| match name {
        "anthropic" => Some(("betas", json!({ "betas": "sk-CANARY" }))),
        "claude-agent" => Some(("max_turns", json!({ "max_turns": "sk-CANARY" }))),
        "gemini" => Some(("safety_settings", json!({ "safety_settings": "sk-CANARY" }))),
        "openai" => Some(("store", json!({ "store": "sk-CANARY" }))),
        "acp" => Some(("init_timeout_ms", json!({ "init_timeout_ms": "sk-CANARY" }))),
        _ => None,
    };
    for (name, options) in buildable() {
        if !provider_crates().iter().any(|(crate_name, _)| *crate_name == name) {
            continue;
        }
        let provider = registry.build(name, &options).expect("builds");
        let mut cases = vec![("object", json!("sk-CANARY"))];
        cases.extend(known_key_of_wrong_type(name));
        for (named, call_options) in cases {
            let context = patchbay::RequestContext::new().with_provider_options(name, call_options);
            let messages = [patchbay::Message::user("hi")];
            let tools = patchbay::ToolSet::new();
            let started = provider
                .create_response(&messages, &tools, "m", &patchbay::Signal::new(), Some(&context))
                .await;
            let error = match started {
                Err(error) => error,
                Ok(mut stream) => loop {
                    match stream.next().await {
                        Some(Err(error)) => break error,
                        Some(Ok(_)) => continue,
                        None => panic!("{name} accepted the call options"),
                    }
                },
            };
            assert_eq!(error.kind(), ErrorKind::InvalidRequest, "{name}: {error}");
            assert_eq!(error.facts().provider.as_deref(), Some(name), "{error:?}");
            let shown = format!("{error} {error:?}");
            assert!(shown.contains(named) && !shown.contains("CANARY"), "{name}: {shown}");
        }
    }
}

/// Set in the child processes of
/// [`a_variable_that_is_not_unicode_is_the_same_error_env_in_every_crate`]: the provider whose
/// variable holds a value that is not Unicode.
const CHILD: &str = "PATCHBAY_PARITY_CHILD";

/// Each crate's variable set to a key with a stray byte (in a child process, so this one's
/// environment is untouched): `from_env` is the crate's `Error::Env` naming the variable, and
/// the registry's build a `Config` error naming it, neither showing the value.
#[cfg(unix)]
#[test]
fn a_variable_that_is_not_unicode_is_the_same_error_env_in_every_crate() {
    use std::os::unix::ffi::OsStrExt;
    let exe = std::env::current_exe().expect("the test binary");
    for (name, variable) in provider_crates() {
        let output = std::process::Command::new(&exe)
            .args([
                "--exact",
                "factories::env_child_refuses_its_variable",
                "--test-threads=1",
            ])
            .env(CHILD, name)
            .env(variable, std::ffi::OsStr::from_bytes(b"sk-CANARY-\xff"))
            .output()
            .expect("the child runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("1 passed"),
            "{name}: {stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// The child half of [`a_variable_that_is_not_unicode_is_the_same_error_env_in_every_crate`];
/// in any other process it has nothing to check.
#[test]
fn env_child_refuses_its_variable() {
    let Some(name) = std::env::var(CHILD).ok() else {
        return;
    };
    let (_, variable) = provider_crates()
        .into_iter()
        .find(|(crate_name, _)| *crate_name == name)
        .expect("a provider crate");
    let env_error: Option<String> = match name.as_str() {
        #[cfg(feature = "anthropic")]
        "anthropic" => match patchbay::anthropic::AnthropicConfig::from_env() {
            Err(patchbay::anthropic::Error::Env { name, .. }) => Some(name),
            other => panic!("{other:?}"),
        },
        #[cfg(feature = "openrouter")]
        "openrouter" => match patchbay::openrouter::OpenRouterConfig::from_env() {
            Err(patchbay::openrouter::Error::Env { name, .. }) => Some(name),
            other => panic!("{other:?}"),
        },
        #[cfg(feature = "gemini")]
        "gemini" => match patchbay::gemini::GeminiConfig::from_env() {
            Err(patchbay::gemini::Error::Env { name, .. }) => Some(name),
            other => panic!("{other:?}"),
        },
        #[cfg(feature = "openai")]
        "openai" => match patchbay::openai::OpenAiConfig::from_env() {
            Err(patchbay::openai::Error::Env { name, .. }) => Some(name),
            other => panic!("{other:?}"),
        },
        #[cfg(feature = "claude-agent")]
        "claude-agent" => match patchbay::claude_agent::ClaudeAgentConfig::from_env() {
            Err(patchbay::claude_agent::Error::Env { name, .. }) => Some(name),
            other => panic!("{other:?}"),
        },
        #[cfg(feature = "acp")]
        "acp" => match patchbay::acp::AcpConfig::from_env() {
            Err(patchbay::acp::Error::Env { name, .. }) => Some(name),
            other => panic!("{other:?}"),
        },
        _ => None,
    };
    assert_eq!(env_error.as_deref(), Some(variable), "{name}");
    let Err(error) = Registry::compiled().build(&name, &json!({})) else {
        panic!("{name} built from a variable that is not Unicode");
    };
    assert_eq!(error.kind(), ErrorKind::Config, "{name}: {error}");
    let mut shown = format!("{error} {error:?}");
    let mut source = std::error::Error::source(&error);
    while let Some(next) = source {
        shown.push_str(&format!(" | {next} {next:?}"));
        source = next.source();
    }
    assert!(shown.contains(variable) && !shown.contains("CANARY"), "{name}: {shown}");
}

/// Set in the child process of [`acp_without_an_agent_is_a_config_error_at_construction`].
#[cfg(feature = "acp")]
const NO_AGENT_CHILD: &str = "PATCHBAY_ACP_NO_AGENT_CHILD";

/// acp needs no key, but it needs an agent: with no preset (`agent`) and no `command`, in the
/// options or the environment, building it is a `Config` error of `acp` naming the option,
/// before anything is started. The registry half runs in a child without `PATCHBAY_ACP_AGENT`
/// and `PATCHBAY_ACP_COMMAND`, so a developer's own settings cannot mask it.
#[cfg(feature = "acp")]
#[test]
fn acp_without_an_agent_is_a_config_error_at_construction() {
    use patchbay::acp::{AGENT_ENV, AcpConfig, AcpProvider, COMMAND_ENV, Error};
    let error = AcpProvider::new(AcpConfig::new()).expect_err("no agent named");
    assert!(matches!(error, Error::Invalid { field: "command", .. }), "{error:?}");
    let error = patchbay::ProviderError::from(error);
    assert_eq!(error.kind(), ErrorKind::Config, "{error}");
    assert!(error.to_string().contains("agent"), "{error}");

    let exe = std::env::current_exe().expect("the test binary");
    let output = std::process::Command::new(&exe)
        .args([
            "--exact",
            "factories::acp_child_builds_without_an_agent",
            "--test-threads=1",
        ])
        .env(NO_AGENT_CHILD, "1")
        .env_remove(AGENT_ENV)
        .env_remove(COMMAND_ENV)
        .output()
        .expect("the child runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The child half of [`acp_without_an_agent_is_a_config_error_at_construction`]; in any other
/// process it has nothing to check.
#[cfg(feature = "acp")]
#[test]
fn acp_child_builds_without_an_agent() {
    if std::env::var_os(NO_AGENT_CHILD).is_none() {
        return;
    }
    for options in [json!({}), Value::Null, json!({ "env": { "K": "v" }, "args": ["--x"] })] {
        let Err(error) = Registry::compiled().build(patchbay::acp::NAME, &options) else {
            panic!("acp built without an agent from {options}");
        };
        assert_eq!(error.kind(), ErrorKind::Config, "{error}");
        assert_eq!(error.facts().provider.as_deref(), Some("acp"), "{error:?}");
        let message = error.to_string();
        assert!(
            message.contains("command") && message.contains("agent"),
            "names the options to set: {message}"
        );
    }
}

/// A configured header HTTP refuses is the same `Error::Header { name }` in every HTTP crate,
/// naming the header and never quoting its value.
#[test]
fn a_header_http_refuses_is_the_same_error_header_in_every_http_crate() {
    let secret = "sk-live-0123456789\nInjected: yes";
    #[allow(unused_mut)]
    let mut checks: Vec<(&str, patchbay::ProviderError)> = Vec::new();
    #[cfg(feature = "anthropic")]
    {
        let options =
            json!({ "api_key": "sk-ant-test", "base_url": "http://127.0.0.1:9", "headers": { "x-extra": secret } });
        let error = patchbay::anthropic::AnthropicConfig::from_options(&options)
            .map_err(patchbay::ProviderError::from)
            .and_then(patchbay::anthropic::AnthropicProvider::new)
            .expect_err("a newline in a header value");
        let source = std::error::Error::source(&error).and_then(|s| s.downcast_ref::<patchbay::anthropic::Error>());
        assert!(
            matches!(source, Some(patchbay::anthropic::Error::Header { name }) if name == "x-extra"),
            "{error:?}"
        );
        checks.push(("anthropic", error));
    }
    #[cfg(feature = "openrouter")]
    {
        let options =
            json!({ "api_key": "sk-or-test", "base_url": "http://127.0.0.1:9", "headers": { "x-extra": secret } });
        let error = patchbay::openrouter::OpenRouterConfig::from_options(&options)
            .map_err(patchbay::ProviderError::from)
            .and_then(patchbay::openrouter::OpenRouterProvider::new)
            .expect_err("a newline in a header value");
        let source = std::error::Error::source(&error).and_then(|s| s.downcast_ref::<patchbay::openrouter::Error>());
        assert!(
            matches!(source, Some(patchbay::openrouter::Error::Header { name }) if name == "x-extra"),
            "{error:?}"
        );
        checks.push(("openrouter", error));
    }
    #[cfg(feature = "gemini")]
    {
        let options =
            json!({ "api_key": "AIza-test", "base_url": "http://127.0.0.1:9", "headers": { "x-extra": secret } });
        let error = patchbay::gemini::GeminiConfig::from_options(&options)
            .map_err(patchbay::ProviderError::from)
            .and_then(patchbay::gemini::GeminiProvider::new)
            .expect_err("a newline in a header value");
        let source = std::error::Error::source(&error).and_then(|s| s.downcast_ref::<patchbay::gemini::Error>());
        assert!(
            matches!(source, Some(patchbay::gemini::Error::Header { name }) if name == "x-extra"),
            "{error:?}"
        );
        checks.push(("gemini", error));
    }
    #[cfg(feature = "openai")]
    {
        let options =
            json!({ "api_key": "sk-test", "base_url": "http://127.0.0.1:9", "headers": { "x-extra": secret } });
        let error = patchbay::openai::OpenAiConfig::from_options(&options)
            .map_err(patchbay::ProviderError::from)
            .and_then(patchbay::openai::OpenAiProvider::new)
            .expect_err("a newline in a header value");
        let source = std::error::Error::source(&error).and_then(|s| s.downcast_ref::<patchbay::openai::Error>());
        assert!(
            matches!(source, Some(patchbay::openai::Error::Header { name }) if name == "x-extra"),
            "{error:?}"
        );
        checks.push(("openai", error));
    }
    for (crate_name, error) in checks {
        assert_eq!(error.kind(), ErrorKind::Config, "{crate_name}");
        let shown = format!("{error} {error:?}");
        assert!(!shown.contains("sk-live"), "{crate_name}: {shown}");
    }
}
