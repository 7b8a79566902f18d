//! The provider's configuration: which agent to start and how, what it may touch, how long to
//! wait. Fields are private: set with the `with_*` methods, read with the getters.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use patchbay_core::kit::{MAX_LINE_BYTES, env_var, find_program};
use serde::Deserialize;

use crate::error::Error;
pub use crate::preset::Preset;
use crate::preset::codex_native;

/// The variable naming the agent program (`command`), read by [`AcpConfig::from_env`].
pub const COMMAND_ENV: &str = "PATCHBAY_ACP_COMMAND";
/// The variable naming the preset (`gemini`, `codex`, `claude`), read by [`AcpConfig::from_env`].
pub const AGENT_ENV: &str = "PATCHBAY_ACP_AGENT";
/// Where the pinned peers are installed (`.ci/peers/acp.sh` puts the agents in
/// `$PATCHBAY_PEERS/acp/node_modules/.bin`); searched after `PATH`.
pub const PEERS_ENV: &str = "PATCHBAY_PEERS";
/// The MCP server name host tools are served under, unless configured.
pub const DEFAULT_HOST_SERVER: &str = "host";

/// What the agent's file-system requests (`fs/read_text_file`, `fs/write_text_file`) may do.
/// Either way a path must lie inside the call's working directory (patchbay-tools'
/// confinement: `..`, absolute paths outside and symlinks out are refused).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileAccess {
    /// Not offered: the agent uses its own tools.
    Off,
    /// Reads only.
    Read,
    /// Reads and writes.
    #[default]
    ReadWrite,
}

/// The answer to a permission request when the call has no approval handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unattended {
    /// Pick the agent's `reject_once` option (or cancel the request when it has none).
    #[default]
    Reject,
    /// Pick the agent's `allow_once` option.
    Allow,
}

/// How to start and drive one kind of ACP agent.
#[derive(Clone)]
pub struct AcpConfig {
    pub(crate) preset: Option<Preset>,
    pub(crate) command: Option<PathBuf>,
    pub(crate) args: Vec<String>,
    pub(crate) env: BTreeMap<String, String>,
    pub(crate) inherit_env: bool,
    pub(crate) isolate_home: bool,
    pub(crate) home_files: BTreeMap<String, String>,
    pub(crate) pass_model: bool,
    pub(crate) file_access: Option<FileAccess>,
    pub(crate) unattended: Unattended,
    pub(crate) host_server_name: String,
    pub(crate) max_line_bytes: usize,
    pub(crate) init_timeout: Duration,
    pub(crate) cancel_grace: Duration,
    pub(crate) stop_grace: Duration,
    pub(crate) keep_alive: Option<Duration>,
    pub(crate) record_dir: Option<PathBuf>,
}

impl fmt::Debug for AcpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AcpConfig")
            .field("preset", &self.preset)
            .field("command", &self.command)
            .field("args", &self.args.len())
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("inherit_env", &self.inherit_env)
            .field("isolate_home", &self.isolate_home)
            .field("home_files", &self.home_files.keys().collect::<Vec<_>>())
            .field("pass_model", &self.pass_model)
            .field("file_access", &self.file_access)
            .field("unattended", &self.unattended)
            .field("host_server_name", &self.host_server_name)
            .field("max_line_bytes", &self.max_line_bytes)
            .field("init_timeout", &self.init_timeout)
            .field("cancel_grace", &self.cancel_grace)
            .field("stop_grace", &self.stop_grace)
            .field("keep_alive", &self.keep_alive)
            .field("record_dir", &self.record_dir)
            .finish()
    }
}

impl Default for AcpConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl AcpConfig {
    /// No agent chosen yet (set a preset or a command); reads no environment variable.
    pub fn new() -> Self {
        Self {
            preset: None,
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            inherit_env: true,
            isolate_home: true,
            home_files: BTreeMap::new(),
            pass_model: true,
            file_access: None,
            unattended: Unattended::default(),
            host_server_name: DEFAULT_HOST_SERVER.into(),
            max_line_bytes: MAX_LINE_BYTES,
            init_timeout: Duration::from_secs(60),
            cancel_grace: Duration::from_secs(2),
            stop_grace: Duration::from_secs(2),
            keep_alive: None,
            record_dir: None,
        }
    }

