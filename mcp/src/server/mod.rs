//! The tool server: any [`ToolSet`](patchbay_core::ToolSet) over MCP (streamable HTTP or
//! stdio), with per-request context, and the resources and prompts a host serves beside its
//! tools.
//!
//! [`ToolServer`] and [`ToolServerBuilder`] are
//! at the crate root; this module holds what a host hands the builder: [`Resource`],
//! [`ResourceTemplate`], [`Prompt`] and [`PromptMessage`], and what a tool finds in its
//! context ([`McpCaller`]).

mod builder;
mod caller;
mod handler;
mod prompts;
mod relay;
mod resources;
mod running;
mod subscriptions;

pub use builder::ToolServerBuilder;
pub use caller::McpCaller;
pub use prompts::{Prompt, PromptMessage, PromptResult, PromptRole};
pub use resources::{ReadResult, Resource, ResourceRequest, ResourceTemplate};
pub use running::ToolServer;
pub use subscriptions::ResourceUpdates;
