//! The one event enum every provider emits, and the values it carries.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approval::ApprovalRequest;
use crate::message::Message;
use crate::source::Source;
use crate::tool::{ExecutedBy, ToolResult};

/// Something the host should know that did not stop the call: an ignored option, a dropped
/// duplicate tool, an MCP server that failed to connect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    /// A stable machine-readable code such as `unsupported_option`.
    pub code: String,
    /// A human-readable explanation.
    pub message: String,
}

impl Warning {
    /// A request option, context field or sampling parameter the provider cannot honour.
    pub const UNSUPPORTED_OPTION: &'static str = "unsupported_option";
    /// Message content the wire cannot carry (sent another way, or left out: see the message).
    pub const UNSUPPORTED_CONTENT: &'static str = "unsupported_content";
    /// Content that was dropped outright.
    pub const DROPPED_CONTENT: &'static str = "dropped_content";
    /// Reasoning in the history that this server is not sent back.
    pub const REASONING_NOT_SENT: &'static str = "reasoning_not_sent";
    /// A history the runtime cannot take turn by turn, sent as one flattened prompt.
    pub const HISTORY_FLATTENED: &'static str = "history_flattened";
    /// MCP servers in the context that nobody attached (a direct API connects none itself).
    pub const MCP_SERVERS_IGNORED: &'static str = "mcp_servers_ignored";
    /// An MCP server that failed to connect.
    pub const MCP_SERVER_FAILED: &'static str = "mcp_server_failed";
    /// A `${metadata.key}` placeholder whose key the request lacks.
    pub const MCP_MISSING_METADATA: &'static str = "mcp_missing_metadata";
    /// A tool whose name another tool already took (the first one is kept).
    pub const DUPLICATE_TOOL: &'static str = "duplicate_tool";
    /// An MCP server whose name another server already took.
    pub const DUPLICATE_MCP_SERVER: &'static str = "duplicate_mcp_server";

    /// A warning with a code (one of the constants above where one fits) and a message.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
        }
    }
}

/// An MCP server that could not be attached to a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpFailure {
    /// The server's configured name.
    pub name: String,
    /// Why it failed.
    pub error: String,
}

/// Why a response (or a whole agent run) ended.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The model finished its turn (or hit a stop sequence).
    Stop,
    /// The output token limit was reached.
    Length,
    /// The model asked for tools and waits for their results.
    ToolUse,
    /// A content filter stopped the output.
    ContentFilter,
    /// The model refused.
    Refusal,
    /// The caller cancelled.
    Cancelled,
    /// Anything else, with the provider's raw reason (`pause_turn`, `max_steps`...).
    Other(String),
}

/// Token usage and cost. Every number is optional: providers report what they know.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Input (prompt) tokens, not counting cache reads and writes where the provider splits them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<u64>,
    /// Output (completion) tokens, reasoning included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<u64>,
    /// Tokens read from the prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<u64>,
    /// Tokens written to the prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<u64>,
    /// Reasoning tokens, where the provider reports them separately.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<u64>,
    /// Cost in US dollars, where the provider reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

impl Usage {
    /// Add `other` to `self`, field by field; a field known on either side stays known.
    /// Token counts saturate at `u64::MAX` (servers report them; a sum never panics or wraps).
    pub fn accumulate(&mut self, other: &Usage) {
        fn add<T: Copy>(a: &mut Option<T>, b: Option<T>, plus: fn(T, T) -> T) {
            *a = match (*a, b) {
                (Some(x), Some(y)) => Some(plus(x, y)),
                (x, y) => x.or(y),
            };
        }
        add(&mut self.input, other.input, u64::saturating_add);
        add(&mut self.output, other.output, u64::saturating_add);
        add(&mut self.cache_read, other.cache_read, u64::saturating_add);
        add(&mut self.cache_write, other.cache_write, u64::saturating_add);
        add(&mut self.reasoning, other.reasoning, u64::saturating_add);
        add(&mut self.cost_usd, other.cost_usd, |x, y| x + y);
    }

    /// The sum of two usages.
    pub fn sum(mut self, other: &Usage) -> Usage {
        self.accumulate(other);
        self
    }

