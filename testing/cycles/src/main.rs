//! `patchbay-cycles [--allow FILE] [DIR]`: reads every crate under `DIR` (default `.`; `target`,
//! `node_modules` and hidden folders skipped) and exits 1 when a crate has an import cycle
//! between its files that `FILE` does not allow. `FILE` lists one allowed cycle per line, its
//! files relative to `DIR` separated by spaces (any order); `#` starts a comment, which should
//! say why the cycle stays.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use patchbay_cycles::{CrateGraph, Cycle};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut allow_file = None;
    let mut dir = PathBuf::from(".");
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--allow" => allow_file = args.next().map(PathBuf::from),
            "-h" | "--help" => {
                println!("usage: patchbay-cycles [--allow FILE] [DIR]");
                return ExitCode::SUCCESS;
            }
            _ => dir = PathBuf::from(arg),
        }
    }
    let allowed = match allow_file.as_deref().map(read_allowed).transpose() {
        Ok(allowed) => allowed.unwrap_or_default(),
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let mut roots = Vec::new();
    find_roots(&dir, &mut roots);
    roots.sort();
    let mut refused = 0;
    let mut seen = BTreeSet::new();
    for root in &roots {
        let graph = match CrateGraph::read(root) {
            Ok(graph) => graph,
            Err(error) => {
                eprintln!("{error}");
                return ExitCode::from(2);
            }
        };
        for cycle in graph.cycles() {
            let files = relative(&cycle, &dir);
            let verdict = if allowed.contains(&files) { "allowed" } else { "REFUSED" };
            if verdict == "REFUSED" {
                refused += 1;
            }
            seen.insert(files);
            print!("{verdict} {}", shown(&cycle, &dir));
        }
    }
    for stale in allowed.difference(&seen) {
        println!("note: the allowed cycle {stale:?} no longer exists: remove it from the list");
    }
    println!("{} crate roots read, {refused} cycles refused", roots.len());
    if refused > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The allowed cycles of `file`: each a sorted set of relative paths.
fn read_allowed(file: &Path) -> Result<BTreeSet<Vec<String>>, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    Ok(text
        .lines()
        .map(|line| line.split('#').next().unwrap_or_default().trim())
        .filter(|line| !line.is_empty())
        .map(|line| {
            let mut files: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
            files.sort();
            files
        })
        .collect())
}

fn relative(cycle: &Cycle, dir: &Path) -> Vec<String> {
    let mut files: Vec<String> = cycle
        .files
        .iter()
        .map(|f| f.strip_prefix(dir).unwrap_or(f).display().to_string())
        .collect();
    files.sort();
    files
}

fn shown(cycle: &Cycle, dir: &Path) -> String {
    cycle.to_string().replace(&format!("{}/", dir.display()), "")
}

/// The crate root files (`src/lib.rs`, `src/main.rs`, `src/bin/*.rs`) of every package under
/// `dir`.
fn find_roots(dir: &Path, roots: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    if dir.join("Cargo.toml").is_file() {
        for root in ["src/lib.rs", "src/main.rs"] {
            let file = dir.join(root);
            if file.is_file() {
                roots.push(file);
            }
        }
        if let Ok(bins) = std::fs::read_dir(dir.join("src/bin")) {
            for bin in bins.flatten() {
                let path = bin.path();
                if path.extension().is_some_and(|e| e == "rs") {
                    roots.push(path);
                } else if path.join("main.rs").is_file() {
                    roots.push(path.join("main.rs"));
                }
            }
        }
    }
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() && !name.starts_with('.') && name != "target" && name != "node_modules" {
            find_roots(&path, roots);
        }
    }
}
