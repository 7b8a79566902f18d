//! Host-level behaviour of the facade: the agent loop, retry, sinks and the registry, through
//! public APIs, on the scripted provider.

mod agent;
#[cfg(feature = "anthropic")]
mod approvals;
mod common;
mod concurrency;
mod factories;
mod handles;
#[cfg(all(feature = "anthropic", feature = "openrouter"))]
mod hardening;
mod hooks;
mod live_tools;
mod retry;
#[cfg(all(
    feature = "anthropic",
    feature = "openrouter",
    feature = "claude-agent",
    feature = "mcp"
))]
mod secrets;
mod sinks;
