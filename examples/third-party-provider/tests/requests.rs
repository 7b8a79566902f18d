//! What each shared scenario sends, as goldens of this crate (`tests/snapshots/requests`).

use serde_json::json;

#[tokio::test]
async fn each_shared_scenario_sends_an_ollama_chat_body() {
    let target = crate::target::target();
    patchbay_conformance::snapshot_requests(&target, |request| {
        json!({
            "method": request.method,
            "path": request.path,
            "content_type": request.header("content-type"),
            "body": request.body,
        })
    })
    .await;
}
