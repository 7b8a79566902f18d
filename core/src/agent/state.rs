//! What a run carries from step to step ([`RunState`]) and what one model call produced
//! ([`Turn`]): the conversation, usage, the sources' live side, hooks, and the events the
//! host sees of each provider event.

use std::any::Any;
use std::sync::Arc;
use std::sync::mpsc::Sender;

use futures::Stream;

use super::live::LiveSources;
use super::pause::{Decisions, PausedCall, PausedRun, RunEnd};
use super::source::ToolSource;
use super::tools::{Running, run_calls_streaming};
use crate::approval::ApprovalRequest;
use crate::context::{RequestContext, Session};
use crate::error::ProviderError;
use crate::event::{Event, FinishReason, McpFailure, Usage, Warning};
use crate::hooks::{OnPrompt, StopDecision, StopInfo};
use crate::kit::{ContentBuilder, MetricsRecorder};
use crate::message::{ContentBlock, Message, Role};
use crate::provider::{EventStream, Provider};
use crate::signal::Signal;
use crate::summary::RunSummary;
use crate::tool::{ExecutedBy, ToolResult};
use crate::toolset::ToolSet;

/// What a run takes of its [`Agent`](super::Agent).
pub(super) struct Parts {
    pub(super) provider: Arc<dyn Provider>,
    pub(super) model: String,
    pub(super) tools: ToolSet,
    pub(super) context: RequestContext,
    pub(super) sources: Vec<Arc<dyn ToolSource>>,
    pub(super) max_steps: u32,
    pub(super) name: Option<String>,
}

/// What one model call of a run produced so far.
#[derive(Default)]
pub(super) struct Turn {
    pub(super) usage: Usage,
    pub(super) reason: Option<FinishReason>,
    pub(super) content: ContentBuilder,
    pub(super) host_calls: Vec<PausedCall>,
    /// The calls an agent runtime paused for (its own `ApprovalRequested`).
    pub(super) paused: Vec<ApprovalRequest>,
}

/// What a run carries from step to step. Fields drop in declaration order, so the sources'
/// guards (open connections) go first, before the tools, sources and provider.
pub(super) struct RunState {
    guards: Vec<Box<dyn Any + Send + Sync>>,
    live: LiveSources,
    connected: Option<(Vec<String>, Vec<McpFailure>)>,
    pending_warnings: Vec<Warning>,
    started: bool,
    pub(super) total: Usage,
    pub(super) messages: Vec<Message>,
    session_id: Option<String>,
    transcript: Option<Sender<RunEnd>>,
    recorder: MetricsRecorder,
    summary: RunSummary,
    runs_tools: bool,
    pub(super) max_steps: u32,
    sources: Vec<Arc<dyn ToolSource>>,
    context: RequestContext,
    tools: ToolSet,
    model: String,
    provider: Arc<dyn Provider>,
}

impl RunState {
    /// The state before anything ran; built on the stream's first poll, when the metrics clock starts.
    pub(super) fn new(agent: Parts, transcript: Option<Sender<RunEnd>>) -> Self {
        let Parts {
            provider,
            model,
            tools,
            context,
            sources,
            max_steps,
            name: _,
        } = agent;
        Self {
            guards: Vec::new(),
            live: LiveSources::default(),
            connected: None,
            pending_warnings: Vec::new(),
            started: false,
            total: Usage::default(),
            messages: Vec::new(),
            session_id: None,
            transcript,
            recorder: MetricsRecorder::start(),
            summary: RunSummary::default(),
            runs_tools: provider.info().capabilities.runs_tools,
            max_steps,
            sources,
            context,
            tools,
            model,
            provider,
        }
    }

    /// Record an event the host sees (metrics and summary).
    pub(super) fn seen(&mut self, event: &Event) {
        self.recorder.observe(event);
        self.summary.observe(event);
    }

