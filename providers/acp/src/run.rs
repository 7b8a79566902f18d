//! One call's turn: the session (new, loaded, or kept alive), the prompt, and the loop that
//! turns the agent's updates, permission requests and the tool server's reports into events
//! until the prompt is answered, cancelled, or the agent goes away.

use std::sync::Arc;

use patchbay_core::context::{Approval, ApprovalHandler, ApprovalRequest};
use patchbay_core::kit::MetricsRecorder;
use patchbay_core::{Event, FinishReason, ProviderError, RequestContext, Signal, ToolContext, Usage, Warning};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::config::{AcpConfig, Unattended};
use crate::connection::{Connection, Inbound, Route};
use crate::pool::{Agent, Pool};
use crate::translate::{HostRun, Translator};

/// Everything a turn needs, owned (the stream outlives the call's borrows).
pub(crate) struct Turn {
    pub(crate) config: AcpConfig,
    pub(crate) model: String,
    pub(crate) context: RequestContext,
    pub(crate) signal: Signal,
    /// The session to load or resume, if any.
    pub(crate) resume: Option<String>,
    pub(crate) host_tools: Vec<String>,
    pub(crate) warnings: Vec<Warning>,
    pub(crate) pool: Arc<Pool>,
    pub(crate) fingerprint: String,
}

/// The prompt and what it reads while it runs.
pub(crate) struct Prompted {
    pub(crate) session: String,
    pub(crate) prompt: Vec<Value>,
    /// The session's route: updates and permission requests.
    pub(crate) inbound: mpsc::UnboundedReceiver<Inbound>,
    /// The host tools' runs, reported by the tool server.
    pub(crate) reports: mpsc::UnboundedReceiver<HostRun>,
    pub(crate) translator: Translator,
}

/// Drive one prompt on `agent`: yields events through `emit`; returns the agent when it can be
/// kept for the session's next turn.
pub(crate) async fn drive(
    turn: &Turn,
    agent: &mut Agent,
    prompted: Prompted,
    recorder: &mut MetricsRecorder,
    emit: &mut (dyn FnMut(Result<Event, ProviderError>) + Send),
) -> Outcome {
    let Prompted {
        session,
        prompt,
        mut inbound,
        mut reports,
        mut translator,
    } = prompted;
    let mut out = Vec::new();
    let params = json!({ "sessionId": session, "prompt": prompt });
    let mut cancel_deadline: Option<std::pin::Pin<Box<tokio::time::Sleep>>> = None;
    let (decided_tx, mut decided) = mpsc::unbounded_channel::<()>();
    let answer = {
        let connection = &agent.connection;
        let prompt = connection.request("session/prompt", params);
        tokio::pin!(prompt);
        loop {
            tokio::select! {
                biased;
                Some(run) = reports.recv() => translator.host_run(run),
                Some(message) = inbound.recv() => {
                    // A report sent before this update must be seen first.
                    while let Ok(run) = reports.try_recv() {
                        translator.host_run(run);
                    }
                    handle(turn, &mut translator, message, &decided_tx, &mut out);
                }
                answer = &mut prompt => break answer,
                () = turn.signal.cancelled(), if cancel_deadline.is_none() => {
                    let _ = connection.notify("session/cancel", json!({ "sessionId": session }));
                    cancel_deadline = Some(Box::pin(tokio::time::sleep(turn.config.cancel_grace)));
                }
                () = async { if let Some(deadline) = cancel_deadline.as_mut() { deadline.await } }, if cancel_deadline.is_some() => {
                    // The agent did not answer its cancel in time: it is stopped, not kept.
                    translator.abort_open(&mut out);
                    flush(&mut out, recorder, emit);
                    emit(Err(ProviderError::cancelled()));
                    return Outcome::Stop;
                }
                Some(()) = decided.recv() => {}
            }
            flush(&mut out, recorder, emit);
        }
    };
    while let Ok(message) = inbound.try_recv() {
        while let Ok(run) = reports.try_recv() {
            translator.host_run(run);
        }
        handle(turn, &mut translator, message, &decided_tx, &mut out);
    }
    flush(&mut out, recorder, emit);
    match answer {
        Ok(answer) => {
            let (reason, usage) = translator.finish(&answer, &mut out);
            flush(&mut out, recorder, emit);
            if reason == FinishReason::Cancelled || turn.signal.is_cancelled() {
                emit(Err(ProviderError::cancelled()));
                return Outcome::Keep;
            }
            emit(Ok(finish(reason, usage, recorder)));
            Outcome::Keep
        }
        Err(error) => {
            translator.abort_open(&mut out);
            flush(&mut out, recorder, emit);
            let error = agent.explain(error).await;
            emit(Err(ProviderError::from(error)));
            Outcome::Stop
        }
    }
}

