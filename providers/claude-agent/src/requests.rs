//! The CLI's control requests during a run: `can_use_tool` (the approval handler, or a
//! person's decision from a later call), `mcp_message` (the in-process host tool server) and
//! `hook_callback` (the host's hooks). An answer is written at once, or later by
//! a handler the run loop polls (an approval or a tool run takes time).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use patchbay_core::context::{Approval, ApprovalRequest};
use patchbay_core::kit::run_tool;
use patchbay_core::{ExecutedBy, RequestContext, Signal, ToolResult, ToolSet};
use serde_json::{Value, json};
use tracing::Instrument;

use crate::control::{self, McpWork};
use crate::hooks;
use crate::translate::Translator;

/// What the control requests of a run are answered with.
pub(crate) struct Bridge {
    pub(crate) tools: ToolSet,
    pub(crate) context: RequestContext,
    pub(crate) signal: Signal,
    pub(crate) server: String,
}

/// A control request being answered.
pub(crate) type Handler = Pin<Box<dyn Future<Output = Handled> + Send>>;

/// A finished handler: the answer line, and a host tool's result for its call. A permission
/// a person decides later has no answer yet: the run pauses on it.
pub(crate) struct Handled {
    pub(crate) line: String,
    pub(crate) record: Option<(String, ToolResult)>,
    pub(crate) paused: Option<Pending>,
}

/// A `can_use_tool` request left unanswered for a person's decision ([`Approval::Pause`]).
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    /// The control request's id (the answer echoes it).
    pub(crate) request_id: String,
    /// The request as the CLI sent it (asked again if a resume brings no decision for it).
    pub(crate) request: Value,
    /// The call, by its host name.
    pub(crate) call: ApprovalRequest,
}

impl Pending {
    /// The answer line to this request for `approval`.
    pub(crate) fn answer(&self, approval: &Approval) -> String {
        control::success_line(
            &self.request_id,
            control::permission_response(approval, &self.call.input),
        )
    }
}

/// How a control request is answered.
pub(crate) enum Reply {
    Now(String),
    Later(Handler),
}

/// Answer control request `id`.
pub(crate) fn control_request(bridge: &Arc<Bridge>, translator: &mut Translator, id: &str, request: &Value) -> Reply {
    match request.get("subtype").and_then(Value::as_str).unwrap_or("") {
        "can_use_tool" => can_use_tool(bridge, translator, id, request),
        "mcp_message" => mcp_message(bridge, translator, id, request),
        "hook_callback" => hook_callback(bridge, translator, id, request),
        other => Reply::Now(control::error_line(
            id,
            &format!("unsupported control request `{other}`"),
        )),
    }
}

/// A permission request: the call's decision if the request carries one (a resumed run), else
/// the approval handler's. [`Approval::Pause`] leaves it unanswered (the run pauses) when the
/// session is known; a resume answers it.
pub(crate) fn can_use_tool(bridge: &Arc<Bridge>, translator: &Translator, id: &str, request: &Value) -> Reply {
    let cli_name = request.get("tool_name").and_then(Value::as_str).unwrap_or("");
    let (name, _) = translator.map_tool_name(cli_name);
    let can_pause = translator.session_id().is_some();
    let bridge = bridge.clone();
    let pending = Pending {
        request_id: id.to_string(),
        request: request.clone(),
        call: control::approval_request(request, name),
    };
    Reply::Later(Box::pin(async move {
        let call = &pending.call;
        let decided = bridge
            .context
            .decisions
            .get(&call.tool_use_id)
            .filter(|d| **d != Approval::Pause);
        let approval = match decided {
            Some(decision) => decision.clone(),
            None => {
                let mut cx = bridge.context.tool_context(&bridge.signal);
                if !call.tool_use_id.is_empty() {
                    cx = cx.with_tool_use_id(call.tool_use_id.clone());
                }
                control::decide(bridge.context.approval.as_ref(), call, &cx).await
            }
        };
        if approval == Approval::Pause && can_pause {
            return Handled {
                line: String::new(),
                record: None,
                paused: Some(pending),
            };
        }
        Handled {
            line: pending.answer(&approval),
            record: None,
            paused: None,
        }
    }))
}

fn mcp_reply(id: &str, reply: Option<Value>) -> Reply {
    let reply = reply.unwrap_or_else(|| json!({ "jsonrpc": "2.0", "result": {} }));
    Reply::Now(control::success_line(id, json!({ "mcp_response": reply })))
}

