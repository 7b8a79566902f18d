//! Configuration: typed, and the same fields as JSON options (registry and per call).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::error::Error;
use crate::lines::DEFAULT_MAX_LINE;

/// The environment variable naming the CLI program.
pub const CLI_ENV: &str = "PATCHBAY_CLAUDE_CLI";
/// The environment variable naming the peers directory (`$PATCHBAY_PEERS/node_modules/.bin`).
pub const PEERS_ENV: &str = "PATCHBAY_PEERS";
/// The name of the in-process MCP server carrying host tools (`mcp__host__<tool>`).
pub const DEFAULT_HOST_SERVER: &str = "host";

/// How the call's host tools reach the CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostTools {
    /// An SDK MCP server answered in-process over the control protocol (`mcp_message`).
    #[default]
    InProcess,
    /// patchbay-mcp's HTTP tool server, the request context registered and its id in headers.
    Http,
}

/// The system prompt the CLI runs with.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SystemPrompt {
    /// `RequestContext.system`, or empty (the Agent SDK's default: `--system-prompt ''`).
    #[default]
    Custom,
    /// The CLI's own Claude Code prompt, with `RequestContext.system` (or `append`) appended.
    Preset {
        /// Text appended to the preset.
        #[serde(default)]
        append: Option<String>,
    },
}

/// Everything the provider is configured with. See the crate docs for the JSON form.
///
/// `Debug` prints environment variable names only and the flags of `extra_args`, never values.
#[derive(Clone)]
#[non_exhaustive]
pub struct ClaudeAgentConfig {
    /// The CLI program; `None` searches (see [`find_cli`]).
    pub cli_path: Option<PathBuf>,
    /// Extra environment for the CLI (values never logged), over the inherited one.
    pub env: BTreeMap<String, String>,
    /// Whether the CLI inherits this process's environment (less `CLAUDECODE`).
    pub inherit_env: bool,
    /// The longest stdout line accepted.
    pub max_line_bytes: usize,
    /// `--permission-mode` (`default`, `acceptEdits`, `plan`, `bypassPermissions`...).
    pub permission_mode: Option<String>,
    /// `--allowedTools` (host tools are added automatically).
    pub allowed_tools: Vec<String>,
    /// `--disallowedTools`.
    pub disallowed_tools: Vec<String>,
    /// `--tools`: the CLI's built-in tool set (`Some(vec![])` turns every built-in off).
    pub tools: Option<Vec<String>>,
    /// Sub-agent definitions (name to `{description, prompt, tools?, model?}`), sent with
    /// `initialize`.
    pub agents: Option<Value>,
    /// The system prompt.
    pub system_prompt: SystemPrompt,
    /// How host tools reach the CLI.
    pub host_tools: HostTools,
    /// The MCP server name host tools appear under.
    pub host_server_name: String,
    /// `--max-turns`.
    pub max_turns: Option<u32>,
    /// Emit a session marker (`Opaque {"type": "session"}`) before `Finish`, so a later call
    /// with the full history and no session can continue it (see the crate docs).
    pub session_markers: bool,
    /// After a finished turn (and for an idle kept-alive CLI): how long to wait for the CLI to
    /// exit after stdin EOF, and again after SIGTERM, before SIGKILL. Default 2 s.
    pub stop_grace: Duration,
    /// Mid-turn (cancelled, its stream dropped, or failed): how long to wait for the CLI to exit
    /// after the `interrupt` request and stdin EOF, and again after SIGTERM, before SIGKILL.
    /// The CLI ignores stdin EOF mid-turn, so this bounds how long it lingers. Default 250 ms.
    pub cancel_grace: Duration,
    /// How long to wait for the answer to `initialize`.
    pub init_timeout: Duration,
    /// Extra arguments appended to the command line.
    pub extra_args: Vec<String>,
    /// Append every stdout line of the CLI to this file (transcripts for replay tests).
    pub record_stdout: Option<PathBuf>,
    /// Keep a finished run's CLI alive this long for the next `Resume` of its session.
    pub keep_alive: Option<Duration>,
}

impl Default for ClaudeAgentConfig {
    fn default() -> Self {
        Self {
            cli_path: None,
            env: BTreeMap::new(),
            inherit_env: true,
            max_line_bytes: DEFAULT_MAX_LINE,
            permission_mode: None,
            allowed_tools: Vec::new(),
            disallowed_tools: Vec::new(),
            tools: None,
            agents: None,
            system_prompt: SystemPrompt::Custom,
            host_tools: HostTools::InProcess,
            host_server_name: DEFAULT_HOST_SERVER.into(),
            max_turns: None,
            session_markers: true,
            stop_grace: Duration::from_secs(2),
            cancel_grace: Duration::from_millis(250),
            init_timeout: Duration::from_secs(60),
            extra_args: Vec::new(),
            record_stdout: None,
            keep_alive: None,
        }
    }
}

