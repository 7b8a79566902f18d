//! The known agents ([`Preset`]): program, mode, how the model and the temporary home reach
//! each, what each gets by default.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// A known agent: its program, arguments and isolation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Preset {
    /// Google's Gemini CLI (`gemini --acp`, with `GEMINI_CLI_NO_RELAUNCH=true` so one process
    /// answers signals); the model by `--model`; file requests off by default (the CLI cannot
    /// create a new file through them: it does not take the client's "not found" as ENOENT).
    Gemini,
    /// OpenAI's Codex through Zed's adapter (`codex-acp`; found through npm's launcher, its
    /// native binary is run directly); the model by `-c model="..."`, its configuration in
    /// `$CODEX_HOME` (the temporary home when isolated).
    Codex,
    /// The Claude Agent SDK through Zed's adapter (`claude-agent-acp`); the model by
    /// `ANTHROPIC_MODEL`, its configuration in `$CLAUDE_CONFIG_DIR`.
    Claude,
}

impl Preset {
    /// Every preset, in the order the docs list them.
    pub const ALL: [Preset; 3] = [Preset::Gemini, Preset::Codex, Preset::Claude];

    /// Its name in options (`gemini`, `codex`, `claude`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Gemini => "gemini",
            Self::Codex => "codex",
            Self::Claude => "claude",
        }
    }

    /// The preset called `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|preset| preset.name() == name)
    }

    /// The program it starts (searched on `PATH`, then in `node_modules/.bin`).
    pub fn program(self) -> &'static str {
        match self {
            Self::Gemini => "gemini",
            Self::Codex => "codex-acp",
            Self::Claude => "claude-agent-acp",
        }
    }

    /// The arguments that put it in ACP mode.
    pub fn args(self) -> &'static [&'static str] {
        match self {
            Self::Gemini => &["--acp"],
            Self::Codex | Self::Claude => &[],
        }
    }

    /// How the call's model reaches the agent: extra arguments and environment.
    pub(crate) fn model(self, model: &str) -> (Vec<String>, Vec<(String, String)>) {
        match self {
            Self::Gemini => (vec!["--model".into(), model.into()], Vec::new()),
            Self::Codex => (vec!["-c".into(), format!("model={}", toml_string(model))], Vec::new()),
            Self::Claude => (Vec::new(), vec![("ANTHROPIC_MODEL".into(), model.into())]),
        }
    }

    /// Variables every run of the preset gets (unless configured otherwise).
    pub(crate) fn env(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Self::Gemini => &[
                ("GEMINI_CLI_NO_RELAUNCH", "true"),
                ("GEMINI_TELEMETRY_ENABLED", "false"),
            ],
            Self::Codex | Self::Claude => &[],
        }
    }

    /// Files the temporary home gets unless `home_files` names them: the Gemini CLI's settings
    /// (API-key auth, no folder trust prompt, no telemetry, no update checks).
    pub(crate) fn home_files(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Self::Gemini => &[(
                ".gemini/settings.json",
                r#"{"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}}, "privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false}, "general": {"disableAutoUpdate": true, "disableUpdateNag": true}}"#,
            )],
            Self::Codex | Self::Claude => &[],
        }
    }

    /// The variables that point the agent's own configuration at the temporary home.
    pub(crate) fn home_env(self, home: &Path) -> Vec<(String, OsString)> {
        match self {
            Self::Gemini => vec![
                ("GEMINI_CLI_HOME".into(), home.as_os_str().to_owned()),
                (
                    "GEMINI_CLI_SYSTEM_SETTINGS_PATH".into(),
                    home.join("system-settings.json").into_os_string(),
                ),
                (
                    "GEMINI_CLI_SYSTEM_DEFAULTS_PATH".into(),
                    home.join("system-defaults.json").into_os_string(),
                ),
            ],
            Self::Codex => vec![("CODEX_HOME".into(), home.join(".codex").into_os_string())],
            Self::Claude => vec![("CLAUDE_CONFIG_DIR".into(), home.join(".claude").into_os_string())],
        }
    }
}

/// A TOML basic string (for `-c key=value` overrides).
fn toml_string(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The native Codex adapter beside npm's `codex-acp` launcher
/// (`node_modules/@zed-industries/codex-acp-<platform>/bin/codex-acp`): the launcher is a Node
/// script that starts it, so a parent-death signal would reach the script alone and orphan the
/// adapter. `None` when it is not there (another install, another platform).
pub(crate) fn codex_native(launcher: &Path) -> Option<PathBuf> {
    let platform = match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => "linux-x64",
        ("linux", "aarch64") => "linux-arm64",
        ("macos", "x86_64") => "darwin-x64",
        ("macos", "aarch64") => "darwin-arm64",
        _ => return None,
    };
    let bin = launcher.parent()?;
    if bin.file_name()? != ".bin" {
        return None;
    }
    let native = bin
        .parent()?
        .join(format!("@zed-industries/codex-acp-{platform}/bin/codex-acp"));
    native.is_file().then_some(native)
}
