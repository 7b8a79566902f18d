//! `read`: a file with line numbers and line ranges, or a directory listing.

use std::io::Read;

use async_trait::async_trait;
use cap_std::fs::File;
use patchbay_core::{Tool, ToolContext, ToolResult, ToolSpec, tool::parse_input};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::{ToolError, blocking};
use crate::output::{Keep, clip_line, truncate};
use crate::root::{Root, Target, io_failure};
use crate::workspace::{Limits, Workspace};

/// Input of the `read` tool.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ReadInput {
    /// The file or directory to read, relative to the workspace root (an absolute path inside
    /// the root also works). A directory returns a listing of its entries.
    #[serde(alias = "file_path")]
    pub path: String,
    /// The 1-based line to start from (default 1).
    #[serde(default)]
    pub offset: Option<usize>,
    /// How many lines to return (default and maximum: the workspace's line limit, 2,000).
    #[serde(default)]
    pub limit: Option<usize>,
}

const DESCRIPTION: &str = "Read a text file inside the workspace, with line numbers (`   12\\tline`). \
Use `offset` (1-based line) and `limit` (number of lines) to read part of a long file; the output \
says which lines were shown and how to continue. Binary files are detected and not shown. \
Reading a directory (`.` for the workspace root) lists its entries: directories end with `/`, \
symbolic links with `@`. Paths are relative to the workspace root and cannot leave it.";

/// The `read` tool: a file with line numbers and line ranges, or a directory listing.
#[derive(Debug, Clone)]
pub struct ReadTool {
    workspace: Workspace,
    spec: ToolSpec,
}

impl ReadTool {
    /// A `read` tool for this workspace.
    pub fn new(workspace: Workspace) -> Self {
        let mut spec = ToolSpec::for_input::<ReadInput>("read", DESCRIPTION);
        spec.annotations = Some(json!({"readOnlyHint": true}));
        Self { workspace, spec }
    }
}

#[async_trait]
impl Tool for ReadTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn execute(&self, input: Value, cx: &ToolContext) -> ToolResult {
        let input: ReadInput = match parse_input("read", input) {
            Ok(input) => input,
            Err(result) => return result,
        };
        let workspace = self.workspace.clone();
        let cx = cx.clone();
        blocking(move || read(&workspace, &cx, &input)).await
    }
}

fn read(workspace: &Workspace, cx: &ToolContext, input: &ReadInput) -> Result<ToolResult, ToolError> {
    let root = Root::open(workspace, cx)?;
    let target = root.resolve(&input.path)?;
    let limits = workspace.limits();
    let (file, len) = match open_file(&root, &target)? {
        Opened::Dir => return list_dir(&root, &target, limits),
        Opened::File(file, len) => (file, len),
    };
    let contents = match load(file, len, &target, limits)? {
        Loaded::Text(text) => text,
        Loaded::Binary(bytes) => {
            return Ok(ToolResult::text(format!(
                "`{}` is a binary file ({bytes} bytes); its contents are not shown.",
                target.shown
            ))
            .with_metadata(json!({"path": target.shown, "binary": true, "bytes": bytes})));
        }
    };
    let lines: Vec<&str> = split_lines(&contents.text);
    let total = lines.len();
    let start = input.offset.unwrap_or(1).max(1);
    let count = input
        .limit
        .unwrap_or(limits.max_lines)
        .clamp(1, limits.max_lines.max(1));
    if total == 0 {
        return Ok(ToolResult::text(format!("`{}` is empty.", target.shown))
            .with_metadata(json!({"path": target.shown, "total_lines": 0})));
    }
    if start > total {
        return Err(ToolError::failed(format!(
            "offset {start} is past the end of `{}`, which has {total} lines",
            target.shown
        )));
    }
    let end = (start - 1 + count).min(total);
    let width = end.to_string().len().max(6);
    let mut out = String::new();
    if contents.lossy {
        out.push_str("[not valid UTF-8: invalid bytes are shown as \u{fffd}]\n");
    }
    for (i, line) in lines[start - 1..end].iter().enumerate() {
        let number = start + i;
        out.push_str(&format!(
            "{number:>width$}\t{}\n",
            clip_line(line, limits.max_line_chars)
        ));
    }
    if start > 1 || end < total {
        out.push_str(&format!("[lines {start}-{end} of {total}"));
        if end < total {
            out.push_str(&format!("; continue with offset={}", end + 1));
        }
        out.push_str("]\n");
    }
    let (out, cut) = truncate(
        out,
        limits.max_output_chars,
        Keep::Head,
        "Read fewer lines with `offset` and `limit`.",
    );
    Ok(ToolResult::text(out).with_metadata(json!({
        "path": target.shown,
        "start_line": start,
        "end_line": end,
        "total_lines": total,
        "truncated_chars": cut,
    })))
}

