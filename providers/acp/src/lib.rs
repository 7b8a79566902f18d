//! patchbay-acp: any Agent Client Protocol agent (Google's Gemini CLI, OpenAI's Codex through
//! `codex-acp`, the Claude Agent SDK through `claude-agent-acp`, or any other) as a patchbay
//! agent runtime, on the official SDK (`agent-client-protocol`).

mod config;
mod connection;
mod error;
mod files;
mod options;
mod pool;
mod process;
mod prompt;
mod provider;
mod record;
mod run;
pub mod translate;
pub mod transport;

pub use config::{AGENT_ENV, AcpConfig, COMMAND_ENV, DEFAULT_HOST_SERVER, FileAccess, PEERS_ENV, Preset, Unattended};
pub use error::Error;
pub use provider::{AcpProvider, factory};
pub use translate::Translator;

/// The registry name: the key of `provider_options`, `ProviderInfo::name`, the `provider` of
/// every error and of the request span.
pub const NAME: &str = "acp";
