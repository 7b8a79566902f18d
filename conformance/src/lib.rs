#![doc = include_str!("../README.md")]

pub mod fixtures;
pub mod mock;
mod normalize;
pub mod peers;
pub mod raw;
mod scenario;
mod snapshot;
mod suite;

pub use normalize::{LONG_TEXT, Outcome, Recording, normalize, summarize};
pub use scenario::{CancelAt, Needs, SCENARIO_MODEL, Scenario, huge_text, scenario_tools, scenarios};
pub use snapshot::{scenario_settings, settings_in, snapshot_root, split_randomly};
pub use suite::{Baseline, Fixture, FixtureFuture, SCENARIO_TIMEOUT, Target, TrialFailure, check, run_suite, trials};
