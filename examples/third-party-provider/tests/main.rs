//! The crate's tests in one binary: the translator on hand-made streams, the options, the
//! requests each shared scenario sends, and the provider against hostile servers.

mod config;
mod http;
mod requests;
mod target;
mod translate;
