//! One prompt turn: the script's steps played in order, cut short by `session/cancel`.

use std::sync::Arc;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    PromptResponse, ReadTextFileRequest, RequestPermissionOutcome, RequestPermissionRequest, StopReason, Usage,
    WriteTextFileRequest,
};
use agent_client_protocol::{Client, Error, UntypedMessage};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::io::Action;
use crate::io::Barriers;
use crate::mcp::{McpClients, text_block, text_content};
use crate::script::from_json;
use crate::script::{CallTool, End, Permission, Step};

/// The permission option kinds that refuse.
const REJECT_KINDS: [&str; 2] = ["reject_once", "reject_always"];

/// A prompt turn in progress.
pub(crate) struct Turn {
    barriers: Arc<Barriers>,
    cx: ConnectionTo<Client>,
    session_id: String,
    cancel: CancellationToken,
    mcp: Arc<tokio::sync::Mutex<McpClients>>,
    /// The last permission was refused: the next `call_tool` fails instead of running.
    deny_next: bool,
}

impl Turn {
    pub(crate) fn new(
        barriers: Arc<Barriers>,
        cx: ConnectionTo<Client>,
        session_id: String,
        cancel: CancellationToken,
        mcp: Arc<tokio::sync::Mutex<McpClients>>,
    ) -> Self {
        Self {
            barriers,
            cx,
            session_id,
            cancel,
            mcp,
            deny_next: false,
        }
    }

    /// Play `steps`: the prompt's answer, `end_turn` when they run out without one.
    pub(crate) async fn run(mut self, steps: Vec<Step>) -> Result<PromptResponse, Error> {
        for step in steps {
            if self.cancel.is_cancelled() {
                return Ok(cancelled());
            }
            if let Some(response) = self.step(step).await? {
                return Ok(response);
            }
        }
        Ok(PromptResponse::new(if self.cancel.is_cancelled() {
            StopReason::Cancelled
        } else {
            StopReason::EndTurn
        }))
    }

    /// Play one step: `Some` answer ends the turn.
    async fn step(&mut self, step: Step) -> Result<Option<PromptResponse>, Error> {
        match step {
            Step::Update(update) => self.notify(update)?,
            Step::CallTool(call) => return self.call_tool(call).await,
            Step::Permission(permission) => return self.permission(permission).await,
            Step::ReadFile(read) => {
                let mut request = ReadTextFileRequest::new(self.session_id.clone(), read.path);
                request.line = read.line;
                request.limit = read.limit;
                let answer = self.cx.send_request(request).block_task().await;
                self.say(&answer.map_or_else(|e| rpc_error_text(&e), |r| format!("read: {}", r.content)))?;
            }
            Step::WriteFile(write) => {
                let request = WriteTextFileRequest::new(self.session_id.clone(), write.path, write.content);
                let answer = self.cx.send_request(request).block_task().await;
                self.say(&answer.map_or_else(|e| rpc_error_text(&e), |_| "wrote".to_owned()))?;
            }
            Step::SleepMs(ms) => {
                let sleep = tokio::time::sleep(std::time::Duration::from_millis(ms));
                if self.or_cancel(sleep).await.is_none() {
                    return Ok(Some(cancelled()));
                }
            }
            Step::End(end) => return end_response(end).map(Some),
            Step::Error(error) => return Err(Error::new(error.code, error.message).data(error.data)),
            Step::Exit(code) => {
                // Written after everything sent so far; the process ends in the writer.
                drop(self.barriers.run(&self.cx, Action::Exit(code)).await);
                std::process::exit(code);
            }
            Step::Raw(text) => self.barriers.run(&self.cx, Action::Raw(text)).await?,
            Step::RawRepeat(repeat) => {
                let action = Action::Repeat(repeat.byte, repeat.count);
                self.barriers.run(&self.cx, action).await?;
            }
        }
        Ok(None)
    }

