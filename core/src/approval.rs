//! Approvals: asking before a tool runs, now (an [`ApprovalHandler`]) or from a later request
//! ([`Approval::Pause`]: the run pauses and resumes with a person's decision).

use std::collections::BTreeSet;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tool::ToolContext;

/// What the approval handler is asked about (and, in [`Event::ApprovalRequested`](crate::Event),
/// what a paused run waits for).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// The call id.
    pub tool_use_id: String,
    /// The tool name.
    pub tool_name: String,
    /// The input the model gave.
    pub input: Value,
}

/// The approval handler's answer, or a person's decision handed to a resumed run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "behavior", rename_all = "snake_case")]
pub enum Approval {
    /// Run the tool as asked.
    Allow,
    /// Run the tool with this input instead.
    AllowWithInput(Value),
    /// Do not run it; the model is told this message.
    Deny {
        /// Why, in words the model can act on.
        message: String,
    },
    /// Ask a person, who answers from a later request: the run ends its stream with
    /// [`Event::ApprovalRequested`](crate::Event) and `Finish` (reason `ToolUse`), and a later
    /// call carrying the decision ([`RequestContext::with_decision`](crate::RequestContext::with_decision)) resumes it. Where a run
    /// cannot pause (a provider that does not support it), `Pause` denies the call.
    Pause,
}

impl Approval {
    /// A denial with this message.
    pub fn deny(message: impl Into<String>) -> Self {
        Self::Deny {
            message: message.into(),
        }
    }
}

/// Asked before a tool runs: allow, allow with edited input, or deny with a message.
#[async_trait]
pub trait ApprovalHandler: Send + Sync {
    /// Decide on one call.
    async fn approve(&self, request: &ApprovalRequest, cx: &ToolContext) -> Approval;
}

/// An approval handler that pauses the run for the named tools (a person decides from a later
/// request) and allows every other call.
///
/// ```
/// use std::sync::Arc;
/// use patchbay_core::{RequestContext, context::PauseFor};
/// let cx = RequestContext::new().with_approval(Arc::new(PauseFor::tools(["delete_file"])));
/// # let _ = cx;
/// ```
#[derive(Debug, Clone, Default)]
pub struct PauseFor {
    tools: BTreeSet<String>,
}

impl PauseFor {
    /// Pause for these tool names.
    pub fn tools<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            tools: names.into_iter().map(Into::into).collect(),
        }
    }
}

#[async_trait]
impl ApprovalHandler for PauseFor {
    async fn approve(&self, request: &ApprovalRequest, _cx: &ToolContext) -> Approval {
        if self.tools.contains(&request.tool_name) {
            Approval::Pause
        } else {
            Approval::Allow
        }
    }
}
