//! Finding the PostgreSQL binaries (and `setpriv`), once per process.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use crate::error::PgError;

/// The programs a server needs, as absolute paths.
#[derive(Debug, Clone)]
pub(crate) struct Binaries {
    /// The directory `initdb` and `postgres` were found in.
    pub(crate) dir: PathBuf,
    pub(crate) initdb: PathBuf,
    pub(crate) postgres: PathBuf,
    pub(crate) psql: PathBuf,
    pub(crate) pg_isready: PathBuf,
    /// util-linux `setpriv`: switches to the `postgres` user and sets the parent-death signal.
    pub(crate) setpriv: Option<PathBuf>,
}

/// A program that was looked for and not found, and the Debian package that provides it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Missing {
    pub(crate) name: &'static str,
    pub(crate) package: &'static str,
}

impl From<Missing> for PgError {
    fn from(missing: Missing) -> Self {
        PgError::BinaryNotFound {
            name: missing.name,
            package: missing.package,
        }
    }
}

/// The binaries, looked up on the first call and remembered.
pub(crate) fn find() -> Result<&'static Binaries, Missing> {
    static FOUND: OnceLock<Result<Binaries, Missing>> = OnceLock::new();
    FOUND.get_or_init(look_up).as_ref().map_err(|missing| *missing)
}

fn look_up() -> Result<Binaries, Missing> {
    let dir = server_dirs()
        .into_iter()
        .find(|dir| is_executable(&dir.join("initdb")) && is_executable(&dir.join("postgres")));
    let get = |name: &'static str| {
        dir.as_ref()
            .map(|dir| dir.join(name))
            .filter(|path| is_executable(path))
            .or_else(|| on_path(name))
            .ok_or(Missing {
                name,
                package: "postgresql",
            })
    };
    let (initdb, postgres) = (get("initdb")?, get("postgres")?);
    let (psql, pg_isready) = (get("psql")?, get("pg_isready")?);
    Ok(Binaries {
        dir: dir.unwrap_or_else(|| initdb.parent().map(Path::to_path_buf).unwrap_or_default()),
        initdb,
        postgres,
        psql,
        pg_isready,
        setpriv: on_path("setpriv").or_else(|| {
            let path = PathBuf::from("/usr/bin/setpriv");
            is_executable(&path).then_some(path)
        }),
    })
}

/// Candidate directories, best first: `pg_config --bindir`, then the newest
/// `/usr/lib/postgresql/<version>/bin` (Debian's layout).
fn server_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(pg_config) = on_path("pg_config") {
        let output = Command::new(pg_config).arg("--bindir").stderr(Stdio::null()).output();
        if let Ok(output) = output
            && output.status.success()
        {
            let dir = String::from_utf8_lossy(&output.stdout).trim().to_owned();
            if !dir.is_empty() {
                dirs.push(PathBuf::from(dir));
            }
        }
    }
    let mut versions: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let version = name.split('.').map(str::parse).collect::<Result<Vec<u32>, _>>().ok()?;
            Some((version, entry.path().join("bin")))
        })
        .collect();
    versions.sort();
    dirs.extend(versions.into_iter().rev().map(|(_, dir)| dir));
    dirs
}

/// `name` in a directory of `PATH`, if there.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|path| is_executable(path))
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}
