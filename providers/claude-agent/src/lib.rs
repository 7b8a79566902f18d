#![doc = include_str!("../README.md")]
//!
//! # Options
//! [`ClaudeAgentConfig::from_options`] (the registry's [`factory`]) and a call's
//! `provider_options("claude-agent")` read the same JSON object; every key is optional, an
//! unknown key or a wrong type is an error naming the key (never quoting the value): an
//! [`Error::Options`] (kind `Config`) from the registry's options, an `InvalidRequest` before
//! anything starts from a call's (the request is at fault, as in every provider crate). The
//! registry lays them over [`ClaudeAgentConfig::from_env`]; a call's over the provider's
//! configuration.
//!
//! | Key | Type | Default |
//! |---|---|---|
//! | `cli_path` | string | `$PATCHBAY_CLAUDE_CLI` (overridden by the option); unset: searched at each call (see [`find_cli`]) |
//! | `env` | object of strings | `{}`; merged over the configuration's, values never logged |
//! | `inherit_env` | bool | `true` (this process's environment less `CLAUDECODE`) |
//! | `max_line_bytes` | integer | 64 MiB, the workspace's line cap (above 0) |
//! | `permission_mode` | string | none: the CLI's (`default`, `acceptEdits`, `plan`, `bypassPermissions`...) |
//! | `allowed_tools` | array of strings | `[]`; replaces; host tools are added without an approval handler |
//! | `disallowed_tools` | array of strings | `[]`; replaces |
//! | `tools` | array of strings | none: every built-in tool (`[]` turns them all off) |
//! | `agents` | object of [`AgentDefinition`]s | `{}`; replaces; sub-agents by name (`{description, prompt, tools?, model?}`, other keys refused) sent with `initialize` |
//! | `approval_timeout_ms` | integer | `600000` (10 min): how long a run paused for approval keeps its CLI waiting for the decision |
//! | `system_prompt` | `{"type": "custom"}` or `{"type": "preset", "append": string?}` | custom: `RequestContext.system` or empty |
//! | `host_tools` | `"in_process"` or `"http"` | `"in_process"` |
//! | `host_server_name` | string (ASCII letters, digits, `_`, `-`) | `"host"` (tools are `mcp__host__<tool>`) |
//! | `max_turns` | integer | none |
//! | `setting_sources` | array of `"user"`, `"project"`, `"local"` | `[]`: no settings, hooks, permission rules or `CLAUDE.md` from the machine |
//! | `session_markers` | bool | `true` |
//! | `stop_grace_ms` | integer | `2000` (each wait of a stop after a finished turn) |
//! | `cancel_grace_ms` | integer | `250` (each wait of a stop mid-turn) |
//! | `init_timeout_ms` | integer | `60000` (above 0: it cannot be off) |
//! | `extra_args` | array of strings | `[]`; appended (values never logged) |
//! | `keep_alive_ms` | integer | off; `0` turns it off |
//! | `spares` | integer | `0`: none (see "Spare CLIs" below) |
//! | `spare_max_age_ms` | integer | `600000` (10 min); `0` turns the age limit off |
//! | `record_dir` | string (a folder) | `$PATCHBAY_RECORD_DIR` (overridden by the option); `""`: off (see "Recording" below) |
//!
//! The environment: `PATCHBAY_CLAUDE_CLI` ([`CLI_ENV`]) is `cli_path` (empty: unset; not valid
//! Unicode: an [`Error::Env`]); `PATH` and `PATCHBAY_PEERS` ([`PEERS_ENV`]) are where the CLI is
//! searched for at call time; `PATCHBAY_RECORD_DIR` is `record_dir` (empty: unset). A
//! configuration from [`ClaudeAgentConfig::new`] reads no environment variable.
//!
//! # Decisions
//! - **Isolation**: every run passes `--setting-sources` (empty unless `setting_sources` names
//!   some), as the Claude Agent SDK does, so the user's `~/.claude` settings, hooks and
//!   permission rules and a project's `CLAUDE.md` and `.claude/` do not change a host's runs;
//!   `--strict-mcp-config` goes with every `--mcp-config`, so only the host's MCP servers (and
//!   its host tools) are used.
//! - **Construction**: [`ClaudeAgentProvider::new`] is the only constructor and checks what can
//!   be checked without starting the CLI: the values ([`Error::Invalid`] naming the field: a
//!   zero line cap or `initialize` timeout, a host server name the CLI would rewrite, environment names with `=` or NUL) and an explicit `cli_path`, which must
//!   be an executable file. Without `cli_path` the CLI is searched for at each call (it may be
//!   installed after the provider is built, and a call may name another); a call's options are
//!   checked the same way before anything starts (a value they make invalid is an
//!   `InvalidRequest` naming the key). The config's fields are private: set with the `with_*`
//!   methods, read with the getters of the same name, like every provider crate's config.
//! - **Options errors** ([`Error::Options`]) keep core's `kit::OptionsError` as their source (the
//!   key at fault, found by reading each key alone, and serde's message with quoted values
//!   redacted), never serde's error itself: it quotes the refused value, which may be a key.
//! - **CLI discovery**: the explicit path, else `claude` on `PATH`, `./node_modules/.bin/claude`,
//!   `$PATCHBAY_PEERS/node_modules/.bin/claude`; else a `Config` error listing where it looked.
//!   `$PATCHBAY_CLAUDE_CLI` is read once, by `from_env`, as the explicit path: a wrong value is an
//!   error, not a silent fall back to another CLI.
//! - **Launch plan**: each call is planned without I/O (command line, environment, the system
//!   prompt and MCP config files, the `initialize` request, the first user turn, the keep-alive
//!   fingerprint), then the files are written and the CLI spawned. The system prompt and the MCP
//!   config (whose headers may hold tokens) go by file, never on the command line, in a run
//!   directory (owner only) made only when the call starts a CLI and removed with it.
//! - **Process**: own process group; environment inherited less `CLAUDECODE`, plus the config's and
//!   the request's, `CLAUDE_CODE_ENTRYPOINT=sdk-rust`; `max_tokens` and `thinking_budget` become
//!   `CLAUDE_CODE_MAX_OUTPUT_TOKENS` / `MAX_THINKING_TOKENS`; `temperature`, `top_p`, `top_k`,
//!   `stop_sequences`, `tool_choice` and `system_cache_control` are ignored with an
//!   `unsupported_option` warning. Stop after a finished turn: stdin EOF, then SIGTERM, then
//!   SIGKILL to the group, each wait bounded (`stop_grace`, 2 s). Stop mid-turn (a cancel, a
//!   dropped stream, a failure): the control protocol's `interrupt`, stdin EOF, then SIGTERM and
//!   SIGKILL after `cancel_grace` (250 ms) each, stdout drained meanwhile (the CLI ignores stdin
//!   EOF mid-turn, and with its stdout closed it lingers ~2 s after an interrupt); a cancelled CLI
//!   is gone in 0.1-0.4 s. A cancel or a dropped stream stops the CLI on a thread, so the caller
//!   never waits. stdout lines up to `max_line_bytes` (core's `kit::Framer`), past it a
//!   `Protocol` error naming `Limit::LineLength`; the stderr tail and exit code are attached to
//!   process errors.
//! - **Host death**: the CLI is started as `setpriv --pdeathsig=KILL -- <cli> ...` when
//!   util-linux `setpriv` is on `PATH` (Linux; core's `kit::ParentDeathSignal`), so the kernel
//!   kills it when the thread that spawned it ends: a `kill -9` of the host leaves no CLI
//!   editing files. The spawn runs on the thread polling the call (a runtime worker, or the
//!   thread in `block_on`), never on the blocking pool, whose idle threads end. Without
//!   `setpriv` the CLI is started directly and outlives a killed host. What the CLI starts (its
//!   Bash commands, MCP servers) is orphaned, not killed, by the host's death: a host tags it
//!   through `RequestContext::env` and sweeps it (the orchestrator does). A CLI that cannot be
//!   executed then shows as one that exited at once (setpriv's status 126 or 127 and message in
//!   the stderr tail), not as a spawn error.
//! - **Span**: planning, spawning and every poll of the stream run inside
//!   `chat{gen_ai.provider.name = "claude-agent", gen_ai.request.model}`
//!   ([`patchbay_core::kit::request_span_for`]); in-process host tool runs are `execute_tool`
//!   spans inside it, and so are the CLI's own tools (Bash, Read...), each from its `ToolCall`
//!   to its `ToolResult` as the stream passes them.
//! - **Secrets**: `Debug` of the configuration and the provider prints environment variable
//!   names and the flags of `extra_args`, never their values; option errors do not quote the
//!   values they refuse; no log line carries the environment, the command line or the MCP
//!   config.
//! - **Events**: `Started` comes with the first model output (so a call failing before any output
//!   is a bare error a retry layer may retry); deltas come from the `stream_event` partials through
//!   patchbay-anthropic's translator and the full `assistant` lines are used only for messages
//!   without partials; a model message followed by another is a `StepFinished`; `result` gives
//!   `Finish` (usage summed per message, `total_cost_usd` as cost) or a typed error from
//!   `api_error_status` (429 `RateLimited`, 529 `Overloaded`...) with turn and tool, the API's
//!   error type as provider code and the failed call's request id; a run that fails after output
//!   reports its usage and cost so far as a last `Usage` first. [`fields`] lists what becomes of
//!   every field of the CLI's recorded lines, and which are ignored and why.
//!   A sub-agent's whole messages (lines with a `parent_tool_use_id`) are `SubagentMessage`s
//!   (the parent call's id, the sub-agent type from its `subagent_type`, the blocks as a
//!   `Message`: tool names mapped like the main agent's); its partials are skipped. The CLI
//!   2.1.330 prints only a foreground sub-agent's prompt that way (its reply is the `Agent`
//!   call's `ToolResult`), and nothing of a background one (its default) but `task_*` system
//!   notices.
//!   `api_retry`, `permission_denied` and other system lines are `Started` warnings before the first
//!   output and `Opaque` events after it; `status` / `thinking_tokens` are progress (trace log).
//! - **Tools**: `mcp__<host server>__<tool>` calls are host tools (`executed_by: Host`, host name);
//!   all else runs in the CLI (`Provider`). Without an approval handler the host tools are added to
//!   `--allowedTools`; with one, `--permission-prompt-tool stdio` and every `can_use_tool` goes to it.
//!   The `ToolResult` event of a host tool carries the tool's own result (metadata included) on both
//!   paths.
//! - **Hooks** (`RequestContext::hooks`): registered with `initialize` (`PreToolUse`,
//!   `PostToolUse`, `UserPromptSubmit`, `Stop`, no matcher, one callback id each) only when the
//!   call has hooks, so the `initialize` request (part of the fingerprint) keeps a kept-alive or
//!   spare CLI started with hooks from serving a call without them, and the other way round.
//!   Each `hook_callback` calls the host's hook, tool names mapped back (`mcp__<host
//!   server>__x` is `x`, `executed_by: Host`; the CLI's own tools `Provider`):
//!
//!   | CLI hook | Host hook | Answer |
//!   |---|---|---|
//!   | `PreToolUse` | `before_tool` | `Deny`: `permissionDecision: "deny"` with the message (the CLI reports it as the call's error result); `Rewrite`: `updatedInput` (the tool runs with it, the approval handler still asked) |
//!   | `PostToolUse` | `after_tool` | a replacement of a host tool's result: `updatedMCPToolOutput` (the model and the `ToolResult` event get it); the CLI's own tools are observed only (their output has each tool's own shape, which a `ToolResult` cannot give back) |
//!   | `UserPromptSubmit` | `on_prompt` | `AddContext`: `additionalContext`; `Block`: `decision: "block"`: no model call, a `prompt_blocked` warning and `Finish` reason `blocked` |
//!   | `Stop` | `on_stop` | `Continue`: `decision: "block"` with the prompt (the CLI tells the model "Stop hook feedback: ..." and goes on; `StopInfo::continued` from `stop_hook_active`) |
//!
//!   `after_tool` sees a host tool's own result (metadata included) when it ran in-process,
//!   else the CLI's `tool_response`; `on_stop` gets the CLI's `last_assistant_message`.
//! - **Approval from a later request** ([`Approval::Pause`]): the `can_use_tool` request is
//!   left unanswered; once no other request is being answered the stream ends with
//!   `ApprovalRequested` (the calls, host names) and `Finish` (reason `ToolUse`, the usage so
//!   far), and the CLI waits, parked by session id, for `approval_timeout` (10 min). A later
//!   call with `Session::Resume { id }` whose `decisions` name a waiting call takes it: `Started`
//!   first, the decided permissions answered (Allow, AllowWithInput, Deny), the others asked
//!   again (they may pause again), then the rest of the turn; the resumed turn runs with that
//!   call's approval handler, hooks, tools and signal but the launch (flags, MCP servers, hook
//!   registration) of the paused one, and is not recorded by `record_dir`. When the time runs
//!   out the CLI is stopped (the mid-turn stop: `interrupt`, stdin EOF, SIGTERM, SIGKILL) and a
//!   later resume starts the session again with `--resume` (a `decisions_unanswered` warning;
//!   the new CLI's permission request is answered from the decisions when it names the same
//!   call). A resume of the session that decides none of the waiting calls stops the paused
//!   run (`approval_abandoned` warning). Dropping the provider stops every paused run.
//!   Cancelling or dropping a resumed stream stops its CLI as any other.
//!
//!   [`Approval::Pause`]: patchbay_core::context::Approval::Pause
//! - **Structured output** (`context.output_schema`): `--json-schema <schema>`; the CLI then
//!   offers the model its own `StructuredOutput` tool (not forced: a model answering in text is
//!   told once to call it) and ends the turn when it is called. Its input streams as the final
//!   text block (no tool call, no tool result: the CLI's "Structured output provided
//!   successfully" is bookkeeping), the turn finishes with `Stop`, and the `result` line's
//!   `structured_output` (the same object, compact) is emitted as a new text block only when
//!   the tool's block never came. A model that never calls the tool leaves its text as the
//!   answer; `generate_object` then validates that text.
//! - **Sessions**: `New { id }` → `--session-id`, `Resume` → `--resume=ID`, `Fork` →
//!   `--resume=ID --fork-session`; the id is on `Started`. Each answer ends with a session marker
//!   (`Opaque {"type": "session", "session_id", "messages"}`; off with `session_markers: false`).
//!   With a full history and no session: if the last assistant message carries a marker whose count
//!   matches its position, the call **forks** that session and sends only the new user messages
//!   (forking never changes the original, so a retry, a regenerate or a branch from an older answer
//!   stays correct); otherwise a new session gets the history flattened into a transcript
//!   (`history_flattened` warning).
//! - **Kept-alive CLIs** (`keep_alive`, off by default): a finished run's CLI stays up (stdin
//!   open) for its session's next `Resume` when everything else it was started with is the same
//!   (model, flags, environment, working directory, system prompt, host tool specs, MCP servers,
//!   sub-agents, hooks registered or not): the plan's fingerprint, a hash, so the pool holds no key. A warm turn then
//!   costs ~50 ms instead of ~700 ms: it writes one user line and reads lines (no `initialize`,
//!   no file, no run directory; planning it takes ~0.2 ms), as a turn of the Python SDK's
//!   `ClaudeSDKClient` does (`BENCHMARKS.md`). Idle CLIs stop after the timeout or when the
//!   provider is dropped. Only with in-process host tools.
//! - **Spare CLIs** (`spares`, off by default): a new session's first turn otherwise waits for
//!   the CLI to start (~0.4 s of a ~0.6 s turn). With `spares: n`, every new session's launch
//!   is remembered and `n` CLIs are started ahead of demand with it, each sent `initialize` and
//!   kept idle (stdin open) once it answered; the next new session whose launch matches takes
//!   one (its user turn goes at once) and a replacement starts in the background. What must
//!   match is the keep-alive rule (the plan's fingerprint: model, flags, environment, working
//!   directory, system prompt, MCP servers, sub-agents, hooks, output schema, approval handler) plus
//!   the program and the line cap. Only a new session without a fixed id takes one: `Resume`,
//!   `Fork`, `New { id: Some(..) }` (the id is a start flag), calls with host tools (the
//!   in-process server is answered by its call, the HTTP one carries the call's context) and
//!   recording runs (`record_stdout`, `record_dir`) start their own CLI. Spares follow the latest new
//!   session's launch: a new session with another launch stops the old spares and starts
//!   spares of its own, so the first new session of a launch is always cold. The real CLI
//!   makes no API call and writes no session before its first user message (it reads its
//!   settings, starts its MCP servers and answers `initialize`; checked in the `real` tests),
//!   so a spare holds nothing of a session, and its session id is its own. A spare that
//!   exited is never handed out (a cold start, no error), and one that ends before printing
//!   anything of the turn it was handed (it died after that check) gives way to the call's own
//!   CLI, started then with the call's launch (no error; a warning is logged). One unused for
//!   `spare_max_age` (10 min) is stopped and replaced, since what the CLI read at its start
//!   (settings, MCP servers' state) may have changed. A spare that fails to start is not
//!   retried until the next new session. Each spare costs an idle CLI process (~160 MB
//!   resident for the real one) and its MCP servers; dropping the provider stops every spare
//!   (stdin EOF, then SIGTERM and SIGKILL, reaped) and cancels the ones still starting. Spares
//!   start on the Tokio runtime of the call that taught the launch.
//! - **Recording** (`record_dir`, [`ClaudeAgentConfig::with_record_dir`], or
//!   `PATCHBAY_RECORD_DIR`): each call's stdout lines, as read (the lines `record_stdout` appends
//!   to one file), go to `DIR/claude-agent/recorded/<stem>.jsonl` through patchbay-http's
//!   [`Tape`](patchbay_http::record::Tape), with a line of `DIR/MANIFEST.tsv` (provider, model,
//!   time, the scenario the events showed, server `claude CLI`) written when the events end. A
//!   recorded file is a transcript the fake CLI of this crate's tests replays
//!   (`FAKE_CLAUDE_TRANSCRIPT`) as it replays `tests/transcripts/<scenario>.jsonl` (run
//!   `tests/transcripts/scrub.py` on it before committing one there); there is no request file,
//!   since what the CLI is sent goes over its stdin. Every value of the configured `env` and
//!   this process's `ANTHROPIC_API_KEY`, `ANTHROPIC_AUTH_TOKEN` and `CLAUDE_CODE_OAUTH_TOKEN`
//!   (when inherited) are replaced by `[redacted]` wherever they would appear. A kept-alive CLI's
//!   later turns are recorded without the `initialize` answer its first turn read. A failed write
//!   leaves the call as it was (one warning). `record_stdout` works as before, beside it.
//! - **Known CLI gaps** (`tests/conformance-baseline.toml`): the CLI continues after `max_tokens`
//!   and `refusal`, and hides in-stream errors and truncated streams behind a retry, so those shared
//!   scenarios end differently through it.
//!
//! # Modules
//! - [`translate`]: the pure line translator (stdout lines in, events out);
//! - [`control`]: control-protocol messages and the in-process host tool server;
//! - [`session`]: the session rule and the user turn sent to the CLI;
//! - [`lines`]: size-limited line reading.

mod agents;
mod blocks;
mod config;
pub mod control;
mod discover;
mod error;
mod hooks;
mod launch;
pub mod lines;
mod options;
mod pool;
mod process;
mod provider;
mod redact;
mod requests;
mod run;
pub mod session;
mod spares;
mod spawn;
pub mod translate;
mod waiting;

/// What each field of the CLI's stdout lines becomes: every field of the recorded transcripts,
/// mapped to an event or knowingly ignored with the reason (the `fields` test proves each row by
/// changing the field).
#[doc = include_str!("../FIELDS.md")]
pub mod fields {}

pub use agents::AgentDefinition;
pub use config::{
    CLI_ENV, ClaudeAgentConfig, DEFAULT_APPROVAL_TIMEOUT, DEFAULT_HOST_SERVER, DEFAULT_SPARE_MAX_AGE, HostTools,
    PEERS_ENV, SettingSource, SystemPrompt,
};
pub use discover::find_cli;
pub use error::Error;
pub use provider::{ClaudeAgentProvider, factory};
pub use translate::Translator;

/// The registry name: the key of `provider_options`, `ProviderInfo::name`, the `provider` of
/// every error and of the request span.
pub const NAME: &str = "claude-agent";
