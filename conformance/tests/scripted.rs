//! The scripted provider, the reference implementation, against every shared scenario.

use std::sync::Arc;

use patchbay_conformance::{Fixture, Target, run_suite};
use patchbay_scripted::ScriptedProvider;

fn main() {
    let target = Target::new("scripted", |case| {
        let provider = Arc::new(ScriptedProvider::new(case.scenario.script.clone()));
        async move { Ok(Fixture::new(provider)) }
    })
    .with_baseline_file(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripted-baseline.toml"));
    run_suite(target)
}
