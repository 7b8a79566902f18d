//! Core's `Retry` wrapper honours Google's `RetryInfo.retryDelay` (there is no `retry-after`
//! header on this wire), and an error after text is not retried.

use std::time::{Duration, Instant};

use patchbay_conformance::mock::Serve;
use patchbay_core::{ErrorKind, Message, Retry, RetryPolicy, Signal, ToolSet};
use patchbay_gemini::ApiError;

use crate::common::mock;

const OK: &str = "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hello\"}]},\
                  \"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":3,\"candidatesTokenCount\":1}}\r\n\r\n";

fn quota_exceeded(delay: &str) -> Serve {
    let body = serde_json::json!({"error": {
        "code": 429, "message": "You exceeded your current quota.", "status": "RESOURCE_EXHAUSTED",
        "details": [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
                {"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                 "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}
        ]
    }});
    Serve::status(429, body.to_string(), None)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quota_error_is_retried_after_its_retry_delay() {
    let (server, provider) = mock(vec![quota_exceeded("1.2s"), Serve::sse(OK)]).await;
    let retry = Retry::new(provider, RetryPolicy::immediate(2));
    let started = Instant::now();
    let recording = patchbay_conformance::Recording::call(
        &retry,
        &[Message::user("hi")],
        &ToolSet::new(),
        "gemini-2.5-flash",
        &Signal::new(),
        None,
    )
    .await;
    assert!(recording.error.is_none(), "{:?}", recording.error);
    assert_eq!(recording.text(), "Hello");
    assert_eq!(server.requests().len(), 2);
    assert!(
        started.elapsed() >= Duration::from_millis(1200),
        "RetryInfo's 1.2 s honoured, waited {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_quota_failure_reaches_the_host_when_retries_run_out() {
    let (_server, provider) = mock(vec![quota_exceeded("0s"), quota_exceeded("0s")]).await;
    let retry = Retry::new(provider, RetryPolicy::immediate(1));
    let recording = patchbay_conformance::Recording::call(
        &retry,
        &[Message::user("hi")],
        &ToolSet::new(),
        "gemini-2.5-flash",
        &Signal::new(),
        None,
    )
    .await;
    let error = recording.error.expect("out of retries");
    assert_eq!(error.kind(), ErrorKind::RateLimited);
    assert_eq!(error.status(), Some(429));
    assert_eq!(error.facts().provider_code.as_deref(), Some("RESOURCE_EXHAUSTED"));
    let api = std::error::Error::source(&error)
        .and_then(|source| source.downcast_ref::<ApiError>())
        .expect("the google.rpc status is kept");
    assert_eq!(api.quota_violations().len(), 1);
}
