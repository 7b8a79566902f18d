//! The state of a run that paused for approval: serializable, so a host keeps it between
//! requests (in its database, in the browser's session) and resumes from a later one.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approval::{Approval, ApprovalRequest};
use crate::event::Usage;
use crate::message::Message;
use crate::summary::RunSummary;

/// A person's decisions on the calls of a paused run, by call id.
pub type Decisions = BTreeMap<String, Approval>;

/// One host tool call of the step a run paused in, with the decision made before the pause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PausedCall {
    /// The call id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The input the model gave (or a hook rewrote it to).
    pub input: Value,
    /// The decision already made (by a hook or the approval handler); `None` while a person
    /// has yet to decide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided: Option<Approval>,
}

/// A run that paused for approval; see [`Approval::Pause`].
///
/// ```
/// # use patchbay_core::agent::PausedRun;
/// # fn keep(paused: &PausedRun) -> serde_json::Result<()> {
/// let json = serde_json::to_string(paused)?; // store it between requests
/// let back: PausedRun = serde_json::from_str(&json)?;
/// assert_eq!(&back, paused);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PausedRun {
    /// The conversation so far, ending with the assistant message whose calls wait (for an
    /// agent runtime: the conversation the run started from; the runtime keeps the rest).
    pub messages: Vec<Message>,
    /// The calls waiting for a decision, in call order.
    pub pending: Vec<ApprovalRequest>,
    /// Every host call of the paused step, in call order (empty for an agent runtime).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<PausedCall>,
    /// The step the run paused in (zero-based).
    pub step: u32,
    /// Usage of the run before the pause.
    pub usage: Usage,
    /// The agent runtime's session, which a resume continues.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Whether an agent runtime paused (it runs its own tools and waits for the decision).
    #[serde(default)]
    pub runtime: bool,
}

impl PausedRun {
    /// The ids of the calls waiting for a decision.
    pub fn pending_ids(&self) -> impl Iterator<Item = &str> {
        self.pending.iter().map(|call| call.tool_use_id.as_str())
    }
}

/// What a run hands over when its stream ends with `Finish`.
#[derive(Debug, Clone)]
pub(crate) struct RunEnd {
    pub(crate) messages: Vec<Message>,
    pub(crate) paused: Option<PausedRun>,
    pub(crate) summary: RunSummary,
}