    /// A preset agent with its defaults.
    pub fn preset(preset: Preset) -> Self {
        Self::new().with_preset(preset)
    }

    /// A custom agent command (program and arguments).
    pub fn command(program: impl Into<PathBuf>, args: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self::new().with_command(program).with_args(args)
    }

    /// [`Self::new`] with `PATCHBAY_ACP_AGENT` ([`AGENT_ENV`]: a preset name),
    /// `PATCHBAY_ACP_COMMAND` ([`COMMAND_ENV`]: the program) and `PATCHBAY_RECORD_DIR`.
    pub fn from_env() -> Result<Self, Error> {
        let read = |name: &str| {
            env_var(name).map_err(|reason| Error::Env {
                name: name.into(),
                reason,
            })
        };
        let mut config = Self::new();
        if let Some(agent) = read(AGENT_ENV)? {
            config.preset = Some(Preset::from_name(&agent).ok_or(Error::Env {
                name: AGENT_ENV.into(),
                reason: "not a preset (gemini, codex, claude)",
            })?);
        }
        if let Some(command) = read(COMMAND_ENV)? {
            config.command = Some(command.into());
        }
        if let Some(dir) = read("PATCHBAY_RECORD_DIR")? {
            config.record_dir = Some(dir.into());
        }
        Ok(config)
    }

    /// Use a preset (its program unless [`Self::with_command`] names another).
    pub fn with_preset(mut self, preset: Preset) -> Self {
        self.preset = Some(preset);
        self
    }

    /// The agent program (a path, or a name searched on `PATH` and in `node_modules/.bin`).
    pub fn with_command(mut self, program: impl Into<PathBuf>) -> Self {
        self.command = Some(program.into());
        self
    }

    /// Arguments after the preset's (values never logged).
    pub fn with_args(mut self, args: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// One environment variable for the agent (value never logged).
    pub fn with_env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Whether the agent inherits this process's environment (default `true`).
    pub fn with_inherit_env(mut self, inherit: bool) -> Self {
        self.inherit_env = inherit;
        self
    }

    /// Whether each agent process gets a temporary home (`HOME`, the XDG folders and the
    /// preset's own config folder), so the machine's settings and logins never leak in
    /// (default `true`). Off, the agent sees the user's own configuration.
    pub fn with_isolated_home(mut self, isolate: bool) -> Self {
        self.isolate_home = isolate;
        self
    }

    /// A file written into the temporary home before the agent starts (a path relative to the
    /// home, such as `.codex/config.toml`; contents never logged).
    pub fn with_home_file(mut self, path: impl Into<String>, contents: impl Into<String>) -> Self {
        self.home_files.insert(path.into(), contents.into());
        self
    }

    /// Whether the call's model is passed to a preset agent (default `true`; an empty model or
    /// `default` is never passed).
    pub fn with_pass_model(mut self, pass: bool) -> Self {
        self.pass_model = pass;
        self
    }

    /// What the agent's file requests may do (default read and write, confined; the Gemini
    /// preset's default is off).
    pub fn with_file_access(mut self, access: FileAccess) -> Self {
        self.file_access = Some(access);
        self
    }

    /// The answer to permission requests when the call has no approval handler.
    pub fn with_unattended(mut self, answer: Unattended) -> Self {
        self.unattended = answer;
        self
    }

    /// The MCP server name host tools are served under (default `host`).
    pub fn with_host_server_name(mut self, name: impl Into<String>) -> Self {
        self.host_server_name = name.into();
        self
    }

    /// The longest line accepted from the agent (default 64 MiB).
    pub fn with_max_line_bytes(mut self, bytes: usize) -> Self {
        self.max_line_bytes = bytes;
        self
    }

    /// How long `initialize` and `session/new` may take (default 60 s).
    pub fn with_init_timeout(mut self, timeout: Duration) -> Self {
        self.init_timeout = timeout;
        self
    }

    /// How long a cancelled turn may take to answer `cancelled` (default 2 s).
    pub fn with_cancel_grace(mut self, grace: Duration) -> Self {
        self.cancel_grace = grace;
        self
    }

    /// Each wait of a stop: stdin EOF, SIGTERM, then SIGKILL (default 2 s).
    pub fn with_stop_grace(mut self, grace: Duration) -> Self {
        self.stop_grace = grace;
        self
    }

    /// Keep a finished agent for the session's next turn this long (default off).
    pub fn with_keep_alive(mut self, idle: Option<Duration>) -> Self {
        self.keep_alive = idle.filter(|idle| !idle.is_zero());
        self
    }

    /// Record each call's ACP traffic into this folder (see the crate docs, "Recording").
    pub fn with_record_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.record_dir = dir;
        self
    }