    /// Attach the outside tool sources (MCP) before the first model call.
    pub(super) async fn attach_sources(&mut self, signal: &Signal) {
        self.live = LiveSources::new(self.tools.clone());
        for source in &self.sources {
            let attached = source.attach(&self.context, signal).await;
            self.pending_warnings.extend(attached.warnings);
            self.live.attached(&attached.tools, attached.live);
            self.pending_warnings.extend(self.tools.merge(attached.tools));
            if !attached.connected.is_empty() || !attached.failed.is_empty() {
                let (servers, failed) = self.connected.get_or_insert_with(|| (Vec::new(), Vec::new()));
                servers.extend(attached.connected);
                failed.extend(attached.failed);
            }
            self.guards.extend(attached.guard);
        }
        if self.sources.iter().any(|source| source.attaches_context_servers()) {
            self.context.mcp_servers.clear();
        }
    }

    /// The next model call sees the sources' tools as they are now.
    pub(super) async fn refresh_tools(&mut self) {
        if let Some(tools) = self.live.changed_tools().await {
            self.tools = tools;
        }
    }

    /// The live sources' events so far, once `Started` went out.
    pub(super) fn live_events(&mut self) -> Vec<Event> {
        if !self.started {
            return Vec::new();
        }
        let events = self.live.take_events();
        for event in &events {
            self.seen(event);
        }
        events
    }

    /// Take over a paused run: its conversation, usage, session and the person's decisions.
    pub(super) fn resume_from(&mut self, paused: &PausedRun, decisions: Decisions) {
        self.messages = paused.messages.clone();
        self.total = paused.usage;
        self.session_id = paused.session_id.clone();
        if let Some(id) = &paused.session_id {
            self.context.session = Some(Session::Resume { id: id.clone() });
        }
        self.context.decisions.extend(decisions);
    }

    /// The user-prompt hook, before the first model call of a new run on a direct API (an
    /// agent runtime serves the hook itself). `Some` holds the events of a blocked run.
    pub(super) async fn prompt_hook(&mut self) -> Option<Vec<Event>> {
        let hooks = self.context.hooks.clone().filter(|_| !self.runs_tools)?;
        let prompt = self
            .messages
            .last()
            .filter(|message| message.role == Role::User)
            .map(Message::text)
            .unwrap_or_default();
        match hooks.on_prompt(&prompt).await {
            OnPrompt::Continue => None,
            OnPrompt::AddContext(text) => {
                match self.messages.last_mut().filter(|message| message.role == Role::User) {
                    Some(last) => last.content.push(ContentBlock::text(text)),
                    None => self.messages.push(Message::user(text)),
                }
                None
            }
            OnPrompt::Block { reason } => {
                self.pending_warnings.push(Warning::new("prompt_blocked", reason));
                let started = self.started_now();
                let metrics = self.recorder.finish();
                let finish = Event::Finish {
                    reason: FinishReason::Other("blocked".into()),
                    usage: Usage::default(),
                    metrics,
                };
                self.seen(&finish);
                self.hand_over(None);
                Some(vec![started, finish])
            }
        }
    }

    /// A `Started` of the run's own (a resumed or blocked run starts before any model call).
    pub(super) fn started_now(&mut self) -> Event {
        self.started = true;
        let event = Event::Started {
            response_id: None,
            model: self.model.clone(),
            session_id: self.session_id.clone(),
            warnings: std::mem::take(&mut self.pending_warnings),
        };
        self.seen(&event);
        event
    }

