#![doc = include_str!("../README.md")]
//!
//! # Options
//! [`AcpConfig::from_options`] (the registry's [`factory`]) and a call's
//! `provider_options("acp")` read the same JSON object; every key is optional, an unknown key
//! or a wrong type is an error naming the key (never quoting the value): an [`Error::Options`]
//! (kind `Config`) from the registry's options, an `InvalidRequest` before anything starts
//! from a call's. The registry lays them over [`AcpConfig::from_env`]; a call's over the
//! provider's configuration.
//!
//! | Key | Type | Default |
//! |---|---|---|
//! | `agent` | `"gemini"`, `"codex"` or `"claude"` ([`Preset`]) | `$PATCHBAY_ACP_AGENT`; none |
//! | `command` | string (a path, or a name searched on `PATH`, `./node_modules/.bin`, `$PATCHBAY_PEERS/acp/node_modules/.bin`) | `$PATCHBAY_ACP_COMMAND`; the preset's program |
//! | `args` | array of strings | `[]`; after the preset's (values never logged) |
//! | `env` | object of strings | `{}`; merged over the configuration's (values never logged, scrubbed from recordings) |
//! | `inherit_env` | bool | `true` |
//! | `isolate_home` | bool | `true`: a temporary `HOME`, XDG folders and the preset's config folder per agent process |
//! | `home_files` | object: path in the home → contents | `{}` (a Codex `config.toml`, say; needs `isolate_home`) |
//! | `pass_model` | bool | `true`: the call's model reaches a preset agent (`--model`, `-c model=`, `ANTHROPIC_MODEL`) |
//! | `file_access` | `"off"`, `"read"`, `"read_write"` | `"read_write"`, confined to the working directory (the `gemini` preset: `"off"`) |
//! | `unattended` | `"reject"` or `"allow"` | `"reject"`: the answer to a permission request without an approval handler |
//! | `host_server_name` | string (ASCII letters, digits, `_`, `-`) | `"host"` |
//! | `max_line_bytes` | integer | 64 MiB (above 0) |
//! | `init_timeout_ms` | integer | `60000` (`initialize`, `session/new`, `session/load`; above 0) |
//! | `cancel_grace_ms` | integer | `2000`: how long a cancelled turn may take to answer `cancelled` |
//! | `stop_grace_ms` | integer | `2000`: each wait of a stop (stdin EOF, SIGTERM, SIGKILL) |
//! | `keep_alive_ms` | integer | off (`0` turns it off): keep a finished agent for its session's next turn |
//! | `record_dir` | string (a folder) | `$PATCHBAY_RECORD_DIR`; `""`: off |
//!
//! # Decisions
//! - **One call, one prompt turn.** The agent runs its own loop; its tool calls come out as
//!   provider-run tool calls (`executed_by: Provider`) with their ACP facts (kind, title,
//!   locations, diffs, terminals, raw output) in the result's `metadata`; the host's own tools,
//!   served over MCP, come out as host calls with the tool's own result. A step ends when new
//!   output follows calls that all have their results (ACP has no step boundary of its own);
//!   ACP reports usage once per turn, so `StepFinished` usage is empty and the `Finish` usage is
//!   the turn's.
//! - **Sessions.** `Session::Resume { id }` reuses a kept-alive agent that has the session open,
//!   else `session/load` when the agent offers `loadSession` (what it replays of the history is
//!   discarded), else a new session with the earlier messages flattened into the prompt and a
//!   `history_flattened` warning. A new session with earlier messages gets the same. ACP has no
//!   system prompt: `RequestContext.system` goes in front of a new session's first prompt, with
//!   a `system_prompt_as_text` warning. Sampling, length, tool choice, output schema and hooks
//!   are ignored with an `unsupported_option` warning each.
//! - **Host tools** are registered with patchbay-mcp's global tool server (loopback, a token per
//!   call) and handed to the session as an HTTP MCP server named `host_server_name`, when the
//!   agent offers `mcpCapabilities.http`; otherwise left out with a warning. The request's own
//!   MCP servers are handed over too. A call with host tools never parks its agent (the tool
//!   server's registration ends with the call).
//! - **Permissions** (`session/request_permission`) go to the request's approval handler with
//!   the call's id, name and input; `Allow` picks the agent's `allow_once` (else
//!   `allow_always`) option, `Deny` its `reject_once` (else `reject_always`); no matching option
//!   answers `cancelled`. The dispatch loop is never held: the answer comes from a task.
//!   `Pause` rejects too: an ACP permission request cannot wait for a later call (the agent
//!   holds its turn open), so a run on ACP does not pause for approval across requests.
//! - **Hooks** (`RequestContext::hooks`) are not called: ACP has no hook protocol. An
//!   `unsupported_option` warning says so; the approval handler is the policy point that every
//!   permission request reaches.
//! - **Files**: `fs/read_text_file` and `fs/write_text_file` are offered as `file_access` says and
//!   served through patchbay-tools' confinement (see [`FileAccess`]); terminals are not offered.
//! - **Process**: own process group, `setpriv --pdeathsig=KILL` where available, a temporary home
//!   when isolated. A finished turn closes stdin, then SIGTERM and SIGKILL the group, each after
//!   `stop_grace`. A cancel sends `session/cancel` and waits `cancel_grace` for the `cancelled`
//!   answer (then the agent may be kept); an agent that does not answer is stopped. A dropped
//!   stream SIGTERMs the group at once and SIGKILLs it from a thread after `stop_grace`: nothing
//!   outlives the call unless it is kept alive.
//! - **Errors**: the agent's JSON-RPC errors are `Refused` (code -32000 `Auth`, invalid params
//!   `InvalidRequest`, others `Server`); an agent that exits mid-turn is `Process` with its exit
//!   status and stderr tail; a line over `max_line_bytes` is `Protocol` ([`Error::LineTooLong`]).
//!   A line that is not JSON-RPC is skipped by the SDK, as the protocol asks.
//! - **Lenient reading**: every message is read as JSON (the SDK's untyped messages), every field
//!   the crate uses read leniently, so an agent a protocol revision ahead is read, not refused.
//!
//! # Recording
//! With `record_dir` (or `$PATCHBAY_RECORD_DIR`), each call's ACP lines, both ways, go to
//! `DIR/acp/recorded/<stem>.jsonl` as `{"dir": "send"|"recv", "msg": ...}` with the configured
//! environment's values scrubbed, and a manifest line is written when the events end.
//!
//! # The fake agent
//! The crate builds `patchbay-acp-fake-agent`, a scripted ACP agent on the SDK's agent side: the
//! shared conformance scenarios run on it, and hosts can use it as a test double (its script
//! format is in its source's top comment).

mod config;
mod connection;
mod error;
mod files;
mod options;
mod pool;
mod preset;
mod process;
mod prompt;
mod provider;
mod record;
mod run;
pub mod translate;
pub mod transport;

/// What each field of the real agents' messages becomes: every field of the recorded
/// transcripts, mapped to an event or knowingly ignored with the reason (the `fields` test
/// proves each row by changing the field).
#[doc = include_str!("../FIELDS.md")]
pub mod fields {}

pub use config::{AGENT_ENV, AcpConfig, COMMAND_ENV, DEFAULT_HOST_SERVER, FileAccess, PEERS_ENV, Preset, Unattended};
pub use error::Error;
pub use provider::{AcpProvider, factory};
pub use translate::Translator;

/// The registry name: the key of `provider_options`, `ProviderInfo::name`, the `provider` of
/// every error and of the request span.
pub const NAME: &str = "acp";
