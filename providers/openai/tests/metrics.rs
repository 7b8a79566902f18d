//! `Finish` metrics over HTTP, against a mock server slow to its first byte and again to its
//! first text delta (lower bounds only, so a loaded machine cannot fail them).

use patchbay_conformance::metrics::check_finish_metrics;
use patchbay_conformance::mock::openai_responses::ResponsesWire;

use crate::common::provider;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finish_metrics_time_the_first_byte_and_text_and_count_chars() {
    check_finish_metrics(ResponsesWire::new(), true, |url| provider(url)).await;
}
