use patchbay_core::{ToolContext, tool::ToolStatus};
use patchbay_tools::Limits;
use serde_json::json;

use crate::support::{Fixture, assert_status, call};

#[tokio::test]
async fn reads_a_file_with_line_numbers() {
    let fx = Fixture::new();
    fx.file("notes.txt", "alpha\nbeta\r\ngamma");
    let result = fx.run("read", json!({"path": "notes.txt"})).await;
    assert_status(&result, ToolStatus::Completed);
    assert_eq!(result.text_content(), "     1\talpha\n     2\tbeta\n     3\tgamma\n");
    let meta = result.metadata.unwrap();
    assert_eq!(meta["total_lines"], 3);
    assert_eq!(meta["path"], "notes.txt");
}

#[tokio::test]
async fn accepts_file_path_alias_and_absolute_paths_inside_the_root() {
    let fx = Fixture::new();
    fx.file("a/b.txt", "x\n");
    let absolute = fx.root.join("a/b.txt");
    let result = fx.run("read", json!({"file_path": absolute.to_str().unwrap()})).await;
    assert_status(&result, ToolStatus::Completed);
    assert_eq!(result.metadata.unwrap()["path"], "a/b.txt");
}

#[tokio::test]
async fn offset_and_limit_select_lines_and_say_how_to_continue() {
    let fx = Fixture::new();
    let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    fx.file("ten.txt", text);
    let result = fx
        .run("read", json!({"path": "ten.txt", "offset": 4, "limit": 3}))
        .await;
    assert_status(&result, ToolStatus::Completed);
    let text = result.text_content();
    assert!(
        text.starts_with("     4\tline 4\n     5\tline 5\n     6\tline 6\n"),
        "{text}"
    );
    assert!(text.contains("[lines 4-6 of 10; continue with offset=7]"), "{text}");
    let meta = result.metadata.unwrap();
    assert_eq!(
        (meta["start_line"].as_u64(), meta["end_line"].as_u64()),
        (Some(4), Some(6))
    );
}

#[tokio::test]
async fn offset_past_the_end_fails() {
    let fx = Fixture::new();
    fx.file("two.txt", "a\nb\n");
    let result = fx.run("read", json!({"path": "two.txt", "offset": 5})).await;
    assert_status(&result, ToolStatus::Failed);
    assert!(result.text_content().contains("has 2 lines"));
}

#[tokio::test]
async fn empty_file_says_so() {
    let fx = Fixture::new();
    fx.file("empty.txt", "");
    let result = fx.run("read", json!({"path": "empty.txt"})).await;
    assert_status(&result, ToolStatus::Completed);
    assert!(result.text_content().contains("is empty"));
}

