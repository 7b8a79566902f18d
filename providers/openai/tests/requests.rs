//! What goes on the wire: golden request bodies of the shared scenarios (path, key header,
//! body), and a bad call option refused before any request.

use std::sync::Arc;

use patchbay_conformance::mock::openai_responses::ResponsesWire;
use patchbay_conformance::{Fixture, Target, snapshot_requests, summarize};
use patchbay_core::{ErrorKind, Message, RequestContext, ToolSet};
use patchbay_openai::{NAME, OpenAiConfig, OpenAiProvider};
use serde_json::{Value, json};

use crate::common::{call, mock};

/// Long strings (the huge line) as length plus hash.
fn shorten(value: &mut Value) {
    match value {
        Value::String(s) => *s = summarize(s),
        Value::Array(items) => items.iter_mut().for_each(shorten),
        Value::Object(map) => map.values_mut().for_each(shorten),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn golden_requests_of_the_shared_scenarios() {
    let target = Target::new(NAME, |case| async move {
        let server = case.mock(ResponsesWire::new()).await?;
        let config = OpenAiConfig::new(format!("{}/v1", server.url())).with_api_key("test-key");
        Ok(Fixture::new(Arc::new(OpenAiProvider::new(config)?)).with_guard(server))
    });
    snapshot_requests(&target, |request| {
        let mut body = request.body.clone();
        shorten(&mut body);
        json!({
            "method": request.method,
            "path": request.path,
            "authorization": request.header("authorization"),
            "accept": request.header("accept"),
            "body": body,
        })
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_call_option_is_refused_before_any_request() {
    let (server, provider) = mock(Vec::new()).await;
    let context = RequestContext::new().with_provider_options(NAME, json!({ "store": "sk-CANARY" }));
    let recording = call(
        provider.as_ref(),
        &[Message::user("hi")],
        &ToolSet::new(),
        Some(&context),
    )
    .await;
    let error = recording.error.expect("refused");
    assert_eq!(error.kind(), ErrorKind::InvalidRequest);
    assert!(error.to_string().contains("store") && !format!("{error:?}").contains("CANARY"));
    assert!(server.requests().is_empty(), "nothing was sent");
}