    /// The `ToolCall` events of a paused step's calls, for the stream that resumes it.
    pub(super) fn calls_again(&mut self, calls: &[PausedCall]) -> Vec<Event> {
        let events: Vec<Event> = calls
            .iter()
            .map(|call| Event::ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                input: call.input.clone(),
                executed_by: ExecutedBy::Host,
                signature: None,
            })
            .collect();
        for event in &events {
            self.seen(event);
        }
        events
    }

    /// Start one model call on the conversation so far; a failure carries the step.
    pub(super) async fn call_model(&self, step: u32, signal: &Signal) -> Result<EventStream, ProviderError> {
        self.provider
            .create_response(&self.messages, &self.tools, &self.model, signal, Some(&self.context))
            .await
            .map_err(|error| error.with_turn(step))
    }

    /// Fold one provider event into the turn and return what the host sees of it, if anything:
    /// only the first `Started` passes (with the sources' warnings), usage is summed over the
    /// run, and `Finish` is held back until the run ends.
    pub(super) fn forward(&mut self, event: Event, turn: &mut Turn, step: u32) -> Option<Event> {
        let event = match event {
            Event::Started {
                response_id,
                model,
                session_id,
                mut warnings,
            } => {
                if session_id.is_some() {
                    self.session_id.clone_from(&session_id);
                }
                if self.started {
                    for warning in warnings {
                        tracing::warn!(step, code = %warning.code, "{}", warning.message);
                    }
                    return None;
                }
                self.started = true;
                warnings.splice(0..0, self.pending_warnings.drain(..));
                let event = Event::Started {
                    response_id,
                    model,
                    session_id,
                    warnings,
                };
                self.seen(&event);
                return Some(event);
            }
            Event::Usage(usage) => {
                turn.usage.update(&usage);
                Event::Usage(self.total.sum(&turn.usage))
            }
            Event::Finish { reason, usage, .. } => {
                turn.usage.update(&usage);
                turn.reason = Some(reason);
                return None;
            }
            Event::ApprovalRequested { calls } => {
                turn.paused.extend(calls.iter().cloned());
                Event::ApprovalRequested { calls }
            }
            Event::ToolCall {
                ref id,
                ref name,
                ref input,
                executed_by: ExecutedBy::Host,
                ..
            } if !self.runs_tools => {
                turn.host_calls.push(PausedCall {
                    id: id.clone(),
                    name: name.clone(),
                    input: input.clone(),
                    decided: None,
                });
                event
            }
            other => other,
        };
        turn.content.push(&event);
        self.seen(&event);
        Some(event)
    }

    /// The `McpConnected` event, once, right after `Started` went out (if any source attached).
    pub(super) fn take_mcp_connected(&mut self) -> Option<Event> {
        if !self.started {
            return None;
        }
        let (servers, failed) = self.connected.take()?;
        let event = Event::McpConnected { servers, failed };
        self.seen(&event);
        Some(event)
    }

    /// The error for a provider stream that ended without `Finish`.
    pub(super) fn unfinished(&self, step: u32, signal: &Signal) -> ProviderError {
        let error = if signal.is_cancelled() {
            ProviderError::cancelled()
        } else {
            ProviderError::protocol("the provider's stream ended without `Finish`")
        };
        error.with_turn(step).with_provider(self.provider.info().name.clone())
    }

    /// The stop hook on a direct API: `Some` is the prompt that sends the model back to work.
    pub(super) async fn stop_hook(&self, reason: &FinishReason, turn: &Turn, continued: bool) -> Option<String> {
        let hooks = self.context.hooks.as_ref().filter(|_| !self.runs_tools)?;
        if !turn.paused.is_empty() {
            return None;
        }
        let text = turn.content.text();
        let mut stop = StopInfo::new(reason.clone(), text);
        stop.usage = self.total;
        stop.continued = continued;
        match hooks.on_stop(&stop).await {
            StopDecision::Stop => None,
            StopDecision::Continue { prompt } => Some(prompt),
        }
    }

    /// End the run: append the last assistant message, hand over the transcript and build
    /// `Finish` (reason `max_steps` when tool calls were still pending). An agent runtime that
    /// paused for approval hands over its paused state.
    pub(super) fn finish(&mut self, step: u32, reason: FinishReason, more: bool, turn: &mut Turn) -> Event {
        let reason = if more {
            FinishReason::Other("max_steps".into())
        } else {
            reason
        };
        let paused = (!turn.paused.is_empty()).then(|| PausedRun {
            messages: self.messages.clone(),
            pending: std::mem::take(&mut turn.paused),
            calls: Vec::new(),
            step,
            usage: self.total,
            session_id: self.session_id.clone(),
            runtime: true,
        });
        self.messages.push(Message::new(Role::Assistant, turn.content.take()));
        self.finish_event(reason, paused)
    }

    /// `Finish` with the run's totals, after handing over the transcript.
    pub(super) fn finish_event(&mut self, reason: FinishReason, paused: Option<PausedRun>) -> Event {
        let metrics = self.recorder.finish();
        let event = Event::Finish {
            reason,
            usage: self.total,
            metrics,
        };
        self.seen(&event);
        self.hand_over(paused);
        event
    }

    /// Send the conversation, the paused state and the summary to the transcript.
    pub(super) fn hand_over(&mut self, paused: Option<PausedRun>) {
        if let Some(tx) = &self.transcript {
            let _ = tx.send(RunEnd {
                messages: self.messages.clone(),
                paused,
                summary: self.summary.clone(),
            });
        }
    }

    /// Decide and run a step's host calls, streaming their progress and the live sources'
    /// events while they run (the run's stream is polled inside its span). The stream owns
    /// what it needs, so the run can record each event as it passes.
    pub(super) fn calls_stream(
        &self,
        calls: Vec<PausedCall>,
        signal: &Signal,
    ) -> impl Stream<Item = Running> + Send + use<> {
        let base = self.context.tool_context(signal);
        run_calls_streaming(self.tools.clone(), calls, base, self.context.clone(), self.live.sides())
    }

    /// Pause the run in `step`: `ApprovalRequested` for the calls a person decides, then
    /// `Finish` (reason `ToolUse`), the state handed to the transcript.
    pub(super) fn pause(&mut self, step: u32, calls: Vec<PausedCall>) -> Vec<Event> {
        let pending: Vec<ApprovalRequest> = calls
            .iter()
            .filter(|call| call.decided.is_none())
            .map(|call| ApprovalRequest {
                tool_use_id: call.id.clone(),
                tool_name: call.name.clone(),
                input: call.input.clone(),
            })
            .collect();
        let requested = Event::ApprovalRequested { calls: pending.clone() };
        self.seen(&requested);
        let paused = PausedRun {
            messages: self.messages.clone(),
            pending,
            calls,
            step,
            usage: self.total,
            session_id: self.session_id.clone(),
            runtime: false,
        };
        let finish = self.finish_event(FinishReason::ToolUse, Some(paused));
        vec![requested, finish]
    }

    /// The tool-result blocks for the next message and the `ToolResult` events, in call order.
    pub(super) fn tool_results(
        &mut self,
        calls: &[PausedCall],
        results: Vec<ToolResult>,
    ) -> (Vec<ContentBlock>, Vec<Event>) {
        let mut blocks = Vec::with_capacity(results.len());
        let mut events = Vec::with_capacity(results.len());
        for (call, result) in calls.iter().zip(results) {
            blocks.push(ContentBlock::ToolResult {
                tool_use_id: call.id.clone(),
                content: result.content.clone(),
                is_error: result.is_error(),
                cache_control: None,
            });
            let event = Event::ToolResult {
                id: call.id.clone(),
                name: call.name.clone(),
                result,
            };
            self.seen(&event);
            events.push(event);
        }
        (blocks, events)
    }

    /// Append a step's tool results to the conversation and build its `StepFinished`.
    pub(super) fn results_step(
        &mut self,
        step: u32,
        reason: FinishReason,
        usage: Usage,
        result_blocks: Vec<ContentBlock>,
    ) -> Event {
        self.messages.push(Message::new(Role::User, result_blocks));
        let event = Event::StepFinished { step, reason, usage };
        self.seen(&event);
        event
    }

    /// A stop hook sent the model back: append its message and the hook's prompt.
    pub(super) fn prompt_step(&mut self, step: u32, reason: FinishReason, mut turn: Turn, prompt: String) -> Event {
        self.messages.push(Message::new(Role::Assistant, turn.content.take()));
        self.messages.push(Message::user(prompt));
        let event = Event::StepFinished {
            step,
            reason,
            usage: turn.usage,
        };
        self.seen(&event);
        event
    }
}
