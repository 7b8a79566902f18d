//! patchbay-mcp's integration tests: one binary, one module per area.

mod common;

mod agent;
mod client;
mod conversions;
mod interop;
mod plain;
mod server;
