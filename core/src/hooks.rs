//! Hooks: one policy, written once, that holds on every provider.
//!
//! A [`Hooks`] value in [`RequestContext::hooks`](crate::RequestContext::hooks) is called
//! around each tool call, on the user's prompt and when the run is about to stop. The
//! [`Agent`](crate::Agent) loop calls it for direct APIs (the host runs the tools); an agent
//! runtime that runs its own tools serves it over its own protocol (patchbay-claude-agent
//! registers it with the Claude Code CLI's `hooks` and answers its callbacks), so the same
//! rule holds whoever runs the tool.
//!
//! Every method has a default that changes nothing, so a hook implements only what it needs.
//!
//! | Hook | Called | Can |
//! |---|---|---|
//! | [`before_tool`](Hooks::before_tool) | before approval and before the tool runs | allow, deny with a message, rewrite the input |
//! | [`after_tool`](Hooks::after_tool) | after the tool ran (or was denied) | observe, replace the result |
//! | [`on_prompt`](Hooks::on_prompt) | before the first model call of a run | let it through, block it, add context |
//! | [`on_stop`](Hooks::on_stop) | when the model ends its turn without more tool calls | let it stop, or send it back with a prompt |
//!
//! ```
//! use patchbay_core::hooks::{BeforeTool, Hooks, ToolInvocation};
//! use patchbay_core::{async_trait, ToolContext};
//!
//! /// No shell commands that delete things, on any provider.
//! struct NoRm;
//!
//! #[async_trait]
//! impl Hooks for NoRm {
//!     async fn before_tool(&self, call: &ToolInvocation, _cx: &ToolContext) -> BeforeTool {
//!         let command = call.input.get("command").and_then(|c| c.as_str()).unwrap_or("");
//!         if command.contains("rm ") {
//!             BeforeTool::deny("deleting files is not allowed here")
//!         } else {
//!             BeforeTool::Continue
//!         }
//!     }
//! }
//! ```

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::{FinishReason, Usage};
use crate::tool::{ExecutedBy, ToolContext, ToolResult};

/// A tool call a hook is asked about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolInvocation {
    /// The call id.
    pub tool_use_id: String,
    /// The tool's name (the host's name for host tools, whichever path the call took).
    pub tool_name: String,
    /// The input the model gave (or the input an earlier hook rewrote it to).
    pub input: Value,
    /// Who runs it: the host, or the runtime's own tool (`Bash`, `Edit`...).
    pub executed_by: ExecutedBy,
}

/// What [`Hooks::before_tool`] decides.
#[derive(Debug, Clone, PartialEq)]
pub enum BeforeTool {
    /// Go on (to approval, then the tool).
    Continue,
    /// Do not run the tool; the model is told this message.
    Deny {
        /// Why, in words the model can act on.
        message: String,
    },
    /// Go on with this input instead.
    Rewrite(Value),
}

impl BeforeTool {
    /// A denial with this message.
    pub fn deny(message: impl Into<String>) -> Self {
        Self::Deny {
            message: message.into(),
        }
    }
}

/// What [`Hooks::on_prompt`] decides.
#[derive(Debug, Clone, PartialEq)]
pub enum OnPrompt {
    /// Send the prompt as it is.
    Continue,
    /// Do not send it: the run ends at once with `Finish` (reason `Other("blocked")`) and no
    /// model call, and the reason is a `prompt_blocked` warning on `Started`.
    Block {
        /// Why, for the person.
        reason: String,
    },
    /// Send it with this text added to the prompt (context the model should see).
    AddContext(String),
}

/// What the model said when it stopped.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct StopInfo {
    /// Why the model stopped.
    pub reason: FinishReason,
    /// The text of its last message.
    pub text: String,
    /// Usage of the run so far, where known.
    pub usage: Usage,
    /// Whether this stop comes after an earlier [`StopDecision::Continue`] of the same run (a
    /// hook that always continues would never let it end; the step limit still holds).
    pub continued: bool,
}

impl StopInfo {
    /// A stop with `reason` and the last message's `text`.
    pub fn new(reason: FinishReason, text: impl Into<String>) -> Self {
        Self {
            reason,
            text: text.into(),
            usage: Usage::default(),
            continued: false,
        }
    }
}

/// What [`Hooks::on_stop`] decides.
#[derive(Debug, Clone, PartialEq)]
pub enum StopDecision {
    /// Let the run end.
    Stop,
    /// Do not end yet: the model gets this prompt and goes on.
    Continue {
        /// What the model is told (why it should go on).
        prompt: String,
    },
}

/// Calls around tools, prompts and stops; see the [module docs](self).
#[async_trait]
pub trait Hooks: Send + Sync {
    /// Before a tool call runs (before the approval handler is asked).
    async fn before_tool(&self, call: &ToolInvocation, cx: &ToolContext) -> BeforeTool {
        let _ = (call, cx);
        BeforeTool::Continue
    }

    /// After a tool call ended: `Some` replaces the result the model gets (on an agent
    /// runtime, only for host tools: its own tools' results are observed).
    async fn after_tool(&self, call: &ToolInvocation, result: &ToolResult, cx: &ToolContext) -> Option<ToolResult> {
        let _ = (call, result, cx);
        None
    }

    /// Before the user's prompt goes to the model (once per run).
    async fn on_prompt(&self, prompt: &str) -> OnPrompt {
        let _ = prompt;
        OnPrompt::Continue
    }

    /// When the model ended its turn and the run is about to end.
    async fn on_stop(&self, stop: &StopInfo) -> StopDecision {
        let _ = stop;
        StopDecision::Stop
    }
}
