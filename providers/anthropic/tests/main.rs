//! Integration tests of patchbay-anthropic (one binary; the shared scenarios run in
//! `conformance.rs`, a `harness = false` binary).

mod cli;
mod common;
mod fixtures;
mod metrics;
mod provider;
mod requests;
mod retry;
mod translator;
