//! `glob`: find paths by pattern, gitignore-aware, sorted, limited.

use async_trait::async_trait;
use globset::GlobBuilder;
use patchbay_core::{Tool, ToolContext, ToolResult, ToolSpec, tool::parse_input};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::{ToolError, blocking};
use crate::output::{Keep, truncate};
use crate::root::{Root, slash};
use crate::walk::{Kind, check_pattern, walk};
use crate::workspace::Workspace;

/// Input of the `glob` tool.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct GlobInput {
    /// The glob, matched against paths relative to `path`: `*` stays within one directory,
    /// `**` crosses directories, `{a,b}` is either. `*` lists a directory, `**/*.rs` finds Rust
    /// files at any depth, `src/**` everything under `src`.
    pub pattern: String,
    /// The directory to search, relative to the workspace root (default: the root).
    #[serde(default)]
    pub path: Option<String>,
    /// The most paths to return (default and maximum: the workspace's result limit, 1,000).
    #[serde(default)]
    pub limit: Option<usize>,
}

const DESCRIPTION: &str = "Find files and directories by glob pattern, sorted by path. Patterns match \
paths relative to `path` (default: the workspace root): `*` lists one directory, `**/*.rs` finds \
Rust files at any depth, `src/**/test_*.py` searches under `src`. Files ignored by .gitignore and \
the `.git` directory are skipped; hidden files are included. Directories end with `/`, symbolic \
links with `@`. Returned paths are relative to the workspace root.";

/// The `glob` tool: find paths by pattern, gitignore-aware, sorted, limited.
#[derive(Debug, Clone)]
pub struct GlobTool {
    workspace: Workspace,
    spec: ToolSpec,
}

impl GlobTool {
    /// A `glob` tool for this workspace.
    pub fn new(workspace: Workspace) -> Self {
        let mut spec = ToolSpec::for_input::<GlobInput>("glob", DESCRIPTION);
        spec.annotations = Some(json!({"readOnlyHint": true}));
        Self { workspace, spec }
    }
}

#[async_trait]
impl Tool for GlobTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn execute(&self, input: Value, cx: &ToolContext) -> ToolResult {
        let input: GlobInput = match parse_input("glob", input) {
            Ok(input) => input,
            Err(result) => return result,
        };
        let workspace = self.workspace.clone();
        let cx = cx.clone();
        blocking(move || glob(&workspace, &cx, &input)).await
    }
}

fn glob(workspace: &Workspace, cx: &ToolContext, input: &GlobInput) -> Result<ToolResult, ToolError> {
    let pattern = input.pattern.trim_start_matches("./");
    check_pattern(pattern)?;
    let matcher = GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|err| ToolError::failed(format!("invalid glob `{}`: {err}", input.pattern)))?
        .compile_matcher();
    let root = Root::open(workspace, cx)?;
    let target = root.resolve(input.path.as_deref().unwrap_or("."))?;
    let start = root.walk_start(&target)?;
    if !root.dir.is_dir(&target.rel) {
        return Err(ToolError::failed(format!("`{}` is not a directory", target.shown)));
    }
    let limits = workspace.limits();
    let limit = input
        .limit
        .unwrap_or(limits.max_results)
        .clamp(1, limits.max_results.max(1));
    // A pattern without `**` cannot match deeper than it has components.
    let max_depth = (!pattern.contains("**")).then(|| pattern.matches('/').count() + 1);
    let mut found = Vec::new();
    let mut confined = root.checker();
    let unreadable = walk(&root, &start, max_depth, &cx.signal, |entry| {
        if matcher.is_match(&entry.from_start) {
            // Checked through the handle: a path reached through a swapped-in symlink is dropped.
            if !confined.contains(&entry.from_root) {
                return Ok(true);
            }
            let mut shown = slash(&entry.from_root);
            match entry.kind {
                Kind::Dir => shown.push('/'),
                Kind::Symlink => shown.push('@'),
                Kind::File | Kind::Other => {}
            }
            found.push(shown);
        }
        Ok(true)
    })?;
    found.sort();
    let total = found.len();
    let shown = total.min(limit);
    let mut out = String::new();
    if total == 0 {
        out.push_str(&format!("No paths match `{}` in `{}`.\n", input.pattern, target.shown));
    }
    for path in &found[..shown] {
        out.push_str(path);
        out.push('\n');
    }
    if shown < total {
        out.push_str(&format!(
            "[showing {shown} of {total} paths; narrow the pattern or pass a `path`]\n"
        ));
    }
    if unreadable > 0 {
        out.push_str(&format!("[{unreadable} paths could not be read and were skipped]\n"));
    }
    let (out, cut) = truncate(out, limits.max_output_chars, Keep::Head, "Narrow the pattern.");
    Ok(ToolResult::text(out).with_metadata(json!({
        "pattern": input.pattern,
        "path": target.shown,
        "matches": total,
        "shown": shown,
        "truncated_chars": cut,
    })))
}
