//! Child processes that die with the thread that started them (see [`ParentDeathSignal`]).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// How a child is started so the kernel sends it `SIGKILL` when the thread that spawned it
/// ends: through `setpriv --pdeathsig=KILL --` when `setpriv` was found, else directly.
///
/// The kernel's parent-death signal (`PR_SET_PDEATHSIG`, Linux) is set by the child itself,
/// between `fork` and `exec`; the workspace forbids `unsafe` and so `pre_exec`, so the child
/// is started as util-linux `setpriv --pdeathsig=KILL -- PROGRAM ARGS...` instead: `setpriv`
/// sets the signal and then execs the program, which keeps setpriv's process id, process group
/// and parent. Core spawns nothing itself: this only rewrites the program line that a crate
/// which spawns (the `bash` tool, the claude-agent CLI) then runs.
///
/// What a caller must know:
/// - **The signal follows the spawning thread, not the process**: the kernel sends it when
///   the thread that forked the child ends. `tokio::process::Command::spawn` forks on the
///   thread that polls it: a runtime worker thread (alive until the runtime shuts down) or the
///   thread in `block_on`. Never spawn from a `spawn_blocking` closure (the blocking pool ends
///   idle threads after a few seconds, and the child with them), nor after
///   `tokio::task::block_in_place` in the same poll (that thread then joins the blocking pool).
/// - **Only the direct child gets it**: the signal is not inherited across `fork`, so what the
///   child starts (a shell's `sleep`, a CLI's tools) is orphaned, not killed, when the host
///   dies. A host that must reap those too tags them (an environment variable) and sweeps them
///   at its next start, as the orchestrator does.
/// - **Fallback**: without `setpriv` on `PATH` (not Linux, or no util-linux) the program is
///   started directly, without the signal; nothing else changes. `setpriv` 2.33 or later is
///   needed for `--pdeathsig` (an older one exits with its usage message instead of running
///   the program).
/// - **A narrow window**: a parent that dies between the fork and setpriv's `prctl` leaves
///   the child without the signal.
/// - **Errors move**: a program that cannot be executed is reported by `setpriv` (exit status
///   126 or 127, its message on stderr) rather than by the spawn, so resolve the program first
///   (an absolute path) when the difference matters.
///
/// ```
/// use std::ffi::OsString;
/// use patchbay_core::kit::ParentDeathSignal;
///
/// let tied = ParentDeathSignal::with_setpriv(Some("/usr/bin/setpriv".into()));
/// let (program, args) = tied.command_line("bash".as_ref());
/// assert_eq!(program, OsString::from("/usr/bin/setpriv"));
/// assert_eq!(args, ["--pdeathsig=KILL", "--", "bash"]);
///
/// let direct = ParentDeathSignal::with_setpriv(None);
/// assert_eq!(direct.command_line("bash".as_ref()), (OsString::from("bash"), Vec::new()));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParentDeathSignal {
    setpriv: Option<PathBuf>,
}

impl ParentDeathSignal {
    /// `setpriv` as found on this process's `PATH` on Linux (looked up once per process), or
    /// the direct start elsewhere.
    pub fn detect() -> &'static ParentDeathSignal {
        static DETECTED: OnceLock<ParentDeathSignal> = OnceLock::new();
        DETECTED.get_or_init(|| {
            if cfg!(target_os = "linux") {
                Self::search(std::env::var_os("PATH").as_deref())
            } else {
                Self::with_setpriv(None)
            }
        })
    }

    /// `setpriv` looked up in the directories of `path` (a `PATH` value).
    pub fn search(path: Option<&OsStr>) -> Self {
        Self::with_setpriv(find_program("setpriv", path))
    }

    /// Through this `setpriv`; `None` starts programs directly.
    pub fn with_setpriv(setpriv: Option<PathBuf>) -> Self {
        Self { setpriv }
    }

    /// The `setpriv` used, if any: whether children get the parent-death signal.
    pub fn setpriv(&self) -> Option<&Path> {
        self.setpriv.as_deref()
    }

    /// The program to spawn and the arguments that go before `program`'s own: `(setpriv,
    /// ["--pdeathsig=KILL", "--", program])`, or `(program, [])` without `setpriv`.
    pub fn command_line(&self, program: &OsStr) -> (OsString, Vec<OsString>) {
        match &self.setpriv {
            Some(setpriv) => (
                setpriv.clone().into_os_string(),
                vec!["--pdeathsig=KILL".into(), "--".into(), program.to_owned()],
            ),
            None => (program.to_owned(), Vec::new()),
        }
    }
}

/// The first executable file called `name` in the directories of `path` (a `PATH` value;
/// empty entries are skipped).
pub fn find_program(name: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path?)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_setpriv_the_program_runs_directly() {
        let direct = ParentDeathSignal::search(Some(OsStr::new("")));
        assert_eq!(direct.setpriv(), None);
        assert_eq!(
            direct.command_line(OsStr::new("/bin/sh")),
            (OsString::from("/bin/sh"), Vec::new())
        );
        assert_eq!(ParentDeathSignal::search(None).setpriv(), None);
    }

    #[cfg(unix)]
    #[test]
    fn find_program_takes_the_first_executable_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("patchbay-core-find-{}", std::process::id()));
        let (plain, exec) = (dir.join("plain"), dir.join("exec"));
        for sub in [&plain, &exec] {
            std::fs::create_dir_all(sub).expect("temp dir");
            std::fs::write(sub.join("tool"), "#!/bin/sh\n").expect("write");
        }
        let mode = std::fs::Permissions::from_mode(0o755);
        std::fs::set_permissions(exec.join("tool"), mode).expect("chmod");
        let path = std::env::join_paths([&plain, &exec]).expect("join");
        assert_eq!(find_program("tool", Some(&path)), Some(exec.join("tool")));
        assert_eq!(find_program("missing", Some(&path)), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
