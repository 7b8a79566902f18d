//! `patchbay-acp-fake-agent`: a scripted ACP agent (protocol v1) on stdio, a test double.
//!
//! It plays the JSON script named by `PATCHBAY_ACP_FAKE_SCRIPT` (unset: every prompt answers
//! `end_turn` at once). With `PATCHBAY_ACP_FAKE_LOG` set, it appends one line per request and
//! notification it receives, `{"method": ..., "params": ...}`, to that file. Stdout carries only
//! protocol messages (and the `raw` steps); diagnostics go to stderr. Stdin's EOF exits 0.
//!
//! ```json
//! {
//!   "agent_info": {"name": "patchbay-fake-agent", "version": "0.1.0"},
//!   "load_session": false,
//!   "auth_methods": [],
//!   "mcp_http": true,
//!   "prompts": [[STEP, ...], [STEP, ...]]
//! }
//! ```
//!
//! Every key is optional (defaults shown). `initialize` answers protocol version 1 with
//! `loadSession`, `promptCapabilities {image, embeddedContext}: true`, `mcpCapabilities {http}`,
//! `authMethods` and `agentInfo`. `authenticate` and `session/set_mode` answer ok.
//! `session/new` answers `sess_1`, `sess_2`... and keeps the session's `mcpServers`;
//! `session/load` does the same when `load_session` (sending no history), else answers
//! method-not-found. Each `session/prompt` plays the next list of `prompts` (counted across
//! the process's life, whatever the session); a prompt beyond the list answers `end_turn`, as does
//! a list that runs out without `end`. A prompt on an unknown session answers invalid-params.
//! `session/cancel` stops the running turn at the next step, or at once while it sleeps or waits
//! for an MCP server (the call is dropped), and answers `cancelled`; a request to the client
//! (permission, fs) is still awaited, as the client must answer it (`cancelled` for a permission).
//! A cancelled MCP call's `tool_call` gets no `tool_call_update`.
//!
//! Unknown keys make the script invalid: the agent exits 1 at start, saying why on stderr. A
//! step the schema refuses (an update without `sessionUpdate`, an unknown stop reason, a bad
//! `usage`) answers the prompt with error -32603, its `data` saying why.
//!
//! | STEP | What the agent does |
//! |------|---------------------|
//! | `{"update": SessionUpdate}` | `session/update` with that update, sent verbatim (only `sessionUpdate` is checked) |
//! | `{"call_tool": {"id", "server", "name", "input"?, "title"?, "kind"?}}` | `tool_call` (pending, `rawInput`, title default the tool name, kind default `other`); `tools/call` on the session's HTTP MCP server `server` (one client per server per session); `tool_call_update` `completed` (`failed` on `isError` or an error) with the result's text blocks as content and the result as `rawOutput` |
//! | `{"permission": {"tool_call_id", "title"?, "options": [PermissionOption]}}` | `session/request_permission`, waits; a `cancelled` outcome, a `reject_*` option (or an unknown one, or an error) makes the turn's next `call_tool` send `tool_call` then `tool_call_update` `failed` "permission denied" without calling |
//! | `{"read_file": {"path", "line"?, "limit"?}}` | `fs/read_text_file`; says `read: <content>` or `error <code>: <message>` (an `agent_message_chunk`) |
//! | `{"write_file": {"path", "content"}}` | `fs/write_text_file`; says `wrote` or `error <code>: <message>` |
//! | `{"sleep_ms": N}` | waits N ms |
//! | `{"end": {"stop_reason", "usage"?}}` | answers the prompt; `usage` (`inputTokens`, `outputTokens`, `totalTokens`, `thoughtTokens`?, `cachedReadTokens`?, `cachedWriteTokens`?) goes in the response's `usage` (unstable in schema 1.17) |
//! | `{"error": {"code", "message", "data"?}}` | answers the prompt with that JSON-RPC error |
//! | `{"exit": N}` | exits with code N, after writing what it sent before |
//! | `{"raw": "text"}` | writes `text` and a newline to stdout, in order with protocol messages |
//! | `{"raw_repeat": {"byte": "x", "count": N}}` | writes one line of N copies of `byte`, in 64 KiB pieces |

mod agent;
mod io;
mod mcp;
mod script;
mod steps;

use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    AuthenticateRequest, CancelNotification, InitializeRequest, LoadSessionRequest, NewSessionRequest, PromptRequest,
    SetSessionModeRequest,
};
use agent_client_protocol::{Agent, Lines};

use crate::agent::FakeAgent;
use crate::io::Barriers;
use crate::script::Script;

#[tokio::main]
async fn main() {
    let code = match run().await {
        Ok(()) => 0,
        Err(message) => {
            eprintln!("patchbay-acp-fake-agent: {message}");
            1
        }
    };
    // Not returning: a turn still running would keep the runtime (and stdin's reader) alive.
    std::process::exit(code);
}

async fn run() -> Result<(), String> {
    let script = Script::from_env()?;
    let log = io::Log::from_env()?;
    let barriers = Arc::new(Barriers::default());
    let transport = Lines::new(io::stdout_sink(barriers.clone()), io::stdin_lines(log));
    let fake = Arc::new(FakeAgent::new(script, barriers));
    let (a, b, c, d, e, f, g) = (
        fake.clone(),
        fake.clone(),
        fake.clone(),
        fake.clone(),
        fake.clone(),
        fake.clone(),
        fake,
    );
    Agent
        .v1()
        .name("patchbay-acp-fake-agent")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| a.initialize(request, responder),
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: AuthenticateRequest, responder, _cx| b.authenticate(request, responder),
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, _cx| c.new_session(request, responder),
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, _cx| d.load_session(request, responder),
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder, _cx| e.set_mode(request, responder),
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, cx: agent_client_protocol::v1::ConnectionTo<_>| {
                let turn = f.clone().prompt(request, responder, cx.clone());
                cx.spawn(async move {
                    turn.await;
                    Ok(())
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _cx| {
                g.cancel(&notification);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport)
        .await
        .map_err(|error| format!("connection failed: {error}"))
}
