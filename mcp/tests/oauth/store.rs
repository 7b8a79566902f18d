//! The token stores: in memory, and in a file only its owner can read, replaced atomically.

use patchbay_mcp::oauth::{FileTokenStore, MemoryTokenStore, StoredCredentials, TokenStore};

fn credentials(client: &str) -> StoredCredentials {
    serde_json::from_value(serde_json::json!({
        "client_id": client,
        "token_response": {"access_token": "AT-SECRET-store", "token_type": "bearer", "refresh_token": "RT-SECRET-store"},
        "granted_scopes": ["read"],
        "token_received_at": 1,
    }))
    .expect("present")
}

#[tokio::test]
async fn the_memory_store_keeps_each_server_apart_and_clones_share_it() {
    let store = MemoryTokenStore::new();
    let clone = store.clone();
    store.save("https://a/mcp", credentials("a")).await.expect("save");
    store.save("https://b/mcp", credentials("b")).await.expect("save");
    assert_eq!(
        clone
            .load("https://a/mcp")
            .await
            .expect("load")
            .expect("present")
            .client_id,
        "a"
    );
    clone.clear("https://a/mcp").await.expect("clear");
    assert!(store.load("https://a/mcp").await.expect("load").is_none());
    assert_eq!(
        store
            .load("https://b/mcp")
            .await
            .expect("load")
            .expect("present")
            .client_id,
        "b"
    );
}

#[tokio::test]
async fn the_file_store_writes_an_owner_only_file_and_leaves_no_temporary_behind() {
    use std::os::unix::fs::PermissionsExt;
    let folder = tempfile::tempdir().expect("tempdir");
    let path = folder.path().join("nested/tokens.json");
    let store = FileTokenStore::new(&path);
    assert!(
        store.load("https://a/mcp").await.expect("load").is_none(),
        "no file yet"
    );
    store.save("https://a/mcp", credentials("a")).await.expect("save");
    store.save("https://b/mcp", credentials("b")).await.expect("save");
    let mode = std::fs::metadata(&path).expect("metadata").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let files: Vec<_> = std::fs::read_dir(path.parent().expect("parent"))
        .expect("present")
        .map(|e| e.expect("present").file_name())
        .collect();
    assert_eq!(files, ["tokens.json"]);

    let again = FileTokenStore::new(&path);
    let loaded = again.load("https://a/mcp").await.expect("load").expect("present");
    assert_eq!(
        (loaded.client_id.as_str(), loaded.granted_scopes.as_slice()),
        ("a", &["read".to_owned()][..])
    );
    again.clear("https://a/mcp").await.expect("clear");
    assert!(store.load("https://a/mcp").await.expect("load").is_none());
    assert!(store.load("https://b/mcp").await.expect("load").is_some());
}

#[tokio::test]
async fn the_file_store_makes_a_too_open_file_owner_only_on_save() {
    use std::os::unix::fs::PermissionsExt;
    let folder = tempfile::tempdir().expect("tempdir");
    let path = folder.path().join("tokens.json");
    std::fs::write(&path, "{}").expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("set_permissions");
    FileTokenStore::new(&path)
        .save("https://a/mcp", credentials("a"))
        .await
        .expect("present");
    assert_eq!(
        std::fs::metadata(&path).expect("metadata").permissions().mode() & 0o777,
        0o600
    );
}

#[tokio::test]
async fn a_damaged_token_file_is_an_error_that_quotes_none_of_it() {
    let folder = tempfile::tempdir().expect("tempdir");
    let path = folder.path().join("tokens.json");
    std::fs::write(
        &path,
        r#"{"https://a/mcp": {"client_id": 7, "token_response": "AT-SECRET-x"}}"#,
    )
    .expect("present");
    let error = FileTokenStore::new(&path)
        .load("https://a/mcp")
        .await
        .expect_err("an error");
    let text = format!("{error} {error:?}");
    assert!(text.contains("is not a token file"), "{text}");
    assert!(!text.contains("AT-SECRET"), "{text}");
}
