//! The live check's switches and its verdicts, without a network: skipped (never failed)
//! without `PATCHBAY_LIVE=1` and the key, the variables read as documented, and a provider
//! that records nothing failing it.

use std::collections::BTreeMap;
use std::sync::Arc;

use patchbay_conformance::live::{LIVE_SCENARIOS, Live};
use patchbay_conformance::scenario;
use patchbay_core::Provider;
use patchbay_scripted::ScriptedProvider;

/// A live check of the scripted provider (which records nothing), answering `text_only`.
fn scripted() -> Live {
    Live::new("scripted", "SCRIPTED_KEY", "scripted-model", |_setup| {
        let script = scenario("text_only").expect("the scenario").script;
        Ok(Arc::new(ScriptedProvider::new(script)) as Arc<dyn Provider>)
    })
}

fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: BTreeMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    move |name| map.get(name).cloned()
}

#[test]
fn the_live_check_is_skipped_without_the_switch_or_the_key() {
    let live = scripted();
    let skipped = live.setup(vars(&[("SCRIPTED_KEY", "k")])).expect_err("no switch");
    assert!(skipped.0.contains("PATCHBAY_LIVE=1"), "{skipped}");
    let skipped = live
        .setup(vars(&[("PATCHBAY_LIVE", "1"), ("SCRIPTED_KEY", "  ")]))
        .expect_err("a blank key");
    assert!(skipped.0.contains("SCRIPTED_KEY"), "{skipped}");
    assert!(live.with_optional_key().setup(vars(&[("PATCHBAY_LIVE", "1")])).is_ok());

    let (trials, skipped) = scripted().trials(vars(&[]));
    assert!(skipped.is_some());
    assert_eq!(trials.len(), LIVE_SCENARIOS.len(), "no mock: no mock trial");
    assert!(
        trials.iter().all(|trial| trial.has_ignored_flag()),
        "ignored, not passed"
    );
}

#[test]
fn the_variables_give_the_key_model_base_url_and_folder() {
    let setup = scripted()
        .setup(vars(&[
            ("PATCHBAY_LIVE", "1"),
            ("SCRIPTED_KEY", "sk-live-CANARY"),
            ("PATCHBAY_LIVE_MODEL", "other-model"),
            ("PATCHBAY_LIVE_BASE_URL", "http://127.0.0.1:9"),
            ("PATCHBAY_LIVE_RECORD_DIR", "/tmp/live-recordings"),
        ]))
        .expect("a live setup");
    assert_eq!(setup.key.expose(), "sk-live-CANARY");
    assert!(!format!("{setup:?}").contains("CANARY"), "{setup:?}");
    assert_eq!(setup.model, "other-model");
    assert_eq!(setup.base_url.as_deref(), Some("http://127.0.0.1:9"));
    assert_eq!(setup.record_dir, std::path::Path::new("/tmp/live-recordings"));
    let setup = scripted()
        .setup(vars(&[("PATCHBAY_LIVE", "1"), ("SCRIPTED_KEY", "k")]))
        .expect("a live setup");
    assert_eq!(
        (setup.model.as_str(), setup.base_url.as_deref()),
        ("scripted-model", None)
    );
    assert!(setup.record_dir.starts_with(std::env::temp_dir()), "{setup:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_that_records_nothing_fails_the_check() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let live = scripted().with_scenarios(["text_only", "no_such_scenario"]);
    let setup = live
        .setup(vars(&[
            ("PATCHBAY_LIVE", "1"),
            ("SCRIPTED_KEY", "k"),
            ("PATCHBAY_LIVE_RECORD_DIR", &dir.path().display().to_string()),
        ]))
        .expect("a live setup");
    let report = live.run(&setup).await;
    let problems = report.problems();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].starts_with("text_only: nothing was recorded"),
        "{problems:?}"
    );
    assert!(problems[1].contains("no shared scenario"), "{problems:?}");
    assert!(report.recorded.is_empty());
}
