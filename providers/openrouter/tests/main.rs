//! Integration tests of patchbay-openrouter (one binary, one module per area).

mod agent;
mod common;
mod fields;
mod fixtures;
mod http;
mod metrics;
mod options;
mod record;
mod requests;
mod translator;
