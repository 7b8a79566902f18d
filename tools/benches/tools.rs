//! What confinement costs: each tool against a baseline doing the same work with the same
//! ripgrep crates on plain paths (no root handle, no per-entry check, no blocking-pool hop).
//!
//! Run: `cargo bench -p patchbay-tools --bench tools`.
#![allow(missing_docs, clippy::unwrap_used)]

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use globset::GlobBuilder;
use grep_regex::RegexMatcher;
use grep_searcher::Searcher;
use grep_searcher::sinks::UTF8;
use ignore::WalkBuilder;
use patchbay_core::{ToolContext, ToolSet};
use patchbay_tools::{Workspace, coding_tools};
use serde_json::json;

/// 2,000 files in 40 directories, a `.gitignore`, one 20,000-line file.
fn tree(root: &Path) {
    for d in 0..40 {
        let dir = root.join(format!("src/mod{d:02}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..50 {
            let body: String = (0..40)
                .map(|l| format!("fn item_{d}_{f}_{l}() {{ let x = {l}; }}\n"))
                .collect();
            let body = if f == 7 { format!("{body}// needle_{d}\n") } else { body };
            std::fs::write(dir.join(format!("file{f:02}.rs")), body).unwrap();
        }
    }
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
    let big: String = (0..20_000).map(|i| format!("line {i} of a long log file\n")).collect();
    std::fs::write(root.join("big.log"), big).unwrap();
}

fn walker(root: &Path) -> ignore::Walk {
    WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .build()
}

fn baseline_glob(root: &Path) -> Vec<String> {
    let glob = GlobBuilder::new("**/*.rs")
        .literal_separator(true)
        .build()
        .unwrap()
        .compile_matcher();
    let mut out: Vec<String> = walker(root)
        .flatten()
        .filter_map(|entry| {
            let rel = entry.path().strip_prefix(root).ok()?;
            glob.is_match(rel).then(|| rel.display().to_string())
        })
        .collect();
    out.sort();
    out
}

fn baseline_grep(root: &Path) -> Vec<String> {
    let matcher = RegexMatcher::new_line_matcher(r"needle_\d+").unwrap();
    let mut searcher = Searcher::new();
    let mut out = Vec::new();
    for entry in walker(root).flatten() {
        if !entry.file_type().is_some_and(|kind| kind.is_file()) {
            continue;
        }
        let shown = entry.path().strip_prefix(root).unwrap().display().to_string();
        let _ = searcher.search_path(
            &matcher,
            entry.path(),
            UTF8(|line, text| {
                out.push(format!("{shown}:{line}:{text}"));
                Ok(true)
            }),
        );
    }
    out
}

fn baseline_read(root: &Path) -> String {
    let text = std::fs::read_to_string(root.join("big.log")).unwrap();
    let mut out = String::new();
    for (i, line) in text.lines().take(2000).enumerate() {
        out.push_str(&format!("{:>6}\t{line}\n", i + 1));
    }
    out
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    tree(&root);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let tools: ToolSet = coding_tools(Workspace::new(&root));
    let cx = ToolContext::new();
    let call = |name: &'static str, input: serde_json::Value| {
        let tool = tools.get(name).unwrap().clone();
        let cx = cx.clone();
        move || {
            let (tool, cx, input) = (tool.clone(), cx.clone(), input.clone());
            async move { black_box(tool.execute(input, &cx).await) }
        }
    };

    let mut group = c.benchmark_group("glob **/*.rs (2,000 files)");
    group.bench_function("baseline", |b| b.iter(|| black_box(baseline_glob(&root))));
    group.bench_function("tool", |b| {
        b.to_async(&rt).iter(call("glob", json!({"pattern": "**/*.rs"})))
    });
    group.finish();

    let mut group = c.benchmark_group("grep needle (2,000 files)");
    group.bench_function("baseline", |b| b.iter(|| black_box(baseline_grep(&root))));
    group.bench_function("tool", |b| {
        b.to_async(&rt).iter(call("grep", json!({"pattern": r"needle_\d+"})))
    });
    group.finish();

    let mut group = c.benchmark_group("read 2,000 of 20,000 lines");
    group.bench_function("baseline", |b| b.iter(|| black_box(baseline_read(&root))));
    group.bench_function("tool", |b| {
        b.to_async(&rt).iter(call("read", json!({"path": "big.log"})))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
