//! Confinement: every path resolves inside the root, or the call is refused.
//!
//! The root is opened once per call as a directory handle (cap-std's `Dir`) and every file
//! operation goes through that handle, openat-style. cap-std resolves the path itself
//! (`openat2` with `RESOLVE_BENEATH` on Linux where the kernel has it, else component by
//! component with `O_NOFOLLOW`), so `..`, absolute symlinks and symlinks pointing out are
//! refused at the moment of opening: there is no window between a check and an open for a
//! swapped symlink to slip through. Before that, a lexical pass refuses absolute paths outside
//! the root and `..` that climbs above it, so the model gets a clear message.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io;
use std::path::{Component, Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use patchbay_core::ToolContext;

use crate::error::ToolError;
use crate::workspace::Workspace;

/// The opened root of one call.
pub(crate) struct Root {
    /// The directory handle every operation goes through.
    pub(crate) dir: Dir,
    /// The canonical absolute path of the root (walkers need a path; shown in messages).
    pub(crate) path: PathBuf,
    /// The root as configured, made absolute, for stripping absolute inputs.
    given: PathBuf,
}

/// A path inside the root, lexically normalized (no `.`, no `..`).
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// Relative to the root; `.` for the root itself.
    pub(crate) rel: PathBuf,
    /// How the path is shown to the model: relative, with `/`.
    pub(crate) shown: String,
}

impl Target {
    /// Whether this is the root itself.
    pub(crate) fn is_root(&self) -> bool {
        self.rel == Path::new(".")
    }
}

impl Root {
    /// Open the root of a call: the context's working directory, else the workspace root.
    pub(crate) fn open(workspace: &Workspace, cx: &ToolContext) -> Result<Self, ToolError> {
        Self::open_at(cx.working_dir.as_deref().unwrap_or(workspace.root()))
    }

    /// Open `configured` (made absolute against the current directory) as the root.
    pub(crate) fn open_at(configured: &Path) -> Result<Self, ToolError> {
        let given = if configured.is_absolute() {
            configured.to_path_buf()
        } else {
            std::env::current_dir()
                .map_err(|err| ToolError::failed(format!("the current directory is not usable: {err}")))?
                .join(configured)
        };
        let unusable = |err: io::Error| {
            ToolError::failed(format!("the workspace root `{}` is not usable: {err}", given.display()))
        };
        let path = std::fs::canonicalize(&given).map_err(unusable)?;
        let dir = Dir::open_ambient_dir(&path, ambient_authority()).map_err(unusable)?;
        Ok(Self { dir, path, given })
    }

    /// Resolve a path given by the model into a target inside the root, lexically. The real
    /// (symlink-aware) confinement happens when the target is opened through [`Root::dir`].
    pub(crate) fn resolve(&self, input: &str) -> Result<Target, ToolError> {
        if input.contains('\0') {
            return Err(ToolError::failed("the path contains a NUL byte"));
        }
        let path = Path::new(input);
        let relative = if path.has_root() {
            path.strip_prefix(&self.path)
                .or_else(|_| path.strip_prefix(&self.given))
                .map_err(|_| {
                    ToolError::denied(format!(
                        "`{input}` is outside the workspace root `{}`; use a path inside it, relative to the root",
                        self.path.display()
                    ))
                })?
        } else {
            path
        };
        let mut parts: Vec<&OsStr> = Vec::new();
        for component in relative.components() {
            match component {
                Component::CurDir => {}
                Component::Normal(part) => parts.push(part),
                Component::ParentDir => {
                    if parts.pop().is_none() {
                        return Err(ToolError::denied(format!(
                            "`{input}` leads outside the workspace root through `..`; access refused"
                        )));
                    }
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(ToolError::denied(format!(
                        "`{input}` is not a path inside the workspace root"
                    )));
                }
            }
        }
        if parts.is_empty() {
            return Ok(Target {
                rel: PathBuf::from("."),
                shown: ".".into(),
            });
        }
        let rel: PathBuf = parts.iter().collect();
        let shown = slash(&rel);
        Ok(Target { rel, shown })
    }

    /// The canonical absolute path of a directory inside the root, resolved through the handle
    /// (so a symlink out is refused), for walkers that need a path.
    pub(crate) fn walk_start(&self, target: &Target) -> Result<PathBuf, ToolError> {
        let canonical = self
            .dir
            .canonicalize(&target.rel)
            .map_err(|err| io_failure(&err, &target.shown))?;
        Ok(self.path.join(canonical))
    }

    /// A checker for walked paths; see [`Confined`].
    pub(crate) fn checker(&self) -> Confined<'_> {
        Confined {
            root: self,
            parents: HashMap::new(),
        }
    }
}

/// Checks walked paths against the root: a path counts only if its name exists in its parent
/// directory opened through the root handle. Parent handles are cached (a few at a time), so
/// a check is usually one `fstatat` on an already confined directory.
pub(crate) struct Confined<'a> {
    root: &'a Root,
    parents: HashMap<PathBuf, Option<Dir>>,
}

impl Confined<'_> {
    /// Parents kept open at once.
    const CACHE: usize = 32;

    /// Whether `rel` (relative to the root) is really there, looked up through the handle, so
    /// an entry reached through a swapped-in symlink is dropped.
    pub(crate) fn contains(&mut self, rel: &Path) -> bool {
        let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
            return false;
        };
        if !self.parents.contains_key(parent) {
            if self.parents.len() >= Self::CACHE {
                self.parents.clear();
            }
            let dir = if parent.as_os_str().is_empty() {
                self.root.dir.try_clone().ok()
            } else {
                self.root.dir.open_dir(parent).ok()
            };
            self.parents.insert(parent.to_path_buf(), dir);
        }
        matches!(self.parents.get(parent), Some(Some(dir)) if dir.symlink_metadata(name).is_ok())
    }
}

/// A relative path shown with `/` separators.
pub(crate) fn slash(path: &Path) -> String {
    let mut out = String::new();
    for (i, part) in path.iter().enumerate() {
        if i > 0 {
            out.push('/');
        }
        out.push_str(&part.to_string_lossy());
    }
    out
}

/// Whether an I/O error is cap-std's refusal of a path leading out of the root.
fn is_escape(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::PermissionDenied && err.raw_os_error().is_none()
}

/// Whether an I/O error is `ELOOP` (`ErrorKind::FilesystemLoop` is not stable yet).
fn is_loop(err: &io::Error) -> bool {
    #[cfg(unix)]
    {
        err.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error())
    }
    #[cfg(not(unix))]
    {
        let _ = err;
        false
    }
}

/// The tool error for an I/O error on `shown`: an escape is `Denied`, anything else `Failed`.
pub(crate) fn io_failure(err: &io::Error, shown: &str) -> ToolError {
    if is_escape(err) {
        return ToolError::denied(format!(
            "`{shown}` resolves outside the workspace root through a symbolic link; access refused"
        ));
    }
    if is_loop(err) {
        return ToolError::Failed(format!(
            "`{shown}` cannot be resolved: too many levels of symbolic links (a symlink loop?)"
        ));
    }
    let message = match err.kind() {
        io::ErrorKind::NotFound => format!("`{shown}` does not exist"),
        io::ErrorKind::InvalidFilename => format!("`{shown}`: the file name is too long or invalid"),
        io::ErrorKind::NotADirectory => format!("`{shown}`: a component of the path is not a directory"),
        io::ErrorKind::IsADirectory => format!("`{shown}` is a directory"),
        io::ErrorKind::PermissionDenied => format!("`{shown}`: permission denied"),
        _ => format!("`{shown}`: {err}"),
    };
    ToolError::Failed(message)
}