    /// Overwrite each field that `newer` knows (for cumulative updates within one response).
    pub fn update(&mut self, newer: &Usage) {
        fn set<T: Copy>(a: &mut Option<T>, b: Option<T>) {
            if b.is_some() {
                *a = b;
            }
        }
        set(&mut self.input, newer.input);
        set(&mut self.output, newer.output);
        set(&mut self.cache_read, newer.cache_read);
        set(&mut self.cache_write, newer.cache_write);
        set(&mut self.reasoning, newer.reasoning);
        set(&mut self.cost_usd, newer.cost_usd);
    }

    /// Whether no field is known.
    pub fn is_empty(&self) -> bool {
        *self == Usage::default()
    }
}

/// Timings and counts of one response or one agent run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metrics {
    /// Milliseconds from the call to the first event.
    pub first_event_ms: Option<u64>,
    /// Milliseconds from the call to the first text delta.
    pub first_text_ms: Option<u64>,
    /// Milliseconds from the call to `Finish`.
    pub total_ms: u64,
    /// Events emitted, `Finish` included.
    pub events: u64,
    /// Characters of text emitted.
    pub text_chars: u64,
    /// Characters of reasoning emitted.
    pub reasoning_chars: u64,
}

/// One event of a response stream. The same enum for every provider.
///
/// Lifecycle rules (checked by [`validate`](crate::validate::validate())): `Started` first; `Finish` last
/// and once; a `ToolCall` only after its input is complete; every `ToolCallStart` followed by
/// its `ToolCall`; no block's text emitted twice; an error ends the stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// Always first.
    Started {
        /// The provider's response (message) id, when it has one.
        response_id: Option<String>,
        /// The model that answers.
        model: String,
        /// The agent-runtime session id, when known.
        session_id: Option<String>,
        /// Options the provider ignored, and similar notices.
        warnings: Vec<Warning>,
    },
    /// Which MCP servers are live for this call.
    McpConnected {
        /// Names of the servers that connected.
        servers: Vec<String>,
        /// Servers that failed, with the reason.
        failed: Vec<McpFailure>,
    },
    /// Incremental text of content block `index`.
    TextDelta {
        /// Content block index within the current model response.
        index: usize,
        /// The new text.
        text: String,
    },
    /// Incremental reasoning of content block `index`.
    ReasoningDelta {
        /// Content block index.
        index: usize,
        /// The new reasoning text.
        text: String,
    },
    /// The signature of block `index`; keep it for the round trip. Usually a reasoning block's;
    /// on Gemini, whose every part may carry a `thoughtSignature`, also a text block's (the
    /// signature then belongs to that text, [`ContentBlock::Text`](crate::ContentBlock::Text)'s
    /// `signature`), or a block of its own when it came on an empty text part.
    ReasoningSignature {
        /// Content block index.
        index: usize,
        /// The signature.
        signature: String,
    },
    /// Encrypted reasoning (Anthropic `redacted_thinking`); keep it for the round trip.
    RedactedReasoning {
        /// Content block index.
        index: usize,
        /// The opaque data.
        data: String,
    },
    /// A tool call began; its input follows as deltas. Its `ToolCall` follows once the input is
    /// complete; an agent runtime that abandons the call first (it restarts the model message
    /// after an API retry) answers it with a `ToolResult` of status `Aborted` instead.
    ToolCallStart {
        /// The call id.
        id: String,
        /// The tool name.
        name: String,
    },
    /// A fragment of a tool call's JSON input.
    ToolCallDelta {
        /// The call id.
        id: String,
        /// The fragment, not valid JSON on its own.
        partial_json: String,
    },
    /// A complete tool call, emitted only after its input ended.
    ToolCall {
        /// The call id.
        id: String,
        /// The tool name (the host's name, for host tools).
        name: String,
        /// The complete input.
        input: Value,
        /// Who runs it.
        executed_by: ExecutedBy,
        /// The signature the call came with (Gemini's `thoughtSignature`); keep it for the
        /// round trip.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// A tool call finished (run by the host loop or by the provider), or a started call was
    /// abandoned before its input was complete (status `Aborted`, no `ToolCall` before it).
    ToolResult {
        /// The call id.
        id: String,
        /// The tool name.
        name: String,
        /// The result.
        result: ToolResult,
    },
    /// A provider-specific block with no event of its own (a server tool's raw result...),
    /// kept verbatim so nothing is dropped.
    Opaque {
        /// Content block index.
        index: usize,
        /// The provider that produced it.
        provider: String,
        /// The block as sent.
        data: Value,
    },
    /// A whole message of a sub-agent the runtime ran on its own (the Claude Code CLI's `Task`
    /// tool): which call started it, which sub-agent it is, and what it said or got back. Not part
    /// of the conversation sent back; the runtime keeps the sub-agent's history itself.
    SubagentMessage {
        /// The id of the tool call that started the sub-agent.
        parent_tool_use_id: String,
        /// The sub-agent's type (`subagent_type` of the call that started it), when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        subagent: Option<String>,
        /// The message: the sub-agent's model output (`Assistant`) or the tool results it got
        /// (`User`).
        message: Message,
    },
    /// How far a running tool call got: a host tool's [`ToolProgress`](crate::tool::ToolProgress)
    /// report, or an MCP server's `notifications/progress` for the call. Transient: not part of
    /// the conversation; the agent loop keeps at most
    /// [`PROGRESS_BACKLOG`](crate::agent::PROGRESS_BACKLOG) unread reports and drops the rest.
    ToolProgress {
        /// The call id.
        id: String,
        /// What the call is doing now, in a few words.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// How much is done, increasing from report to report.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        progress: Option<f64>,
        /// How much there is in all, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        total: Option<f64>,
    },
    /// A log message a tool source sent while the call ran (an MCP server's
    /// `notifications/message`). Transient: not part of the conversation.
    Log {
        /// Who sent it (the MCP server's configured name).
        source: String,
        /// Its level, as sent (`debug`, `info`, `notice`, `warning`, `error`...).
        level: String,
        /// The logger name, when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        logger: Option<String>,
        /// The message: any JSON value.
        data: Value,
    },
    /// The run paused: these tool calls wait for a person's decision
    /// ([`Approval::Pause`](crate::context::Approval::Pause)). `Finish` with reason `ToolUse`
    /// follows at once; a later call with the decisions resumes the run
    /// ([`Agent::resume`](crate::Agent::resume)).
    ApprovalRequested {
        /// The calls waiting, in call order.
        calls: Vec<ApprovalRequest>,
    },
    /// A URL source or document citation the model used: a citation of text block `index`,
    /// or a result of the server tool whose block is `index`.
    Source(Source),
    /// Cumulative usage so far.
    Usage(Usage),
    /// In an agent run: one model call (or runtime turn) ended and more follow.
    StepFinished {
        /// Zero-based step number.
        step: u32,
        /// Why the step ended (usually `ToolUse`).
        reason: FinishReason,
        /// Usage of this step alone.
        usage: Usage,
    },
    /// Always last on success.
    Finish {
        /// Why the response ended.
        reason: FinishReason,
        /// Total usage (summed over all steps in an agent run).
        usage: Usage,
        /// Timings and counts.
        metrics: Metrics,
    },
}

impl Event {
    /// The event's name, as in its serialized `type` tag.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Started { .. } => "started",
            Event::McpConnected { .. } => "mcp_connected",
            Event::TextDelta { .. } => "text_delta",
            Event::ReasoningDelta { .. } => "reasoning_delta",
            Event::ReasoningSignature { .. } => "reasoning_signature",
            Event::RedactedReasoning { .. } => "redacted_reasoning",
            Event::ToolCallStart { .. } => "tool_call_start",
            Event::ToolCallDelta { .. } => "tool_call_delta",
            Event::ToolCall { .. } => "tool_call",
            Event::ToolResult { .. } => "tool_result",
            Event::Opaque { .. } => "opaque",
            Event::SubagentMessage { .. } => "subagent_message",
            Event::ApprovalRequested { .. } => "approval_requested",
            Event::ToolProgress { .. } => "tool_progress",
            Event::Log { .. } => "log",
            Event::Source(_) => "source",
            Event::Usage(_) => "usage",
            Event::StepFinished { .. } => "step_finished",
            Event::Finish { .. } => "finish",
        }
    }
}
