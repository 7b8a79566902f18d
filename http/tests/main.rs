//! patchbay-http's integration tests: one binary, one module per area.

mod common;

mod record;
mod tls;
