//! Integration tests of patchbay-tools, one binary (ripgrep style).
#![cfg(unix)]
#![allow(clippy::unwrap_used)]

mod agent;
mod bash;
mod edit;
mod glob;
mod grep;
mod pdeathsig;
mod read;
mod support;
mod tool_set;
mod traversal;
mod write;
