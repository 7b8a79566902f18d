//! The line translator: a pure state machine from the CLI's stdout lines to patchbay events.
//!
//! - `system/init` gives the session id (reported on `Started`) and the MCP server statuses
//!   (`McpConnected`, for servers the caller attached; the internal host server is not listed);
//! - `stream_event` partials (raw Anthropic events) go through patchbay-anthropic's
//!   [`Translator`](patchbay_anthropic::Translator), one per model message; `Started` is emitted
//!   at the first model output, so a call that fails before any output is a plain error a retry
//!   layer may retry;
//! - `assistant` lines repeat what the partials already streamed: a message whose id was
//!   streamed is skipped; a message that was not (no partials) is translated from its blocks;
//!   CLI-made `<synthetic>` messages (API error texts) only feed the error message; citations
//!   and web search results become `Source`s either way (as patchbay-anthropic maps them);
//! - tool calls named `mcp__<host server>__<tool>` are host tools (`executed_by: Host`, host
//!   name); everything else the CLI runs itself (`executed_by: Provider`);
//! - a sub-agent's whole messages (`parent_tool_use_id` set) become `SubagentMessage` with its
//!   type from the call that started it; its partials are skipped;
//! - `user` tool results become `ToolResult` (the host tool's own result, metadata included,
//!   when it ran in-process);
//! - a tool call whose input never completed, because the CLI abandoned its model message (a
//!   new `message_start` after an API retry, or the run ending), is answered with a `ToolResult`
//!   of status `Aborted` (metadata `{"abandoned": true}`): its `ToolCallStart` was already
//!   streamed to the host and no `ToolCall` can follow. A `tool_result` the CLI sends for such a
//!   call closes it the same way, its content kept; a later one for it is dropped;
//! - a model message that ends and is followed by another is a `StepFinished` with that
//!   message's usage; `result` ends the run with `Finish` (usage summed over messages, cost from
//!   `total_cost_usd`) or a typed error (`api_error_status` mapped like HTTP, `api_error_type` its
//!   provider code, the failed API call's request id, turn and tool set), after a last `Usage`
//!   with the cost so far when output had begun;
//! - structured output (`--json-schema`): the CLI's own `StructuredOutput` tool carries the
//!   object; its input streams as `TextDelta`s of its block (no tool call), its `tool_result`
//!   ("Structured output provided successfully") is dropped, and the `result` line's
//!   `structured_output` becomes the final text block only when no such block came before
//!   (never twice);
//! - a prompt a `UserPromptSubmit` hook blocked (`system/informational` with
//!   `prompt_submit_outcome.kind` `blocked_by_hook`) is a `prompt_blocked` warning on `Started`
//!   and `Finish` with reason `blocked`, as core's agent loop ends a blocked run;
//! - other `system` lines (`api_retry`, `permission_denied`, hooks...) become `Started`
//!   warnings before the first output and `Opaque` events after it; `status` and `thinking_tokens`
//!   lines are progress only and go to the trace log.
//!
//! This file holds the state and the line dispatch; `model.rs` the model messages, `outcome.rs`
//! the tool results and the end of the turn.

use std::collections::{HashMap, HashSet, VecDeque};

use patchbay_core::kit::MetricsRecorder;
use patchbay_core::{
    ErrorKind, Event, ExecutedBy, FinishReason, ProviderError, ToolResult, Usage, Warning, event::McpFailure,
};
use serde_json::{Value, json};

use crate::NAME;

mod frames;
mod model;
mod outcome;
mod subagent;

/// The tool the CLI gives the model for structured output (`--json-schema`).
pub const OUTPUT_TOOL: &str = "StructuredOutput";

/// Structured output in flight.
#[derive(Debug, Default)]
struct OutputState {
    /// The object reached the caller as a text block.
    delivered: bool,
    /// The ids of the output tool's calls (their results are the CLI's bookkeeping).
    calls: HashSet<String>,
}

