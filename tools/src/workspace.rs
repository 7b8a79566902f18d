//! The workspace: the root every tool is confined to, the limits, and whether `bash` may run.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Limits every tool of a [`Workspace`] keeps to.
///
/// `#[non_exhaustive]`: start from [`Limits::default`] and set the fields you want.
///
/// ```
/// let mut limits = patchbay_tools::Limits::default();
/// limits.max_output_chars = 10_000;
/// assert_eq!(limits.max_results, 1_000);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// The most characters of output a tool returns; the rest is cut with a marker saying
    /// what was cut (default 25,000).
    pub max_output_chars: usize,
    /// The largest file `read` and `edit` load and `write` writes, in bytes (default 10 MiB).
    pub max_file_bytes: u64,
    /// Lines `read` returns when no `limit` is given (default 2,000).
    pub max_lines: usize,
    /// Characters kept of one line in `read` and `grep` output (default 2,000).
    pub max_line_chars: usize,
    /// Entries of a directory listing, `glob` paths and `grep` matches returned (default 1,000).
    pub max_results: usize,
    /// `bash` timeout when the call gives none (default 120 s).
    pub bash_timeout: Duration,
    /// The longest timeout a `bash` call may ask for (default 600 s).
    pub bash_max_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_output_chars: 25_000,
            max_file_bytes: 10 * 1024 * 1024,
            max_lines: 2_000,
            max_line_chars: 2_000,
            max_results: 1_000,
            bash_timeout: Duration::from_secs(120),
            bash_max_timeout: Duration::from_secs(600),
        }
    }
}

/// Where the coding tools work and what they may do.
///
/// Every path a tool gets is resolved inside the root: the request's working directory
/// (`ToolContext::working_dir`, set from `RequestContext::working_dir` by the agent loop) when
/// the host set one, else [`Workspace::root`]; a relative root is taken from the process's
/// current directory. `bash` is off unless [`Workspace::with_bash`] turns it on.
///
/// ```
/// use patchbay_tools::Workspace;
/// let workspace = Workspace::new("/srv/project").with_bash(true).with_env("CI", "1");
/// assert!(workspace.bash_enabled());
/// assert_eq!(workspace.root(), std::path::Path::new("/srv/project"));
/// ```
#[derive(Clone)]
pub struct Workspace {
    root: PathBuf,
    limits: Limits,
    bash: bool,
    env: BTreeMap<String, String>,
    inherit_env: bool,
}

/// Variables a `bash` command keeps when the workspace does not inherit the host environment.
pub(crate) const BASIC_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "TMPDIR", "TERM",
];

impl Workspace {
    /// A workspace rooted at `root`, with default limits and `bash` off.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            limits: Limits::default(),
            bash: false,
            env: BTreeMap::new(),
            inherit_env: true,
        }
    }

    /// A workspace rooted at the process's current directory.
    pub fn current_dir() -> std::io::Result<Self> {
        Ok(Self::new(std::env::current_dir()?))
    }

    /// Allow (or forbid) the `bash` tool. Off by default: a shell is not confined to the root.
    pub fn with_bash(mut self, enabled: bool) -> Self {
        self.bash = enabled;
        self
    }

    /// Set the limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Set the output limit in characters (default 25,000).
    pub fn with_output_limit(mut self, chars: usize) -> Self {
        self.limits.max_output_chars = chars;
        self
    }

    /// Add an environment variable for `bash` commands (values are never logged).
    pub fn with_env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Whether `bash` commands inherit the host's environment (default true). With `false`
    /// they get only `PATH`, `HOME`, `USER`, `LOGNAME`, `LANG`, `LC_ALL`, `TZ`, `TMPDIR`, `TERM`
    /// and the variables set with [`Workspace::with_env`], so host secrets such as API keys do
    /// not reach the model's commands.
    pub fn with_inherited_env(mut self, inherit: bool) -> Self {
        self.inherit_env = inherit;
        self
    }

    /// Whether `bash` commands inherit the host's environment.
    pub fn inherits_env(&self) -> bool {
        self.inherit_env
    }

    /// The configured root (used when the request gives no working directory).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Whether `bash` may run.
    pub fn bash_enabled(&self) -> bool {
        self.bash
    }

    /// Extra environment for `bash` commands.
    pub fn env(&self) -> &BTreeMap<String, String> {
        &self.env
    }
}

impl fmt::Debug for Workspace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Workspace")
            .field("root", &self.root)
            .field("limits", &self.limits)
            .field("bash", &self.bash)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("inherit_env", &self.inherit_env)
            .finish()
    }
}
