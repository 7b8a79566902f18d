//! Running a step's host tool calls: hooks first, then the decision (a person's from a resume,
//! else the approval handler's), then the approved calls concurrently, then the after hooks.
//! [`run_calls_streaming`] runs them while streaming what happens meanwhile: each call's
//! `ToolContext::progress` reports as `Event::ToolProgress`, and the live sources' events.

use std::sync::Arc;

use futures::Stream;
use tokio::sync::mpsc;

use crate::agent::pause::{Decisions, PausedCall};
use crate::agent::source::LiveTools;
use crate::approval::{Approval, ApprovalRequest};
use crate::context::RequestContext;
use crate::event::Event;
use crate::hooks::{BeforeTool, ToolInvocation};
use crate::kit::run_tool;
use crate::tool::{ExecutedBy, ProgressUpdate, ToolContext, ToolProgress, ToolResult};
use crate::toolset::ToolSet;

/// How a step's calls ended: run, or waiting for a person.
pub(super) enum Decided {
    /// Every call was decided and run (or refused): the calls and their results, in call order.
    Ran(Vec<PausedCall>, Vec<ToolResult>),
    /// At least one call waits for a person; nothing ran.
    Paused(Vec<PausedCall>),
}

/// What [`run_calls_streaming`] yields: an event while the calls run, then how they ended.
pub(super) enum Running {
    /// A transient event (`ToolProgress`, a live source's `Log`), to pass on at once.
    Event(Box<Event>),
    /// The calls ended (always the last item).
    Done(Decided),
}

/// How many progress reports wait for the host at most. Progress is transient: a tool that
/// reports faster than the host reads loses the reports past this many (the newest ones)
/// until the host catches up, rather than growing the run's memory without bound.
pub const PROGRESS_BACKLOG: usize = 256;

/// [`run_calls`] with everything it needs owned, as a stream: each call's progress reports
/// and the live sources' events come out while the calls run (in the order they happened),
/// then [`Running::Done`] with the results in call order. Reports a tool makes after its
/// call ended are dropped with the step, and so are those past [`PROGRESS_BACKLOG`].
pub(super) fn run_calls_streaming(
    tools: ToolSet,
    calls: Vec<PausedCall>,
    base: ToolContext,
    context: RequestContext,
    live: Vec<Arc<dyn LiveTools>>,
) -> impl Stream<Item = Running> + Send {
    async_stream::stream! {
        let (tx, mut rx) = mpsc::channel(PROGRESS_BACKLOG);
        let run = run_calls(&tools, calls, &context.decisions, &base, &context, &tx);
        let mut run = std::pin::pin!(run);
        let decided = loop {
            let live_ready = async {
                if live.is_empty() {
                    futures::future::pending::<()>().await;
                } else {
                    futures::future::select_all(live.iter().map(|source| source.events_ready())).await;
                }
            };
            tokio::select! {
                biased;
                Some(event) = rx.recv() => yield Running::Event(Box::new(event)),
                decided = &mut run => break decided,
                _ = live_ready => {
                    for source in &live {
                        for event in source.take_events() {
                            yield Running::Event(Box::new(event));
                        }
                    }
                }
            }
        };
        while let Ok(event) = rx.try_recv() {
            yield Running::Event(Box::new(event));
        }
        yield Running::Done(decided);
    }
}

/// A reporter that turns call `id`'s reports into `Event::ToolProgress` on `tx` (dropped when
/// the backlog is full).
fn progress_for(id: &str, tx: &mpsc::Sender<Event>) -> ToolProgress {
    let id = id.to_owned();
    let tx = tx.clone();
    ToolProgress::new(move |update: ProgressUpdate| {
        let _ = tx.try_send(Event::ToolProgress {
            id: id.clone(),
            message: update.message,
            progress: update.progress,
            total: update.total,
        });
    })
}

/// Decide every call in call order, then run the approved ones concurrently (unless one
/// waits for a person: then none runs). Each running call reports its progress to `progress`.
async fn run_calls(
    tools: &ToolSet,
    mut calls: Vec<PausedCall>,
    decisions: &Decisions,
    base: &ToolContext,
    context: &RequestContext,
    progress: &mpsc::Sender<Event>,
) -> Decided {
    for call in &mut calls {
        if call.decided.is_some() {
            continue;
        }
        if let Some(decision) = decisions.get(&call.id).filter(|d| **d != Approval::Pause) {
            call.decided = Some(decision.clone());
            continue;
        }
        let cx = base.clone().with_tool_use_id(call.id.clone());
        call.decided = decide(call, &cx, context).await;
    }
    if calls.iter().any(|call| call.decided.is_none()) {
        return Decided::Paused(calls);
    }
    let runs = calls.iter().map(|call| async move {
        let cx = base
            .clone()
            .with_tool_use_id(call.id.clone())
            .with_progress(progress_for(&call.id, progress));
        let input = match call.decided.clone() {
            Some(Approval::Allow) | None | Some(Approval::Pause) => call.input.clone(),
            Some(Approval::AllowWithInput(edited)) => edited,
            Some(Approval::Deny { message }) => return after(call, ToolResult::denied(message), &cx, context).await,
        };
        let result = match tools.get(&call.name) {
            None => ToolResult::error(format!("unknown tool `{}`", call.name)),
            Some(_) if cx.signal.is_cancelled() => ToolResult::aborted(),
            Some(tool) => run_tool(tool.as_ref(), input, &cx).await,
        };
        after(call, result, &cx, context).await
    });
    let results = futures::future::join_all(runs).await;
    Decided::Ran(calls, results)
}

/// The hook's and the approval handler's decision on one call (`None`: a person decides).
/// A hook's rewrite becomes the call's input.
async fn decide(call: &mut PausedCall, cx: &ToolContext, context: &RequestContext) -> Option<Approval> {
    if let Some(hooks) = &context.hooks {
        let invocation = invocation(call);
        let verdict = tokio::select! {
            verdict = hooks.before_tool(&invocation, cx) => verdict,
            _ = cx.signal.cancelled() => BeforeTool::deny("cancelled before the tool ran"),
        };
        match verdict {
            BeforeTool::Continue => {}
            BeforeTool::Deny { message } => return Some(Approval::Deny { message }),
            BeforeTool::Rewrite(input) => call.input = input,
        }
    }
    let Some(handler) = &context.approval else {
        return Some(Approval::Allow);
    };
    let request = ApprovalRequest {
        tool_use_id: call.id.clone(),
        tool_name: call.name.clone(),
        input: call.input.clone(),
    };
    let decision = tokio::select! {
        decision = handler.approve(&request, cx) => decision,
        _ = cx.signal.cancelled() => Approval::deny("cancelled before approval"),
    };
    (decision != Approval::Pause).then_some(decision)
}

/// The result after the `after_tool` hook (which may replace it).
async fn after(call: &PausedCall, result: ToolResult, cx: &ToolContext, context: &RequestContext) -> ToolResult {
    let Some(hooks) = &context.hooks else {
        return result;
    };
    match hooks.after_tool(&invocation(call), &result, cx).await {
        Some(replaced) => replaced,
        None => result,
    }
}

fn invocation(call: &PausedCall) -> ToolInvocation {
    ToolInvocation {
        tool_use_id: call.id.clone(),
        tool_name: call.name.clone(),
        input: call.input.clone(),
        executed_by: ExecutedBy::Host,
    }
}
