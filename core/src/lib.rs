#![doc = include_str!("../README.md")]

pub mod agent;
mod approval;
mod cache;
pub mod context;
pub mod error;
pub mod event;
mod ext;
mod extensions;
mod factory;
pub mod hooks;
pub mod kit;
mod message;
pub mod object;
mod provider;
pub mod retry;
mod schema;
mod signal;
pub mod sink;
pub mod source;
pub mod summary;
pub mod telemetry;
pub mod tool;
mod tool_log;
mod toolset;
pub mod validate;

// The root holds what a host uses (39 names); the rest lives in the public modules above
// (`context::Session`, `tool::ToolStatus`, `sink::EventSink`, `validate::validate`...), and
// what only a provider implementer needs is defined in `kit`.
pub use agent::{Agent, AgentOutcome, ToolSource, Transcript};
pub use cache::CacheControl;
pub use context::RequestContext;
pub use error::{ErrorKind, Limit, ProviderError};
pub use event::{Event, FinishReason, Metrics, Usage, Warning};
pub use ext::ProviderExt;
pub use factory::{BuildFn, ProviderFactory};
pub use message::{ContentBlock, ImageSource, Message, Role};
pub use provider::{Capabilities, EventStream, Provider, ProviderInfo, ProviderResponse};
pub use retry::{Retry, RetryPolicy};
pub use schema::OutputSchema;
pub use signal::Signal;
pub use source::Source;
pub use tool::{ExecutedBy, FnTool, Tool, ToolContext, ToolResult, ToolSpec};
pub use toolset::ToolSet;

/// Re-exported so implementers use the same version.
pub use async_trait::async_trait;
