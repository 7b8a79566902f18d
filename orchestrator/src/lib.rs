//! `patchbay-orchestrator`: the agent-session service a parent agent calls over MCP to delegate
//! work to child agents, on any provider, offline on an embedded database.
//!
//! - [`Orchestrator`]: the service (start, resume, status, result, cancel, delete) over a
//!   [`store::Store`], [`blueprint::Blueprints`] and a pool of workers running patchbay's `Agent`.
//! - [`tools`]: the seven MCP tools; [`http`]: the MCP endpoint and the JSON API on one
//!   loopback listener behind a bearer token, and the stdio MCP server.
//! - [`blueprint`]: named agent definitions loaded from TOML.
//! - [`names`]: session-name rules.
//! - [`notify`]: per-session wake-ups, so nobody polls.
//! - [`format`](mod@format): answers in markdown or JSON, long results truncated.
//! - [`store`]: sessions, jobs and events behind one trait; SQLite through sqlx first.
//!
//! # Decisions
//! - **One process per data directory**: the binary locks `<data>/orchestrator.lock`, since
//!   wake-ups are in-process. (PostgreSQL with several workers is the next step.)
//! - **A failed or cancelled run keeps the conversation as it was** before the run: the next
//!   resume continues from the last finished run (the failed prompt stays in the job history
//!   and the events).
//! - **Callbacks** resume the parent when the child's job ends `completed`, `failed` or
//!   `cancelled` (a parent waiting for a callback is never left hanging). A parent that is not
//!   a session of this orchestrator (a person's Claude Code) cannot be resumed: a warning is
//!   logged and nothing is queued.
//! - **`wait_seconds`** returns at once for a session whose run has ended and has nothing
//!   queued (nothing would change), and is capped at 600 s.
//! - **Runs of agent runtimes** (claude-agent) resume through their provider session id; other
//!   providers resume from the stored conversation.

pub mod api;
pub mod blueprint;
mod error;
pub mod format;
pub mod http;
mod lock;
pub mod names;
pub mod notify;
mod service;
pub mod store;
pub mod tools;
mod worker;

pub use error::OrchestratorError;
pub use lock::{DataDirLock, LOCK_FILE, LockError, lock_data_dir};
pub use service::{
    CALLER_ENV, CALLER_HEADER, CALLER_METADATA_KEY, DEFAULT_SYNC_WAIT, DEFAULT_WORKERS, McpEndpoint, Orchestrator,
    OrchestratorBuilder, ResumeRequest, RunAnswer, StartRequest, report, summary,
};