fn mcp_message(bridge: &Arc<Bridge>, translator: &mut Translator, id: &str, request: &Value) -> Reply {
    let server = request.get("server_name").and_then(Value::as_str).unwrap_or("");
    let message = request.get("message").unwrap_or(&Value::Null);
    if server != bridge.server {
        let reply = json!({
            "jsonrpc": "2.0", "id": message.get("id"),
            "error": { "code": -32601, "message": format!("server `{server}` not found") },
        });
        return mcp_reply(id, Some(reply));
    }
    match control::route_mcp(message, &bridge.tools, &bridge.server) {
        McpWork::Reply(reply) => mcp_reply(id, reply),
        McpWork::Call {
            id: rpc_id,
            name,
            input,
        } => {
            let Some(tool) = bridge.tools.get(&name).cloned() else {
                return mcp_reply(id, control::unknown_tool_reply(rpc_id, &name));
            };
            // The CLI names the call in `_meta`; without it, match by name and input.
            let call_id = match message
                .pointer("/params/_meta/claudecode~1toolUseId")
                .and_then(Value::as_str)
            {
                Some(call) => {
                    translator.forget_host_call(call);
                    Some(call.to_string())
                }
                None => translator.claim_host_call(&name, &input),
            };
            let bridge = bridge.clone();
            let id = id.to_string();
            let work = async move {
                let mut cx = bridge.context.tool_context(&bridge.signal);
                if let Some(call) = &call_id {
                    cx = cx.with_tool_use_id(call.clone());
                }
                let result = run_tool(tool.as_ref(), input, &cx).await;
                let reply = control::call_reply(rpc_id, &result);
                Handled {
                    line: control::success_line(&id, json!({ "mcp_response": reply })),
                    record: call_id.map(|call| (call, result)),
                    paused: None,
                }
            };
            // `run_tool` opens the call's `execute_tool` span, a child of the model call's.
            Reply::Later(Box::pin(work.in_current_span()))
        }
    }
}

/// A hook the CLI calls (registered with `initialize` when the call has hooks): the host's
/// [`Hooks`](patchbay_core::hooks::Hooks) decide, their decision goes back as hook output. A
/// call without hooks (a kept-alive CLI is never shared between the two) changes nothing.
fn hook_callback(bridge: &Arc<Bridge>, translator: &Translator, id: &str, request: &Value) -> Reply {
    let Some(host) = bridge.context.hooks.clone() else {
        return Reply::Now(control::success_line(id, json!({})));
    };
    let event = hooks::event_of(request).to_string();
    let input = request.get("input").cloned().unwrap_or(Value::Null);
    let cli_name = input.get("tool_name").and_then(Value::as_str).unwrap_or("");
    let (name, by) = translator.map_tool_name(cli_name);
    let call = hooks::invocation(&input, name, by);
    // What the hook sees of a host tool's run: its own result (the CLI's rendering otherwise).
    let ran = translator.host_result(&call.tool_use_id).cloned();
    let stop = hooks::stop_info(&input, translator.last_text(), translator.usage_so_far());
    let bridge = bridge.clone();
    let id = id.to_string();
    Reply::Later(Box::pin(async move {
        let mut cx = bridge.context.tool_context(&bridge.signal);
        if !call.tool_use_id.is_empty() {
            cx = cx.with_tool_use_id(call.tool_use_id.clone());
        }
        let mut record = None;
        let output = match event.as_str() {
            "PreToolUse" => hooks::before_tool_output(host.before_tool(&call, &cx).await),
            "PostToolUse" => {
                let response = input.get("tool_response").cloned().unwrap_or(Value::Null);
                let result = ran.unwrap_or_else(|| hooks::response_result(&response));
                match host.after_tool(&call, &result, &cx).await {
                    Some(replacement) if by == ExecutedBy::Host => {
                        let output = hooks::after_tool_output(&replacement, &response);
                        record = Some((call.tool_use_id.clone(), replacement));
                        output
                    }
                    Some(_) => {
                        tracing::debug!(tool = %call.tool_name, "after_tool replaced a CLI tool's result: observed only");
                        json!({})
                    }
                    None => json!({}),
                }
            }
            "UserPromptSubmit" => {
                let prompt = input.get("prompt").and_then(Value::as_str).unwrap_or("");
                hooks::prompt_output(host.on_prompt(prompt).await)
            }
            "Stop" => hooks::stop_output(host.on_stop(&stop).await),
            other => {
                tracing::debug!(event = other, "a hook event patchbay did not register");
                json!({})
            }
        };
        Handled {
            line: control::success_line(&id, output),
            record,
            paused: None,
        }
    }))
}