/// Whether the agent may be kept after the turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Keep,
    Stop,
}

fn finish(reason: FinishReason, usage: Usage, recorder: &mut MetricsRecorder) -> Event {
    let event = Event::Finish {
        reason,
        usage,
        metrics: recorder.finish(),
    };
    recorder.observe(&event);
    event
}

fn flush(
    out: &mut Vec<Event>,
    recorder: &mut MetricsRecorder,
    emit: &mut (dyn FnMut(Result<Event, ProviderError>) + Send),
) {
    for event in out.drain(..) {
        recorder.observe(&event);
        emit(Ok(event));
    }
}

fn handle(
    turn: &Turn,
    translator: &mut Translator,
    message: Inbound,
    decided: &mpsc::UnboundedSender<()>,
    out: &mut Vec<Event>,
) {
    match message {
        Inbound::Update(update) => translator.update(&update, out),
        Inbound::Permission(params, reply) => {
            let call = params.get("toolCall").cloned().unwrap_or_default();
            let (id, input) = translator.permission(&call, out);
            let name = translator
                .call_of(&id)
                .map_or_else(|| "tool".to_owned(), |(name, _)| name.to_owned());
            let request = ApprovalRequest {
                tool_use_id: id,
                tool_name: name,
                input,
            };
            let options = params
                .get("options")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let handler = turn.context.approval.clone();
            let mut cx = turn.context.tool_context(&turn.signal);
            cx.tool_use_id = Some(request.tool_use_id.clone());
            let unattended = turn.config.unattended;
            let decided = decided.clone();
            tokio::spawn(async move {
                let outcome = decide(handler, unattended, &request, &cx, &options).await;
                let _ = reply.send(outcome);
                let _ = decided.send(());
            });
        }
    }
}

/// Ask the approval handler (or apply the unattended answer) and pick the agent's option.
async fn decide(
    handler: Option<Arc<dyn ApprovalHandler>>,
    unattended: Unattended,
    request: &ApprovalRequest,
    cx: &ToolContext,
    options: &[Value],
) -> Value {
    let allow = match handler {
        // `Pause` rejects too: an ACP agent's permission request cannot wait for a later call.
        Some(handler) => matches!(
            handler.approve(request, cx).await,
            Approval::Allow | Approval::AllowWithInput(_)
        ),
        None => unattended == Unattended::Allow,
    };
    let kinds: &[&str] = if allow {
        &["allow_once", "allow_always"]
    } else {
        &["reject_once", "reject_always"]
    };
    let chosen = kinds.iter().find_map(|kind| {
        options
            .iter()
            .find(|option| option.get("kind").and_then(Value::as_str) == Some(kind))
            .and_then(|option| option.get("optionId").cloned())
    });
    match chosen {
        Some(id) => json!({ "outcome": "selected", "optionId": id }),
        None => json!({ "outcome": "cancelled" }),
    }
}

/// The route of a session and its receiver.
pub(crate) fn route(
    connection: &Connection,
    session: &str,
    turn: &Turn,
) -> (crate::connection::RouteGuard, mpsc::UnboundedReceiver<Inbound>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let guard = connection.route(
        session,
        Route {
            tx,
            root: turn
                .context
                .working_dir
                .clone()
                .or_else(|| std::env::current_dir().ok()),
            access: turn.config.file_access(),
        },
    );
    (guard, rx)
}
