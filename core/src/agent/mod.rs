//! The agent loop: runs a conversation to its end on any provider.

use std::fmt;
use std::sync::Arc;

use crate::context::RequestContext;
use crate::error::ProviderError;
use crate::message::Message;
use crate::provider::{EventStream, Provider, ProviderResponse};
use crate::signal::Signal;
use crate::sink::RunHandle;
use crate::summary::RunSummary;
use crate::toolset::ToolSet;

mod live;
mod pause;
mod run;
mod source;
mod state;
mod tools;

use pause::RunEnd;
pub use pause::{Decisions, PausedCall, PausedRun};
use run::Start;
pub use source::{AttachedTools, LiveTools, ToolSource};
use state::Parts;
pub use tools::PROGRESS_BACKLOG;

/// The default step limit of an [`Agent`].
pub const DEFAULT_MAX_STEPS: u32 = 30;

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

/// The end of a run started with [`Agent::stream_with_transcript`] (or
/// [`Agent::resume_stream`]): the grown conversation, the summary, and the paused state when
/// the run paused for approval.
#[derive(Debug)]
pub struct Transcript {
    rx: std::sync::mpsc::Receiver<RunEnd>,
    end: std::sync::Mutex<Option<RunEnd>>,
}

impl Transcript {
    fn new(rx: std::sync::mpsc::Receiver<RunEnd>) -> Self {
        Self {
            rx,
            end: std::sync::Mutex::new(None),
        }
    }

    fn end(&self) -> Option<RunEnd> {
        let mut end = self.end.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(latest) = self.rx.try_iter().last() {
            *end = Some(latest);
        }
        end.clone()
    }

    /// The input messages followed by every assistant and tool-result message of the run,
    /// once the run's stream ended with `Finish`; `None` before that or after an error.
    pub fn messages(&self) -> Option<Vec<Message>> {
        self.end().map(|end| end.messages)
    }

    /// The run's state when it paused for approval (its stream ended with
    /// `ApprovalRequested` and `Finish`); `None` when it ended otherwise or has not ended.
    pub fn paused(&self) -> Option<PausedRun> {
        self.end().and_then(|end| end.paused)
    }

    /// What the run's tools reported, with counts and totals, once the stream ended with
    /// `Finish`.
    pub fn summary(&self) -> Option<RunSummary> {
        self.end().map(|end| end.summary)
    }
}

/// The end of a collected run: the response and the whole conversation after it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AgentOutcome {
    /// Everything the run produced, collected.
    pub response: ProviderResponse,
    /// The input messages followed by every assistant and tool-result message of the run.
    pub messages: Vec<Message>,
    /// The run's state when it paused for approval: hand it to [`Agent::resume`] with the
    /// decisions.
    pub paused: Option<PausedRun>,
    /// What the run's tools reported, with counts and totals.
    pub summary: RunSummary,
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
        let (stream, transcript) = self.stream_with_transcript(messages, signal);
        collect(stream, transcript).await
    }

    /// The run as one event stream.
    pub fn stream(&self, messages: Vec<Message>, signal: Signal) -> EventStream {
        run::run_stream(self.parts(), Start::New(messages), signal, None)
    }

    /// The run as one event stream, plus the grown conversation once it finished: a host
    /// that stores every event and resumes later from the conversation needs both. The
    /// [`Transcript`] holds the messages only after the stream ended with `Finish`.
    pub fn stream_with_transcript(&self, messages: Vec<Message>, signal: Signal) -> (EventStream, Transcript) {
        let (tx, rx) = std::sync::mpsc::channel();
        let stream = run::run_stream(self.parts(), Start::New(messages), signal, Some(tx));
        (stream, Transcript::new(rx))
    }

    /// Resume a run that paused for approval, with a person's decisions (by call id), and
    /// collect it. Calls without a decision are asked about again (and may pause again).
    ///
    /// For a direct API the decided calls run (or are refused) and the run goes on; for an agent
    /// runtime the decisions go to the provider with the run's session
    /// ([`RequestContext::decisions`]), which answers the permission its runtime waits on.
    pub async fn resume(
        &self,
        paused: PausedRun,
        decisions: Decisions,
        signal: Signal,
    ) -> Result<AgentOutcome, ProviderError> {
        let (stream, transcript) = self.resume_stream(paused, decisions, signal);
        collect(stream, transcript).await
    }

    /// [`Agent::resume`] as one event stream (starting with its own `Started`), with the
    /// [`Transcript`] of the resumed run.
    pub fn resume_stream(&self, paused: PausedRun, decisions: Decisions, signal: Signal) -> (EventStream, Transcript) {
        let (tx, rx) = std::sync::mpsc::channel();
        let stream = run::run_stream(self.parts(), Start::Resume(paused, decisions), signal, Some(tx));
        (stream, Transcript::new(rx))
    }
}

impl Agent {
    /// What a run takes of the agent.
    fn parts(&self) -> Parts {
        Parts {
            provider: self.provider.clone(),
            model: self.model.clone(),
            tools: self.tools.clone(),
            context: self.context.clone(),
            sources: self.sources.clone(),
            max_steps: self.max_steps,
            name: self.name.clone(),
        }
    }
}

/// Collect a run's stream and its end.
async fn collect(stream: EventStream, transcript: Transcript) -> Result<AgentOutcome, ProviderError> {
    let response = ProviderResponse::collect(stream).await?;
    let end = transcript.end();
    Ok(AgentOutcome {
        response,
        messages: end.as_ref().map(|end| end.messages.clone()).unwrap_or_default(),
        paused: end.as_ref().and_then(|end| end.paused.clone()),
        summary: end.map(|end| end.summary).unwrap_or_default(),
    })
}
