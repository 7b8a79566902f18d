//! One orchestrator per data folder: an exclusive lock on `<data>/orchestrator.lock`.

use std::fs::File;
use std::path::{Path, PathBuf};

/// The lock file's name inside the data folder.
pub const LOCK_FILE: &str = "orchestrator.lock";

/// Held while the process serves a data folder; the OS releases it when the process ends,
/// even by kill -9.
#[derive(Debug)]
pub struct DataDirLock {
    _file: File,
    path: PathBuf,
}

impl DataDirLock {
    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Why the data folder could not be locked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// Another process holds it.
    #[error("another orchestrator is using the data folder {}: stop it or pass another --data", .0.display())]
    Busy(PathBuf),
    /// The lock file could not be opened or locked.
    #[error("cannot lock {}: {source}", path.display())]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// Lock `dir` for this process (non-blocking): [`LockError::Busy`] when another holds it.
pub fn lock_data_dir(dir: &Path) -> Result<DataDirLock, LockError> {
    let path = dir.join(LOCK_FILE);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|source| LockError::Io {
            path: path.clone(),
            source,
        })?;
    match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(DataDirLock { _file: file, path }),
        Err(rustix::io::Errno::WOULDBLOCK) => Err(LockError::Busy(dir.to_owned())),
        Err(errno) => Err(LockError::Io {
            path,
            source: errno.into(),
        }),
    }
}
