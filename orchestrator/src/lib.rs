//! `patchbay-orchestrator`: the agent-session service a parent agent calls over MCP to delegate
//! work to child agents, on any provider, offline on an embedded database.
//!
//! - [`Orchestrator`]: the service (start, resume, status, result, cancel, delete) over a
//!   [`store::Store`], [`blueprint::Blueprints`] and a pool of workers running patchbay's `Agent`.
//! - [`tools`]: the nine MCP tools; [`http`]: the MCP endpoint and the JSON API on one
//!   loopback listener behind a bearer token, and the stdio MCP server.
//! - [`scope`]: the scoped tokens runs get instead of the bearer token, reaching their own
//!   session and the sessions below it only.
//! - [`blueprint`]: named agent definitions loaded from TOML.
//! - [`names`]: session-name rules.
//! - [`notify`]: per-session wake-ups, so nobody polls.
//! - [`progress`]: what a session does now, told to a caller waiting on it (MCP progress
//!   notifications).
//! - [`format`](mod@format): answers in markdown or JSON, long results truncated.
//! - [`store`]: sessions, jobs and events behind one trait: SQLite (embedded, the default) or
//!   PostgreSQL (shared by several processes on several machines).
//! - [`web`]: the live web view served beside the API.
//!
//! # Decisions
//! - **SQLite: one process per data directory**: the binary locks `<data>/orchestrator.lock`,
//!   since its wake-ups are in-process. **PostgreSQL: any number of processes**: `serve`
//!   processes take requests (`--workers 0` leaves the runs to others), `worker` processes only
//!   run jobs; they wake each other with `LISTEN/NOTIFY` ([`store::Change`]).
//! - **Leases**: a claimed job carries its process's worker id and a lease (default 30 s,
//!   `--lease`), renewed every third of it while the run goes on. Every process settles
//!   leases that ran out: a job whose run had started ends `failed` with
//!   [`store::LEASE_EXPIRED`] (with its session); one that had not is queued again. A process
//!   whose renewal finds its job gone, taken or asked to stop cancels the run, so a job never
//!   runs in two places at once; the partial unique index `jobs_one_active_per_session` makes
//!   the database refuse two active jobs of one session.
//! - **Cancelling across processes**: cancelling or deleting a job another process runs marks
//!   it (`cancel_requested`) and announces it; that process cancels the run at the
//!   notification, or at its next renewal if the notification was lost.
//! - **A failed or cancelled run keeps the conversation as it was** before the run: the next
//!   resume continues from the last finished run (the failed prompt stays in the job history
//!   and the events).
//! - **A run's end commits with its job's end**: the conversation, the result and the run's
//!   last event (`finish`, or its error) are written in the transaction that ends the job
//!   ([`store::JobEnd::with_session`], [`store::JobEnd::with_events`]). A worker killed before
//!   it leaves a job that fails by its lease and shows no finished run; one killed after leaves
//!   a completed job. A run whose job was ended elsewhere meanwhile stores nothing of its end.
//! - **Callbacks** resume the parent when the child's job ends `completed`, `failed` or
//!   `cancelled`, whatever ends it (its run, a cancel, the restart after a crash, a lease that
//!   ran out): the parent's resume is queued in the transaction that ends the child's job, so
//!   it is queued exactly once (a parent waiting for a callback is never left hanging).
//!   `callback: true` without a calling session of this orchestrator (a person's Claude Code)
//!   is refused at once (`no_callback_target`): nobody could be resumed.
//! - **Runs hold scoped tokens, not the admin token** ([`scope`]): the MCP configuration a run
//!   gets carries a token of its own session (an HMAC under a per-process key) that opens
//!   `/mcp` only and reaches that session and the sessions below it: it starts children (its
//!   session is the caller, whatever `X-Agent-Session-Name` says), reads, resumes and cancels
//!   them, lists them; any other session is "not found" (`not_existent` for the status, so a
//!   run cannot learn that a sibling exists); `delete_all_agent_sessions` is refused
//!   (`out_of_scope`), the JSON API answers `403`, the web view does not open. The listener's
//!   bearer token (printed by `serve`) keeps everything.
//! - **Callers are sessions here**: a named caller that breaks
//!   the name rule or names no session is refused, over MCP and the API alike; no session can
//!   become its own parent or ancestor, or resume itself.
//! - **A session's state comes from all its jobs**: it is `running` while any job of it is
//!   pending, claimed or running; its report is about its *current job* (the one going on, else
//!   the last one that ran), whose own result or error it carries (`jobs.result`): a failed or
//!   cancelled run never shows an earlier run's text. A failed or cancelled run answers over
//!   MCP with `isError: true`.
//! - **`wait_seconds`** waits until the session settles (every job of it ended) or the time is
//!   up, not until its first change; a settled session answers at once. Capped at 600 s.
//! - **Projects root**: every `project_dir` is resolved (symlinks too) and must be inside the
//!   root (`--projects-root`, [`OrchestratorBuilder::projects_root`]).
//! - **Limits** ([`limits`]): depth of the parent chain, children per parent in all and at
//!   once, a timeout per run, a token budget per session tree; global, and per blueprint. A
//!   resume by a new parent passes the new parent's child limits (the session joins its tree).
//! - **Usage** ([`store::UsageTotals`]): a run's tokens (and cost, where the provider reports
//!   it) are stored on its job and added to its session at the end of each step, so a report
//!   carries the current run's usage (`run_usage`), the session's (`usage`, also in listings)
//!   and its tree's (`tree_usage`, summed on demand from the root, `tree_root`), as do the API
//!   and the web view. A tree is everything under the top of a parent chain.
//! - **Progress while waiting**: a sync start or resume, or a status call with `wait_seconds`,
//!   whose MCP caller sent a `progressToken` gets `notifications/progress` with the child's
//!   latest activity (`queued`, `thinking`, `writing`, `tool bash: sleep 20`...) at each change
//!   (read at most every 250 ms) and every 10 s of quiet, so a client whose request timeout
//!   restarts at each notification waits out a long run ([`progress`]).
//! - **A stop is bounded** ([`STOP_GRACE`]) whatever the database does; runs whose end could
//!   not be recorded are named in the log and settled later as interrupted.
//!
//! # Departures from the design the tools come from
//! - An async start or resume answers `status: "running"` and the design's message, plus
//!   `job_id` and `job_status` (the queued job's own status).
//! - `list_agent_sessions` pages (100 by default, `next_after`); `total` counts every match.
//! - Two tools more: `cancel_agent_session` and `get_agent_session_events`.
//! - **Runs of agent runtimes** (claude-agent, acp) resume through their provider session id; other
//!   providers resume from the stored conversation.
//! - **Worker slots are lent while a run waits**: a run that makes a sync start or resume, or
//!   a status call with `wait_seconds`, on another session (its caller header names a run in
//!   progress here) gives its slot to the queue for the wait. Nested sync starts deeper than
//!   the worker count therefore run instead of waiting out the limit; the runs in progress may
//!   exceed the count by the number of waiting runs.
//! - **Events are stored as they come** by one writer task per run: what queues up while a
//!   write is going on is written in the next transaction (group commit, at most 256 events).
//! - **Folders**: a session started without `project_dir` works in its caller's folder when the
//!   caller is a session here, else in the orchestrator's (`--project-dir`, default the current
//!   folder); a relative `project_dir` is read under the orchestrator's folder.
//! - **Runs reach the orchestrator over HTTP**: a blueprint with `orchestrator_tools = true`
//!   gets the MCP server `orchestrator` (the loopback endpoint of the process running it, the
//!   run's scoped token, and `X-Agent-Session-Name: <the run's session>`);
//!   `patchbay-orchestrator mcp` serves that endpoint too, besides stdio, and so does each
//!   `worker` process (for its own runs). With a scoped token the header is ignored (the
//!   token says who calls); with the bearer token it is the caller's claim: its holder may
//!   name any session, as in the original design.
//! - **No run outlives its orchestrator**: the processes a run starts (a `bash` tool's shell, a
//!   claude-agent CLI, an ACP agent) get the parent-death signal (`setpriv --pdeathsig=KILL` when util-linux
//!   is installed), so a `kill -9` of the orchestrator kills them; and every process a run
//!   starts carries [`RUN_ENV`]`=<job id>`, so what those started (a shell's `sleep`, a CLI's
//!   tools) is killed at the next start, before the interrupted job is marked failed (SQLite),
//!   or when a dead worker's lease is settled (PostgreSQL: on the settling process's machine
//!   only). Linux only (`/proc`); a sweep kills only processes whose job its own store holds, so
//!   two orchestrators on one machine never kill each other's runs.
//! - **Provider options are trusted configuration**: blueprints come from the operator's
//!   folder; the API shows only their keys.

pub mod api;
pub mod blueprint;
mod budget;
mod caller;
mod error;
pub mod format;
mod guard;
pub mod http;
pub mod limits;
mod lock;
pub mod names;
pub mod notify;
mod orphans;
pub mod progress;
mod runtime;
pub mod scope;
mod secret;
mod service;
pub mod store;
mod text;
pub mod tools;
pub mod transcript;
pub mod web;
mod worker;

pub use error::OrchestratorError;
pub use lock::{DataDirLock, LOCK_FILE, LockError, lock_data_dir};
pub use orphans::RUN_ENV;
pub use service::{
    CALLER_ENV, CALLER_HEADER, CALLER_METADATA_KEY, DEFAULT_MAX_REQUEST_BYTES, DEFAULT_SYNC_WAIT, DEFAULT_WORKERS,
    McpEndpoint, Orchestrator, OrchestratorBuilder, ResumeRequest, RunAnswer, STOP_GRACE, StartRequest, report,
    summary,
};
