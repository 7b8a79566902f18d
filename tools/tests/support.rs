//! Shared fixtures.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use patchbay_core::{ToolContext, ToolResult, tool::ToolStatus};
use patchbay_tools::{Workspace, coding_tools};
use serde_json::Value;
use tempfile::TempDir;

/// A temporary directory holding `root/` (the workspace) and `outside/` (must stay untouched).
pub(crate) struct Fixture {
    _dir: TempDir,
    pub(crate) outer: PathBuf,
    pub(crate) root: PathBuf,
}

impl Fixture {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        // Canonical, so absolute paths in tests match what the tools see.
        let outer = std::fs::canonicalize(dir.path()).unwrap();
        let root = outer.join("root");
        std::fs::create_dir(&root).unwrap();
        std::fs::create_dir(outer.join("outside")).unwrap();
        std::fs::write(outer.join("outside/secret.txt"), "TOPSECRET\n").unwrap();
        Self { _dir: dir, outer, root }
    }

    pub(crate) fn workspace(&self) -> Workspace {
        Workspace::new(&self.root)
    }

    /// Write a file under the root, creating parents.
    pub(crate) fn file(&self, rel: &str, contents: impl AsRef<[u8]>) -> &Self {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
        self
    }

    pub(crate) fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root.join(rel)).unwrap()
    }

    /// Call one tool of `coding_tools(workspace)` by name.
    pub(crate) async fn call(&self, workspace: Workspace, name: &str, input: Value) -> ToolResult {
        call(workspace, name, input, &ToolContext::new()).await
    }

    /// Call with the default workspace.
    pub(crate) async fn run(&self, name: &str, input: Value) -> ToolResult {
        self.call(self.workspace().with_bash(true), name, input).await
    }
}

/// Call one tool of `coding_tools(workspace)` by name with a context.
pub(crate) async fn call(workspace: Workspace, name: &str, input: Value, cx: &ToolContext) -> ToolResult {
    let tools = coding_tools(workspace);
    let tool = tools.get(name).unwrap_or_else(|| panic!("no tool {name}"));
    tool.execute(input, cx).await
}

/// Assert the status, showing the text on failure.
#[track_caller]
pub(crate) fn assert_status(result: &ToolResult, status: ToolStatus) {
    assert_eq!(
        result.status,
        status,
        "unexpected status; text: {}",
        result.text_content()
    );
}

/// Every file under `path` with its contents, sorted (symlinks as their target).
pub(crate) fn tree(path: &Path) -> Vec<(String, String)> {
    fn visit(base: &Path, path: &Path, out: &mut Vec<(String, String)>) {
        let Ok(entries) = std::fs::read_dir(path) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            let rel = path.strip_prefix(base).unwrap().to_string_lossy().into_owned();
            let kind = entry.file_type().unwrap();
            if kind.is_symlink() {
                out.push((rel, format!("-> {}", std::fs::read_link(&path).unwrap().display())));
            } else if kind.is_dir() {
                out.push((format!("{rel}/"), String::new()));
                visit(base, &path, out);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                out.push((rel, String::from_utf8_lossy(&bytes).into_owned()));
            }
        }
    }
    let mut out = Vec::new();
    visit(path, path, &mut out);
    out.sort();
    out
}

/// Whether a process is gone (absent, or a zombie waiting for init to reap it).
pub(crate) fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            // The state follows the parenthesized command name.
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next());
            matches!(state, Some("Z" | "X"))
        }
    }
}

/// Wait up to 5 s for every pid to be gone.
pub(crate) fn assert_processes_gone(pids: &[u32]) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let alive: Vec<u32> = pids.iter().copied().filter(|&pid| !process_gone(pid)).collect();
        if alive.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "processes still alive: {alive:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Wait up to 5 s for a file of pids to hold `count` lines; returns them.
pub(crate) async fn wait_for_pids(path: &Path, count: usize) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            let pids: Vec<u32> = text.lines().filter_map(|line| line.trim().parse().ok()).collect();
            if pids.len() >= count {
                return pids;
            }
        }
        assert!(Instant::now() < deadline, "pid file {} never filled", path.display());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
