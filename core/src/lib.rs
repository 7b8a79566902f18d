#![doc = include_str!("../README.md")]

mod agent;
mod cache;
mod context;
mod error;
mod event;
mod ext;
mod extensions;
mod factory;
pub mod kit;
mod message;
pub mod object;
mod provider;
mod retry;
mod schema;
mod signal;
mod sink;
mod source;
pub mod telemetry;
mod tool;
mod toolset;
pub mod validate;

pub use agent::{Agent, AgentOutcome, AttachedTools, DEFAULT_MAX_STEPS, ToolSource, Transcript};
pub use cache::CacheControl;
pub use context::{
    Approval, ApprovalHandler, ApprovalRequest, McpServerConfig, McpTransport, RequestContext, Sampling, Session,
    ToolChoice,
};
pub use error::{ErrorKind, Facts, Limit, ProviderError};
pub use event::{Event, FinishReason, McpFailure, Metrics, Usage, Warning};
pub use ext::ProviderExt;
pub use extensions::Extensions;
pub use factory::{BuildFn, ProviderFactory};
pub use message::{ContentBlock, ImageSource, Message, Role};
pub use object::{ObjectEvent, ObjectStream};
pub use provider::{Capabilities, EventStream, Provider, ProviderInfo, ProviderResponse};
pub use retry::{Retry, RetryLayer, RetryPolicy};
pub use schema::{ObjectError, OutputSchema};
pub use signal::Signal;
pub use sink::{Broadcast, EventBroadcast, EventSink, RunHandle, drive};
pub use source::{Location, Source, SourceTarget, Span};
pub use tool::{
    ExecutedBy, FnTool, ProgressUpdate, Tool, ToolContent, ToolContext, ToolProgress, ToolResult, ToolSpec, ToolStatus,
    parse_input,
};
pub use toolset::ToolSet;
pub use validate::{Rule, Validator, Violation, validate};

/// Re-exported so implementers use the same version.
pub use async_trait::async_trait;
