//! Integration tests (one binary): the pure translator on recorded lines, the process layer on
//! the fake CLI, and the real CLI (sessions, approvals, cancel, failures) when installed.

#[path = "support/mod.rs"]
mod support;

mod fake;
mod real;
mod translate;
