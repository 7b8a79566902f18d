//! The traversal corpus: every path-taking tool, every attempt, zero escapes.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use patchbay_core::{ToolResult, tool::ToolStatus};
use serde_json::json;

use crate::support::{Fixture, tree};

/// A distinctive name present only outside the root: listing it would be an escape.
const MARKER: &str = "marker-7f3a";
/// The content of the secret files outside the root: reading it would be an escape.
const SECRET: &str = "TOPSECRET";

/// A fixture full of traps: symlinks out, loops, a sibling whose name extends the root's.
fn trapped() -> Fixture {
    let fx = Fixture::new();
    let outer = &fx.outer;
    std::fs::write(outer.join(format!("outside/{MARKER}.txt")), "x").unwrap();
    std::fs::create_dir(outer.join("rootx")).unwrap();
    std::fs::write(outer.join("rootx/secret.txt"), format!("{SECRET}\n")).unwrap();
    std::fs::write(outer.join(format!("rootx/{MARKER}.txt")), "x").unwrap();
    fx.file("inside.txt", "inside\n").file("sub/file.txt", "sub\n");
    let root = &fx.root;
    symlink("../outside", root.join("link_out")).unwrap();
    symlink(outer.join("outside/secret.txt"), root.join("link_abs")).unwrap();
    symlink(outer.join("outside"), root.join("link_abs_dir")).unwrap();
    symlink("chain2", root.join("chain1")).unwrap();
    symlink("../outside/secret.txt", root.join("chain2")).unwrap();
    symlink("loop_b", root.join("loop_a")).unwrap();
    symlink("loop_a", root.join("loop_b")).unwrap();
    symlink("self_loop", root.join("self_loop")).unwrap();
    symlink("..", root.join("sub/up")).unwrap();
    symlink("../..", root.join("sub/upup")).unwrap();
    symlink("../outside/new.txt", root.join("dangling_out")).unwrap();
    symlink("../rootx", root.join("link_rootx")).unwrap();
    fx
}

struct Attempt {
    path: String,
    /// Leads outside the root: every tool must answer `Denied`.
    escape: bool,
    /// Safe to hand to tools that write (no system paths).
    writable: bool,
}

fn corpus(fx: &Fixture) -> Vec<Attempt> {
    let outer = fx.outer.display().to_string();
    let root = fx.root.display().to_string();
    let escape = |path: String| Attempt {
        path,
        escape: true,
        writable: true,
    };
    let system = |path: &str| Attempt {
        path: path.into(),
        escape: true,
        writable: false,
    };
    let other = |path: String| Attempt {
        path,
        escape: false,
        writable: true,
    };
    let mut attempts = vec![
        // dot-dot
        escape("../outside/secret.txt".into()),
        escape("..".into()),
        escape("./../outside/secret.txt".into()),
        escape("sub/../../outside/secret.txt".into()),
        escape("sub/./../../outside/secret.txt".into()),
        escape("sub/file.txt/../../../outside/secret.txt".into()),
        escape("../root/inside.txt".into()),
        escape("~/../../outside/secret.txt".into()),
        escape(format!("{}outside/secret.txt", "../".repeat(2000))),
        escape(format!("{}{}outside/secret.txt", "a/".repeat(3000), "../".repeat(3001))),
        system("../../../../../../../../etc/passwd"),
        // absolute
        escape(format!("{outer}/outside/secret.txt")),
        escape(format!("{outer}/rootx/secret.txt")),
        escape(format!("{root}/../outside/secret.txt")),
        escape(format!("/{outer}/outside/secret.txt")),
        escape(format!("{root}/link_out/secret.txt")),
        system("/etc/passwd"),
        system("/"),
        // symlinks pointing out, directly, through directories, in chains
        escape("link_out/secret.txt".into()),
        escape("link_out".into()),
        escape("link_abs".into()),
        escape("link_abs_dir".into()),
        escape("link_abs_dir/secret.txt".into()),
        escape("chain1".into()),
        escape("sub/upup".into()),
        escape("sub/upup/outside/secret.txt".into()),
        escape("sub/up/link_out/secret.txt".into()),
        escape("sub/../link_abs".into()),
        escape("link_rootx/secret.txt".into()),
        escape("dangling_out".into()),
        // symlink loops
        // `..` is resolved lexically: this names `outside/secret.txt` inside the root (absent)
        other("sub/up/../../outside/secret.txt".into()),
        other("loop_a".into()),
        other("loop_b/secret.txt".into()),
        other("self_loop".into()),
        // unicode and encoding tricks: odd names inside the root, never a way out
        other("\u{2025}/outside/secret.txt".into()),
        other("\u{ff0e}\u{ff0e}/outside/secret.txt".into()),
        other("..\u{200b}/outside/secret.txt".into()),
        other(".\u{0307}./outside/secret.txt".into()),
        other("..\u{2215}outside\u{2215}secret.txt".into()),
        other("\u{202e}txt.terces/edistuo/..".into()),
        other("%2e%2e/outside/secret.txt".into()),
        other("..\\outside\\secret.txt".into()),
        other(".../outside/secret.txt".into()),
        other(" ../outside/secret.txt".into()),
        // very long names, NUL bytes
        other("x".repeat(300)),
        other(format!("{}f", "d/".repeat(3000))),
        other("inside.txt\0/../../outside/secret.txt".into()),
    ];
    attempts.retain(|attempt| !attempt.path.is_empty());
    attempts
}

