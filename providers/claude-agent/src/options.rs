//! The JSON options (registry and per call `provider_options("claude-agent")`), read by core's
//! `kit::read_options` into one private struct and laid over a [`ClaudeAgentConfig`]. The keys
//! are documented under `# Options` in the crate docs.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use patchbay_core::ProviderError;
use patchbay_core::kit::{OptionsError, read_options};
use serde::Deserialize;
use serde_json::Value;

use crate::NAME;
use crate::agents::AgentDefinition;
use crate::config::{ClaudeAgentConfig, HostTools, SettingSource, SystemPrompt};
use crate::error::Error;

/// Every key is optional; an unknown key is refused. No `Debug`: `env` and `extra_args` may
/// hold keys, and nothing needs to print this.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    cli_path: Option<PathBuf>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    inherit_env: Option<bool>,
    max_line_bytes: Option<usize>,
    permission_mode: Option<String>,
    allowed_tools: Option<Vec<String>>,
    disallowed_tools: Option<Vec<String>>,
    tools: Option<Vec<String>>,
    agents: Option<BTreeMap<String, AgentDefinition>>,
    approval_timeout_ms: Option<u64>,
    system_prompt: Option<SystemPrompt>,
    host_tools: Option<HostTools>,
    host_server_name: Option<String>,
    max_turns: Option<u32>,
    setting_sources: Option<Vec<SettingSource>>,
    session_markers: Option<bool>,
    stop_grace_ms: Option<u64>,
    cancel_grace_ms: Option<u64>,
    init_timeout_ms: Option<u64>,
    #[serde(default)]
    extra_args: Vec<String>,
    keep_alive_ms: Option<u64>,
    spares: Option<usize>,
    spare_max_age_ms: Option<u64>,
    record_dir: Option<PathBuf>,
}

impl ClaudeAgentConfig {
    /// [`Self::from_env`] with JSON options on top (the keys are under `# Options` in the crate
    /// docs; `null` or `{}`: the environment alone). An unknown key or a value of the wrong type
    /// is an [`Error::Options`] naming the key and quoting no value.
    pub fn from_options(options: &Value) -> Result<Self, Error> {
        overlay(Self::from_env()?, options)
    }

    /// This configuration with a call's `provider_options("claude-agent")` on top. Options that
    /// cannot be read, or that leave a value the CLI cannot start with, are the request's fault:
    /// an `InvalidRequest` naming the key, quoting no value (as in every provider crate), never
    /// the `Config` error the same options give [`Self::from_options`].
    pub(crate) fn with_call_options(&self, options: Option<&Value>) -> Result<Self, ProviderError> {
        let Some(options) = options else {
            return Ok(self.clone());
        };
        let config = apply(self.clone(), parse(options).map_err(|e| e.into_call_error(NAME))?);
        match config.check() {
            Err(Error::Invalid { field, reason }) => Err(OptionsError {
                key: Some(field.into()),
                message: reason.into(),
            }
            .into_call_error(NAME)),
            _ => Ok(config),
        }
    }
}

/// `config` with `options` on top (`null` and `{}` change nothing).
pub(crate) fn overlay(config: ClaudeAgentConfig, options: &Value) -> Result<ClaudeAgentConfig, Error> {
    let options = parse(options).map_err(|source| Error::Options { source })?;
    Ok(apply(config, options))
}

fn parse(value: &Value) -> Result<Options, OptionsError> {
    read_options(value)
}

fn apply(mut config: ClaudeAgentConfig, options: Options) -> ClaudeAgentConfig {
    let ms = Duration::from_millis;
    if options.cli_path.is_some() {
        config.cli_path = options.cli_path;
    }
    config.env.extend(options.env);
    set(&mut config.inherit_env, options.inherit_env);
    set(&mut config.max_line_bytes, options.max_line_bytes);
    if options.permission_mode.is_some() {
        config.permission_mode = options.permission_mode;
    }
    set(&mut config.allowed_tools, options.allowed_tools);
    set(&mut config.disallowed_tools, options.disallowed_tools);
    if options.tools.is_some() {
        config.tools = options.tools;
    }
    set(&mut config.agents, options.agents);
    set(&mut config.approval_timeout, options.approval_timeout_ms.map(ms));
    set(&mut config.system_prompt, options.system_prompt);
    set(&mut config.host_tools, options.host_tools);
    set(&mut config.host_server_name, options.host_server_name);
    if options.max_turns.is_some() {
        config.max_turns = options.max_turns;
    }
    set(&mut config.setting_sources, options.setting_sources);
    set(&mut config.session_markers, options.session_markers);
    set(&mut config.stop_grace, options.stop_grace_ms.map(ms));
    set(&mut config.cancel_grace, options.cancel_grace_ms.map(ms));
    set(&mut config.init_timeout, options.init_timeout_ms.map(ms));
    config.extra_args.extend(options.extra_args);
    if let Some(idle) = options.keep_alive_ms {
        config.keep_alive = (idle > 0).then(|| ms(idle));
    }
    set(&mut config.spares, options.spares);
    if let Some(age) = options.spare_max_age_ms {
        config.spare_max_age = (age > 0).then(|| ms(age));
    }
    if let Some(dir) = options.record_dir {
        // An empty path turns off what `PATCHBAY_RECORD_DIR` turned on.
        config.record_dir = Some(dir).filter(|dir| !dir.as_os_str().is_empty());
    }
    config
}

