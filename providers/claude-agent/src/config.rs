//! Configuration: typed, built in code, from the environment or from JSON options (the keys
//! are under `# Options` in the crate docs; reading them is `options.rs`).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::agents::AgentDefinition;

use crate::error::Error;
use crate::lines::DEFAULT_MAX_LINE;

/// The environment variable naming the CLI program, read by [`ClaudeAgentConfig::from_env`].
pub const CLI_ENV: &str = "PATCHBAY_CLAUDE_CLI";
/// The environment variable naming the peers directory, the last place [`find_cli`](crate::find_cli) looks
/// (`$PATCHBAY_PEERS/node_modules/.bin/claude`).
pub const PEERS_ENV: &str = "PATCHBAY_PEERS";
/// The name of the in-process MCP server carrying host tools (`mcp__host__<tool>`).
pub const DEFAULT_HOST_SERVER: &str = "host";
/// How long an unused spare CLI waits before it is replaced by a fresh one, by default.
pub const DEFAULT_SPARE_MAX_AGE: Duration = Duration::from_secs(600);
/// How long a run paused for approval keeps its CLI waiting for the decision, by default.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(600);

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

/// A settings source of the CLI (`--setting-sources`): where it may read settings, hooks,
/// permission rules, `CLAUDE.md` memory and MCP servers from. None by default, so a host's run
/// does not change with what is on the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SettingSource {
    /// The user's settings (`~/.claude/settings.json`, or under `CLAUDE_CONFIG_DIR`).
    User,
    /// The project's shared settings (`.claude/settings.json`, `CLAUDE.md`) in the working
    /// directory.
    Project,
    /// The project's local settings (`.claude/settings.local.json`).
    Local,
}

impl SettingSource {
    /// The name the CLI takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Project => "project",
            Self::Local => "local",
        }
    }
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
/// The fields are private: set them with the `with_*` methods, read them with the getters of
/// the same name.
#[derive(Clone)]
pub struct ClaudeAgentConfig {
    /// The CLI program; `None` searches (see [`find_cli`](crate::find_cli)).
    pub(crate) cli_path: Option<PathBuf>,
    /// Extra environment for the CLI (values never logged), over the inherited one.
    pub(crate) env: BTreeMap<String, String>,
    /// Whether the CLI inherits this process's environment (less `CLAUDECODE`).
    pub(crate) inherit_env: bool,
    /// The longest stdout line accepted.
    pub(crate) max_line_bytes: usize,
    /// `--permission-mode` (`default`, `acceptEdits`, `plan`, `bypassPermissions`...).
    pub(crate) permission_mode: Option<String>,
    /// `--allowedTools` (host tools are added automatically).
    pub(crate) allowed_tools: Vec<String>,
    /// `--disallowedTools`.
    pub(crate) disallowed_tools: Vec<String>,
    /// `--tools`: the CLI's built-in tool set (`Some(vec![])` turns every built-in off).
    pub(crate) tools: Option<Vec<String>>,
    /// Sub-agent definitions by name, sent with `initialize`.
    pub(crate) agents: BTreeMap<String, AgentDefinition>,
    /// How long a run paused for a person's approval keeps its CLI waiting for the decision.
    pub(crate) approval_timeout: Duration,
    /// The system prompt.
    pub(crate) system_prompt: SystemPrompt,
    /// How host tools reach the CLI.
    pub(crate) host_tools: HostTools,
    /// The MCP server name host tools appear under.
    pub(crate) host_server_name: String,
    /// `--max-turns`.
    pub(crate) max_turns: Option<u32>,
    /// `--setting-sources`: none by default (the Claude Agent SDK's default), so user settings,
    /// hooks, permission rules and a project's `CLAUDE.md` do not reach the run.
    pub(crate) setting_sources: Vec<SettingSource>,
    /// Emit a session marker (`Opaque {"type": "session"}`) before `Finish`, so a later call
    /// with the full history and no session can continue it (see the crate docs).
    pub(crate) session_markers: bool,
    /// After a finished turn (and for an idle kept-alive CLI): how long to wait for the CLI to
    /// exit after stdin EOF, and again after SIGTERM, before SIGKILL. Default 2 s.
    pub(crate) stop_grace: Duration,
    /// Mid-turn (cancelled, its stream dropped, or failed): how long to wait for the CLI to exit
    /// after the `interrupt` request and stdin EOF, and again after SIGTERM, before SIGKILL.
    /// The CLI ignores stdin EOF mid-turn, so this bounds how long it lingers. Default 250 ms.
    pub(crate) cancel_grace: Duration,
    /// How long to wait for the answer to `initialize`.
    pub(crate) init_timeout: Duration,
    /// Extra arguments appended to the command line.
    pub(crate) extra_args: Vec<String>,
    /// Append every stdout line of the CLI to this file (transcripts for replay tests).
    pub(crate) record_stdout: Option<PathBuf>,
    /// Record every call's stdout lines as a fixture in this folder
    /// (`<dir>/claude-agent/recorded/<stem>.jsonl`, a line of `<dir>/MANIFEST.tsv`; see
    /// [`patchbay_http::record`]). Default none; `PATCHBAY_RECORD_DIR` in [`Self::from_env`].
    pub(crate) record_dir: Option<PathBuf>,
    /// Keep a finished run's CLI alive this long for the next `Resume` of its session.
    pub(crate) keep_alive: Option<Duration>,
    /// How many CLIs to keep started ahead of demand for new sessions (see the crate docs,
    /// "Spares"). `0`, the default, starts none.
    pub(crate) spares: usize,
    /// How long an unused spare may wait before it is stopped and replaced by a fresh one
    /// (what the CLI read at its start may change: settings, the date). `None`: no limit.
    pub(crate) spare_max_age: Option<Duration>,
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
            agents: BTreeMap::new(),
            approval_timeout: DEFAULT_APPROVAL_TIMEOUT,
            system_prompt: SystemPrompt::Custom,
            host_tools: HostTools::InProcess,
            host_server_name: DEFAULT_HOST_SERVER.into(),
            max_turns: None,
            setting_sources: Vec::new(),
            session_markers: true,
            stop_grace: Duration::from_secs(2),
            cancel_grace: Duration::from_millis(250),
            init_timeout: Duration::from_secs(60),
            extra_args: Vec::new(),
            record_stdout: None,
            record_dir: None,
            keep_alive: None,
            spares: 0,
            spare_max_age: Some(DEFAULT_SPARE_MAX_AGE),
        }
    }
}

