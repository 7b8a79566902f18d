//! Limits on what agents start: how deep a chain of parents goes, how many children a parent
//! has in all and at once, and how long one run may take. Set for the whole orchestrator
//! ([`Limits`], `serve --max-depth ...`) and per blueprint (`[limits]` in its TOML: a parent's
//! blueprint bounds its children, a session's own blueprint bounds its runs).
//!
//! | limit | default | when it is reached |
//! |---|---|---|
//! | `max_depth` | 8 | a start that would make a chain of more sessions (root = 1) is refused (`limit_reached`) |
//! | `max_children` | 100 | a start by a parent that has that many children is refused |
//! | `max_running_children` | 8 | a start by a parent with that many children pending or running is refused |
//! | `timeout_seconds` | 7200 | the run is cancelled, its job ends `cancelled` with the error `timed out after ...` |
//! | `max_tree_tokens` | none | starts and resumes in the tree are refused (`limit_reached`); a run in it is cancelled at its next step's end with the error `token budget spent ...` |
//!
//! The token budget belongs to a session tree (every session under the top of a parent chain,
//! see [`crate::store::Store::tree_usage`]): its root's blueprint sets it, else the
//! orchestrator. Tokens count input, cache reads and writes, and output
//! ([`crate::store::UsageTotals::total_tokens`]); a run's usage is stored at the end of each of
//! its steps (one model call), so one step can go past the budget before the run is stopped.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The orchestrator's own limits (see the module docs for the defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most sessions in a chain of parents, the root included.
    pub max_depth: u32,
    /// The most children one session may start.
    pub max_children: u32,
    /// The most children of one session pending or running at once.
    pub max_running_children: u32,
    /// The longest one run may take.
    pub run_timeout: Duration,
    /// The most tokens a session tree may spend (`None`: no budget).
    pub max_tree_tokens: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_depth: 8,
            max_children: 100,
            max_running_children: 8,
            run_timeout: Duration::from_secs(2 * 60 * 60),
            max_tree_tokens: None,
        }
    }
}

/// A blueprint's own limits (`[limits]` in its TOML); what it leaves out is the orchestrator's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlueprintLimits {
    /// The most sessions in a chain of parents through a session of this blueprint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_depth: Option<u32>,
    /// The most children a session of this blueprint may start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_children: Option<u32>,
    /// The most children of a session of this blueprint pending or running at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_running_children: Option<u32>,
    /// The longest one run of this blueprint may take, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u64>,
    /// The most tokens a tree whose root runs on this blueprint may spend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tree_tokens: Option<u64>,
}

impl BlueprintLimits {
    /// Whether every limit is left to the orchestrator.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// These limits over `global`.
    pub fn over(&self, global: &Limits) -> Limits {
        Limits {
            max_depth: self.max_depth.unwrap_or(global.max_depth),
            max_children: self.max_children.unwrap_or(global.max_children),
            max_running_children: self.max_running_children.unwrap_or(global.max_running_children),
            run_timeout: self.timeout_seconds.map_or(global.run_timeout, Duration::from_secs),
            max_tree_tokens: self.max_tree_tokens.or(global.max_tree_tokens),
        }
    }
}
