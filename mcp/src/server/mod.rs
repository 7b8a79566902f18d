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

/// A completion callback of a served template or prompt: the variable or argument's name and
/// what the user typed so far, to suggestions.
type Complete = std::sync::Arc<dyn Fn(&str, &str) -> Vec<String> + Send + Sync>;

/// `f`, whose futures are boxed, behind a shared pointer: how a served resource, template or
/// prompt keeps the callback that answers it.
fn boxed<A, T, F, Fut>(f: F) -> std::sync::Arc<dyn Fn(A) -> futures::future::BoxFuture<'static, T> + Send + Sync>
where
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = T> + Send + 'static,
{
    std::sync::Arc::new(move |argument| Box::pin(f(argument)))
}
