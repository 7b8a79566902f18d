//! Integration tests of patchbay-acp.

mod provider;
mod record;
mod replay;
mod support;
mod translate;
