//! The agent loop: runs a conversation to its end on any provider.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;

use crate::context::{Approval, ApprovalRequest, RequestContext};
use crate::error::ProviderError;
use crate::event::{Event, FinishReason, McpFailure, Usage, Warning};
use crate::kit::ContentBuilder;
use crate::kit::MetricsRecorder;
use crate::kit::run_tool;
use crate::message::{ContentBlock, Message, Role};
use crate::provider::{EventStream, Provider, ProviderResponse};
use crate::signal::Signal;
use crate::sink::RunHandle;
use crate::tool::{ExecutedBy, ToolContext, ToolResult};
use crate::toolset::ToolSet;

/// The default step limit of an [`Agent`].
pub const DEFAULT_MAX_STEPS: u32 = 30;

/// Tools attached for one run by an outside source (MCP servers, say), with what to report.
#[derive(Default)]
pub struct AttachedTools {
    /// The tools, merged after the agent's own tools.
    pub tools: ToolSet,
    /// Names of the sources (servers) that connected.
    pub connected: Vec<String>,
    /// Sources that failed, with the reason.
    pub failed: Vec<McpFailure>,
    /// Warnings to report on `Started`.
    pub warnings: Vec<Warning>,
    /// Kept alive for the whole run and dropped at its end (closes connections).
    pub guard: Option<Box<dyn Any + Send + Sync>>,
}

impl fmt::Debug for AttachedTools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AttachedTools")
            .field("tools", &self.tools)
            .field("connected", &self.connected)
            .field("failed", &self.failed)
            .field("warnings", &self.warnings)
            .finish_non_exhaustive()
    }
}

/// Something that attaches tools to a run when it starts (patchbay-mcp's client set).
/// When a source attached any server (connected or failed), the run emits one `McpConnected`
/// event after `Started`; with no servers at all the run is exactly as without the source.
#[async_trait]
pub trait ToolSource: Send + Sync {
    /// Attach for one run. Failures are reported in the result, never as an error.
    async fn attach(&self, context: &RequestContext, signal: &Signal) -> AttachedTools;

    /// Whether [`attach`](ToolSource::attach) also connects the servers of
    /// `RequestContext::mcp_servers` (patchbay-mcp's client set does). If any source does, the
    /// agent hands the provider a context without them, so a provider neither connects them a
    /// second time nor warns that it ignored them.
    fn attaches_context_servers(&self) -> bool {
        false
    }
}

/// Runs a conversation to its end on any provider.
///
/// For a provider without `runs_tools` it executes each host `ToolCall` through the
/// [`ToolSet`] (asking the approval handler first), appends the results and calls again, up to
/// `max_steps`. For an agent runtime it forwards, because the runtime runs the tools. Either
/// way the host sees one stream that keeps the lifecycle rules: one `Started`, a
/// `StepFinished` between model calls, one `Finish` with usage summed over the run.
///
/// ```
/// # async fn demo(provider: std::sync::Arc<dyn patchbay_core::Provider>) -> Result<(), patchbay_core::ProviderError> {
/// use patchbay_core::{Agent, Message, Signal, ToolSet};
/// let agent = Agent::new(provider, "some-model").with_tools(ToolSet::new()).with_max_steps(10);
/// let outcome = agent.run(vec![Message::user("hi")], Signal::new()).await?;
/// println!("{}", outcome.response.text());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Agent {
    provider: Arc<dyn Provider>,
    model: String,
    tools: ToolSet,
    context: RequestContext,
    sources: Vec<Arc<dyn ToolSource>>,
    max_steps: u32,
    name: Option<String>,
}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("provider", &self.provider.info().name)
            .field("model", &self.model)
            .field("tools", &self.tools)
            .field("context", &self.context)
            .field("sources", &self.sources.len())
            .field("max_steps", &self.max_steps)
            .field("name", &self.name)
            .finish()
    }
}

/// The conversation of a run started with [`Agent::stream_with_transcript`].
#[derive(Debug)]
pub struct Transcript {
    rx: std::sync::mpsc::Receiver<Vec<Message>>,
}

impl Transcript {
    /// The input messages followed by every assistant and tool-result message of the run,
    /// once the run's stream ended with `Finish`; `None` before that or after an error.
    pub fn messages(&self) -> Option<Vec<Message>> {
        self.rx.try_iter().last()
    }
}

