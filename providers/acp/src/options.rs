//! The JSON options (registry and per call `provider_options("acp")`), read by core's
//! `kit::read_options` into one private struct and laid over an [`AcpConfig`]. The keys are
//! documented under `# Options` in the crate docs.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use patchbay_core::ProviderError;
use patchbay_core::kit::{OptionsError, read_options};
use serde::Deserialize;
use serde_json::Value;

use crate::NAME;
use crate::config::{AcpConfig, FileAccess, Preset, Unattended};
use crate::error::Error;

/// Every key is optional; an unknown key is refused. No `Debug`: `env`, `args` and
/// `home_files` may hold keys.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    agent: Option<Preset>,
    command: Option<PathBuf>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    inherit_env: Option<bool>,
    isolate_home: Option<bool>,
    #[serde(default)]
    home_files: BTreeMap<String, String>,
    pass_model: Option<bool>,
    file_access: Option<FileAccess>,
    unattended: Option<Unattended>,
    host_server_name: Option<String>,
    max_line_bytes: Option<usize>,
    init_timeout_ms: Option<u64>,
    cancel_grace_ms: Option<u64>,
    stop_grace_ms: Option<u64>,
    keep_alive_ms: Option<u64>,
    record_dir: Option<PathBuf>,
}

impl AcpConfig {
    /// [`Self::from_env`] with JSON options on top (`null` or `{}`: the environment alone). An
    /// unknown key or a value of the wrong type is an [`Error::Options`] naming the key and
    /// quoting no value.
    pub fn from_options(options: &Value) -> Result<Self, Error> {
        let options = read_options(options).map_err(|source| Error::Options { source })?;
        Ok(apply(Self::from_env()?, options))
    }

    /// This configuration with a call's `provider_options("acp")` on top: options that cannot be
    /// read, or that leave a value the agent cannot start with, are an `InvalidRequest` naming
    /// the key, quoting no value.
    pub(crate) fn with_call_options(&self, options: Option<&Value>) -> Result<Self, ProviderError> {
        let Some(options) = options else {
            return Ok(self.clone());
        };
        let options = read_options(options).map_err(|e: OptionsError| e.into_call_error(NAME))?;
        let config = apply(self.clone(), options);
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

fn apply(mut config: AcpConfig, options: Options) -> AcpConfig {
    let ms = Duration::from_millis;
    if options.agent.is_some() {
        config.preset = options.agent;
    }
    if options.command.is_some() {
        config.command = options.command;
    }
    config.args.extend(options.args);
    config.env.extend(options.env);
    config.home_files.extend(options.home_files);
    set(&mut config.inherit_env, options.inherit_env);
    set(&mut config.isolate_home, options.isolate_home);
    set(&mut config.pass_model, options.pass_model);
    if options.file_access.is_some() {
        config.file_access = options.file_access;
    }
    set(&mut config.unattended, options.unattended);
    set(&mut config.host_server_name, options.host_server_name);
    set(&mut config.max_line_bytes, options.max_line_bytes);
    set(&mut config.init_timeout, options.init_timeout_ms.map(ms));
    set(&mut config.cancel_grace, options.cancel_grace_ms.map(ms));
    set(&mut config.stop_grace, options.stop_grace_ms.map(ms));
    if let Some(idle) = options.keep_alive_ms {
        config.keep_alive = (idle > 0).then(|| ms(idle));
    }
    if let Some(dir) = options.record_dir {
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
        match read_options::<Options>(&options) {
            Err(source) => (source.key, source.message),
            Ok(_) => panic!("{options} was accepted"),
        }
    }

    #[test]
    fn an_unknown_key_is_refused_by_name_and_values_are_not_quoted() {
        let (key, message) = refused(json!({ "agnet": "gemini" }));
        assert_eq!(key.as_deref(), Some("agnet"));
        assert!(message.contains("unknown field"), "{message}");
        let (key, message) = refused(json!({ "agent": "sk-secret" }));
        assert_eq!(key.as_deref(), Some("agent"));
        assert!(!message.contains("sk-secret"), "{message}");
    }

    #[test]
    fn options_lay_over_the_config() {
        let options = json!({
            "agent": "codex", "args": ["--x"], "env": { "K": "v" }, "file_access": "read",
            "unattended": "allow", "keep_alive_ms": 0, "cancel_grace_ms": 100,
            "home_files": { ".codex/config.toml": "model = 'm'" },
        });
        let config = apply(
            AcpConfig::new().with_keep_alive(Some(Duration::from_secs(1))),
            read_options(&options).unwrap_or_else(|e| panic!("{e}")),
        );
        assert_eq!(config.preset, Some(Preset::Codex));
        assert_eq!(config.args, ["--x"]);
        assert_eq!(config.file_access(), FileAccess::Read);
        assert_eq!(config.unattended, Unattended::Allow);
        assert_eq!(config.keep_alive, None);
        assert_eq!(config.cancel_grace, Duration::from_millis(100));
        assert!(config.home_files.contains_key(".codex/config.toml"));
    }

    #[test]
    fn a_call_option_that_breaks_the_config_is_an_invalid_request() {
        let config = AcpConfig::preset(Preset::Claude);
        let error = config
            .with_call_options(Some(&json!({ "host_server_name": "bad name" })))
            .err()
            .unwrap_or_else(|| panic!("accepted"));
        assert_eq!(error.kind(), patchbay_core::ErrorKind::InvalidRequest);
        assert!(error.to_string().contains("host_server_name"), "{error}");
    }
}
