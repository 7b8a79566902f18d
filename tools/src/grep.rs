//! `grep`: regex search over files, gitignore-aware, with context lines, sorted and limited.
//! Built on ripgrep's crates (`grep-regex`, `grep-searcher`, `ignore`, `globset`).

use std::io;

use async_trait::async_trait;
use globset::{GlobBuilder, GlobMatcher};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use patchbay_core::{Signal, Tool, ToolContext, ToolResult, ToolSpec, tool::parse_input};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::{ToolError, blocking};
use crate::output::{Keep, clip_line, truncate};
use crate::read::{Opened, open_file};
use crate::root::{Root, Target, slash};
use crate::walk::{Kind, check_pattern, walk};
use crate::workspace::Workspace;

/// What `grep` returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    /// Matching lines as `path:line:text`, context lines as `path-line-text` (default).
    #[default]
    Content,
    /// Only the paths of files that match.
    FilesWithMatches,
    /// `path:count` for each file that matches.
    Count,
}

/// Input of the `grep` tool.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct GrepInput {
    /// The regular expression (Rust regex syntax, like ripgrep), matched line by line.
    pub pattern: String,
    /// The file or directory to search, relative to the workspace root (default: the root).
    #[serde(default)]
    pub path: Option<String>,
    /// Only search files matching this glob: without `/` it matches file names (`*.rs`,
    /// `*.{ts,tsx}`), with `/` paths relative to `path` (`src/**/*.rs`).
    #[serde(default, alias = "include")]
    pub glob: Option<String>,
    /// Match case-insensitively (default false).
    #[serde(default)]
    pub case_insensitive: bool,
    /// Lines of context before and after each match (default 0).
    #[serde(default)]
    pub context: Option<usize>,
    /// `content` (default), `files_with_matches` or `count`.
    #[serde(default)]
    pub output_mode: OutputMode,
    /// The most matching lines (or files) to return (default and maximum: the workspace's
    /// result limit, 1,000).
    #[serde(default)]
    pub limit: Option<usize>,
}

const DESCRIPTION: &str = "Search file contents with a regular expression (ripgrep syntax). Returns \
`path:line:text` for each matching line (context lines as `path-line-text`, groups separated by \
`--`), or with `output_mode` only the matching files or a count per file. Narrow the search with \
`path` (a file or directory) and `glob` (`*.rs`, `src/**/*.ts`). Files ignored by .gitignore, \
binary files and the `.git` directory are skipped. Paths are relative to the workspace root.";

/// Context lines allowed at most.
const MAX_CONTEXT: usize = 20;

/// The `grep` tool: regex search over files, gitignore-aware, with context lines, sorted and limited.
#[derive(Debug, Clone)]
pub struct GrepTool {
    workspace: Workspace,
    spec: ToolSpec,
}

impl GrepTool {
    /// A `grep` tool for this workspace.
    pub fn new(workspace: Workspace) -> Self {
        let mut spec = ToolSpec::for_input::<GrepInput>("grep", DESCRIPTION);
        spec.annotations = Some(json!({"readOnlyHint": true}));
        Self { workspace, spec }
    }
}

#[async_trait]
impl Tool for GrepTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn execute(&self, input: Value, cx: &ToolContext) -> ToolResult {
        let input: GrepInput = match parse_input("grep", input) {
            Ok(input) => input,
            Err(result) => return result,
        };
        let workspace = self.workspace.clone();
        let cx = cx.clone();
        blocking(move || grep(&workspace, &cx, &input)).await
    }
}

/// The file filter: a glob on file names, or on paths when it has a `/`.
struct FileFilter {
    matcher: GlobMatcher,
    on_name: bool,
}

fn file_filter(glob: Option<&str>) -> Result<Option<FileFilter>, ToolError> {
    let Some(glob) = glob
        .map(|glob| glob.trim_start_matches("./"))
        .filter(|glob| !glob.is_empty())
    else {
        return Ok(None);
    };
    check_pattern(glob)?;
    let matcher = GlobBuilder::new(glob)
        .literal_separator(true)
        .build()
        .map_err(|err| ToolError::failed(format!("invalid glob `{glob}`: {err}")))?
        .compile_matcher();
    Ok(Some(FileFilter {
        matcher,
        on_name: !glob.contains('/'),
    }))
}

fn grep(workspace: &Workspace, cx: &ToolContext, input: &GrepInput) -> Result<ToolResult, ToolError> {
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(input.case_insensitive)
        .line_terminator(Some(b'\n'))
        .build(&input.pattern)
        .map_err(|err| ToolError::failed(format!("invalid regular expression `{}`: {err}", input.pattern)))?;
    let filter = file_filter(input.glob.as_deref())?;
    let root = Root::open(workspace, cx)?;
    let target = root.resolve(input.path.as_deref().unwrap_or("."))?;
    let limits = workspace.limits();
    let context = input.context.unwrap_or(0).min(MAX_CONTEXT);
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .before_context(context)
        .after_context(context)
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .build();
    let mut collect = Collect {
        mode: input.output_mode,
        budget: input
            .limit
            .unwrap_or(limits.max_results)
            .clamp(1, limits.max_results.max(1)),
        max_line_chars: limits.max_line_chars.min(500),
        signal: cx.signal.clone(),
        out: Vec::new(),
        matches: 0,
        files: 0,
        binary_skipped: 0,
        limited: false,
        file: FileState::default(),
    };
    let mut unreadable = 0;
    match open_file(&root, &target)? {
        Opened::File(file, _) => {
            search(&mut searcher, &matcher, file, &target.shown, &mut collect)?;
        }
        Opened::Dir => {
            let start = root.walk_start(&target)?;
            unreadable = walk(&root, &start, None, &cx.signal, |entry| {
                if entry.kind != Kind::File {
                    return Ok(true);
                }
                if let Some(filter) = &filter {
                    let subject = if filter.on_name {
                        entry.from_start.file_name().map(std::path::Path::new)
                    } else {
                        Some(entry.from_start.as_path())
                    };
                    if !subject.is_some_and(|subject| filter.matcher.is_match(subject)) {
                        return Ok(true);
                    }
                }
                let shown = slash(&entry.from_root);
                let file_target = Target {
                    rel: entry.from_root,
                    shown,
                };
                // Opened through the root handle: confined even if the tree changed mid-walk.
                let Ok(Opened::File(file, _)) = open_file(&root, &file_target) else {
                    return Ok(true);
                };
                search(&mut searcher, &matcher, file, &file_target.shown, &mut collect)?;
                Ok(!collect.limited)
            })?;
        }
    }
    Ok(collect.finish(input, &target, unreadable, limits.max_output_chars))
}

