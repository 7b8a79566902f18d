//! patchbay: one stateless call, one typed event stream and one tool model for every LLM
//! provider. This facade re-exports the core contract and every provider crate compiled in
//! (one cargo feature each), and builds providers by name with a [`Registry`].
//!
//! ```
//! use patchbay::{Agent, Message, ProviderExt, Signal};
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let provider = patchbay::Registry::compiled().build("scripted", &serde_json::json!({"text": "Hi!"})).unwrap();
//! let outcome = Agent::new(provider, "demo").run(vec![Message::user("hello")], Signal::new()).await.unwrap();
//! assert_eq!(outcome.response.text(), "Hi!");
//! # });
//! ```

mod registry;

pub use patchbay_core::*;
pub use registry::{KNOWN_PROVIDERS, Registry};

/// The core contract crate.
pub use patchbay_core as core;

/// The deterministic scripted provider (feature `scripted`).
#[cfg(feature = "scripted")]
pub use patchbay_scripted as scripted;

/// The Anthropic Messages provider (feature `anthropic`).
#[cfg(feature = "anthropic")]
pub use patchbay_anthropic as anthropic;

/// The OpenAI-compatible provider (feature `openrouter`).
#[cfg(feature = "openrouter")]
pub use patchbay_openrouter as openrouter;

/// The Google Gemini provider, Gemini API and Vertex AI (feature `gemini`).
#[cfg(feature = "gemini")]
pub use patchbay_gemini as gemini;

/// The OpenAI Responses API provider: OpenAI, Azure OpenAI, OpenRouter, vLLM (feature `openai`).
#[cfg(feature = "openai")]
pub use patchbay_openai as openai;

/// The Claude Code CLI agent-runtime provider (feature `claude-agent`).
#[cfg(feature = "claude-agent")]
pub use patchbay_claude_agent as claude_agent;

/// Any Agent Client Protocol agent (Gemini CLI, Codex, Claude) as an agent runtime (feature `acp`).
#[cfg(feature = "acp")]
pub use patchbay_acp as acp;

/// MCP client set and tool server (feature `mcp`).
#[cfg(feature = "mcp")]
pub use patchbay_mcp as mcp;

/// Coding tools (feature `tools`).
#[cfg(feature = "tools")]
pub use patchbay_tools as tools;

/// OpenTelemetry export of patchbay's GenAI spans and metrics (feature `otel`).
#[cfg(feature = "otel")]
pub use patchbay_otel as otel;
