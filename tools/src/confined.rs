//! Text files read and written for a host that serves file requests itself (patchbay-acp's
//! `fs/read_text_file` and `fs/write_text_file` from an agent), with the tools' confinement:
//! a path resolves inside the root or the access is refused (`..`, absolute paths outside,
//! symlinks out), and writes are atomic.

use std::io::Read;
use std::path::Path;

use crate::error::ToolError;
use crate::root::Root;
use crate::write::atomic_write;

/// Why a confined access did not happen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ConfinedError {
    /// Refused because the path leads outside the root (else it failed: missing, not text...).
    pub denied: bool,
    /// What happened, naming the path as given (never file contents).
    pub message: String,
}

impl From<ToolError> for ConfinedError {
    fn from(error: ToolError) -> Self {
        Self {
            denied: matches!(error, ToolError::Denied(_)),
            message: error.to_string(),
        }
    }
}

/// The UTF-8 text of `path` inside `root` (relative to it, or absolute inside it). Blocking:
/// call it from a blocking task.
pub fn read_text(root: &Path, path: &str) -> Result<String, ConfinedError> {
    let root = Root::open_at(root)?;
    let target = root.resolve(path)?;
    let failed = |message: String| ConfinedError { denied: false, message };
    let mut file = root
        .dir
        .open(&target.rel)
        .map_err(|err| ConfinedError::from(crate::root::io_failure(&err, &target.shown)))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|err| ConfinedError::from(crate::root::io_failure(&err, &target.shown)))?;
    String::from_utf8(bytes).map_err(|_| failed(format!("`{}` is not UTF-8 text", target.shown)))
}

/// Replace (or create) `path` inside `root` with `contents`, atomically, creating missing
/// folders. Blocking: call it from a blocking task.
pub fn write_text(root: &Path, path: &str, contents: &str) -> Result<(), ConfinedError> {
    let root = Root::open_at(root)?;
    let target = root.resolve(path)?;
    atomic_write(&root, &target, contents.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_writes_stay_inside_the_root() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path();
        write_text(root, "a/b.txt", "hello").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read_text(root, "a/b.txt").ok().as_deref(), Some("hello"));
        let absolute = root.join("a/b.txt");
        assert_eq!(
            read_text(root, &absolute.to_string_lossy()).ok().as_deref(),
            Some("hello")
        );
        for outside in ["../x.txt", "/etc/passwd"] {
            let error = read_text(root, outside)
                .err()
                .unwrap_or_else(|| panic!("{outside} was read"));
            assert!(error.denied, "{outside}: {error}");
            assert!(write_text(root, outside, "x").is_err_and(|e| e.denied), "{outside}");
        }
    }

    #[test]
    fn a_symlink_out_of_the_root_is_refused() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let outside = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(outside.path().join("secret"), "s").unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("link"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(read_text(dir.path(), "link").is_err());
    }
}
