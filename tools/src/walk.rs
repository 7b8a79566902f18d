//! The directory walk shared by `glob` and `grep`: ripgrep's `ignore` crate (gitignore-aware,
//! hidden files included, `.git` skipped, sorted, symlinks not followed).
//!
//! The walk works on paths, so a directory swapped for a symlink mid-walk could make it list
//! names outside the root. Callers close that gap: `glob` checks each path it returns through
//! the root handle ([`Root::checker`]) and `grep` opens each file through it, so neither a
//! name nor a byte from outside reaches the model.

use std::path::{Path, PathBuf};

use ignore::WalkBuilder;
use patchbay_core::Signal;

use crate::error::ToolError;
use crate::root::Root;

/// What a walked entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Dir,
    File,
    Symlink,
    Other,
}

/// One entry of a walk.
pub(crate) struct Entry {
    /// Relative to the walk's start (what patterns match against).
    pub(crate) from_start: PathBuf,
    /// Relative to the root (what the model sees and passes back).
    pub(crate) from_root: PathBuf,
    pub(crate) kind: Kind,
}

/// Walk `start` (a canonical directory inside the root) in sorted order, calling `visit` for
/// each entry below it until it returns `false`. Returns how many paths could not be read.
/// Entries are not yet checked against the root: see the module docs.
pub(crate) fn walk(
    root: &Root,
    start: &Path,
    max_depth: Option<usize>,
    signal: &Signal,
    mut visit: impl FnMut(Entry) -> Result<bool, ToolError>,
) -> Result<usize, ToolError> {
    let mut builder = WalkBuilder::new(start);
    builder
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .max_depth(max_depth)
        .filter_entry(|entry| entry.file_name() != ".git")
        .sort_by_file_name(|a, b| a.cmp(b));
    let mut unreadable = 0;
    for item in builder.build() {
        if signal.is_cancelled() {
            return Err(ToolError::Aborted);
        }
        let Ok(entry) = item else {
            unreadable += 1;
            continue;
        };
        if entry.depth() == 0 {
            continue;
        }
        let (Ok(from_start), Ok(from_root)) = (entry.path().strip_prefix(start), entry.path().strip_prefix(&root.path))
        else {
            continue;
        };
        let kind = match entry.file_type() {
            Some(kind) if kind.is_symlink() => Kind::Symlink,
            Some(kind) if kind.is_dir() => Kind::Dir,
            Some(kind) if kind.is_file() => Kind::File,
            _ => Kind::Other,
        };
        let entry = Entry {
            from_start: from_start.to_path_buf(),
            from_root: from_root.to_path_buf(),
            kind,
        };
        if !visit(entry)? {
            break;
        }
    }
    Ok(unreadable)
}

/// Refuse patterns that could only point outside the search directory.
pub(crate) fn check_pattern(pattern: &str) -> Result<(), ToolError> {
    if pattern.starts_with('/') || pattern.split('/').any(|part| part == "..") {
        return Err(ToolError::denied(format!(
            "the glob `{pattern}` leaves the search directory; globs match paths relative to it, \
             so `..` and absolute patterns are not allowed (pass `path` to search elsewhere in the workspace)"
        )));
    }
    Ok(())
}
