//! The directory a server lives in, and removing the ones dead processes left behind.
//!
//! Layout: `$TMPDIR/patchbay-pgtemp/<pid>-<n>/` holds `data/` (the cluster), `sock/` (the Unix
//! socket directory) and `postgres.log`. `data/` and `sock/` belong to the user the server runs
//! as; the log is opened by this process, so it stays readable whoever the server runs as.

use std::fs;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::error::PgError;

/// One server's directories.
#[derive(Debug)]
pub(crate) struct ServerDir {
    pub(crate) root: PathBuf,
    pub(crate) data: PathBuf,
    pub(crate) sock: PathBuf,
    pub(crate) log: PathBuf,
}

/// Removes stale siblings, then creates a new server directory; `owner` (a user name) gets
/// `data/` and `sock/` when the server runs as another user.
pub(crate) fn create(owner: Option<&str>) -> Result<ServerDir, PgError> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let base = std::env::temp_dir().join("patchbay-pgtemp");
    if !base.is_dir() {
        fs::create_dir_all(&base).map_err(PgError::io(format!("creating {}", base.display())))?;
        // Shared by all users, like the temporary directory itself (sticky: each user removes
        // only their own entries).
        let _ = fs::set_permissions(&base, fs::Permissions::from_mode(0o1777));
    }
    sweep(&base);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let root = base.join(format!("{}-{n}", std::process::id()));
    // Left by an earlier process that had the same pid: this process never made it.
    let _ = fs::remove_dir_all(&root);
    let dir = ServerDir {
        data: root.join("data"),
        sock: root.join("sock"),
        log: root.join("postgres.log"),
        root,
    };
    fs::create_dir(&dir.root).map_err(PgError::io(format!("creating {}", dir.root.display())))?;
    for path in [&dir.data, &dir.sock] {
        fs::DirBuilder::new()
            .mode(0o700)
            .create(path)
            .map_err(PgError::io(format!("creating {}", path.display())))?;
    }
    if let Some(owner) = owner {
        chown(owner, &[&dir.data, &dir.sock])?;
    }
    Ok(dir)
}

fn chown(owner: &str, paths: &[&Path]) -> Result<(), PgError> {
    let output = Command::new("chown")
        .arg(format!("{owner}:"))
        .args(paths)
        .stdin(Stdio::null())
        .output()
        .map_err(PgError::io("running chown"))?;
    if output.status.success() {
        return Ok(());
    }
    Err(PgError::Io {
        action: format!("chown {owner}: {}", paths[0].display()),
        source: std::io::Error::other(String::from_utf8_lossy(&output.stderr).trim().to_owned()),
    })
}

/// Removes the server directories of processes that no longer run, and what their servers
/// left behind (a postmaster still running, its System V shared memory segment).
fn sweep(base: &Path) {
    let Ok(entries) = fs::read_dir(base) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|name| name.split_once('-')?.0.parse().ok()) else {
            continue;
        };
        if pid == std::process::id() || running(pid) {
            continue;
        }
        let path = entry.path();
        if release_leftovers(&path.join("data")) {
            let _ = fs::remove_dir_all(&path);
        }
    }
}

/// Stops a leftover postmaster of `data` (then answers false: remove the directory on a later
/// sweep, once it is gone) or removes its leftover shared memory segment (answers true).
fn release_leftovers(data: &Path) -> bool {
    let Ok(pid_file) = fs::read_to_string(data.join("postmaster.pid")) else {
        return true;
    };
    let lines: Vec<&str> = pid_file.lines().collect();
    let postmaster = lines.first().and_then(|line| line.trim().parse::<u32>().ok());
    if let Some(pid) = postmaster
        && running(pid)
        && fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|cmdline| contains(&cmdline, data.as_os_str().as_encoded_bytes()))
    {
        let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
        return false;
    }
    // Line 7: the shared memory key and id, as `postgres` wrote them.
    let mut ids = lines.get(6).into_iter().flat_map(|line| line.split_whitespace());
    if let (Some(Ok(key)), Some(Ok(id))) = (ids.next().map(str::parse::<u64>), ids.next().map(str::parse::<u64>)) {
        remove_unattached_segment(key, id);
    }
    true
}

/// `ipcrm -m id` if `ipcs -m` lists the segment with that key and no process attached.
fn remove_unattached_segment(key: u64, id: u64) {
    let Ok(output) = Command::new("ipcs").arg("-m").stderr(Stdio::null()).output() else {
        return;
    };
    let listing = String::from_utf8_lossy(&output.stdout);
    // key shmid owner perms bytes nattch status
    let unattached = listing.lines().any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        fields.len() >= 6
            && fields[0]
                .strip_prefix("0x")
                .is_some_and(|hex| u64::from_str_radix(hex, 16) == Ok(key))
            && fields[1].parse() == Ok(id)
            && fields[5] == "0"
    });
    if unattached {
        let _ = Command::new("ipcrm")
            .args(["-m", &id.to_string()])
            .stderr(Stdio::null())
            .status();
    }
}

/// Whether process `pid` exists and is not a zombie (a dead process nobody reaped yet, as
/// happens to orphans when pid 1 does not reap).
pub(crate) fn running(pid: u32) -> bool {
    let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // `pid (comm) S ...`: comm may hold spaces and parentheses, the state follows the last `)`.
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next());
    !matches!(state, Some('Z' | 'X') | None)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|window| window == needle)
}