/// Everything in the outer directory except the root: must never change.
fn outside_state(fx: &Fixture) -> Vec<(String, String)> {
    tree(&fx.outer)
        .into_iter()
        .filter(|(path, _)| !path.starts_with("root/"))
        .collect()
}

#[track_caller]
fn check(tool: &str, attempt: &Attempt, result: &ToolResult, completed_ok: bool) {
    let text = result.text_content();
    let shown: String = attempt.path.chars().take(60).collect();
    assert!(!text.contains(SECRET), "{tool} leaked a secret for `{shown}`: {text}");
    assert!(!text.contains(MARKER), "{tool} listed outside for `{shown}`: {text}");
    if attempt.escape {
        assert_eq!(result.status, ToolStatus::Denied, "{tool} `{shown}`: {text}");
        assert!(!text.is_empty());
    } else if !completed_ok {
        assert_ne!(result.status, ToolStatus::Completed, "{tool} `{shown}`: {text}");
    }
}

#[tokio::test]
async fn the_corpus_is_large_enough() {
    let fx = trapped();
    let attempts = corpus(&fx);
    assert!(attempts.len() >= 30);
    assert!(attempts.iter().filter(|attempt| attempt.escape).count() >= 30);
}

#[tokio::test]
async fn read_never_escapes() {
    let fx = trapped();
    for attempt in corpus(&fx) {
        let result = fx.run("read", json!({"path": attempt.path})).await;
        check("read", &attempt, &result, false);
    }
}

#[tokio::test]
async fn write_never_escapes() {
    let fx = trapped();
    let before = outside_state(&fx);
    for attempt in corpus(&fx).into_iter().filter(|attempt| attempt.writable) {
        let result = fx.run("write", json!({"path": attempt.path, "content": "PWNED"})).await;
        // Odd unicode names are legitimate files inside the root.
        check("write", &attempt, &result, true);
    }
    assert_eq!(outside_state(&fx), before, "something outside the root changed");
}

#[tokio::test]
async fn edit_never_escapes() {
    let fx = trapped();
    let before = outside_state(&fx);
    for attempt in corpus(&fx).into_iter().filter(|attempt| attempt.writable) {
        let input = json!({"path": attempt.path, "old_string": SECRET, "new_string": "PWNED"});
        let result = fx.run("edit", input).await;
        check("edit", &attempt, &result, false);
    }
    assert_eq!(outside_state(&fx), before, "something outside the root changed");
}