/// Lines in, events out. See the module docs.
#[derive(Debug)]
pub struct Translator {
    requested_model: String,
    host_prefix: String,
    host_server: String,
    report_mcp: bool,
    marker_messages: Option<usize>,
    session_id: Option<String>,
    model: Option<String>,
    warnings: Vec<Warning>,
    mcp: Option<(Vec<String>, Vec<McpFailure>)>,
    started: bool,
    done: bool,
    step: u32,
    message: Option<patchbay_anthropic::Translator>,
    streamed: HashSet<String>,
    unstreamed: Option<(String, usize, Usage, bool)>,
    /// Sources of the unstreamed message so far (their ids count from 1 per message).
    unstreamed_sources: u64,
    pending_step: Option<(FinishReason, Usage)>,
    last_reason: Option<FinishReason>,
    finished_usage: Usage,
    current_usage: Usage,
    tools: HashMap<String, (String, ExecutedBy)>,
    /// Calls whose `ToolCallStart` went out and whose `ToolCall` has not, in order.
    open_calls: Vec<String>,
    /// Calls abandoned before their input was complete, answered as `Aborted`.
    abandoned: HashSet<String>,
    host_calls: Vec<(String, String, Value)>,
    last_tool: Option<String>,
    host_results: HashMap<String, ToolResult>,
    /// Host results that arrived before their call was translated: (name, input, result).
    orphans: Vec<(String, Value, ToolResult)>,
    /// Calls whose id came with the request before the call was translated.
    running: HashSet<String>,
    synthetic: Vec<String>,
    /// The API request id of the last failed call, from the CLI's API error message.
    api_request_id: Option<String>,
    /// With structured output asked for: whether the object came, and the output tool's call ids.
    output: Option<OutputState>,
    /// One past the highest block index emitted in the current step.
    next_index: usize,
    /// The sub-agent type of each call that started one (`subagent_type` of `Agent` / `Task`).
    subagents: HashMap<String, String>,
    /// A hook blocked the prompt (the run ends with `Finish` reason `blocked`).
    prompt_blocked: bool,
    /// The text of the current (or last) model message, for the `Stop` hook.
    text: String,
    recorder: MetricsRecorder,
    queue: VecDeque<Event>,
}

impl Translator {
    /// A translator for a call asking for `model`, with host tools under `host_server`.
    pub fn new(model: impl Into<String>, host_server: impl Into<String>) -> Self {
        let host_server = host_server.into();
        Self {
            requested_model: model.into(),
            host_prefix: format!("mcp__{host_server}__"),
            host_server,
            report_mcp: false,
            marker_messages: None,
            session_id: None,
            model: None,
            warnings: Vec::new(),
            mcp: None,
            started: false,
            done: false,
            step: 0,
            message: None,
            streamed: HashSet::new(),
            unstreamed: None,
            unstreamed_sources: 0,
            pending_step: None,
            last_reason: None,
            finished_usage: Usage::default(),
            current_usage: Usage::default(),
            tools: HashMap::new(),
            open_calls: Vec::new(),
            abandoned: HashSet::new(),
            host_calls: Vec::new(),
            last_tool: None,
            host_results: HashMap::new(),
            orphans: Vec::new(),
            running: HashSet::new(),
            synthetic: Vec::new(),
            api_request_id: None,
            output: None,
            next_index: 0,
            subagents: HashMap::new(),
            prompt_blocked: false,
            text: String::new(),
            recorder: MetricsRecorder::start(),
            queue: VecDeque::new(),
        }
    }

    /// Structured output was asked for (`--json-schema`): the CLI's [`OUTPUT_TOOL`] carries it.
    pub fn with_output_tool(mut self, on: bool) -> Self {
        self.output = on.then(OutputState::default);
        self
    }

    /// Warnings to report on `Started`.
    pub fn with_warnings(mut self, warnings: Vec<Warning>) -> Self {
        self.warnings = warnings;
        self
    }

    /// The session id known before the CLI says it (a resumed or fixed session).
    pub fn with_session_id(mut self, id: Option<String>) -> Self {
        self.session_id = id;
        self
    }

    /// Emit `McpConnected` after `Started` (when the caller attached MCP servers).
    pub fn with_mcp_report(mut self, on: bool) -> Self {
        self.report_mcp = on;
        self
    }

    /// Emit a session marker before `Finish`, for a conversation of `messages` messages
    /// (the reply included).
    pub fn with_session_marker(mut self, messages: Option<usize>) -> Self {
        self.marker_messages = messages;
        self
    }

