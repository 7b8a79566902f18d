//! `edit`: exact string replacement that must match once unless `replace_all`.

use async_trait::async_trait;
use patchbay_core::{Tool, ToolContext, ToolResult, ToolSpec, tool::parse_input};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::{ToolError, blocking};
use crate::output::{Keep, clip_line, truncate};
use crate::read::{Loaded, Opened, load, open_file};
use crate::root::{Root, Target};
use crate::workspace::{Limits, Workspace};
use crate::write::atomic_write;

/// Input of the `edit` tool.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct EditInput {
    /// The file to edit, relative to the workspace root.
    #[serde(alias = "file_path")]
    pub path: String,
    /// The exact text to replace, including whitespace and indentation. It must occur exactly
    /// once unless `replace_all` is true.
    pub old_string: String,
    /// The text to put in its place.
    pub new_string: String,
    /// Replace every occurrence instead of requiring exactly one (default false).
    #[serde(default)]
    pub replace_all: bool,
}

const DESCRIPTION: &str = "Replace an exact string in a text file. `old_string` must match the file \
exactly (whitespace and indentation included) and occur exactly once; if it occurs several times, \
add surrounding lines to make it unique or set `replace_all` to true. Read the file first. The \
file is replaced atomically. Use `write` to create a new file.";

/// Lines of context shown around the first change.
const SNIPPET_CONTEXT: usize = 3;

/// The `edit` tool: exact string replacement that must match once unless `replace_all`.
#[derive(Debug, Clone)]
pub struct EditTool {
    workspace: Workspace,
    spec: ToolSpec,
}

impl EditTool {
    /// An `edit` tool for this workspace.
    pub fn new(workspace: Workspace) -> Self {
        let mut spec = ToolSpec::for_input::<EditInput>("edit", DESCRIPTION);
        spec.annotations = Some(json!({"readOnlyHint": false, "destructiveHint": true}));
        Self { workspace, spec }
    }
}

#[async_trait]
impl Tool for EditTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn execute(&self, input: Value, cx: &ToolContext) -> ToolResult {
        let input: EditInput = match parse_input("edit", input) {
            Ok(input) => input,
            Err(result) => return result,
        };
        let workspace = self.workspace.clone();
        let cx = cx.clone();
        blocking(move || edit(&workspace, &cx, &input)).await
    }
}

fn edit(workspace: &Workspace, cx: &ToolContext, input: &EditInput) -> Result<ToolResult, ToolError> {
    check_strings(input)?;
    let root = Root::open(workspace, cx)?;
    let target = root.resolve(&input.path)?;
    let limits = workspace.limits();
    let text = load_text(&root, &target, limits)?;
    let (old, new) = line_endings(&text, &input.old_string, &input.new_string);
    let starts = match_starts(&text, &old, &target, input.replace_all)?;
    let updated = if input.replace_all {
        text.replace(old.as_str(), &new)
    } else {
        text.replacen(old.as_str(), &new, 1)
    };
    if updated.len() as u64 > limits.max_file_bytes {
        return Err(ToolError::failed(format!(
            "the edited file would be {} bytes, over the limit of {} bytes",
            updated.len(),
            limits.max_file_bytes
        )));
    }
    let written = atomic_write(&root, &target, updated.as_bytes())?;
    let count = starts.len();
    let first_line = line_of(&text, starts[0]);
    let mut out = format!(
        "Replaced {count} {} in `{}`. The first change, with line numbers:\n",
        if count == 1 { "occurrence" } else { "occurrences" },
        written.shown
    );
    out.push_str(&snippet(&updated, first_line, new.lines().count().max(1), limits));
    let (out, _) = truncate(out, limits.max_output_chars, Keep::Head, "");
    Ok(ToolResult::text(out).with_metadata(json!({
        "path": written.shown,
        "replacements": count,
        "first_line": first_line,
    })))
}

/// Refuse an empty `old_string` and a replacement that changes nothing.
fn check_strings(input: &EditInput) -> Result<(), ToolError> {
    if input.old_string.is_empty() {
        return Err(ToolError::failed(
            "`old_string` is empty; give the exact text to replace (use `write` to create a file)",
        ));
    }
    if input.old_string == input.new_string {
        return Err(ToolError::failed(
            "`old_string` and `new_string` are identical; nothing to change",
        ));
    }
    Ok(())
}

/// The file's text; a directory, a binary file or one that is not valid UTF-8 is refused.
fn load_text(root: &Root, target: &Target, limits: &Limits) -> Result<String, ToolError> {
    let (file, len) = match open_file(root, target)? {
        Opened::Dir => return Err(ToolError::failed(format!("`{}` is a directory", target.shown))),
        Opened::File(file, len) => (file, len),
    };
    match load(file, len, target, limits)? {
        Loaded::Text(text) if !text.lossy => Ok(text.text),
        Loaded::Text(_) => Err(ToolError::failed(format!(
            "`{}` is not valid UTF-8; edit cannot change it safely",
            target.shown
        ))),
        Loaded::Binary(_) => Err(ToolError::failed(format!("`{}` is a binary file", target.shown))),
    }
}

/// Byte offsets of every match of `old`: at least one, and only one unless `replace_all`.
fn match_starts(text: &str, old: &str, target: &Target, replace_all: bool) -> Result<Vec<usize>, ToolError> {
    let starts: Vec<usize> = text.match_indices(old).map(|(i, _)| i).collect();
    if starts.is_empty() {
        return Err(ToolError::failed(format!(
            "`old_string` was not found in `{}` (0 matches). It must match exactly, including whitespace \
             and indentation; read the file and copy the text from it.",
            target.shown
        )));
    }
    if starts.len() > 1 && !replace_all {
        let lines: Vec<String> = starts.iter().map(|&i| line_of(text, i).to_string()).collect();
        return Err(ToolError::failed(format!(
            "`old_string` matches {} times in `{}` (at lines {}); add surrounding context to make it \
             unique, or set `replace_all` to true to replace every match",
            starts.len(),
            target.shown,
            lines.join(", ")
        )));
    }
    Ok(starts)
}

/// The changed lines of `updated` from `first_line`, with [`SNIPPET_CONTEXT`] lines around them,
/// numbered.
fn snippet(updated: &str, first_line: usize, changed_lines: usize, limits: &Limits) -> String {
    let mut out = String::new();
    let lines: Vec<&str> = updated.lines().collect();
    let from = first_line.saturating_sub(SNIPPET_CONTEXT).max(1);
    let to = (first_line + changed_lines - 1 + SNIPPET_CONTEXT).min(lines.len());
    for number in from..=to {
        if let Some(line) = lines.get(number - 1) {
            out.push_str(&format!("{number:>6}\t{}\n", clip_line(line, limits.max_line_chars)));
        }
    }
    out
}

/// The strings to use: as given, or with `\r\n` line endings when the file uses them and the
/// model sent `\n` (models rarely reproduce carriage returns).
fn line_endings(text: &str, old: &str, new: &str) -> (String, String) {
    let crlf = |s: &str| s.replace("\r\n", "\n").replace('\n', "\r\n");
    if old.contains('\n') && !old.contains('\r') && text.contains("\r\n") && !text.contains(old) {
        let (old_crlf, new_crlf) = (crlf(old), crlf(new));
        if text.contains(&old_crlf) {
            return (old_crlf, new_crlf);
        }
    }
    (old.to_string(), new.to_string())
}

/// The 1-based line number of byte offset `at`.
fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1
}
