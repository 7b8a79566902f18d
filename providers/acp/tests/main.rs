//! Integration tests of patchbay-acp.

mod translate;
