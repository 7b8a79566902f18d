//! Integration tests of patchbay-acp.

mod fields;
mod provider;
mod record;
mod replay;
mod support;
mod transcripts;
mod translate;
