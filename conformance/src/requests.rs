//! [`snapshot_requests`]: what a wire provider sends for each shared scenario, as goldens of
//! the provider's own crate (the wire differs per family, so these are not shared).

use serde_json::Value;

use crate::mock::RecordedRequest;
use crate::scenario::scenarios;
use crate::snapshot::{callers_snapshots, settings_at};
use crate::suite::{Case, Target};

/// Runs every shared scenario on `target` (whose fixtures keep their
/// [`MockServer`](crate::mock::MockServer) as the guard) and snapshots the requests the mock
/// received, each shown by `view` (pick the headers that matter; the body is usually all), as
/// `requests__<scenario>` under `$CARGO_MANIFEST_DIR/tests/snapshots/requests`. Panics listing
/// every scenario whose run failed or whose requests differ from the golden.
///
/// ```no_run
/// # async fn demo(target: patchbay_conformance::Target) {
/// patchbay_conformance::snapshot_requests(&target, |request| {
///     serde_json::json!({ "path": request.path, "body": request.body })
/// })
/// .await;
/// # }
/// ```
pub async fn snapshot_requests(target: &Target, view: impl Fn(&RecordedRequest) -> Value) {
    let dir = callers_snapshots("requests").expect("CARGO_MANIFEST_DIR is set under cargo test");
    let settings = settings_at(dir);
    let mut problems = Vec::new();
    for scenario in scenarios() {
        let name = format!("requests__{}", scenario.name);
        let requests = match target.record_case(Case::new(scenario)).await {
            Ok((_, requests)) => requests,
            Err(error) => {
                problems.push(format!("{name}: the run failed: {error}"));
                continue;
            }
        };
        let shown: Vec<Value> = requests.iter().map(&view).collect();
        let compared = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            settings.bind(|| insta::assert_json_snapshot!(name.clone(), shown));
        }));
        if compared.is_err() {
            problems.push(format!("{name}: differs from its golden (see above)"));
        }
    }
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