fn set<T>(slot: &mut T, value: Option<T>) {
    if let Some(value) = value {
        *slot = value;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn refused(options: Value) -> (Option<String>, String) {
        match overlay(ClaudeAgentConfig::new(), &options) {
            Err(Error::Options { source }) => (source.key, source.message),
            Err(other) => panic!("{options}: another error: {other}"),
            Ok(_) => panic!("{options} was accepted"),
        }
    }

    #[test]
    fn an_unknown_key_is_refused_by_name() {
        let (key, message) = refused(json!({ "permision_mode": "plan" }));
        assert_eq!(key.as_deref(), Some("permision_mode"));
        assert!(message.contains("unknown field"), "{message}");
    }

    #[test]
    fn a_wrong_type_names_the_key_and_quotes_no_value() {
        let (key, message) = refused(json!({ "max_turns": 3, "stop_grace_ms": "sk-secret" }));
        assert_eq!(key.as_deref(), Some("stop_grace_ms"));
        assert!(!message.contains("sk-secret"), "{message}");
        let (key, message) = refused(json!({ "host_tools": "sk-secret" }));
        assert_eq!(key.as_deref(), Some("host_tools"));
        assert!(!message.contains("sk-secret"), "{message}");
        let error = overlay(ClaudeAgentConfig::new(), &json!({ "host_tools": "sk-secret" })).err();
        let shown = error.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            shown.starts_with("invalid claude-agent options: option `host_tools`: "),
            "{shown}"
        );
        assert!(!shown.contains("sk-secret"), "{shown}");
    }

    #[test]
    fn options_that_are_not_an_object_are_refused() {
        let (key, _) = refused(json!(["cli_path"]));
        assert_eq!(key, None);
    }

    #[test]
    fn null_and_empty_change_nothing() {
        for options in [Value::Null, json!({})] {
            let config = overlay(ClaudeAgentConfig::new(), &options).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(format!("{config:?}"), format!("{:?}", ClaudeAgentConfig::new()));
        }
    }

    #[test]
    fn durations_are_milliseconds_and_zero_turns_keep_alive_off() {
        let options =
            json!({ "stop_grace_ms": 500, "cancel_grace_ms": 100, "init_timeout_ms": 9000, "keep_alive_ms": 0 });
        let config = ClaudeAgentConfig::new().with_keep_alive(Duration::from_secs(1));
        let config = overlay(config, &options).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(config.stop_grace, Duration::from_millis(500));
        assert_eq!(config.cancel_grace, Duration::from_millis(100));
        assert_eq!(config.init_timeout, Duration::from_secs(9));
        assert_eq!(config.keep_alive, None);
    }

    #[test]
    fn spares_are_a_count_and_zero_turns_their_age_limit_off() {
        let config = overlay(ClaudeAgentConfig::new(), &json!({ "spares": 2, "spare_max_age_ms": 0 }))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((config.spares, config.spare_max_age), (2, None));
        let config =
            overlay(ClaudeAgentConfig::new(), &json!({ "spare_max_age_ms": 1500 })).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (config.spares, config.spare_max_age),
            (0, Some(Duration::from_millis(1500)))
        );
        let (key, _) = refused(json!({ "spares": -1 }));
        assert_eq!(key.as_deref(), Some("spares"));
    }

    #[test]
    fn agents_are_typed_and_the_approval_timeout_is_milliseconds() {
        let options = json!({
            "agents": { "reviewer": { "description": "Reviews.", "prompt": "Review.", "model": "haiku" } },
            "approval_timeout_ms": 1500,
        });
        let config = overlay(ClaudeAgentConfig::new(), &options).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            config.agents.get("reviewer"),
            Some(&AgentDefinition::new("Reviews.", "Review.").with_model("haiku"))
        );
        assert_eq!(config.approval_timeout, Duration::from_millis(1500));
        assert_eq!(ClaudeAgentConfig::new().approval_timeout, Duration::from_secs(600));
        let (key, _) = refused(json!({ "agents": { "reviewer": { "description": "d", "promt": "p" } } }));
        assert_eq!(key.as_deref(), Some("agents"));
    }

    #[test]
    fn env_and_extra_args_add_and_tool_lists_replace() {
        let config = ClaudeAgentConfig::new()
            .with_env("A", "1")
            .with_extra_args(["--x"])
            .with_allowed_tools(["Read"]);
        let options = json!({ "env": { "B": "2" }, "extra_args": ["--y"], "allowed_tools": ["Bash"] });
        let config = overlay(config, &options).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(config.env.keys().collect::<Vec<_>>(), ["A", "B"]);
        assert_eq!(config.extra_args, ["--x", "--y"]);
        assert_eq!(config.allowed_tools, ["Bash"]);
    }
}
