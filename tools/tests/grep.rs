use patchbay_core::tool::ToolStatus;
use serde_json::json;

use crate::support::{Fixture, assert_status};

fn project() -> Fixture {
    let fx = Fixture::new();
    fx.file(
        "src/main.rs",
        "use std::io;\n\nfn main() {\n    helper();\n}\n\nfn helper() {\n    println!(\"Hello\");\n}\n",
    )
    .file("src/lib.rs", "pub fn helper() {}\n")
    .file("docs/notes.md", "helper docs\nHELPER upper\n")
    .file("target/gen.rs", "fn helper() {}\n")
    .file(".gitignore", "target/\n")
    .file("data.bin", b"helper\0\x01\x02");
    fx
}

#[tokio::test]
async fn finds_matching_lines_with_numbers_sorted_by_path() {
    let fx = project();
    let result = fx.run("grep", json!({"pattern": "fn helper"})).await;
    assert_status(&result, ToolStatus::Completed);
    assert_eq!(
        result.text_content(),
        "2 matching lines in 2 files:\nsrc/lib.rs:1:pub fn helper() {}\nsrc/main.rs:7:fn helper() {\n[1 binary files skipped]\n"
    );
    let meta = result.metadata.unwrap();
    assert_eq!((meta["matches"].as_u64(), meta["files"].as_u64()), (Some(2), Some(2)));
}

#[tokio::test]
async fn context_lines_and_group_separators() {
    let fx = project();
    let result = fx
        .run(
            "grep",
            json!({"pattern": "helper\\(\\);|Hello", "path": "src/main.rs", "context": 1}),
        )
        .await;
    assert_status(&result, ToolStatus::Completed);
    assert_eq!(
        result.text_content(),
        "2 matching lines in 1 file:\nsrc/main.rs-3-fn main() {\nsrc/main.rs:4:    helper();\nsrc/main.rs-5-}\n--\n\
         src/main.rs-7-fn helper() {\nsrc/main.rs:8:    println!(\"Hello\");\nsrc/main.rs-9-}\n"
    );
}

#[tokio::test]
async fn glob_filters_by_name_or_path_and_case_can_be_ignored() {
    let fx = project();
    let result = fx
        .run(
            "grep",
            json!({"pattern": "helper", "glob": "*.md", "case_insensitive": true}),
        )
        .await;
    assert_eq!(
        result.text_content(),
        "2 matching lines in 1 file:\ndocs/notes.md:1:helper docs\ndocs/notes.md:2:HELPER upper\n"
    );
    let result = fx.run("grep", json!({"pattern": "helper", "glob": "src/l*.rs"})).await;
    assert_eq!(
        result.text_content(),
        "1 matching line in 1 file:\nsrc/lib.rs:1:pub fn helper() {}\n"
    );
}

#[tokio::test]
async fn files_and_count_modes() {
    let fx = project();
    let result = fx
        .run(
            "grep",
            json!({"pattern": "helper", "output_mode": "files_with_matches"}),
        )
        .await;
    assert_eq!(
        result.text_content(),
        "3 files match:\ndocs/notes.md\nsrc/lib.rs\nsrc/main.rs\n[1 binary files skipped]\n"
    );
    let result = fx
        .run("grep", json!({"pattern": "helper", "output_mode": "count"}))
        .await;
    assert_eq!(
        result.text_content(),
        "4 matching lines in 3 files:\ndocs/notes.md:1\nsrc/lib.rs:1\nsrc/main.rs:2\n[1 binary files skipped]\n"
    );
}

#[tokio::test]
async fn ignored_and_binary_files_are_skipped() {
    let fx = project();
    let result = fx
        .run(
            "grep",
            json!({"pattern": "helper", "output_mode": "files_with_matches"}),
        )
        .await;
    let text = result.text_content();
    assert!(!text.contains("target/") && !text.contains("data.bin"), "{text}");
    assert!(text.contains("[1 binary files skipped]"), "{text}");
}

#[tokio::test]
async fn the_limit_stops_the_search_with_a_marker() {
    let fx = Fixture::new();
    fx.file("many.txt", "hit\n".repeat(50));
    let result = fx.run("grep", json!({"pattern": "hit", "limit": 3})).await;
    assert_status(&result, ToolStatus::Completed);
    let text = result.text_content();
    assert!(
        text.starts_with("3 matching lines in 1 file:\nmany.txt:1:hit\nmany.txt:2:hit\nmany.txt:3:hit\n"),
        "{text}"
    );
    assert!(
        text.contains("[result limit reached; more matches may exist."),
        "{text}"
    );
    assert_eq!(result.metadata.unwrap()["limited"], true);
}

#[tokio::test]
async fn no_match_is_not_an_error_but_a_bad_regex_is() {
    let fx = project();
    let result = fx.run("grep", json!({"pattern": "nothing_like_this"})).await;
    assert_status(&result, ToolStatus::Completed);
    assert_eq!(
        result.text_content(),
        "No matches for `nothing_like_this` in `.`.\n[1 binary files skipped]\n"
    );
    let result = fx.run("grep", json!({"pattern": "fn (unclosed"})).await;
    assert_status(&result, ToolStatus::Failed);
    assert!(result.text_content().contains("invalid regular expression"));
}

#[tokio::test]
async fn cancellation_aborts_a_search() {
    let fx = project();
    let cx = patchbay_core::ToolContext::new();
    cx.signal.cancel();
    let result = crate::support::call(fx.workspace(), "grep", json!({"pattern": "helper"}), &cx).await;
    assert_status(&result, ToolStatus::Aborted);
}
