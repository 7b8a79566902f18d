use patchbay_core::tool::ToolStatus;
use serde_json::json;

use crate::support::{Fixture, assert_status};

fn project() -> Fixture {
    let fx = Fixture::new();
    fx.file("README.md", "# demo\n")
        .file("src/main.rs", "fn main() {}\n")
        .file("src/util/mod.rs", "pub fn util() {}\n")
        .file("target/debug/out.rs", "generated\n")
        .file(".gitignore", "target/\n*.log\n")
        .file("debug.log", "noise\n")
        .file(".github/ci.yml", "on: push\n")
        .file(".git/HEAD", "ref: refs/heads/main\n");
    fx
}

#[tokio::test]
async fn star_lists_the_top_level_gitignore_aware_and_sorted() {
    let fx = project();
    let result = fx.run("glob", json!({"pattern": "*"})).await;
    assert_status(&result, ToolStatus::Completed);
    assert_eq!(result.text_content(), ".github/\n.gitignore\nREADME.md\nsrc/\n");
}

#[tokio::test]
async fn double_star_recurses() {
    let fx = project();
    let result = fx.run("glob", json!({"pattern": "**/*.rs"})).await;
    assert_eq!(result.text_content(), "src/main.rs\nsrc/util/mod.rs\n");
    let meta = result.metadata.unwrap();
    assert_eq!(meta["matches"], 2);
}

#[tokio::test]
async fn a_path_narrows_the_search_and_results_stay_relative_to_the_root() {
    let fx = project();
    let result = fx.run("glob", json!({"pattern": "*", "path": "src"})).await;
    assert_eq!(result.text_content(), "src/main.rs\nsrc/util/\n");
    let result = fx.run("glob", json!({"pattern": "*.rs", "path": "./src/util/"})).await;
    assert_eq!(result.text_content(), "src/util/mod.rs\n");
}

#[tokio::test]
async fn results_are_limited_with_a_marker() {
    let fx = Fixture::new();
    for i in 0..5 {
        fx.file(&format!("f{i}.txt"), "");
    }
    let result = fx.run("glob", json!({"pattern": "*.txt", "limit": 2})).await;
    assert_status(&result, ToolStatus::Completed);
    assert_eq!(
        result.text_content(),
        "f0.txt\nf1.txt\n[showing 2 of 5 paths; narrow the pattern or pass a `path`]\n"
    );
}

#[tokio::test]
async fn no_match_is_not_an_error() {
    let fx = project();
    let result = fx.run("glob", json!({"pattern": "**/*.py"})).await;
    assert_status(&result, ToolStatus::Completed);
    assert_eq!(result.text_content(), "No paths match `**/*.py` in `.`.\n");
}

#[tokio::test]
async fn bad_patterns_and_paths_fail() {
    let fx = project();
    let result = fx.run("glob", json!({"pattern": "src/[z-a]"})).await;
    assert_status(&result, ToolStatus::Failed);
    assert!(result.text_content().contains("invalid glob"));
    let result = fx.run("glob", json!({"pattern": "*", "path": "README.md"})).await;
    assert_status(&result, ToolStatus::Failed);
    let result = fx.run("glob", json!({"pattern": "*", "path": "nope"})).await;
    assert_status(&result, ToolStatus::Failed);
}

#[tokio::test]
async fn symlinks_are_listed_not_followed() {
    let fx = project();
    std::os::unix::fs::symlink("src", fx.root.join("alias")).unwrap();
    let result = fx.run("glob", json!({"pattern": "**/main.rs"})).await;
    assert_eq!(result.text_content(), "src/main.rs\n");
    let result = fx.run("glob", json!({"pattern": "alias"})).await;
    assert_eq!(result.text_content(), "alias@\n");
}
