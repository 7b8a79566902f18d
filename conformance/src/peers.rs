//! Tests that need a program this workspace does not build (a Node or Python MCP peer, the
//! Claude Code CLI, an example binary) as libtest-mimic trials with honest skips: when the
//! program is missing the trial shows as *ignored* with the reason, never as passed; in CI
//! ([`is_ci`]) it fails instead, because CI installs every peer.
//!
//! ```no_run
//! use patchbay_conformance::peers::{self, Peer};
//!
//! // tests/peers.rs, a `harness = false` test binary:
//! fn main() {
//!     let node = Peer::installed("mcp-server-everything", "mcp/node_modules/.bin/mcp-server-everything", ".ci/peers/mcp.sh");
//!     let trials = vec![peers::async_trial("lists_tools", &[&node], || async {
//!         // start the peer, talk to it, assert...
//!     })];
//!     peers::run(trials)
//! }
//! ```

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};

use libtest_mimic::{Arguments, Completion, Failed, Trial};

/// Whether this is a CI run: the `CI` variable is `true` or `1`. The one rule every crate
/// uses; in CI a missing peer fails its tests and snapshots are never written.
pub fn is_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| value == "true" || value == "1")
}

/// Where `.ci/run` installs the peers: `$PATCHBAY_PEERS`, else `<workspace>/target/peers`.
pub fn peers_dir() -> PathBuf {
    std::env::var_os("PATCHBAY_PEERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
            crate_dir.parent().unwrap_or(crate_dir).join("target/peers")
        })
}

/// A program some tests need, and how to get it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    name: String,
    path: PathBuf,
    how_to_get: String,
}

impl Peer {
    /// A peer installed under [`peers_dir`] at `relative` (by `installer`, a `.ci/peers` script).
    pub fn installed(name: impl Into<String>, relative: impl AsRef<Path>, installer: &str) -> Self {
        Self {
            name: name.into(),
            path: peers_dir().join(relative),
            how_to_get: format!("run {installer} (or .ci/run)"),
        }
    }

    /// A program at a fixed path, with a hint on how to get it (`build it with ...`).
    pub fn at(name: impl Into<String>, path: impl Into<PathBuf>, how_to_get: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            path: path.into(),
            how_to_get: how_to_get.into(),
        }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where it is (or would be).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether it is there.
    pub fn is_present(&self) -> bool {
        self.path.exists()
    }

    /// Why a test needing it cannot run: `None` when it is there.
    pub fn missing(&self) -> Option<String> {
        (!self.is_present()).then(|| format!("needs {} at {}: {}", self.name, self.path.display(), self.how_to_get))
    }
}

/// The Claude Code CLI, installed by `.ci/peers/claude.sh` under [`peers_dir`]: the agent
/// runtime behind the claude-agent provider, and a real client of the Anthropic mock.
pub fn claude_code_cli() -> Peer {
    Peer::installed("the Claude Code CLI", "node_modules/.bin/claude", ".ci/peers/claude.sh")
}

/// Zed's Claude ACP adapter (`claude-agent-acp`, bundling its own Claude Code), installed by
/// `.ci/peers/acp.sh` under [`peers_dir`]`/acp`: patchbay-acp's `claude` preset.
pub fn acp_claude() -> Peer {
    Peer::installed(
        "the Claude ACP adapter (claude-agent-acp)",
        "acp/node_modules/.bin/claude-agent-acp",
        ".ci/peers/acp.sh",
    )
}

/// The Gemini CLI (`gemini --acp`), installed by `.ci/peers/acp.sh` under [`peers_dir`]`/acp`:
/// patchbay-acp's `gemini` preset.
pub fn acp_gemini() -> Peer {
    Peer::installed("the Gemini CLI", "acp/node_modules/.bin/gemini", ".ci/peers/acp.sh")
}

/// Zed's Codex ACP adapter (`codex-acp`: a Node launcher of the native binary, which the
/// script pins too), installed by `.ci/peers/acp.sh` under [`peers_dir`]`/acp`: patchbay-acp's
/// `codex` preset.
pub fn acp_codex() -> Peer {
    Peer::installed(
        "the Codex ACP adapter (codex-acp)",
        "acp/node_modules/.bin/codex-acp",
        ".ci/peers/acp.sh",
    )
}

