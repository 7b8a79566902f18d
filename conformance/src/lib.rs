#![doc = include_str!("../README.md")]

#[cfg(feature = "browser")]
pub mod browser;
pub mod fields;
pub mod fixtures;
pub mod hardening;
pub mod live;
pub mod logs;
pub mod metrics;
pub mod mock;
mod normalize;
pub mod peers;
pub mod raw;
mod recorded;
mod requests;
mod scenario;
mod snapshot;
mod suite;

pub use normalize::{LONG_TEXT, Outcome, Recording, RecordingExt, normalize, summarize, text_of, without_timings};
pub use recorded::{FixtureRun, run_fixtures};
pub use requests::snapshot_requests;
pub use scenario::{
    CancelAt, Needs, SCENARIO_MODEL, Scenario, WEATHER_JSON, huge_text, scenario, scenario_tools, scenarios,
    weather_schema,
};
pub use snapshot::{scenario_settings, settings_at, settings_in, snapshot_root, split_randomly};
pub use suite::{
    Baseline, Case, Fixture, FixtureFuture, RECORD_GOLDENS, SCENARIO_TIMEOUT, Target, TrialFailure, check, run_suite,
    trials,
};
