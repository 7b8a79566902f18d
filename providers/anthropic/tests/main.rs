//! Integration tests of patchbay-anthropic (one binary; the shared scenarios against the mock
//! run in `conformance.rs`, a `harness = false` binary).

mod citations;
mod common;
mod config;
mod fields;
mod fixtures;
mod metrics;
mod provider;
mod record;
mod requests;
mod retry;
mod translator;