#[tokio::test]
async fn glob_never_escapes() {
    let fx = trapped();
    for attempt in corpus(&fx) {
        let result = fx.run("glob", json!({"pattern": "**", "path": attempt.path})).await;
        check("glob", &attempt, &result, false);
    }
    let outer = fx.outer.display().to_string();
    for pattern in [
        "../*",
        "../**",
        "/**",
        &format!("{outer}/**"),
        "../outside/*",
        "sub/../../*",
        "**/../*",
    ] {
        let result = fx.run("glob", json!({"pattern": pattern})).await;
        let attempt = Attempt {
            path: pattern.to_string(),
            escape: true,
            writable: false,
        };
        check("glob pattern", &attempt, &result, false);
    }
    // Walking the whole root lists the symlinks but never what they point to.
    let result = fx.run("glob", json!({"pattern": "**"})).await;
    assert_eq!(result.status, ToolStatus::Completed);
    let text = result.text_content();
    assert!(text.contains("link_out@") && !text.contains(MARKER), "{text}");
}

#[tokio::test]
async fn grep_never_escapes() {
    let fx = trapped();
    for attempt in corpus(&fx) {
        let result = fx
            .run("grep", json!({"pattern": "TOP.?SECRET", "path": attempt.path}))
            .await;
        check("grep", &attempt, &result, false);
        let result = fx
            .run("grep", json!({"pattern": "x", "glob": "../**", "path": attempt.path}))
            .await;
        assert_ne!(result.status, ToolStatus::Completed);
    }
    let result = fx.run("grep", json!({"pattern": "TOP.?SECRET"})).await;
    assert_eq!(result.status, ToolStatus::Completed);
    assert!(
        result.text_content().starts_with("No matches"),
        "{}",
        result.text_content()
    );
}

/// Flip `name` in the root between a symlink to `inside` and one to `outside` until stopped.
fn flipper(
    root: &Path,
    name: &'static str,
    inside: &'static str,
    outside: &'static str,
) -> (Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let stop = Arc::new(AtomicBool::new(false));
    let (root, flag) = (root.to_path_buf(), stop.clone());
    let handle = std::thread::spawn(move || {
        let temp = root.join(format!("{name}.flip"));
        let mut inward = true;
        while !flag.load(Ordering::Relaxed) {
            let _ = std::fs::remove_file(&temp);
            symlink(if inward { inside } else { outside }, &temp).unwrap();
            std::fs::rename(&temp, root.join(name)).unwrap();
            inward = !inward;
        }
    });
    (stop, handle)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swapping_a_symlink_between_check_and_open_never_escapes() {
    let fx = trapped();
    let before = outside_state(&fx);
    let (stop, handle) = flipper(&fx.root, "race", "inside.txt", "../outside/secret.txt");
    let mut outcomes = [0usize; 2];
    for i in 0..400 {
        let result = fx.run("read", json!({"path": "race"})).await;
        assert!(!result.text_content().contains(SECRET), "read escaped on iteration {i}");
        outcomes[usize::from(result.status == ToolStatus::Completed)] += 1;
        if i % 4 == 0 {
            let result = fx.run("write", json!({"path": "race", "content": "PWNED\n"})).await;
            assert_ne!(result.status, ToolStatus::Failed, "{}", result.text_content());
            let input = json!({"path": "race", "old_string": "PWNED", "new_string": "EDITED"});
            let _ = fx.run("edit", input).await;
        }
    }
    stop.store(true, Ordering::Relaxed);
    handle.join().unwrap();
    assert_eq!(outside_state(&fx), before, "something outside the root changed");
    eprintln!("race: {} completed reads, {} refused", outcomes[1], outcomes[0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swapping_a_directory_during_a_walk_never_escapes() {
    let fx = trapped();
    fx.file("real/TOP_note.txt", "nothing secret\n");
    let (stop, handle) = flipper(&fx.root, "swap", "real", "../outside");
    for i in 0..200 {
        let result = fx.run("glob", json!({"pattern": "**"})).await;
        assert!(!result.text_content().contains(MARKER), "glob escaped on iteration {i}");
        let result = fx.run("grep", json!({"pattern": "TOP.?SECRET", "path": "swap"})).await;
        assert!(!result.text_content().contains(SECRET), "grep escaped on iteration {i}");
        let result = fx.run("read", json!({"path": "swap"})).await;
        assert!(
            !result.text_content().contains(MARKER),
            "listing escaped on iteration {i}"
        );
    }
    stop.store(true, Ordering::Relaxed);
    handle.join().unwrap();
}