    /// The preset, if any.
    pub fn preset_kind(&self) -> Option<Preset> {
        self.preset
    }

    /// The configured program, if any (the preset's otherwise).
    pub fn command_path(&self) -> Option<&Path> {
        self.command.as_deref()
    }

    /// The extra arguments.
    pub fn args(&self) -> &[String] {
        &self.args
    }

    /// What the agent's file requests may do: as configured, else the preset's default.
    pub fn file_access(&self) -> FileAccess {
        // The Gemini CLI cannot create a file through them (see [`Preset::Gemini`]).
        let preset_default = match self.preset {
            Some(Preset::Gemini) => FileAccess::Off,
            _ => FileAccess::ReadWrite,
        };
        self.file_access.unwrap_or(preset_default)
    }

    /// The host tools' MCP server name.
    pub fn host_server_name(&self) -> &str {
        &self.host_server_name
    }

    /// The keep-alive, if on.
    pub fn keep_alive(&self) -> Option<Duration> {
        self.keep_alive
    }

    /// Whether homes are isolated.
    pub fn isolated_home(&self) -> bool {
        self.isolate_home
    }

    /// Check what can be checked without starting anything.
    pub(crate) fn check(&self) -> Result<(), Error> {
        let invalid = |field, reason| Err(Error::Invalid { field, reason });
        if self.preset.is_none() && self.command.is_none() {
            return invalid("command", "no agent: set a preset (`agent`) or a command");
        }
        if self.max_line_bytes == 0 {
            return invalid("max_line_bytes", "must be above 0");
        }
        if self.init_timeout.is_zero() {
            return invalid("init_timeout_ms", "must be above 0");
        }
        let name = &self.host_server_name;
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return invalid("host_server_name", "must be ASCII letters, digits, `_` or `-`");
        }
        if self.env.keys().any(|key| key.is_empty() || key.contains(['=', '\0'])) {
            return invalid("env", "a variable name is empty or holds `=` or NUL");
        }
        for path in self.home_files.keys() {
            let relative = Path::new(path);
            let climbs = relative
                .components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)));
            if path.is_empty() || climbs {
                return invalid("home_files", "a path is empty, absolute or climbs out of the home");
            }
        }
        if !self.home_files.is_empty() && !self.isolate_home {
            return invalid("home_files", "needs the temporary home (`isolate_home`)");
        }
        Ok(())
    }

    /// The program to run: the configured command or the preset's, found on `PATH`, in
    /// `./node_modules/.bin` or in `$PATCHBAY_PEERS/acp/node_modules/.bin`.
    pub fn find_program(&self) -> Result<PathBuf, Error> {
        let name: PathBuf = match (&self.command, self.preset) {
            (Some(command), _) => command.clone(),
            (None, Some(preset)) => preset.program().into(),
            (None, None) => {
                return Err(Error::Invalid {
                    field: "command",
                    reason: "no agent: set a preset (`agent`) or a command",
                });
            }
        };
        if name.components().count() > 1 {
            return if name.is_file() {
                Ok(name)
            } else {
                Err(Error::AgentNotFound {
                    program: name.display().to_string(),
                    looked: "the path given".into(),
                })
            };
        }
        let text = name.to_string_lossy().into_owned();
        let mut dirs = vec![PathBuf::from("node_modules/.bin")];
        if let Ok(Some(peers)) = env_var(PEERS_ENV) {
            dirs.push(Path::new(&peers).join("acp/node_modules/.bin"));
        }
        let joined = std::env::join_paths(&dirs).ok();
        let found = find_program(&text, std::env::var_os("PATH").as_deref())
            .or_else(|| find_program(&text, joined.as_deref()))
            .map(|found| std::path::absolute(&found).unwrap_or(found));
        let native = |found: &PathBuf| {
            (self.preset == Some(Preset::Codex))
                .then(|| codex_native(found))
                .flatten()
        };
        found
            .map(|found| native(&found).unwrap_or(found))
            .ok_or_else(|| Error::AgentNotFound {
                program: text,
                looked: format!(
                    "PATH, ./node_modules/.bin, ${PEERS_ENV}/acp/node_modules/.bin; install the pinned agents with .ci/peers/acp.sh"
                ),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_without_an_agent_is_refused() {
        assert!(matches!(
            AcpConfig::new().check(),
            Err(Error::Invalid { field: "command", .. })
        ));
        assert!(AcpConfig::preset(Preset::Claude).check().is_ok());
    }

    #[test]
    fn home_files_stay_inside_the_home() {
        for path in ["../x", "/etc/passwd", "", "a/../../b"] {
            let config = AcpConfig::preset(Preset::Codex).with_home_file(path, "x");
            assert!(
                matches!(
                    config.check(),
                    Err(Error::Invalid {
                        field: "home_files",
                        ..
                    })
                ),
                "{path}"
            );
        }
        assert!(
            AcpConfig::preset(Preset::Codex)
                .with_home_file(".codex/config.toml", "x")
                .check()
                .is_ok()
        );
    }

    #[test]
    fn debug_shows_no_values() {
        let config = AcpConfig::preset(Preset::Gemini)
            .with_env("GEMINI_API_KEY", "sk-secret-1")
            .with_args(["--token=sk-secret-2"])
            .with_home_file(".codex/config.toml", "sk-secret-3");
        let shown = format!("{config:?}");
        assert!(!shown.contains("sk-secret"), "{shown}");
        assert!(shown.contains("GEMINI_API_KEY"), "{shown}");
    }

    #[test]
    fn models_reach_each_preset_its_own_way() {
        assert_eq!(Preset::Gemini.model("m").0, ["--model", "m"]);
        assert_eq!(Preset::Codex.model("gpt \"x\"").0, ["-c", "model=\"gpt \\\"x\\\"\""]);
        assert_eq!(Preset::Claude.model("m").1, [("ANTHROPIC_MODEL".into(), "m".into())]);
    }

    #[test]
    fn file_requests_default_by_preset_and_follow_the_configuration() {
        assert_eq!(AcpConfig::preset(Preset::Gemini).file_access(), FileAccess::Off);
        assert_eq!(AcpConfig::preset(Preset::Claude).file_access(), FileAccess::ReadWrite);
        let config = AcpConfig::preset(Preset::Gemini).with_file_access(FileAccess::Read);
        assert_eq!(config.file_access(), FileAccess::Read);
    }

    #[test]
    fn codex_runs_its_native_adapter_when_npm_installed_it() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let bin = dir.path().join("node_modules/.bin");
        std::fs::create_dir_all(&bin).unwrap_or_else(|e| panic!("{e}"));
        let launcher = bin.join("codex-acp");
        std::fs::write(&launcher, "").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(codex_native(&launcher), None);
        if let Some(platform) = [("linux", "x86_64", "linux-x64")]
            .iter()
            .find(|(os, arch, _)| *os == std::env::consts::OS && *arch == std::env::consts::ARCH)
            .map(|(_, _, platform)| *platform)
        {
            let native = dir.path().join(format!(
                "node_modules/@zed-industries/codex-acp-{platform}/bin/codex-acp"
            ));
            std::fs::create_dir_all(native.parent().unwrap_or(dir.path())).unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(&native, "").unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(codex_native(&launcher), Some(native));
        }
    }
}