/// The end of a collected run: the response and the whole conversation after it.
#[derive(Debug, Clone)]
pub struct AgentOutcome {
    /// Everything the run produced, collected.
    pub response: ProviderResponse,
    /// The input messages followed by every assistant and tool-result message of the run.
    pub messages: Vec<Message>,
}

impl Agent {
    /// An agent on `provider` answering with `model`.
    pub fn new(provider: Arc<dyn Provider>, model: impl Into<String>) -> Self {
        Self {
            provider,
            model: model.into(),
            tools: ToolSet::new(),
            context: RequestContext::default(),
            sources: Vec::new(),
            max_steps: DEFAULT_MAX_STEPS,
            name: None,
        }
    }

    /// Name the agent: its runs' `invoke_agent` spans carry it (`gen_ai.agent.name`, exported
    /// as `invoke_agent {name}`).
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Set the tools.
    pub fn with_tools(mut self, tools: ToolSet) -> Self {
        self.tools = tools;
        self
    }

    /// Set the request context used for every call.
    pub fn with_context(mut self, context: RequestContext) -> Self {
        self.context = context;
        self
    }

    /// Attach a tool source (MCP servers) for every run.
    pub fn with_tool_source(mut self, source: Arc<dyn ToolSource>) -> Self {
        self.sources.push(source);
        self
    }

    /// Set the step limit (model calls per run; default 30).
    pub fn with_max_steps(mut self, max_steps: u32) -> Self {
        self.max_steps = max_steps.max(1);
        self
    }

    /// The provider.
    pub fn provider(&self) -> &Arc<dyn Provider> {
        &self.provider
    }

    /// The tools.
    pub fn tools(&self) -> &ToolSet {
        &self.tools
    }

    /// Start a run: the handle is the stream, a cancel method and the session id once known.
    pub fn start(&self, messages: Vec<Message>) -> RunHandle {
        let signal = Signal::new();
        RunHandle::new(self.stream(messages, signal.clone()), signal)
    }

    /// Run to the end and collect the response and the grown conversation.
    pub async fn run(&self, messages: Vec<Message>, signal: Signal) -> Result<AgentOutcome, ProviderError> {
        let (tx, rx) = std::sync::mpsc::channel();
        let stream = self.run_stream(messages, signal, Some(tx));
        let response = ProviderResponse::collect(stream).await?;
        let messages = rx.try_iter().last().unwrap_or_default();
        Ok(AgentOutcome { response, messages })
    }

    /// The run as one event stream.
    pub fn stream(&self, messages: Vec<Message>, signal: Signal) -> EventStream {
        self.run_stream(messages, signal, None)
    }

    /// The run as one event stream, plus the grown conversation once it finished: a host
    /// that stores every event and resumes later from the conversation needs both. The
    /// [`Transcript`] holds the messages only after the stream ended with `Finish`.
    pub fn stream_with_transcript(&self, messages: Vec<Message>, signal: Signal) -> (EventStream, Transcript) {
        let (tx, rx) = std::sync::mpsc::channel();
        (self.run_stream(messages, signal, Some(tx)), Transcript { rx })
    }

    fn run_stream(
        &self,
        messages: Vec<Message>,
        signal: Signal,
        transcript: Option<std::sync::mpsc::Sender<Vec<Message>>>,
    ) -> EventStream {
        let agent = self.clone();
        let span = crate::telemetry::agent_span(&agent.provider.info().name, &agent.model, agent.name.as_deref());
        let stream = async_stream::stream! {
            let mut run = RunState::new(agent, messages, transcript);
            run.attach_sources(&signal).await;
            for step in 0..run.max_steps {
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
                }
                drop(stream);
                let Some(reason) = turn.reason.take() else {
                    yield Err(run.unfinished(step, &signal));
                    return;
                };
                run.total.accumulate(&turn.usage);

                let more = reason == FinishReason::ToolUse && !turn.host_calls.is_empty();
                if !more || step + 1 >= run.max_steps {
                    yield Ok(run.finish(reason, more, &mut turn.content));
                    return;
                }

                let results = run.run_host_calls(&turn.host_calls, &signal).await;
                let (result_blocks, events) = run.tool_results(&turn.host_calls, results);
                for event in events {
                    yield Ok(event);
                }
                if signal.is_cancelled() {
                    yield Err(ProviderError::cancelled().with_turn(step));
                    return;
                }
                yield Ok(run.next_step(step, reason, turn, result_blocks));
            }
        };
        // Polled inside the run's span: model calls and tool executions are its children.
        let recorder = crate::telemetry::SpanRecorder::new(span)
            .without_time_to_first_chunk()
            .without_tool_spans();
        crate::kit::observed(Box::pin(stream), recorder)
    }
}