impl ClaudeAgentConfig {
    /// The defaults, without reading the environment (see [`Self::from_env`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// The defaults with what the environment sets: `PATCHBAY_CLAUDE_CLI` ([`CLI_ENV`]) names
    /// the CLI program (`cli_path`; unset or empty: the CLI is searched for at each call, see
    /// [`find_cli`](crate::find_cli)). A value that is not valid Unicode is an [`Error::Env`] (the option of the
    /// same meaning is a JSON string). `PATCHBAY_RECORD_DIR` (unset or empty: off) is
    /// `record_dir`.
    pub fn from_env() -> Result<Self, Error> {
        Self::from_vars(|name| std::env::var_os(name))
    }

    /// [`Self::from_env`] reading variables through `var`.
    fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> Result<Self, Error> {
        let mut config = Self::default();
        if let Some(value) = var(CLI_ENV).filter(|v| !v.is_empty()) {
            let path = value.into_string().map_err(|_| Error::Env {
                name: CLI_ENV.into(),
                reason: "not valid Unicode",
            })?;
            config.cli_path = Some(PathBuf::from(path));
        }
        if let Some(dir) = var(patchbay_http::record::RECORD_DIR_ENV).filter(|v| !v.is_empty()) {
            config.record_dir = Some(PathBuf::from(dir));
        }
        Ok(config)
    }

    /// Check the values the CLI cannot be started with, without looking at the file system.
    pub(crate) fn check(&self) -> Result<(), Error> {
        let invalid = |field, reason| Err(Error::Invalid { field, reason });
        if self.cli_path.as_ref().is_some_and(|p| p.as_os_str().is_empty()) {
            return invalid("cli_path", "is empty");
        }
        if self.max_line_bytes == 0 {
            return invalid("max_line_bytes", "must be above 0");
        }
        if self.init_timeout.is_zero() {
            return invalid("init_timeout", "must be above 0");
        }
        let name = &self.host_server_name;
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            // The CLI names host tools `mcp__<server>__<tool>`, rewriting other characters.
            return invalid("host_server_name", "must be ASCII letters, digits, `_` or `-`");
        }
        let bad_key = |k: &String| k.is_empty() || k.contains(['=', '\0']);
        if self.env.iter().any(|(k, v)| bad_key(k) || v.contains('\0')) {
            return invalid("env", "has an empty name, a name with `=` or a NUL byte");
        }
        if self.extra_args.iter().any(|a| a.contains('\0')) {
            return invalid("extra_args", "has a NUL byte");
        }
        Ok(())
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