fn search(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    file: cap_std::fs::File,
    shown: &str,
    collect: &mut Collect,
) -> Result<(), ToolError> {
    if collect.signal.is_cancelled() {
        return Err(ToolError::Aborted);
    }
    collect.file = FileState {
        shown: shown.to_string(),
        ..FileState::default()
    };
    // A file that cannot be read (or is not text) is skipped, as ripgrep does.
    let _ = searcher.search_file(matcher, &file.into_std(), &mut *collect);
    if collect.signal.is_cancelled() {
        return Err(ToolError::Aborted);
    }
    collect.end_file();
    Ok(())
}

/// Per-file state of the sink.
#[derive(Default)]
struct FileState {
    shown: String,
    lines: Vec<String>,
    matches: usize,
    binary: bool,
}

/// Collects results across files.
struct Collect {
    mode: OutputMode,
    /// Matching lines (or files) still allowed.
    budget: usize,
    max_line_chars: usize,
    signal: Signal,
    out: Vec<String>,
    matches: usize,
    files: usize,
    binary_skipped: usize,
    limited: bool,
    file: FileState,
}

impl Collect {
    fn line(&self, separator: char, number: Option<u64>, bytes: &[u8]) -> String {
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_end_matches(['\n', '\r']);
        let number = number.map_or_else(String::new, |n| n.to_string());
        format!(
            "{}{separator}{number}{separator}{}",
            self.file.shown,
            clip_line(text, self.max_line_chars)
        )
    }

    fn end_file(&mut self) {
        let file = std::mem::take(&mut self.file);
        if file.binary {
            self.binary_skipped += 1;
            return;
        }
        if file.matches == 0 {
            return;
        }
        self.files += 1;
        self.matches += file.matches;
        match self.mode {
            OutputMode::Content => {
                if !self.out.is_empty() && file.lines.len() > file.matches {
                    self.out.push("--".into());
                }
                self.out.extend(file.lines);
            }
            OutputMode::FilesWithMatches => self.out.push(file.shown),
            OutputMode::Count => self.out.push(format!("{}:{}", file.shown, file.matches)),
        }
        if self.mode != OutputMode::Content {
            self.budget = self.budget.saturating_sub(1);
            self.limited = self.budget == 0;
        }
    }

    fn finish(self, input: &GrepInput, target: &Target, unreadable: usize, max_chars: usize) -> ToolResult {
        let mut text = String::new();
        if self.matches == 0 {
            text.push_str(&format!("No matches for `{}` in `{}`.\n", input.pattern, target.shown));
        } else {
            let (files, noun) = (self.files, if self.files == 1 { "file" } else { "files" });
            match self.mode {
                OutputMode::Content | OutputMode::Count => text.push_str(&format!(
                    "{} matching {} in {files} {noun}:\n",
                    self.matches,
                    if self.matches == 1 { "line" } else { "lines" }
                )),
                OutputMode::FilesWithMatches => text.push_str(&format!("{files} {noun} match:\n")),
            }
            for line in &self.out {
                text.push_str(line);
                text.push('\n');
            }
        }
        if self.limited {
            text.push_str("[result limit reached; more matches may exist. Narrow the pattern, `path` or `glob`]\n");
        }
        if self.binary_skipped > 0 {
            text.push_str(&format!("[{} binary files skipped]\n", self.binary_skipped));
        }
        if unreadable > 0 {
            text.push_str(&format!("[{unreadable} paths could not be read and were skipped]\n"));
        }
        let (text, cut) = truncate(text, max_chars, Keep::Head, "Narrow the pattern, `path` or `glob`.");
        ToolResult::text(text).with_metadata(json!({
            "pattern": input.pattern,
            "path": target.shown,
            "matches": self.matches,
            "files": self.files,
            "limited": self.limited,
            "truncated_chars": cut,
        }))
    }
}

impl Sink for Collect {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, io::Error> {
        if self.signal.is_cancelled() {
            return Ok(false);
        }
        self.file.matches += 1;
        match self.mode {
            OutputMode::Content => {
                let line = self.line(':', found.line_number(), found.bytes());
                self.file.lines.push(line);
                self.budget = self.budget.saturating_sub(1);
                if self.budget == 0 {
                    self.limited = true;
                    return Ok(false);
                }
                Ok(true)
            }
            OutputMode::FilesWithMatches => Ok(false),
            OutputMode::Count => Ok(true),
        }
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, io::Error> {
        if self.mode == OutputMode::Content {
            let line = self.line('-', context.line_number(), context.bytes());
            self.file.lines.push(line);
        }
        Ok(!self.signal.is_cancelled())
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, io::Error> {
        if self.mode == OutputMode::Content {
            self.file.lines.push("--".into());
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, io::Error> {
        self.file.binary = true;
        Ok(false)
    }
}
