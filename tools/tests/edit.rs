use patchbay_core::tool::ToolStatus;
use serde_json::json;

use crate::support::{Fixture, assert_status};

const SOURCE: &str = "fn main() {\n    let x = 1;\n    let y = 2;\n    println!(\"{}\", x + y);\n}\n";

#[tokio::test]
async fn replaces_a_unique_match_and_shows_the_change() {
    let fx = Fixture::new();
    fx.file("main.rs", SOURCE);
    let input = json!({"path": "main.rs", "old_string": "let y = 2;", "new_string": "let y = 40;"});
    let result = fx.run("edit", input).await;
    assert_status(&result, ToolStatus::Completed);
    assert_eq!(fx.read("main.rs"), SOURCE.replace("let y = 2;", "let y = 40;"));
    let text = result.text_content();
    assert!(text.starts_with("Replaced 1 occurrence in `main.rs`."), "{text}");
    assert!(text.contains("     3\t    let y = 40;"), "{text}");
    assert_eq!(result.metadata.unwrap()["first_line"], 3);
}

#[tokio::test]
async fn no_match_fails_saying_zero_matches() {
    let fx = Fixture::new();
    fx.file("main.rs", SOURCE);
    let input = json!({"path": "main.rs", "old_string": "let z = 3;", "new_string": "x"});
    let result = fx.run("edit", input).await;
    assert_status(&result, ToolStatus::Failed);
    assert!(result.text_content().contains("was not found in `main.rs` (0 matches)"));
    assert_eq!(fx.read("main.rs"), SOURCE);
}

#[tokio::test]
async fn several_matches_fail_with_their_count_and_lines_unless_replace_all() {
    let fx = Fixture::new();
    fx.file("main.rs", SOURCE);
    let input = json!({"path": "main.rs", "old_string": "let", "new_string": "let mut"});
    let result = fx.run("edit", input).await;
    assert_status(&result, ToolStatus::Failed);
    let text = result.text_content();
    assert!(text.contains("matches 2 times in `main.rs` (at lines 2, 3)"), "{text}");
    assert!(text.contains("replace_all"));
    assert_eq!(fx.read("main.rs"), SOURCE);

    let input = json!({"path": "main.rs", "old_string": "let", "new_string": "let mut", "replace_all": true});
    let result = fx.run("edit", input).await;
    assert_status(&result, ToolStatus::Completed);
    assert!(result.text_content().starts_with("Replaced 2 occurrences"));
    assert_eq!(fx.read("main.rs"), SOURCE.replace("let", "let mut"));
}

#[tokio::test]
async fn empty_or_identical_strings_fail() {
    let fx = Fixture::new();
    fx.file("main.rs", SOURCE);
    let result = fx
        .run("edit", json!({"path": "main.rs", "old_string": "", "new_string": "x"}))
        .await;
    assert_status(&result, ToolStatus::Failed);
    let result = fx
        .run("edit", json!({"path": "main.rs", "old_string": "x", "new_string": "x"}))
        .await;
    assert_status(&result, ToolStatus::Failed);
    assert_eq!(fx.read("main.rs"), SOURCE);
}

#[tokio::test]
async fn missing_binary_and_directory_targets_fail() {
    let fx = Fixture::new();
    fx.file("bin.dat", b"a\0b").file("dir/x", "");
    for path in ["missing.rs", "bin.dat", "dir"] {
        let result = fx
            .run("edit", json!({"path": path, "old_string": "a", "new_string": "b"}))
            .await;
        assert_status(&result, ToolStatus::Failed);
    }
    assert_eq!(std::fs::read(fx.root.join("bin.dat")).unwrap(), b"a\0b");
}

#[tokio::test]
async fn crlf_files_match_strings_sent_with_lf() {
    let fx = Fixture::new();
    fx.file("win.txt", "one\r\ntwo\r\nthree\r\n");
    let input = json!({"path": "win.txt", "old_string": "one\ntwo", "new_string": "uno\ndos"});
    let result = fx.run("edit", input).await;
    assert_status(&result, ToolStatus::Completed);
    assert_eq!(fx.read("win.txt"), "uno\r\ndos\r\nthree\r\n");
}