/// The JSON form of the options (registry constructor and `provider_options("claude-agent")`).
/// Every field is optional; unknown fields are refused. `Debug` redacts as
/// [`ClaudeAgentConfig`]'s does.
#[derive(Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    /// See [`ClaudeAgentConfig::cli_path`].
    pub cli_path: Option<PathBuf>,
    /// See [`ClaudeAgentConfig::env`] (merged).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// See [`ClaudeAgentConfig::inherit_env`].
    pub inherit_env: Option<bool>,
    /// See [`ClaudeAgentConfig::max_line_bytes`].
    pub max_line_bytes: Option<usize>,
    /// See [`ClaudeAgentConfig::permission_mode`].
    pub permission_mode: Option<String>,
    /// See [`ClaudeAgentConfig::allowed_tools`] (replaces).
    pub allowed_tools: Option<Vec<String>>,
    /// See [`ClaudeAgentConfig::disallowed_tools`] (replaces).
    pub disallowed_tools: Option<Vec<String>>,
    /// See [`ClaudeAgentConfig::tools`].
    pub tools: Option<Vec<String>>,
    /// See [`ClaudeAgentConfig::agents`].
    pub agents: Option<Value>,
    /// See [`ClaudeAgentConfig::system_prompt`].
    pub system_prompt: Option<SystemPrompt>,
    /// See [`ClaudeAgentConfig::host_tools`].
    pub host_tools: Option<HostTools>,
    /// See [`ClaudeAgentConfig::host_server_name`].
    pub host_server_name: Option<String>,
    /// See [`ClaudeAgentConfig::max_turns`].
    pub max_turns: Option<u32>,
    /// See [`ClaudeAgentConfig::session_markers`].
    pub session_markers: Option<bool>,
    /// See [`ClaudeAgentConfig::stop_grace`], in milliseconds.
    pub stop_grace_ms: Option<u64>,
    /// See [`ClaudeAgentConfig::cancel_grace`], in milliseconds.
    pub cancel_grace_ms: Option<u64>,
    /// See [`ClaudeAgentConfig::extra_args`] (appended).
    #[serde(default)]
    pub extra_args: Vec<String>,
    /// See [`ClaudeAgentConfig::keep_alive`], in milliseconds (0 turns it off).
    pub keep_alive_ms: Option<u64>,
}

impl Options {
    /// Parse options; `null` is no options.
    pub fn from_json(value: &Value) -> Result<Self, Error> {
        if value.is_null() {
            return Ok(Self::default());
        }
        Self::deserialize(value).map_err(|e| Error::Options(patchbay_core::kit::redact_serde_message(&e.to_string())))
    }
}

impl ClaudeAgentConfig {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// A configuration from JSON options (see [`Options`]); `null` gives the defaults.
    pub fn from_json(value: &Value) -> Result<Self, Error> {
        let mut config = Self::default();
        config.apply(Options::from_json(value)?);
        Ok(config)
    }

    /// Overlay options on this configuration.
    pub fn apply(&mut self, options: Options) {
        if let Some(path) = options.cli_path {
            self.cli_path = Some(path);
        }
        self.env.extend(options.env);
        set(&mut self.inherit_env, options.inherit_env);
        set(&mut self.max_line_bytes, options.max_line_bytes);
        if options.permission_mode.is_some() {
            self.permission_mode = options.permission_mode;
        }
        set(&mut self.allowed_tools, options.allowed_tools);
        set(&mut self.disallowed_tools, options.disallowed_tools);
        if options.tools.is_some() {
            self.tools = options.tools;
        }
        if options.agents.is_some() {
            self.agents = options.agents;
        }
        set(&mut self.system_prompt, options.system_prompt);
        set(&mut self.host_tools, options.host_tools);
        set(&mut self.host_server_name, options.host_server_name);
        if options.max_turns.is_some() {
            self.max_turns = options.max_turns;
        }
        set(&mut self.session_markers, options.session_markers);
        if let Some(ms) = options.stop_grace_ms {
            self.stop_grace = Duration::from_millis(ms);
        }
        if let Some(ms) = options.cancel_grace_ms {
            self.cancel_grace = Duration::from_millis(ms);
        }
        self.extra_args.extend(options.extra_args);
        if let Some(ms) = options.keep_alive_ms {
            self.keep_alive = (ms > 0).then(|| Duration::from_millis(ms));
        }
    }