    /// Keep `count` CLIs started ahead of demand for the next new sessions of the latest new
    /// session's launch (see the crate docs, "Spares"). Each costs an idle process.
    pub fn with_spares(mut self, count: usize) -> Self {
        self.spares = count;
        self
    }

    /// Replace an unused spare by a fresh one after `age` (`None`: never).
    pub fn with_spare_max_age(mut self, age: Option<Duration>) -> Self {
        self.spare_max_age = age;
        self
    }

    /// Append every stdout line of the CLI to `path`.
    pub fn with_record_stdout(mut self, path: impl Into<PathBuf>) -> Self {
        self.record_stdout = Some(path.into());
        self
    }

    /// Record every call as a fixture in `dir` (see [`ClaudeAgentConfig::record_dir`]).
    pub fn with_record_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.record_dir = Some(dir.into());
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

    /// Set whether the CLI inherits this process's environment.
    pub fn with_inherit_env(mut self, inherit: bool) -> Self {
        self.inherit_env = inherit;
        self
    }

    /// Set `--allowedTools` (host tools are added automatically).
    pub fn with_allowed_tools(mut self, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allowed_tools = tools.into_iter().map(Into::into).collect();
        self
    }

    /// Set `--disallowedTools`.
    pub fn with_disallowed_tools(mut self, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.disallowed_tools = tools.into_iter().map(Into::into).collect();
        self
    }

    /// Set `--tools`, the CLI's built-in tool set (empty turns every built-in off).
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.tools = Some(tools.into_iter().map(Into::into).collect());
        self
    }

    /// Add (or replace) the sub-agent `name`.
    pub fn with_agent(mut self, name: impl Into<String>, agent: AgentDefinition) -> Self {
        self.agents.insert(name.into(), agent);
        self
    }

    /// Keep a run paused for a person's approval waiting this long for the decision (see
    /// [`ClaudeAgentConfig::approval_timeout`]).
    pub fn with_approval_timeout(mut self, timeout: Duration) -> Self {
        self.approval_timeout = timeout;
        self
    }

    /// Set the system prompt.
    pub fn with_system_prompt(mut self, prompt: SystemPrompt) -> Self {
        self.system_prompt = prompt;
        self
    }

    /// Set the MCP server name host tools appear under.
    pub fn with_host_server_name(mut self, name: impl Into<String>) -> Self {
        self.host_server_name = name.into();
        self
    }

    /// Set `--max-turns`.
    pub fn with_max_turns(mut self, turns: u32) -> Self {
        self.max_turns = Some(turns);
        self
    }

    /// Let the CLI read settings from these sources (`--setting-sources`; default none).
    pub fn with_setting_sources(mut self, sources: impl IntoIterator<Item = SettingSource>) -> Self {
        self.setting_sources = sources.into_iter().collect();
        self
    }

    /// Set how long to wait for the answer to `initialize`.
    pub fn with_init_timeout(mut self, timeout: Duration) -> Self {
        self.init_timeout = timeout;
        self
    }

    /// Append arguments to the command line.
    pub fn with_extra_args(mut self, args: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.extra_args.extend(args.into_iter().map(Into::into));
        self
    }
}

/// The getters, one per field (the setters are the `with_*` methods above).
impl ClaudeAgentConfig {
    /// The CLI program, if one is named (`None`: searched for at each call, see [`find_cli`](crate::find_cli)).
    pub fn cli_path(&self) -> Option<&Path> {
        self.cli_path.as_deref()
    }

    /// The extra environment for the CLI.
    pub fn env(&self) -> &BTreeMap<String, String> {
        &self.env
    }

    /// Whether the CLI inherits this process's environment.
    pub fn inherit_env(&self) -> bool {
        self.inherit_env
    }

    /// The longest stdout line accepted.
    pub fn max_line_bytes(&self) -> usize {
        self.max_line_bytes
    }

    /// `--permission-mode`, if set.
    pub fn permission_mode(&self) -> Option<&str> {
        self.permission_mode.as_deref()
    }

    /// `--allowedTools` (host tools are added at each call).
    pub fn allowed_tools(&self) -> &[String] {
        &self.allowed_tools
    }

    /// `--disallowedTools`.
    pub fn disallowed_tools(&self) -> &[String] {
        &self.disallowed_tools
    }

    /// `--tools`, the CLI's built-in tool set, if set.
    pub fn tools(&self) -> Option<&[String]> {
        self.tools.as_deref()
    }

