//! Core's `Retry` wrapper honours the `retry-after` of a `429`, and an error inside the stream
//! (an `error` event, `response.failed`) is typed by its code.

use std::time::{Duration, Instant};

use patchbay_conformance::mock::Serve;
use patchbay_core::{ErrorKind, Message, Retry, RetryPolicy, Signal, ToolSet};

use crate::common::{call, mock};

const OK: &str = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\
                  \"output_index\":0,\"content_index\":0,\"delta\":\"Hello\"}\n\nevent: response.completed\ndata: \
                  {\"type\":\"response.completed\",\"sequence_number\":2,\"response\":{\"id\":\"resp_1\",\"status\":\
                  \"completed\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n";

fn rate_limited(retry_after: u64) -> Serve {
    let body = serde_json::json!({"error": {
        "message": "Rate limit reached for gpt-5 in organization org-x on tokens per min (TPM).",
        "type": "tokens", "param": null, "code": "rate_limit_exceeded"
    }});
    Serve::status(429, body.to_string(), Some(retry_after))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limit_is_retried_after_its_retry_after() {
    let (server, provider) = mock(vec![rate_limited(1), Serve::sse(OK)]).await;
    let retry = Retry::new(provider, RetryPolicy::immediate(2));
    let started = Instant::now();
    let recording = patchbay_conformance::Recording::call(
        &retry,
        &[Message::user("hi")],
        &ToolSet::new(),
        "gpt-5",
        &Signal::new(),
        None,
    )
    .await;
    assert!(recording.error.is_none(), "{:?}", recording.error);
    assert_eq!(recording.text(), "Hello");
    assert_eq!(server.requests().len(), 2);
    assert!(
        started.elapsed() >= Duration::from_millis(1000),
        "waited {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_inside_the_stream_are_typed_by_their_code() {
    let failed = "event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":1,\"response\":\
                  {\"id\":\"resp_1\",\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"boom\"}}}\n\n";
    let error = "event: error\ndata: {\"type\":\"error\",\"sequence_number\":1,\"code\":\"context_length_exceeded\",\
                 \"message\":\"too long\",\"param\":null}\n\n";
    let (_server, provider) = mock(vec![Serve::sse(failed), Serve::sse(error)]).await;
    let first = call(provider.as_ref(), &[Message::user("hi")], &ToolSet::new(), None).await;
    let first = first.error.expect("failed");
    assert_eq!(first.kind(), ErrorKind::Server);
    assert_eq!(first.facts().provider_code.as_deref(), Some("server_error"));
    let second = call(provider.as_ref(), &[Message::user("hi")], &ToolSet::new(), None).await;
    assert_eq!(second.error.expect("error").kind(), ErrorKind::ContextTooLong);
}