    /// The session id, once the CLI said it.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// Whether `Started` was emitted.
    pub fn is_started(&self) -> bool {
        self.started
    }

    /// Whether the run ended (`Finish` queued or an error returned).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The current step (model message) number.
    pub fn step(&self) -> u32 {
        self.step
    }

    /// The last tool called, if any.
    pub fn last_tool(&self) -> Option<&str> {
        self.last_tool.as_deref()
    }

    /// The next queued event.
    pub fn next_event(&mut self) -> Option<Event> {
        self.queue.pop_front()
    }

    /// The id of the earliest host call named `name` (host name) with this input that has no
    /// result yet: how an in-process `tools/call` (which carries no call id) finds its call.
    pub fn claim_host_call(&mut self, name: &str, input: &Value) -> Option<String> {
        let pos = self
            .host_calls
            .iter()
            .position(|(_, n, i)| n == name && i == input)
            .or_else(|| self.host_calls.iter().position(|(_, n, _)| n == name))?;
        Some(self.host_calls.remove(pos).0)
    }

    /// Call `id` is being run (its id came with the request).
    pub fn forget_host_call(&mut self, id: &str) {
        let before = self.host_calls.len();
        self.host_calls.retain(|(call, ..)| call != id);
        if self.host_calls.len() == before {
            self.running.insert(id.to_string());
        }
    }

    /// A host tool's result known only by tool name and input (the HTTP path): bound to its
    /// call now, or when the call is translated (the CLI may run a tool before it prints the
    /// end of the block).
    pub fn record_host_result_for(&mut self, name: &str, input: Value, result: ToolResult) {
        match self.claim_host_call(name, &input) {
            Some(id) => self.record_host_result(id, result),
            None => self.orphans.push((name.to_string(), input, result)),
        }
    }

    /// The host tool's own result for call `id`: the `ToolResult` event carries it (metadata
    /// and status included) instead of the CLI's rendering.
    pub fn record_host_result(&mut self, id: impl Into<String>, result: ToolResult) {
        self.host_results.insert(id.into(), result);
    }

    /// The host tool's own result for call `id`, when it ran in-process and its `ToolResult`
    /// has not gone out yet.
    pub fn host_result(&self, id: &str) -> Option<&ToolResult> {
        self.host_results.get(id)
    }

    /// The text of the current (or last) model message.
    pub fn last_text(&self) -> &str {
        &self.text
    }

    /// The usage of the turn so far (finished messages and the current one).
    pub fn usage_so_far(&self) -> Usage {
        self.finished_usage.sum(&self.current_usage)
    }

    /// The host name and executor of a tool name as the CLI sees it.
    pub fn map_tool_name(&self, name: &str) -> (String, ExecutedBy) {
        match name.strip_prefix(&self.host_prefix) {
            Some(host) => (host.to_string(), ExecutedBy::Host),
            None => (name.to_string(), ExecutedBy::Provider),
        }
    }

    /// Feed one stdout line (JSON text): the [`Wire`](patchbay_core::kit::Wire)'s frame.
    pub fn push_line(&mut self, line: &str) -> Result<(), ProviderError> {
        patchbay_core::kit::Wire::frame(self, line.as_bytes()).map(|event| debug_assert!(event.is_none()))
    }

