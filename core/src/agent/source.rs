//! Tool sources: tools attached to a run when it starts (MCP servers, say).

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;

use crate::context::RequestContext;
use crate::event::{Event, McpFailure, Warning};
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
    /// What the source says while the run goes on (log messages, a changed tool list), if it
    /// can say anything: the agent drains it between model events and while tools run.
    pub live: Option<Arc<dyn LiveTools>>,
}

impl fmt::Debug for AttachedTools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AttachedTools")
            .field("tools", &self.tools)
            .field("connected", &self.connected)
            .field("failed", &self.failed)
            .field("warnings", &self.warnings)
            .field("live", &self.live.is_some())
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

/// The live side of [`AttachedTools`]: what a source has for a run after it attached
/// (patchbay-mcp: servers' log messages and reconnection notices as [`Event::Log`], and the
/// tools again after a server announced `tools/list_changed`).
///
/// The agent yields [`take_events`](LiveTools::take_events) once `Started` went out: after each
/// provider event, between steps, and while host tools run (woken by
/// [`events_ready`](LiveTools::events_ready)); it asks [`changed_tools`](LiveTools::changed_tools)
/// before every model call after the first, so the next call sees the new tool list.
#[async_trait]
pub trait LiveTools: Send + Sync {
    /// Transient events for the host (`Event::Log`), without waiting; empty when none.
    fn take_events(&self) -> Vec<Event>;

    /// Resolves when [`take_events`](LiveTools::take_events) may have something (waking
    /// without anything is allowed); never resolving is fine for a source with no events.
    async fn events_ready(&self);

    /// The source's whole tool set when it changed since attached (or since the last call
    /// that returned `Some`); `None` when unchanged.
    async fn changed_tools(&self) -> Option<ToolSet>;
}
