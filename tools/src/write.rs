//! `write`: create or replace a file atomically, creating parent directories.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use cap_std::fs::{Dir, OpenOptions, Permissions};
use patchbay_core::{Tool, ToolContext, ToolResult, ToolSpec, tool::parse_input};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::{ToolError, blocking};
use crate::root::{Root, Target, io_failure, slash};
use crate::workspace::Workspace;

/// Input of the `write` tool.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct WriteInput {
    /// The file to write, relative to the workspace root. Missing parent directories are created.
    #[serde(alias = "file_path")]
    pub path: String,
    /// The complete new contents of the file.
    pub content: String,
}

const DESCRIPTION: &str = "Create a file or replace its whole contents. Missing parent directories \
are created; the file is replaced atomically (a reader never sees half a file) and keeps its \
permissions. To change part of an existing file, prefer `edit`. Paths are relative to the \
workspace root and cannot leave it.";

/// The `write` tool: create or replace a file atomically, creating parent directories.
#[derive(Debug, Clone)]
pub struct WriteTool {
    workspace: Workspace,
    spec: ToolSpec,
}

impl WriteTool {
    /// A `write` tool for this workspace.
    pub fn new(workspace: Workspace) -> Self {
        let mut spec = ToolSpec::for_input::<WriteInput>("write", DESCRIPTION);
        spec.annotations = Some(json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true}));
        Self { workspace, spec }
    }
}

#[async_trait]
impl Tool for WriteTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn execute(&self, input: Value, cx: &ToolContext) -> ToolResult {
        let input: WriteInput = match parse_input("write", input) {
            Ok(input) => input,
            Err(result) => return result,
        };
        let workspace = self.workspace.clone();
        let cx = cx.clone();
        blocking(move || write(&workspace, &cx, &input)).await
    }
}

fn write(workspace: &Workspace, cx: &ToolContext, input: &WriteInput) -> Result<ToolResult, ToolError> {
    let root = Root::open(workspace, cx)?;
    let target = root.resolve(&input.path)?;
    let bytes = input.content.len() as u64;
    let limit = workspace.limits().max_file_bytes;
    if bytes > limit {
        return Err(ToolError::failed(format!(
            "the content is {bytes} bytes, over the limit of {limit} bytes"
        )));
    }
    let written = atomic_write(&root, &target, input.content.as_bytes())?;
    let lines = input.content.lines().count();
    let verb = if written.created { "Created" } else { "Replaced" };
    Ok(
        ToolResult::text(format!("{verb} `{}` ({bytes} bytes, {lines} lines).", written.shown)).with_metadata(json!({
            "path": written.shown,
            "bytes": bytes,
            "lines": lines,
            "created": written.created,
        })),
    )
}

/// What [`atomic_write`] did.
pub(crate) struct Written {
    /// The path written (the symlink's target when the path was a symlink inside the root).
    pub(crate) shown: String,
    /// Whether the file is new.
    pub(crate) created: bool,
}

/// Replace `target` with `contents` atomically: write a temporary file next to it, sync it,
/// rename it over the target. Every step goes through the root handle, so nothing is written
/// outside the root. A symlink inside the root is written through (its target is replaced);
/// one that leads out is refused.
pub(crate) fn atomic_write(root: &Root, target: &Target, contents: &[u8]) -> Result<Written, ToolError> {
    if target.is_root() {
        return Err(ToolError::failed(
            "`.` is the workspace root, a directory; name a file to write",
        ));
    }
    let mut rel = target.rel.clone();
    let mut shown = target.shown.clone();
    // At most one hop: a canonical path has no symlinks left.
    for _ in 0..2 {
        let (parent, name) = split(&rel, &shown)?;
        let parent_failure = |err: std::io::Error| io_failure(&err, &slash(&parent));
        let dir = match root.dir.open_dir(&parent) {
            Ok(dir) => dir,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                root.dir.create_dir_all(&parent).map_err(parent_failure)?;
                root.dir.open_dir(&parent).map_err(parent_failure)?
            }
            Err(err) => return Err(parent_failure(err)),
        };
        let existing = match dir.symlink_metadata(&name) {
            Ok(meta) if meta.is_symlink() => {
                let canonical = root.dir.canonicalize(&rel).map_err(|err| match err.kind() {
                    std::io::ErrorKind::NotFound => ToolError::failed(format!(
                        "`{shown}` is a symbolic link to a missing file; write to a real path instead"
                    )),
                    _ => io_failure(&err, &shown),
                })?;
                shown = slash(&canonical);
                rel = canonical;
                continue;
            }
            Ok(meta) if meta.is_dir() => return Err(ToolError::failed(format!("`{shown}` is a directory"))),
            Ok(meta) if !meta.is_file() => {
                return Err(ToolError::failed(format!("`{shown}` is not a regular file")));
            }
            Ok(meta) => Some(meta.permissions()),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
            Err(err) => return Err(io_failure(&err, &shown)),
        };
        let created = existing.is_none();
        replace(&dir, &name, contents, existing).map_err(|err| io_failure(&err, &shown))?;
        return Ok(Written { shown, created });
    }
    Err(ToolError::failed(format!("`{shown}` could not be resolved to a file")))
}

/// The parent directory (`.` for the root) and the file name of a normalized relative path.
fn split(rel: &Path, shown: &str) -> Result<(PathBuf, PathBuf), ToolError> {
    let name = rel
        .file_name()
        .ok_or_else(|| ToolError::failed(format!("`{shown}` does not name a file")))?;
    let parent = match rel.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((parent, PathBuf::from(name)))
}

fn replace(dir: &Dir, name: &Path, contents: &[u8], permissions: Option<Permissions>) -> std::io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let temp = format!(
        ".patchbay-{}-{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    let result = (|| {
        let mut file = dir.open_with(&temp, &options)?;
        file.write_all(contents)?;
        if let Some(permissions) = permissions {
            file.set_permissions(permissions)?;
        }
        file.sync_all()?;
        dir.rename(&temp, dir, name)
    })();
    if result.is_err() {
        let _ = dir.remove_file(&temp);
    }
    result
}
