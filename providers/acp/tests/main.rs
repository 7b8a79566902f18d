//! Integration tests of patchbay-acp.

mod provider;
mod support;
mod translate;
