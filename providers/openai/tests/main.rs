//! Integration tests of patchbay-openai (one binary, one module per area).

mod common;
mod fields;
mod fixtures;
mod metrics;
mod provider;
mod requests;
mod retry;