/// An opened path.
pub(crate) enum Opened {
    /// A directory.
    Dir,
    /// A regular file and its length.
    File(File, u64),
}

/// Open a path for reading through the root handle and tell what it is from the opened
/// handle (no check-then-open window). Opened non-blocking, so a FIFO cannot hang the call.
pub(crate) fn open_file(root: &Root, target: &Target) -> Result<Opened, ToolError> {
    let fail = |err: std::io::Error| io_failure(&err, &target.shown);
    let mut options = cap_std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt;
        options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    let file = root.dir.open_with(&target.rel, &options).map_err(fail)?;
    let meta = file.metadata().map_err(fail)?;
    if meta.is_dir() {
        return Ok(Opened::Dir);
    }
    if !meta.is_file() {
        return Err(ToolError::failed(format!("`{}` is not a regular file", target.shown)));
    }
    Ok(Opened::File(file, meta.len()))
}

/// Split into lines without the line terminators (`\n` or `\r\n`).
pub(crate) fn split_lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

/// A text file's contents.
pub(crate) struct Text {
    pub(crate) text: String,
    /// Invalid UTF-8 was replaced.
    pub(crate) lossy: bool,
}

/// What a file turned out to hold.
pub(crate) enum Loaded {
    Text(Text),
    /// A binary file (NUL bytes), with its size.
    Binary(u64),
}

/// Load an opened regular file, within the size limit, telling text from binary.
pub(crate) fn load(file: File, len: u64, target: &Target, limits: &Limits) -> Result<Loaded, ToolError> {
    if len > limits.max_file_bytes {
        return Err(ToolError::failed(format!(
            "`{}` is {len} bytes, over the limit of {} bytes; use grep to find what you need in it",
            target.shown, limits.max_file_bytes
        )));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(limits.max_file_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| io_failure(&err, &target.shown))?;
    if bytes.len() as u64 > limits.max_file_bytes {
        return Err(ToolError::failed(format!(
            "`{}` grew over the limit of {} bytes while being read",
            target.shown, limits.max_file_bytes
        )));
    }
    if is_binary(&bytes) {
        return Ok(Loaded::Binary(bytes.len() as u64));
    }
    Ok(Loaded::Text(match String::from_utf8(bytes) {
        Ok(text) => Text { text, lossy: false },
        Err(err) => Text {
            text: String::from_utf8_lossy(err.as_bytes()).into_owned(),
            lossy: true,
        },
    }))
}

/// Binary when a NUL byte appears in the first 8 KiB (the heuristic git and ripgrep use).
fn is_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(8192)].contains(&0)
}

fn list_dir(root: &Root, target: &Target, limits: &Limits) -> Result<ToolResult, ToolError> {
    let dir = root
        .dir
        .open_dir(&target.rel)
        .map_err(|err| io_failure(&err, &target.shown))?;
    let entries = dir.entries().map_err(|err| io_failure(&err, &target.shown))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|err| io_failure(&err, &target.shown))?;
        let mut name = entry.file_name().to_string_lossy().into_owned();
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => name.push('/'),
            Ok(kind) if kind.is_symlink() => name.push('@'),
            _ => {}
        }
        names.push(name);
    }
    names.sort();
    let total = names.len();
    let shown = total.min(limits.max_results);
    let mut out = format!(
        "Directory `{}` ({total} {}):\n",
        target.shown,
        if total == 1 { "entry" } else { "entries" }
    );
    for name in &names[..shown] {
        out.push_str(name);
        out.push('\n');
    }
    if shown < total {
        out.push_str(&format!(
            "[showing {shown} of {total} entries; use glob with a pattern to find the rest]\n"
        ));
    }
    let (out, cut) = truncate(
        out,
        limits.max_output_chars,
        Keep::Head,
        "Use glob with a narrower pattern.",
    );
    Ok(ToolResult::text(out).with_metadata(json!({
        "path": target.shown,
        "directory": true,
        "entries": total,
        "shown": shown,
        "truncated_chars": cut,
    })))
}
