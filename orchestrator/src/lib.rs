//! `patchbay-orchestrator`: the agent-session service a parent agent calls over MCP to delegate
//! work to child agents (issue 12; under construction).
//!
//! - [`blueprint`]: named agent definitions loaded from TOML.
//! - [`names`]: session-name rules.
//! - [`notify`]: per-session wake-ups, so nobody polls.
//! - [`format`](mod@format): answers in markdown or JSON, long results truncated.
//! - [`store`]: sessions, jobs and events behind one trait; SQLite through sqlx first.

pub mod blueprint;
pub mod format;
pub mod names;
pub mod notify;
pub mod store;