/// The environment that keeps the Claude Code CLI offline against a Messages API mock at
/// `base_url`: a dummy key, no nonessential traffic, telemetry, updates or retries, and `home`
/// as its config, home and temp folder (its sessions live there). The same variables as the
/// claude-agent provider's `ClaudeAgentConfig::offline` (its tests check they agree), for tests
/// that start the CLI themselves; add `PATH` when clearing the rest of the environment.
///
/// ```no_run
/// use patchbay_conformance::peers::{claude_code_cli, claude_code_offline_env};
///
/// let home = std::env::temp_dir().join("claude-home");
/// let mut command = std::process::Command::new(claude_code_cli().path());
/// command
///     .args(["-p", "Say hello.", "--output-format", "stream-json", "--verbose"])
///     .env_clear()
///     .env("PATH", std::env::var_os("PATH").unwrap_or_default())
///     .envs(claude_code_offline_env("http://127.0.0.1:8080", &home));
/// ```
pub fn claude_code_offline_env(base_url: &str, home: &Path) -> BTreeMap<String, String> {
    let home = home.display().to_string();
    [
        ("ANTHROPIC_BASE_URL", base_url),
        ("ANTHROPIC_API_KEY", "dummy"),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        ("DISABLE_TELEMETRY", "1"),
        ("DISABLE_AUTOUPDATER", "1"),
        ("DISABLE_ERROR_REPORTING", "1"),
        ("ENABLE_TOOL_SEARCH", "false"),
        ("CLAUDE_CODE_MAX_RETRIES", "0"),
        ("CLAUDE_CONFIG_DIR", &home),
        ("HOME", &home),
        ("TMPDIR", &home),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_owned(), value.to_owned()))
    .collect()
}

/// Whether process `pid` is running: it exists and is not a zombie waiting to be reaped. Reads
/// `/proc/<pid>/stat` (Linux); where that cannot be read the process counts as gone.
///
/// ```
/// # if cfg!(target_os = "linux") {
/// assert!(patchbay_conformance::peers::is_alive(std::process::id()));
/// # }
/// ```
pub fn is_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state is the first field after the parenthesized command name.
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Why a trial needing `needs` cannot run, if one of them is missing.
fn missing(needs: &[&Peer]) -> Option<String> {
    let reasons: Vec<String> = needs.iter().filter_map(|peer| peer.missing()).collect();
    (!reasons.is_empty()).then(|| reasons.join("; "))
}

/// A trial that runs `test` when every peer in `needs` is present. Otherwise it is ignored
/// with the reason (outside CI) or fails with it (in CI). `test` fails by panicking.
pub fn trial<F>(name: impl Into<String>, needs: &[&Peer], test: F) -> Trial
where
    F: FnOnce() + Send + 'static,
{
    let missing = missing(needs);
    Trial::ignorable_test(name, move || match missing {
        Some(reason) if is_ci() => Err(Failed::from(format!("{reason} (CI installs every peer)"))),
        Some(reason) => Ok(Completion::ignored_with(reason)),
        None => {
            test();
            Ok(Completion::Completed)
        }
    })
}

/// Like [`trial`], for an async test body: it runs on its own multi-thread tokio runtime (two
/// workers), which is shut down after it.
pub fn async_trial<F, Fut>(name: impl Into<String>, needs: &[&Peer], test: F) -> Trial
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = ()>,
{
    trial(name, needs, move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        runtime.block_on(test());
        runtime.shutdown_timeout(std::time::Duration::from_secs(5));
    })
}

/// `trials` that need `needs` (the shared scenarios of [`crate::trials`] against a real program,
/// say): unchanged when every peer is present; otherwise the same names as trials that are
/// ignored with the reason (outside CI) or fail with it (in CI).
pub fn requiring(needs: &[&Peer], trials: Vec<Trial>) -> Vec<Trial> {
    if missing(needs).is_none() {
        return trials;
    }
    trials
        .into_iter()
        .map(|original| {
            let ignored = original.has_ignored_flag();
            trial(original.name(), needs, || {}).with_ignored_flag(ignored)
        })
        .collect()
}

/// Run `trials` with the command line's arguments (filters, `--list`...) and exit.
pub fn run(trials: Vec<Trial>) -> ! {
    libtest_mimic::run(&Arguments::from_args(), trials).exit()
}
