//! Integration tests of patchbay-anthropic (one binary; the shared scenarios and the real
//! Claude Code CLI against the mock run in `conformance.rs`, a `harness = false` binary).

mod common;
mod fixtures;
mod metrics;
mod provider;
mod requests;
mod retry;
mod translator;
