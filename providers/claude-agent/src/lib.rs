#![doc = include_str!("../README.md")]
//!
//! # Modules
//! - [`translate`]: the pure line translator (stdout lines in, events out);
//! - [`control`]: control-protocol messages and the in-process host tool server;
//! - [`session`]: the session rule and the user turn sent to the CLI;
//! - [`lines`]: size-limited line reading.

// `ProviderError` is core's type; its size is core's decision, not this crate's.

mod blocks;
mod config;
pub mod control;
mod error;
pub mod lines;
mod pool;
mod process;
mod provider;
mod redact;
mod run;
pub mod session;
pub mod translate;

pub use config::{
    CLI_ENV, ClaudeAgentConfig, DEFAULT_HOST_SERVER, HostTools, Options, PEERS_ENV, SystemPrompt, find_cli,
};
pub use error::{Error, PROVIDER};
pub use provider::{ClaudeAgentProvider, build};
pub use translate::Translator;

/// The registry entry: builds a [`ClaudeAgentProvider`] from JSON options.
pub fn factory() -> patchbay_core::ProviderFactory {
    patchbay_core::ProviderFactory::new(
        PROVIDER,
        "the Claude Code CLI as an agent runtime; PATCHBAY_CLAUDE_CLI or PATH, options override",
        build,
    )
}
