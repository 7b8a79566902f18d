//! Integration tests of patchbay-openrouter (one binary, one module per area).

mod common;
mod fixtures;
mod requests;
mod translator;