    async fn call_tool(&mut self, call: CallTool) -> Result<Option<PromptResponse>, Error> {
        let title = call.title.clone().unwrap_or_else(|| call.name.clone());
        self.notify(json!({
            "sessionUpdate": "tool_call",
            "toolCallId": call.id,
            "title": title,
            "kind": call.kind,
            "status": "pending",
            "rawInput": call.input,
        }))?;
        if std::mem::take(&mut self.deny_next) {
            self.tool_done(&call.id, "failed", vec![text_block("permission denied")], None)?;
            return Ok(None);
        }
        let outcome = {
            let mut mcp = self.mcp.lock().await;
            let Some(outcome) = self.or_cancel(mcp.call(&call.server, &call.name, &call.input)).await else {
                return Ok(Some(cancelled()));
            };
            outcome
        };
        match outcome {
            Ok(result) => {
                let failed = result.get("isError").and_then(Value::as_bool) == Some(true);
                let status = if failed { "failed" } else { "completed" };
                self.tool_done(&call.id, status, text_content(&result), Some(result))?;
            }
            Err(message) => {
                eprintln!("patchbay-acp-fake-agent: {message}");
                self.tool_done(&call.id, "failed", vec![text_block(&message)], None)?;
            }
        }
        Ok(None)
    }

    fn tool_done(&self, id: &str, status: &str, content: Vec<Value>, raw_output: Option<Value>) -> Result<(), Error> {
        let mut update = json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": id,
            "status": status,
            "content": content,
        });
        if let (Some(raw), Some(map)) = (raw_output, update.as_object_mut()) {
            map.insert("rawOutput".to_owned(), raw);
        }
        self.notify(update)
    }

    async fn permission(&mut self, permission: Permission) -> Result<Option<PromptResponse>, Error> {
        let mut tool_call = json!({"toolCallId": permission.tool_call_id});
        if let (Some(title), Some(map)) = (&permission.title, tool_call.as_object_mut()) {
            map.insert("title".to_owned(), Value::from(title.as_str()));
        }
        let request: RequestPermissionRequest = from_json(json!({
            "sessionId": self.session_id,
            "toolCall": tool_call,
            "options": permission.options,
        }))?;
        // Not cut short by `session/cancel`: the client must answer it (`cancelled`) first.
        self.deny_next = match self.cx.send_request(request).block_task().await {
            Ok(response) => match response.outcome {
                RequestPermissionOutcome::Selected(selected) => {
                    let id = Value::from(selected.option_id.0.as_ref());
                    let kind = permission
                        .options
                        .iter()
                        .find(|option| option.get("optionId") == Some(&id))
                        .and_then(|option| option.get("kind"))
                        .and_then(Value::as_str);
                    if kind.is_none() {
                        eprintln!("patchbay-acp-fake-agent: the client selected unknown option {id}; denied");
                    }
                    kind.is_none_or(|kind| REJECT_KINDS.contains(&kind))
                }
                // `Cancelled`, and whatever a later schema adds.
                _ => true,
            },
            Err(error) => {
                eprintln!("patchbay-acp-fake-agent: session/request_permission failed: {error}");
                true
            }
        };
        Ok(None)
    }

    /// `future`'s output, or `None` when the turn is cancelled first (sleeps and MCP calls; the
    /// client's own requests are always awaited: the spec has it answer them on cancel).
    async fn or_cancel<F: Future>(&self, future: F) -> Option<F::Output> {
        tokio::select! {
            output = future => Some(output),
            () = self.cancel.cancelled() => None,
        }
    }

    /// Send `update` (a `SessionUpdate` as on the wire) for this session, verbatim: the typed
    /// `SessionUpdate` would drop fields at their defaults (`status: pending`, `kind: other`)
    /// and refuse update kinds this schema does not know, which a test may want to send.
    fn notify(&self, update: Value) -> Result<(), Error> {
        if update.get("sessionUpdate").and_then(Value::as_str).is_none() {
            return Err(Error::internal_error().data(format!(
                "fake agent script: an update without `sessionUpdate`: {update}"
            )));
        }
        let params = json!({"sessionId": self.session_id, "update": update});
        self.cx
            .send_notification(UntypedMessage::new("session/update", params)?)
    }

    /// Send an `agent_message_chunk` with `text`.
    fn say(&self, text: &str) -> Result<(), Error> {
        self.notify(json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}))
    }
}

fn cancelled() -> PromptResponse {
    PromptResponse::new(StopReason::Cancelled)
}

fn end_response(end: End) -> Result<PromptResponse, Error> {
    let reason: StopReason = from_json(end.stop_reason)?;
    let usage: Option<Usage> = end.usage.map(from_json).transpose()?;
    Ok(PromptResponse::new(reason).usage(usage))
}

fn rpc_error_text(error: &Error) -> String {
    format!("error {}: {}", i32::from(error.code), error.message)
}
