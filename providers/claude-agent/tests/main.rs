//! Integration tests (one binary): the pure translator on recorded lines and the process layer
//! on the fake CLI. The real CLI's tests are trials of the `conformance` binary (`real.rs`),
//! where a missing CLI shows as ignored.

#[path = "support/mod.rs"]
mod support;

mod fake;
mod fields;
mod hooks;
mod host_death;
mod pause;
mod pool;
mod record;
mod secrets;
mod spares;
mod stop;
mod subagents;
mod translate;