#[tokio::test]
async fn binary_files_are_detected_not_shown() {
    let fx = Fixture::new();
    fx.file("blob.bin", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
    let result = fx.run("read", json!({"path": "blob.bin"})).await;
    assert_status(&result, ToolStatus::Completed);
    assert!(
        result.text_content().contains("binary file (16 bytes)"),
        "{}",
        result.text_content()
    );
    assert_eq!(result.metadata.unwrap()["binary"], true);
}

#[tokio::test]
async fn invalid_utf8_is_shown_lossily_with_a_note() {
    let fx = Fixture::new();
    fx.file("latin1.txt", b"caf\xe9\n");
    let result = fx.run("read", json!({"path": "latin1.txt"})).await;
    assert_status(&result, ToolStatus::Completed);
    let text = result.text_content();
    assert!(
        text.contains("not valid UTF-8") && text.contains("caf\u{fffd}"),
        "{text}"
    );
}

#[tokio::test]
async fn files_over_the_size_limit_are_refused() {
    let fx = Fixture::new();
    fx.file("big.txt", "x".repeat(2048));
    let mut limits = Limits::default();
    limits.max_file_bytes = 1024;
    let result = fx
        .call(fx.workspace().with_limits(limits), "read", json!({"path": "big.txt"}))
        .await;
    assert_status(&result, ToolStatus::Failed);
    assert!(
        result
            .text_content()
            .contains("2048 bytes, over the limit of 1024 bytes")
    );
}

#[tokio::test]
async fn long_lines_are_clipped_and_long_output_is_cut_with_a_marker() {
    let fx = Fixture::new();
    fx.file("wide.txt", format!("{}\n", "w".repeat(5000)));
    let result = fx.run("read", json!({"path": "wide.txt"})).await;
    assert!(result.text_content().contains("[line truncated: 3000 more characters]"));

    let text: String = (1..=500).map(|i| format!("row {i:04} of text\n")).collect();
    fx.file("long.txt", text);
    let workspace = fx.workspace().with_output_limit(1000);
    let result = fx.call(workspace, "read", json!({"path": "long.txt"})).await;
    assert_status(&result, ToolStatus::Completed);
    let text = result.text_content();
    assert!(text.contains("[output truncated: showing the first 1000 of"), "{text}");
    assert!(text.chars().count() < 1200);
    assert!(result.metadata.unwrap()["truncated_chars"].as_u64().unwrap() > 0);
}

#[tokio::test]
async fn a_directory_reads_as_a_sorted_listing() {
    let fx = Fixture::new();
    fx.file("b.txt", "")
        .file("a.txt", "")
        .file("src/lib.rs", "")
        .file(".hidden", "");
    std::os::unix::fs::symlink("a.txt", fx.root.join("link")).unwrap();
    let result = fx.run("read", json!({"path": "."})).await;
    assert_status(&result, ToolStatus::Completed);
    assert_eq!(
        result.text_content(),
        "Directory `.` (5 entries):\n.hidden\na.txt\nb.txt\nlink@\nsrc/\n"
    );
    let result = fx.run("read", json!({"path": "src"})).await;
    assert_eq!(result.text_content(), "Directory `src` (1 entry):\nlib.rs\n");
}

#[tokio::test]
async fn symlinks_inside_the_root_are_followed() {
    let fx = Fixture::new();
    fx.file("real/data.txt", "inside\n");
    std::os::unix::fs::symlink("real", fx.root.join("alias")).unwrap();
    let result = fx.run("read", json!({"path": "alias/data.txt"})).await;
    assert_status(&result, ToolStatus::Completed);
    assert!(result.text_content().contains("inside"));
}

#[tokio::test]
async fn a_missing_file_fails_clearly() {
    let fx = Fixture::new();
    let result = fx.run("read", json!({"path": "nope.txt"})).await;
    assert_status(&result, ToolStatus::Failed);
    assert_eq!(result.text_content(), "`nope.txt` does not exist");
}

#[tokio::test]
async fn bad_input_is_a_failed_result() {
    let fx = Fixture::new();
    let result = fx.run("read", json!({"offset": 1})).await;
    assert_status(&result, ToolStatus::Failed);
    assert!(result.text_content().contains("invalid input for tool `read`"));
}

#[tokio::test]
async fn the_context_working_dir_is_the_root() {
    let fx = Fixture::new();
    fx.file("project/own.txt", "mine\n");
    // The workspace root is elsewhere; the request's working directory wins.
    let cx = ToolContext::new().with_working_dir(fx.root.join("project"));
    let result = call(fx.workspace(), "read", json!({"path": "own.txt"}), &cx).await;
    assert_status(&result, ToolStatus::Completed);
    let result = call(fx.workspace(), "read", json!({"path": "../project/own.txt"}), &cx).await;
    assert_status(&result, ToolStatus::Denied);
}

#[tokio::test]
async fn a_missing_root_fails() {
    let fx = Fixture::new();
    let workspace = patchbay_tools::Workspace::new(fx.root.join("missing"));
    let result = fx.call(workspace, "read", json!({"path": "x"})).await;
    assert_status(&result, ToolStatus::Failed);
    assert!(result.text_content().contains("is not usable"));
}

#[tokio::test]
async fn a_fifo_is_refused_without_blocking() {
    let fx = Fixture::new();
    let status = std::process::Command::new("mkfifo")
        .arg(fx.root.join("pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    let read = fx.run("read", json!({"path": "pipe"}));
    let result = tokio::time::timeout(std::time::Duration::from_secs(5), read)
        .await
        .unwrap();
    assert_status(&result, ToolStatus::Failed);
    assert_eq!(result.text_content(), "`pipe` is not a regular file");
    let grep = fx.run("grep", json!({"pattern": "x", "path": "pipe"}));
    let result = tokio::time::timeout(std::time::Duration::from_secs(5), grep)
        .await
        .unwrap();
    assert_status(&result, ToolStatus::Failed);
}
