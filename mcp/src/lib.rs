#![doc = include_str!("../README.md")]

mod auth;
mod body_limit;
mod call;
mod child;
mod client;
mod connection;
mod contexts;
mod convert;
mod error;
mod handler;
mod interact;
mod listen;
mod notices;
pub mod oauth;
mod reporting;
mod resources;
mod sampling;
pub mod server;
mod supervise;

pub use auth::{Authorizer, Grant};
pub use body_limit::DEFAULT_MAX_REQUEST_BYTES;
pub use client::{DEFAULT_CONNECT_TIMEOUT, McpClientSet, McpConnections};
pub use connection::{CLOSE_GRACE, McpClient, ToolNaming};
pub use contexts::{CONTEXT_HEADER, ContextGuard, META_HEADER_PREFIX};
pub use convert::{
    META_CLAUDE_TOOL_USE_ID, META_JSON, META_METADATA, META_STATUS, META_TOOL_USE_ID, audio_content,
    from_call_tool_result, spec_from_mcp, spec_to_mcp, to_call_tool_result,
};
pub use error::Error;
pub use interact::{AcceptDefaults, ElicitationHandler, SamplingHandler, schema_defaults};
pub use listen::{DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS};
pub use notices::NOTICE_LOGGER;
pub use reporting::reporting_tools;
pub use resources::{prompt_messages, resource_blocks, resource_message};
pub use sampling::ProviderSampling;
pub use server::{McpCaller, ResourceUpdates, ToolServer, ToolServerBuilder};
pub use supervise::RestartPolicy;

/// The rmcp version this crate is built on, re-exported for its model types.
pub use rmcp;