    /// The sub-agent definitions by name.
    pub fn agents(&self) -> &BTreeMap<String, AgentDefinition> {
        &self.agents
    }

    /// How long a run paused for a person's approval ([`Approval::Pause`]) keeps its CLI
    /// waiting (the `can_use_tool` request unanswered) for the call that brings the decision;
    /// then the CLI is stopped and a later resume starts the session again.
    ///
    /// [`Approval::Pause`]: patchbay_core::context::Approval::Pause
    pub fn approval_timeout(&self) -> Duration {
        self.approval_timeout
    }

    /// The system prompt.
    pub fn system_prompt(&self) -> &SystemPrompt {
        &self.system_prompt
    }

    /// How host tools reach the CLI.
    pub fn host_tools(&self) -> HostTools {
        self.host_tools
    }

    /// The MCP server name host tools appear under.
    pub fn host_server_name(&self) -> &str {
        &self.host_server_name
    }

    /// `--max-turns`, if set.
    pub fn max_turns(&self) -> Option<u32> {
        self.max_turns
    }

    /// `--setting-sources`.
    pub fn setting_sources(&self) -> &[SettingSource] {
        &self.setting_sources
    }

    /// Whether session markers are emitted.
    pub fn session_markers(&self) -> bool {
        self.session_markers
    }

    /// How long a CLI stopped after a finished turn gets for each step.
    pub fn stop_grace(&self) -> Duration {
        self.stop_grace
    }

    /// How long a CLI stopped mid-turn gets for each step.
    pub fn cancel_grace(&self) -> Duration {
        self.cancel_grace
    }

    /// How long to wait for the answer to `initialize`.
    pub fn init_timeout(&self) -> Duration {
        self.init_timeout
    }

    /// Extra arguments appended to the command line.
    pub fn extra_args(&self) -> &[String] {
        &self.extra_args
    }

    /// The file every stdout line of the CLI is appended to, if any.
    pub fn record_stdout(&self) -> Option<&Path> {
        self.record_stdout.as_deref()
    }

    /// The folder every call is recorded into as a fixture, if any.
    pub fn record_dir(&self) -> Option<&Path> {
        self.record_dir.as_deref()
    }

    /// How long a finished run's CLI is kept for the next `Resume` of its session, if at all.
    pub fn keep_alive(&self) -> Option<Duration> {
        self.keep_alive
    }

    /// How many CLIs are kept started ahead of demand.
    pub fn spares(&self) -> usize {
        self.spares
    }

    /// How long an unused spare may wait before it is replaced (`None`: no limit).
    pub fn spare_max_age(&self) -> Option<Duration> {
        self.spare_max_age
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::ffi::OsStringExt;

    use super::*;

    fn from(value: Option<OsString>) -> Result<ClaudeAgentConfig, Error> {
        ClaudeAgentConfig::from_vars(|name| if name == CLI_ENV { value.clone() } else { None })
    }

    #[test]
    fn the_environment_names_the_cli() {
        let config = from(Some("/opt/claude".into())).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(config.cli_path, Some(PathBuf::from("/opt/claude")));
        for unset in [None, Some(OsString::new())] {
            let config = from(unset).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(config.cli_path, None, "unset or empty: searched at call time");
        }
    }

    #[test]
    fn a_variable_that_is_not_unicode_is_an_error_naming_it() {
        let error = from(Some(OsString::from_vec(vec![b'/', 0xff]))).err();
        assert!(
            matches!(error, Some(Error::Env { ref name, .. }) if name == CLI_ENV),
            "{error:?}"
        );
    }

    #[test]
    fn values_the_cli_cannot_start_with_are_refused_by_field() {
        let field = |config: ClaudeAgentConfig| match config.check() {
            Err(Error::Invalid { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert!(ClaudeAgentConfig::new().check().is_ok());
        assert_eq!(field(ClaudeAgentConfig::new().with_max_line_bytes(0)), "max_line_bytes");
        assert_eq!(
            field(ClaudeAgentConfig::new().with_init_timeout(Duration::ZERO)),
            "init_timeout"
        );
        assert_eq!(
            field(ClaudeAgentConfig::new().with_host_server_name("my tools")),
            "host_server_name"
        );
        assert_eq!(field(ClaudeAgentConfig::new().with_env("A=B", "1")), "env");
        assert_eq!(field(ClaudeAgentConfig::new().with_cli_path("")), "cli_path");
    }
}
