//! Integration tests of patchbay-pgtemp, one binary (ripgrep style). They need the PostgreSQL
//! binaries: without them a test prints a note and passes, except under `CI=true`, where it
//! fails.
#![cfg(unix)]
#![allow(clippy::unwrap_used)]

mod pdeathsig;
mod server;
mod support;