    /// Feed one parsed stdout line. Control messages are the I/O layer's and are ignored here.
    pub fn push_value(&mut self, line: &Value) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        let result = match line.get("type").and_then(Value::as_str).unwrap_or("") {
            "system" => {
                self.system(line);
                Ok(())
            }
            "stream_event" => self.stream_event(line),
            "assistant" => self.assistant(line),
            "user" => {
                self.user(line);
                Ok(())
            }
            "result" => self.result(line),
            "control_request" | "control_response" | "control_cancel_request" | "keep_alive" => Ok(()),
            other => {
                tracing::debug!(kind = other, "keeping an unknown CLI line");
                self.notice("unknown_line", line);
                Ok(())
            }
        };
        result.map_err(|e| self.fail(e))
    }

    /// The CLI's stdout ended. Without a `result` line that is an error (the caller adds the
    /// exit code and stderr).
    pub fn finish(&mut self) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        let error = ProviderError::new(ErrorKind::Process, "the CLI exited before its `result` line");
        Err(self.fail(error))
    }

    fn fail(&mut self, error: ProviderError) -> ProviderError {
        self.done = true;
        let mut error = error.with_provider(NAME).with_turn(self.step);
        if let Some(tool) = &self.last_tool {
            error = error.with_tool(tool.clone());
        }
        error
    }

    fn emit(&mut self, event: Event) {
        let index = match &event {
            Event::TextDelta { index, .. }
            | Event::ReasoningDelta { index, .. }
            | Event::ReasoningSignature { index, .. }
            | Event::RedactedReasoning { index, .. } => Some(*index),
            _ => None,
        };
        if let Some(index) = index {
            self.next_index = self.next_index.max(index + 1);
        }
        match &event {
            Event::TextDelta { text, .. } => self.text.push_str(text),
            Event::StepFinished { .. } => self.text.clear(),
            _ => {}
        }
        self.recorder.observe(&event);
        self.queue.push_back(event);
    }

    fn start(&mut self, response_id: Option<String>, model: Option<String>) {
        if self.started {
            return;
        }
        self.started = true;
        let model = model
            .or_else(|| self.model.clone())
            .unwrap_or_else(|| self.requested_model.clone());
        let event = Event::Started {
            response_id,
            model,
            session_id: self.session_id.clone(),
            warnings: std::mem::take(&mut self.warnings),
        };
        self.emit(event);
        if self.report_mcp
            && let Some((servers, failed)) = self.mcp.take()
        {
            self.emit(Event::McpConnected { servers, failed });
        }
    }

    /// A line worth keeping that has no event of its own.
    fn notice(&mut self, code: &str, line: &Value) {
        if self.started {
            let data = json!({ "type": code, "line": line });
            self.emit(Event::Opaque {
                index: 0,
                provider: NAME.into(),
                data,
            });
        } else {
            let subtype = line.get("subtype").and_then(Value::as_str).unwrap_or("");
            let mut text = line.to_string();
            if text.len() > 2000 {
                let mut cut = 2000;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text.truncate(cut);
            }
            self.warnings.push(Warning::new(
                if subtype.is_empty() {
                    code.to_string()
                } else {
                    subtype.to_string()
                },
                text,
            ));
        }
    }

    fn system(&mut self, line: &Value) {
        let subtype = line.get("subtype").and_then(Value::as_str).unwrap_or("");
        if let Some(id) = line.get("session_id").and_then(Value::as_str) {
            self.session_id = Some(id.to_string());
        }
        match subtype {
            "init" => {
                if let Some(model) = line.get("model").and_then(Value::as_str) {
                    self.model = Some(model.to_string());
                }
                let mut servers = Vec::new();
                let mut failed = Vec::new();
                for server in line.get("mcp_servers").and_then(Value::as_array).into_iter().flatten() {
                    let name = server.get("name").and_then(Value::as_str).unwrap_or("").to_string();
                    if name == self.host_server {
                        continue;
                    }
                    match server.get("status").and_then(Value::as_str) {
                        Some("connected") => servers.push(name),
                        status => failed.push(McpFailure {
                            name,
                            error: status.unwrap_or("unknown").to_string(),
                        }),
                    }
                }
                self.mcp = Some((servers, failed));
            }
            // A `UserPromptSubmit` hook blocked the prompt: no model call, the run ends.
            "informational" if line.pointer("/prompt_submit_outcome/kind") == Some(&json!("blocked_by_hook")) => {
                let reason = line
                    .pointer("/prompt_submit_outcome/reason")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                self.prompt_blocked = true;
                self.warnings.push(Warning::new("prompt_blocked", reason));
            }
            // Progress only (what the CLI is doing, thinking token estimates).
            "status" | "thinking_tokens" => tracing::trace!(subtype, "CLI progress"),
            _ => self.notice("system", line),
        }
    }

    fn is_subagent(line: &Value) -> bool {
        line.get("parent_tool_use_id").is_some_and(|p| !p.is_null())
    }
}
