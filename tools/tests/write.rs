use std::os::unix::fs::PermissionsExt;

use patchbay_core::tool::ToolStatus;
use patchbay_tools::Limits;
use serde_json::json;

use crate::support::{Fixture, assert_status, tree};

#[tokio::test]
async fn creates_a_file_and_its_parents() {
    let fx = Fixture::new();
    let result = fx
        .run("write", json!({"path": "a/b/c.txt", "content": "one\ntwo\n"}))
        .await;
    assert_status(&result, ToolStatus::Completed);
    assert_eq!(result.text_content(), "Created `a/b/c.txt` (8 bytes, 2 lines).");
    assert_eq!(fx.read("a/b/c.txt"), "one\ntwo\n");
    assert_eq!(result.metadata.unwrap()["created"], true);
}

#[tokio::test]
async fn replaces_a_file_atomically_keeping_its_permissions() {
    let fx = Fixture::new();
    fx.file("run.sh", "old");
    let path = fx.root.join("run.sh");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o750)).unwrap();
    let result = fx.run("write", json!({"path": "run.sh", "content": "new"})).await;
    assert_status(&result, ToolStatus::Completed);
    assert!(result.text_content().starts_with("Replaced `run.sh`"));
    assert_eq!(fx.read("run.sh"), "new");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o750);
    // No temporary file is left behind.
    assert_eq!(tree(&fx.root), vec![("run.sh".to_string(), "new".to_string())]);
}

#[tokio::test]
async fn writes_through_a_symlink_inside_the_root() {
    let fx = Fixture::new();
    fx.file("real.txt", "old");
    std::os::unix::fs::symlink("real.txt", fx.root.join("alias.txt")).unwrap();
    let result = fx.run("write", json!({"path": "alias.txt", "content": "new"})).await;
    assert_status(&result, ToolStatus::Completed);
    assert_eq!(fx.read("real.txt"), "new");
    assert!(
        std::fs::symlink_metadata(fx.root.join("alias.txt"))
            .unwrap()
            .is_symlink()
    );
    assert_eq!(result.metadata.unwrap()["path"], "real.txt");
}

#[tokio::test]
async fn refuses_directories_and_the_root() {
    let fx = Fixture::new();
    fx.file("dir/x", "");
    let result = fx.run("write", json!({"path": "dir", "content": "x"})).await;
    assert_status(&result, ToolStatus::Failed);
    assert_eq!(result.text_content(), "`dir` is a directory");
    let result = fx.run("write", json!({"path": ".", "content": "x"})).await;
    assert_status(&result, ToolStatus::Failed);
    let result = fx.run("write", json!({"path": "dir/x/y", "content": "x"})).await;
    assert_status(&result, ToolStatus::Failed);
}

#[tokio::test]
async fn content_over_the_size_limit_is_refused() {
    let fx = Fixture::new();
    let mut limits = Limits::default();
    limits.max_file_bytes = 10;
    let input = json!({"path": "big.txt", "content": "x".repeat(11)});
    let result = fx.call(fx.workspace().with_limits(limits), "write", input).await;
    assert_status(&result, ToolStatus::Failed);
    assert!(!fx.root.join("big.txt").exists());
}

#[tokio::test]
async fn concurrent_writes_leave_one_whole_file() {
    let fx = Fixture::new();
    let writes = (0..8).map(|i| {
        let content = format!("{i}").repeat(10_000);
        let workspace = fx.workspace();
        async move {
            crate::support::call(
                workspace,
                "write",
                json!({"path": "same.txt", "content": content}),
                &Default::default(),
            )
            .await
        }
    });
    for result in futures::future::join_all(writes).await {
        assert_status(&result, ToolStatus::Completed);
    }
    let text = fx.read("same.txt");
    assert_eq!(text.len(), 10_000);
    let first = text.as_bytes()[0];
    assert!(text.bytes().all(|b| b == first), "a torn write");
    assert_eq!(tree(&fx.root).len(), 1, "temporary files left: {:?}", tree(&fx.root));
}
