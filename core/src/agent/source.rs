//! Tool sources: tools attached to a run when it starts (MCP servers, say).

use std::any::Any;
use std::fmt;

use async_trait::async_trait;

use crate::context::RequestContext;
use crate::event::{McpFailure, Warning};
use crate::signal::Signal;
use crate::toolset::ToolSet;

/// Tools attached for one run by an outside source (MCP servers, say), with what to report.
#[derive(Default)]
pub struct AttachedTools {
    /// The tools, merged after the agent's own tools.
    pub tools: ToolSet,
    /// Names of the sources (servers) that connected.
    pub connected: Vec<String>,
    /// Sources that failed, with the reason.
    pub failed: Vec<McpFailure>,
    /// Warnings to report on `Started`.
    pub warnings: Vec<Warning>,
    /// Kept alive for the whole run and dropped at its end (closes connections).
    pub guard: Option<Box<dyn Any + Send + Sync>>,
}

impl fmt::Debug for AttachedTools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AttachedTools")
            .field("tools", &self.tools)
            .field("connected", &self.connected)
            .field("failed", &self.failed)
            .field("warnings", &self.warnings)
            .finish_non_exhaustive()
    }
}

/// Something that attaches tools to a run when it starts (patchbay-mcp's client set).
/// When a source attached any server (connected or failed), the run emits one `McpConnected`
/// event after `Started`; with no servers at all the run is exactly as without the source.
#[async_trait]
pub trait ToolSource: Send + Sync {
    /// Attach for one run. Failures are reported in the result, never as an error.
    async fn attach(&self, context: &RequestContext, signal: &Signal) -> AttachedTools;

    /// Whether [`attach`](ToolSource::attach) also connects the servers of
    /// `RequestContext::mcp_servers` (patchbay-mcp's client set does). If any source does, the
    /// agent hands the provider a context without them, so a provider neither connects them a
    /// second time nor warns that it ignored them.
    fn attaches_context_servers(&self) -> bool {
        false
    }
}