/// A host tool call to run: id, tool name and input.
type HostCall = (String, String, serde_json::Value);

/// What one model call of a run produced so far.
#[derive(Default)]
struct Turn {
    usage: Usage,
    reason: Option<FinishReason>,
    content: ContentBuilder,
    host_calls: Vec<HostCall>,
}

/// What a run carries from step to step. Fields drop in declaration order, so the sources'
/// guards (open connections) go first, before the tools, sources and provider.
struct RunState {
    guards: Vec<Box<dyn Any + Send + Sync>>,
    connected: Option<(Vec<String>, Vec<McpFailure>)>,
    pending_warnings: Vec<Warning>,
    started: bool,
    total: Usage,
    messages: Vec<Message>,
    transcript: Option<std::sync::mpsc::Sender<Vec<Message>>>,
    recorder: MetricsRecorder,
    runs_tools: bool,
    max_steps: u32,
    sources: Vec<Arc<dyn ToolSource>>,
    context: RequestContext,
    tools: ToolSet,
    model: String,
    provider: Arc<dyn Provider>,
}

impl RunState {
    /// The state before anything ran; built on the stream's first poll, when the metrics clock starts.
    fn new(agent: Agent, messages: Vec<Message>, transcript: Option<std::sync::mpsc::Sender<Vec<Message>>>) -> Self {
        let Agent {
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
            connected: None,
            pending_warnings: Vec::new(),
            started: false,
            total: Usage::default(),
            messages,
            transcript,
            recorder: MetricsRecorder::start(),
            runs_tools: provider.info().capabilities.runs_tools,
            max_steps,
            sources,
            context,
            tools,
            model,
            provider,
        }
    }

