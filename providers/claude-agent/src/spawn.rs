//! Starting a CLI: a launch's files written (in a [`RunDir`]), the command built (under a
//! parent-death signal, with the environment the plan allows) and the process spawned;
//! [`ColdStart`] keeps a call's own launch for when a spare it took dies before its first line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use patchbay_core::kit::ParentDeathSignal;
use tokio::process::Command;

use crate::config::ClaudeAgentConfig;
use crate::error::Error;
use crate::launch::{LaunchPlan, PlanFile};
use crate::process::{CliProcess, Grace};

/// A call's run directory, where its launch's files go: a fresh path under the temp dir,
/// created (owner only) only when the call starts a CLI, so a turn on a kept-alive CLI makes
/// and keeps none; removed with its contents when dropped, if it was created.
#[derive(Debug)]
pub(crate) struct RunDir {
    path: PathBuf,
    created: bool,
}

impl RunDir {
    /// A new name, nothing created yet.
    pub(crate) fn new() -> Self {
        let name = format!("patchbay-claude-{}", uuid::Uuid::new_v4().simple());
        Self {
            path: std::env::temp_dir().join(name),
            created: false,
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Create the directory; a path that exists already is an error, never reused.
    pub(crate) fn create(&mut self) -> Result<(), Error> {
        use std::os::unix::fs::DirBuilderExt;
        if self.created {
            return Ok(());
        }
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&self.path)
            .map_err(|source| Error::Io {
                what: "creating a temp dir",
                source,
            })?;
        self.created = true;
        Ok(())
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        if self.created {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// What a CLI is started with (a plan's, or a spare template's with its own files).
pub(crate) struct Launch<'a> {
    pub(crate) args: &'a [String],
    pub(crate) env: &'a BTreeMap<String, String>,
    pub(crate) inherit_env: bool,
    pub(crate) cwd: Option<&'a Path>,
    pub(crate) files: &'a [PlanFile],
}

/// Write the plan's files and start the CLI.
pub(crate) fn spawn(program: &Path, plan: &LaunchPlan, config: &ClaudeAgentConfig) -> Result<CliProcess, Error> {
    ColdStart::new(program, plan, config).spawn()
}

/// A call's own launch, owned: how a call without a reusable CLI starts one, and what a run
/// that took a spare keeps to start the call's own CLI instead, once, if the spare ends before
/// its first line (it died after the check at hand-out). No `Debug`: `env` holds keys, the
/// files may hold bearer headers.
pub(crate) struct ColdStart {
    program: PathBuf,
    args: Vec<String>,
    env: BTreeMap<String, String>,
    inherit_env: bool,
    cwd: Option<PathBuf>,
    files: Vec<PlanFile>,
    grace: Grace,
    max_line: usize,
}

impl ColdStart {
    pub(crate) fn new(program: &Path, plan: &LaunchPlan, config: &ClaudeAgentConfig) -> Self {
        Self {
            program: program.to_path_buf(),
            args: plan.args.clone(),
            env: plan.env.clone(),
            inherit_env: plan.inherit_env,
            cwd: plan.cwd.clone(),
            files: plan.files.clone(),
            grace: Grace {
                finished: config.stop_grace,
                cancel: config.cancel_grace,
            },
            max_line: config.max_line_bytes,
        }
    }

    /// Write the call's files and start its CLI.
    pub(crate) fn spawn(self) -> Result<CliProcess, Error> {
        let launch = Launch {
            args: &self.args,
            env: &self.env,
            inherit_env: self.inherit_env,
            cwd: self.cwd.as_deref(),
            files: &self.files,
        };
        spawn_launch(&self.program, &launch, self.grace, self.max_line)
    }
}

/// Write the launch's files and start the CLI.
pub(crate) fn spawn_launch(
    program: &Path,
    launch: &Launch<'_>,
    grace: Grace,
    max_line: usize,
) -> Result<CliProcess, Error> {
    for file in launch.files {
        std::fs::write(&file.path, &file.text).map_err(|source| Error::Io {
            what: file.what,
            source,
        })?;
    }
    // Under `setpriv --pdeathsig=KILL` when it is on PATH (see `ParentDeathSignal`): the CLI
    // dies with the thread that spawned it, a runtime worker (the spawn runs where the call
    // is polled, never on the blocking pool). The program is made absolute first: setpriv
    // execs it after `current_dir`.
    let program = std::path::absolute(program).unwrap_or_else(|_| program.to_path_buf());
    let (wrapper, leading) = ParentDeathSignal::detect().command_line(program.as_os_str());
    let mut command = Command::new(wrapper);
    command.args(leading).args(launch.args);
    if !launch.inherit_env {
        command.env_clear();
        for key in ["PATH", "HOME", "TMPDIR", "LANG"] {
            if let Some(value) = std::env::var_os(key) {
                command.env(key, value);
            }
        }
    }
    command.env_remove("CLAUDECODE");
    for (key, value) in launch.env {
        if key != "CLAUDECODE" {
            command.env(key, value);
        }
    }
    if let Some(dir) = launch.cwd {
        command.current_dir(dir);
    }
    CliProcess::spawn(command, &program.display().to_string(), max_line, grace)
}

#[cfg(test)]
mod tests {
    use super::RunDir;

    #[test]
    fn a_run_dir_exists_only_once_created_and_goes_with_its_files() {
        let unused = RunDir::new();
        let path = unused.path().to_path_buf();
        drop(unused);
        assert!(!path.exists(), "an unused run dir is never made");

        let mut dir = RunDir::new();
        assert!(!dir.path().exists());
        dir.create().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("system-prompt.txt"), "x").unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().to_path_buf();
        drop(dir);
        assert!(!path.exists(), "a created run dir goes with its files");
    }

    #[test]
    fn a_run_dir_never_takes_a_path_that_exists() {
        let mut dir = RunDir::new();
        std::fs::create_dir(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert!(dir.create().is_err());
        let path = dir.path().to_path_buf();
        drop(dir);
        assert!(path.exists(), "a dir it did not create is left alone");
        let _ = std::fs::remove_dir(path);
    }
}
