//! One run of the agent loop as a stream: model calls, host tool calls with hooks and
//! approvals, pauses for a person's decision and resumes.

use std::sync::mpsc::Sender;

use futures::{Stream, StreamExt};

use super::pause::{Decisions, PausedCall, PausedRun, RunEnd};
use super::state::{Parts, RunState, Turn};
use super::tools::{Decided, Running};
use crate::error::ProviderError;
use crate::event::{Event, FinishReason, Usage};
use crate::message::{Message, Role};
use crate::provider::{EventStream, Provider};
use crate::signal::Signal;

/// How a run begins: from a conversation, or from a paused run and a person's decisions.
pub(super) enum Start {
    New(Vec<Message>),
    Resume(PausedRun, Decisions),
}

/// The run as a stream of events (see [`Agent`](super::Agent)).
pub(super) fn run_stream(
    agent: Parts,
    start: Start,
    signal: Signal,
    transcript: Option<Sender<RunEnd>>,
) -> EventStream {
    let span = crate::telemetry::agent_span(&agent.provider.info().name, &agent.model, agent.name.as_deref());
    let stream = async_stream::stream! {
        let mut run = RunState::new(agent, transcript);
        run.attach_sources(&signal).await;
        let mut first = 0;
        match start {
            Start::New(messages) => {
                run.messages = messages;
                if let Some(events) = run.prompt_hook().await {
                    for event in events {
                        yield Ok(event);
                    }
                    return;
                }
            }
            Start::Resume(paused, decisions) => {
                run.resume_from(&paused, decisions);
                if paused.runtime {
                    // The runtime waits on the decision: the provider answers it and goes on.
                    first = paused.step;
                } else {
                    yield Ok(run.started_now());
                    if let Some(event) = run.take_mcp_connected() {
                        yield Ok(event);
                    }
                    // The calls again, so this stream is whole: each result follows its call.
                    for event in run.calls_again(&paused.calls) {
                        yield Ok(event);
                    }
                    // The paused step's usage was counted before the pause.
                    let ended = (FinishReason::ToolUse, Usage::default());
                    let mut step_out = std::pin::pin!(host_step(&mut run, paused.calls, paused.step, ended, &signal));
                    let mut goes_on = false;
                    while let Some(item) = step_out.next().await {
                        match item {
                            StepOut::Item(item) => yield item,
                            StepOut::GoesOn => goes_on = true,
                        }
                    }
                    if !goes_on {
                        return;
                    }
                    first = paused.step + 1;
                }
            }
        }
        let mut continued = false;
        for step in first..run.max_steps {
            run.refresh_tools().await;
            let mut stream = match run.call_model(step, &signal).await {
                Ok(stream) => stream,
                Err(error) => {
                    yield Err(error);
                    return;
                }
            };
            let mut turn = Turn::default();
            while let Some(item) = stream.next().await {
                let event = match item {
                    Ok(event) => event,
                    Err(error) => {
                        yield Err(error.with_turn(step));
                        return;
                    }
                };
                if let Some(event) = run.forward(event, &mut turn, step) {
                    yield Ok(event);
                }
                if let Some(event) = run.take_mcp_connected() {
                    yield Ok(event);
                }
                for event in run.live_events() {
                    yield Ok(event);
                }
            }
            drop(stream);
            let Some(reason) = turn.reason.take() else {
                yield Err(run.unfinished(step, &signal));
                return;
            };
            run.total.accumulate(&turn.usage);

            let more = reason == FinishReason::ToolUse && !turn.host_calls.is_empty();
            if !more && step + 1 < run.max_steps && !signal.is_cancelled()
                && let Some(prompt) = run.stop_hook(&reason, &turn, continued).await
            {
                continued = true;
                yield Ok(run.prompt_step(step, reason, turn, prompt));
                continue;
            }
            if !more || step + 1 >= run.max_steps {
                yield Ok(run.finish(step, reason, more, &mut turn));
                return;
            }

            let calls = std::mem::take(&mut turn.host_calls);
            run.messages.push(Message::new(Role::Assistant, turn.content.take()));
            let mut step_out = std::pin::pin!(host_step(&mut run, calls, step, (reason, turn.usage), &signal));
            let mut goes_on = false;
            while let Some(item) = step_out.next().await {
                match item {
                    StepOut::Item(item) => yield item,
                    StepOut::GoesOn => goes_on = true,
                }
            }
            if !goes_on {
                return;
            }
        }
    };
    // Polled inside the run's span: model calls and tool executions are its children.
    let recorder = crate::telemetry::SpanRecorder::new(span)
        .without_time_to_first_chunk()
        .without_tool_spans();
    crate::kit::observed(Box::pin(stream), recorder)
}

/// What [`host_step`] yields: an item for the host, then, when the run goes on to its next
/// model call, `GoesOn` (last).
#[expect(
    clippy::large_enum_variant,
    reason = "one value per event, moved straight to the run's stream; boxing would allocate per event"
)]
enum StepOut {
    Item(Result<Event, ProviderError>),
    GoesOn,
}

/// Decide and run step `step`'s host calls (the events meanwhile pass at once), then either
/// pause the run, or end the step with its results and `StepFinished` (`ended`: the step's
/// finish reason and usage) and go on; a cancel during the calls ends the run with an error.
fn host_step<'a>(
    run: &'a mut RunState,
    calls: Vec<PausedCall>,
    step: u32,
    ended: (FinishReason, Usage),
    signal: &'a Signal,
) -> impl Stream<Item = StepOut> + Send + 'a {
    async_stream::stream! {
        let mut running = std::pin::pin!(run.calls_stream(calls, signal));
        let mut decided = None;
        while let Some(item) = running.next().await {
            match item {
                Running::Event(event) => {
                    run.seen(&event);
                    yield StepOut::Item(Ok(*event));
                }
                Running::Done(done) => decided = Some(done),
            }
        }
        // `Done` always comes last; the default is never used.
        match decided.unwrap_or(Decided::Ran(Vec::new(), Vec::new())) {
            Decided::Paused(calls) => {
                for event in run.pause(step, calls) {
                    yield StepOut::Item(Ok(event));
                }
            }
            Decided::Ran(calls, results) => {
                let (blocks, events) = run.tool_results(&calls, results);
                for event in events {
                    yield StepOut::Item(Ok(event));
                }
                if signal.is_cancelled() {
                    yield StepOut::Item(Err(ProviderError::cancelled().with_turn(step)));
                } else {
                    let (reason, usage) = ended;
                    yield StepOut::Item(Ok(run.results_step(step, reason, usage, blocks)));
                    yield StepOut::GoesOn;
                }
            }
        }
    }
}