    /// Attach the outside tool sources (MCP) before the first model call.
    async fn attach_sources(&mut self, signal: &Signal) {
        for source in &self.sources {
            let attached = source.attach(&self.context, signal).await;
            self.pending_warnings.extend(attached.warnings);
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

    /// Start one model call on the conversation so far; a failure carries the step.
    async fn call_model(&self, step: u32, signal: &Signal) -> Result<EventStream, ProviderError> {
        self.provider
            .create_response(&self.messages, &self.tools, &self.model, signal, Some(&self.context))
            .await
            .map_err(|error| error.with_turn(step))
    }

    /// Fold one provider event into the turn and return what the host sees of it, if anything:
    /// only the first `Started` passes (with the sources' warnings), usage is summed over the
    /// run, and `Finish` is held back until the run ends.
    fn forward(&mut self, event: Event, turn: &mut Turn, step: u32) -> Option<Event> {
        let event = match event {
            Event::Started {
                response_id,
                model,
                session_id,
                mut warnings,
            } => {
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
                self.recorder.observe(&event);
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
            Event::ToolCall {
                id,
                name,
                input,
                executed_by: ExecutedBy::Host,
                signature,
            } if !self.runs_tools => {
                turn.host_calls.push((id.clone(), name.clone(), input.clone()));
                Event::ToolCall {
                    id,
                    name,
                    input,
                    executed_by: ExecutedBy::Host,
                    signature,
                }
            }
            other => other,
        };
        turn.content.push(&event);
        self.recorder.observe(&event);
        Some(event)
    }

    /// The `McpConnected` event, once, right after `Started` went out (if any source attached).
    fn take_mcp_connected(&mut self) -> Option<Event> {
        if !self.started {
            return None;
        }
        let (servers, failed) = self.connected.take()?;
        let event = Event::McpConnected { servers, failed };
        self.recorder.observe(&event);
        Some(event)
    }

    /// The error for a provider stream that ended without `Finish`.
    fn unfinished(&self, step: u32, signal: &Signal) -> ProviderError {
        let error = if signal.is_cancelled() {
            ProviderError::cancelled()
        } else {
            ProviderError::protocol("the provider's stream ended without `Finish`")
        };
        error.with_turn(step).with_provider(self.provider.info().name.clone())
    }

    /// End the run: append the last assistant message, hand over the transcript and build
    /// `Finish` (reason `max_steps` when tool calls were still pending).
    fn finish(&mut self, reason: FinishReason, more: bool, content: &mut ContentBuilder) -> Event {
        let reason = if more {
            FinishReason::Other("max_steps".into())
        } else {
            reason
        };
        self.messages.push(Message::new(Role::Assistant, content.take()));
        if let Some(tx) = &self.transcript {
            let _ = tx.send(self.messages.clone());
        }
        let metrics = self.recorder.finish();
        Event::Finish {
            reason,
            usage: self.total,
            metrics,
        }
    }

    /// Run the turn's host tool calls (the run's stream is polled inside its span).
    async fn run_host_calls(&self, calls: &[HostCall], signal: &Signal) -> Vec<ToolResult> {
        let base = self.context.tool_context(signal);
        run_tools(&self.tools, calls, &base, &self.context).await
    }

    /// The tool-result blocks for the next message and the `ToolResult` events, in call order.
    fn tool_results(&mut self, calls: &[HostCall], results: Vec<ToolResult>) -> (Vec<ContentBlock>, Vec<Event>) {
        let mut blocks = Vec::with_capacity(results.len());
        let mut events = Vec::with_capacity(results.len());
        for ((id, name, _), result) in calls.iter().zip(results) {
            blocks.push(ContentBlock::ToolResult {
                tool_use_id: id.clone(),
                content: result.content.clone(),
                is_error: result.is_error(),
                cache_control: None,
            });
            let event = Event::ToolResult {
                id: id.clone(),
                name: name.clone(),
                result,
            };
            self.recorder.observe(&event);
            events.push(event);
        }
        (blocks, events)
    }

    /// Append the turn and its tool results to the conversation and build `StepFinished`.
    fn next_step(
        &mut self,
        step: u32,
        reason: FinishReason,
        mut turn: Turn,
        result_blocks: Vec<ContentBlock>,
    ) -> Event {
        self.messages.push(Message::new(Role::Assistant, turn.content.take()));
        self.messages.push(Message::new(Role::User, result_blocks));
        let event = Event::StepFinished {
            step,
            reason,
            usage: turn.usage,
        };
        self.recorder.observe(&event);
        event
    }
}

/// Ask for approval in call order, then run the approved calls concurrently; results come
/// back in call order.
async fn run_tools(
    tools: &ToolSet,
    calls: &[HostCall],
    base: &ToolContext,
    context: &RequestContext,
) -> Vec<ToolResult> {
    let mut approved = Vec::with_capacity(calls.len());
    for (id, name, input) in calls {
        let cx = base.clone().with_tool_use_id(id.clone());
        let decision = match &context.approval {
            None => Approval::Allow,
            Some(handler) => {
                let request = ApprovalRequest {
                    tool_use_id: id.clone(),
                    tool_name: name.clone(),
                    input: input.clone(),
                };
                tokio::select! {
                    decision = handler.approve(&request, &cx) => decision,
                    _ = base.signal.cancelled() => Approval::Deny { message: "cancelled before approval".into() },
                }
            }
        };
        approved.push((cx, decision));
    }
    let runs = calls
        .iter()
        .zip(approved)
        .map(|((_, name, input), (cx, decision))| async move {
            let input = match decision {
                Approval::Allow => input.clone(),
                Approval::AllowWithInput(edited) => edited,
                Approval::Deny { message } => return ToolResult::denied(message),
            };
            let Some(tool) = tools.get(name) else {
                return ToolResult::error(format!("unknown tool `{name}`"));
            };
            if cx.signal.is_cancelled() {
                return ToolResult::aborted();
            }
            run_tool(tool.as_ref(), input, &cx).await
        });
    futures::future::join_all(runs).await
}