    /// The environment that keeps the CLI offline against a Messages API mock at `base_url`
    /// (see PEERS.md): a dummy key, no nonessential traffic, no retries, and `home` as its
    /// config, home and temp directory (sessions live there).
    pub fn offline(mut self, base_url: &str, home: &Path) -> Self {
        let home = home.display().to_string();
        for (key, value) in [
            ("ANTHROPIC_BASE_URL", base_url),
            ("ANTHROPIC_API_KEY", "dummy"),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            ("DISABLE_TELEMETRY", "1"),
            ("DISABLE_AUTOUPDATER", "1"),
            ("DISABLE_ERROR_REPORTING", "1"),
            ("ENABLE_TOOL_SEARCH", "false"),
            ("CLAUDE_CODE_MAX_RETRIES", "0"),
            ("CLAUDE_CONFIG_DIR", home.as_str()),
            ("HOME", home.as_str()),
            ("TMPDIR", home.as_str()),
        ] {
            self.env.insert(key.into(), value.into());
        }
        self.inherit_env = false;
        self
    }

    /// Set the CLI program.
    pub fn with_cli_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.cli_path = Some(path.into());
        self
    }

    /// Add an environment variable for the CLI.
    pub fn with_env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Set the permission mode.
    pub fn with_permission_mode(mut self, mode: impl Into<String>) -> Self {
        self.permission_mode = Some(mode.into());
        self
    }

    /// Set how host tools reach the CLI.
    pub fn with_host_tools(mut self, mode: HostTools) -> Self {
        self.host_tools = mode;
        self
    }

    /// Turn session markers on or off.
    pub fn with_session_markers(mut self, on: bool) -> Self {
        self.session_markers = on;
        self
    }

    /// Keep finished CLIs alive for `idle` so the next `Resume` of their session reuses them.
    pub fn with_keep_alive(mut self, idle: Duration) -> Self {
        self.keep_alive = Some(idle);
        self
    }

    /// Append every stdout line of the CLI to `path`.
    pub fn with_record_stdout(mut self, path: impl Into<PathBuf>) -> Self {
        self.record_stdout = Some(path.into());
        self
    }

    /// Set how long a CLI stopped after a finished turn gets for each step (see
    /// [`ClaudeAgentConfig::stop_grace`]).
    pub fn with_stop_grace(mut self, grace: Duration) -> Self {
        self.stop_grace = grace;
        self
    }

    /// Set how long a CLI stopped mid-turn gets for each step (see
    /// [`ClaudeAgentConfig::cancel_grace`]).
    pub fn with_cancel_grace(mut self, grace: Duration) -> Self {
        self.cancel_grace = grace;
        self
    }

    /// Set the longest stdout line accepted.
    pub fn with_max_line_bytes(mut self, max: usize) -> Self {
        self.max_line_bytes = max;
        self
    }
}

fn set<T>(slot: &mut T, value: Option<T>) {
    if let Some(value) = value {
        *slot = value;
    }
}

/// Find the CLI: the explicit path, then `$PATCHBAY_CLAUDE_CLI`, then `claude` on `PATH`, then
/// `./node_modules/.bin/claude`, then `$PATCHBAY_PEERS/node_modules/.bin/claude`.
pub fn find_cli(explicit: Option<&Path>) -> Result<PathBuf, Error> {
    let mut looked = Vec::new();
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(path) = explicit {
        candidates.push(path.to_path_buf());
    } else {
        if let Some(path) = std::env::var_os(CLI_ENV).filter(|p| !p.is_empty()) {
            candidates.push(PathBuf::from(path));
        }
        if let Some(paths) = std::env::var_os("PATH") {
            candidates.extend(std::env::split_paths(&paths).map(|dir| dir.join("claude")));
        }
        if let Ok(dir) = std::env::current_dir() {
            candidates.push(dir.join("node_modules/.bin/claude"));
        }
        if let Some(peers) = std::env::var_os(PEERS_ENV).filter(|p| !p.is_empty()) {
            candidates.push(PathBuf::from(peers).join("node_modules/.bin/claude"));
        }
    }
    for candidate in candidates {
        if is_executable(&candidate) {
            return Ok(candidate);
        }
        looked.push(candidate.display().to_string());
    }
    Err(Error::CliNotFound {
        looked: if looked.len() > 6 {
            format!("{} and {} more", looked[..6].join(", "), looked.len() - 6)
        } else {
            looked.join(", ")
        },
    })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
