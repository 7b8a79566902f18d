#![doc = include_str!("../README.md")]
//!
//! # Tools
//!
//! | tool | does |
//! | --- | --- |
//! | [`ReadTool`] `read` | a text file with line numbers and line ranges; a directory listing |
//! | [`WriteTool`] `write` | create or replace a file atomically, parents created |
//! | [`EditTool`] `edit` | exact string replacement, unique unless `replace_all` |
//! | [`BashTool`] `bash` | a shell command with timeout, output limit, process-group kill (opt-in) |
//! | [`GlobTool`] `glob` | paths by glob, gitignore-aware, sorted, limited |
//! | [`GrepTool`] `grep` | regex search with context lines (ripgrep's crates), gitignore-aware |
//!
//! # Confinement
//!
//! The root of a call is the request's working directory (`ToolContext::working_dir`) when
//! set, else [`Workspace::root`]. Paths are relative to it; an absolute path is accepted only
//! inside it; `..` is resolved lexically first and may not climb above the root. The root is opened as a directory handle with [`cap_std`] and every file is
//! opened, created and renamed through it: cap-std resolves each path beneath the handle
//! (`openat2(RESOLVE_BENEATH)` on Linux, else component by component with `O_NOFOLLOW`), so
//! `..`, absolute paths and symlinks leading out are refused when the file is opened, with no
//! window between a check and the open. A refusal is a result with status `Denied` and a
//! message saying why; a symlink loop, a name too long or a missing file is `Failed`.
//! Symlinks that stay inside the root work as usual.
//!
//! `glob` and `grep` walk with ripgrep's `ignore` crate, which works on paths: symlinks are not
//! followed, every entry is checked again through the handle, and every file `grep` searches
//! is opened through the handle, so contents outside the root are never read. `bash` is a
//! shell and is not confined: it is off unless [`Workspace::with_bash`] turns it on.
//!
//! # Output
//!
//! Output longer than [`Limits::max_output_chars`] (25,000 by default) is cut with a marker
//! saying how much was cut and how to narrow the request; `bash` keeps the beginning and the
//! end. Each result's `metadata` carries structured facts (path, line range, match counts,
//! exit code).

//!
//! # Known limits
//!
//! - `bash` is a shell: it can reach anything the process can. It is opt-in for that reason;
//!   [`Workspace::with_inherited_env`] keeps host secrets out of its environment.
//! - The process-group kill cannot reach a process that left the group with `setsid`.
//! - `..` is resolved lexically, so `link/..` names the directory holding `link`.
//!
//! # In a host
//!
//! ```no_run
//! # fn demo(provider: std::sync::Arc<dyn patchbay_core::Provider>) -> std::io::Result<()> {
//! use patchbay_core::Agent;
//! use patchbay_tools::{Workspace, coding_tools};
//! // The folder the program runs in; bash stays off unless asked for.
//! let tools = coding_tools(Workspace::current_dir()?);
//! let agent = Agent::new(provider, "some-model").with_tools(tools);
//! // "what is in this folder?" -> read `.` (a listing) or glob `*`, then read and grep.
//! # let _ = agent; Ok(()) }
//! ```

mod bash;
pub mod confined;
mod edit;
mod error;
mod glob;
mod grep;
mod output;
mod read;
mod root;
mod walk;
mod workspace;
mod write;

use patchbay_core::ToolSet;

pub use bash::{BashInput, BashTool};
pub use edit::{EditInput, EditTool};
pub use glob::{GlobInput, GlobTool};
pub use grep::{GrepInput, GrepTool, OutputMode};
pub use read::{ReadInput, ReadTool};
pub use workspace::{Limits, Workspace};
pub use write::{WriteInput, WriteTool};

/// The coding tools for `workspace`, in this order: `read`, `write`, `edit`, `glob`, `grep`,
/// and `bash` last when the workspace enables it.
pub fn coding_tools(workspace: Workspace) -> ToolSet {
    let mut tools = ToolSet::new()
        .with(ReadTool::new(workspace.clone()))
        .with(WriteTool::new(workspace.clone()))
        .with(EditTool::new(workspace.clone()))
        .with(GlobTool::new(workspace.clone()))
        .with(GrepTool::new(workspace.clone()));
    if workspace.bash_enabled() {
        tools = tools.with(BashTool::new(workspace));
    }
    tools
}
