//! patchbay-mcp's integration tests: one binary, one module per area. Tests against real
//! peers are in `tests/peers/` (a binary that shows a missing peer as ignored).

mod common;

mod agent;
mod client;
mod connect;
mod conversions;
mod features;
mod hardening;
mod host_death;
mod oauth;
mod plain;
mod progress;
mod server;
mod serving;
