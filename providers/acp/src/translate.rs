//! `session/update` notifications into patchbay events: a pure state machine over the JSON
//! params (no I/O, testable on recorded lines). Updates are read leniently by their
//! `sessionUpdate` tag: an unknown kind is skipped (FIELDS.md lists every kind and field).
//!
//! | ACP | patchbay |
//! |---|---|
//! | `agent_message_chunk` (text) | `TextDelta` |
//! | `agent_message_chunk` (image, audio, resource, link) | `Opaque` (`acp`, the content block) |
//! | `agent_thought_chunk` | `ReasoningDelta` |
//! | `tool_call` | `ToolCallStart` |
//! | `tool_call` with a non-empty `rawInput`; else the first `tool_call_update` to `in_progress`, a permission request, or the result | `ToolCall` (input: the last `rawInput`) |
//! | `tool_call_update` to `completed` / `failed` | `ToolResult` (a host tool: the tool's own result) |
//! | `plan` | `Opaque` (`acp`, the plan) |
//! | text, thought or a new tool call after every call of the step has its result | `StepFinished` (reason `ToolUse`) |
//! | the prompt's `stopReason` | `Finish`: `end_turn` `Stop`, `max_tokens` `Length`, `refusal` `Refusal`, `cancelled` `Cancelled`, `max_turn_requests` `Other` |
//! | the prompt's `usage` (the Gemini CLI: `_meta.quota.token_count`) | `Usage`, and the `Finish` usage |
//! | `user_message_chunk`, `available_commands_update`, `current_mode_update`, `config_option_update`, `session_info_update`, `usage_update` | nothing (session state, not the answer) |
//!
//! A host tool (served to the agent by patchbay's MCP tool server) is recognised by its name:
//! the update's `name`, a `toolName` in its `_meta`, the `server` and `tool` of an MCP call
//! envelope in `rawInput` (Codex: `{"server", "tool", "arguments"}`, whose `arguments` are the
//! input), or its title, as `<tool>`, `mcp__<server>__<tool>`, `<server>__<tool>`,
//! `<server>/<tool>`, `Tool: <server>/<tool>` or `<tool> (<server> ...)`;
//! or, failing that, by the tool server's report of a run with the same input. Its `ToolCall`
//! carries the host's tool name and `executed_by: Host`, its result is the tool's own.
//! Every other call is the agent's (`executed_by: Provider`), named by `name`, `toolName` or
//! title, and its result carries the ACP facts in `metadata`: `kind`, `title`, `locations`,
//! `diffs`, `terminals`, `raw_output`.

use std::collections::{HashMap, VecDeque};

use patchbay_core::tool::{ToolContent, ToolStatus};
use patchbay_core::{Event, ExecutedBy, FinishReason, ToolResult, Usage};
use serde::Deserialize;
use serde_json::{Map, Value};

/// The provider name on `Opaque` events.
pub const OPAQUE_PROVIDER: &str = "acp";

/// One run of a host tool, as the tool server reported it.
#[derive(Debug, Clone)]
pub struct HostRun {
    /// The host's tool name.
    pub name: String,
    /// The input it ran with.
    pub input: Value,
    /// Its result.
    pub result: ToolResult,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    Text,
    Reasoning,
}

#[derive(Debug)]
struct Call {
    name: String,
    host: bool,
    input: Value,
    announced: bool,
    done: bool,
    facts: Map<String, Value>,
}

/// The translator of one prompt turn.
#[derive(Debug)]
pub struct Translator {
    host_server: String,
    host_tools: Vec<String>,
    step: u32,
    next_index: usize,
    open: Option<(Block, usize)>,
    calls: HashMap<String, Call>,
    order: Vec<String>,
    runs: VecDeque<HostRun>,
}

impl Translator {
    /// A translator for a turn whose host tools (`host_tools`) are served as `host_server`.
    pub fn new(host_server: impl Into<String>, host_tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            host_server: host_server.into(),
            host_tools: host_tools.into_iter().map(Into::into).collect(),
            step: 0,
            next_index: 0,
            open: None,
            calls: HashMap::new(),
            order: Vec::new(),
            runs: VecDeque::new(),
        }
    }

    /// A host tool's run, reported by the tool server (before the agent's update about it).
    pub fn host_run(&mut self, run: HostRun) {
        self.runs.push_back(run);
    }

    /// One `session/update` notification's `update` object.
    pub fn update(&mut self, update: &Value, out: &mut Vec<Event>) {
        let Some(kind) = update.get("sessionUpdate").and_then(Value::as_str) else {
            return;
        };
        match kind {
            "agent_message_chunk" => self.chunk(Block::Text, update.get("content"), out),
            "agent_thought_chunk" => self.chunk(Block::Reasoning, update.get("content"), out),
            "tool_call" => self.tool_call(update, out),
            "tool_call_update" => self.tool_call_update(update, out),
            "plan" => {
                let index = self.new_block_index();
                out.push(Event::Opaque {
                    index,
                    provider: OPAQUE_PROVIDER.into(),
                    data: update.clone(),
                });
            }
            _ => {}
        }
    }

    /// A `session/request_permission`'s `toolCall`. A call announced before (`tool_call`) is
    /// complete now: its input, if still unknown, is the request's `rawInput` (the Claude
    /// adapter sends the input only there) or a JSON object in its only text content (the
    /// Gemini CLI, which sends no `tool_call` at all). A call not announced before starts here,
    /// but its `rawInput` is not taken for its input (Codex asks before its `tool_call`, with a
    /// `rawInput` describing the approval): it completes with its `tool_call`, unless its
    /// content holds the input. Returns the call's id and the input to show the approval
    /// handler (the call's input, else the request's `rawInput`).
    pub fn permission(&mut self, tool_call: &Value, out: &mut Vec<Event>) -> (String, Value) {
        let id = tool_call
            .get("toolCallId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let raw = tool_call.get("rawInput").filter(|v| !is_empty_input(v)).cloned();
        let known = self.calls.contains_key(&id);
        if !known {
            let mut announce = tool_call.clone();
            if let Some(object) = announce.as_object_mut() {
                object.insert("sessionUpdate".into(), "tool_call".into());
                object.remove("rawInput");
                object.remove("status");
            }
            self.update(&announce, out);
        }
        if let Some(call) = self.calls.get_mut(&id)
            && is_empty_input(&call.input)
        {
            match (&raw, known) {
                (Some(input), true) => call.input = call_input(input),
                _ => {
                    if let Some(input) = input_in_content(tool_call) {
                        call.input = input;
                    }
                }
            }
        }
        let input = match self.calls.get(&id) {
            Some(call) if !is_empty_input(&call.input) => {
                let input = call.input.clone();
                self.announce(&id, out);
                input
            }
            _ => raw.unwrap_or_else(|| Value::Object(Map::new())),
        };
        (id, input)
    }

    /// The name and input of call `id`, as far as known.
    pub fn call_of(&self, id: &str) -> Option<(&str, &Value)> {
        self.calls.get(id).map(|call| (call.name.as_str(), &call.input))
    }

    /// The prompt's answer: usage, then every open call aborted, then nothing more (the
    /// provider emits `Finish`). Returns the finish reason.
    ///
    /// `answer` is the `session/prompt` result: `stopReason`, and `usage` (or, from the Gemini
    /// CLI, `_meta.quota.token_count`).
    pub fn finish(&mut self, answer: &Value, out: &mut Vec<Event>) -> (FinishReason, Usage) {
        let stop_reason = answer.get("stopReason").and_then(Value::as_str).unwrap_or("end_turn");
        let usage = match answer.get("usage").filter(|u| u.is_object()) {
            Some(usage) => read_usage(usage),
            None => answer
                .pointer("/_meta/quota/token_count")
                .map(read_quota)
                .unwrap_or_default(),
        };
        if usage != Usage::default() {
            out.push(Event::Usage(usage));
        }
        self.abort_open(out);
        (finish_reason(stop_reason), usage)
    }

    /// Every call without a result ends `Aborted` (a cancelled or failed turn).
    pub fn abort_open(&mut self, out: &mut Vec<Event>) {
        for id in self.order.clone() {
            let Some(call) = self.calls.get(&id) else { continue };
            if call.done {
                continue;
            }
            let name = call.name.clone();
            if let Some(call) = self.calls.get_mut(&id) {
                call.done = true;
            }
            out.push(Event::ToolResult {
                id,
                name,
                result: ToolResult::aborted(),
            });
        }
    }

    fn chunk(&mut self, block: Block, content: Option<&Value>, out: &mut Vec<Event>) {
        let Some(content) = content else { return };
        self.close_step_if_tools_done(out);
        match (
            content.get("type").and_then(Value::as_str),
            content.get("text").and_then(Value::as_str),
        ) {
            (Some("text"), Some(text)) => {
                if text.is_empty() {
                    return;
                }
                let index = match self.open {
                    Some((open, index)) if open == block => index,
                    _ => {
                        let index = self.new_block_index();
                        self.open = Some((block, index));
                        index
                    }
                };
                let text = text.to_owned();
                out.push(match block {
                    Block::Text => Event::TextDelta { index, text },
                    Block::Reasoning => Event::ReasoningDelta { index, text },
                });
            }
            _ => {
                let index = self.new_block_index();
                out.push(Event::Opaque {
                    index,
                    provider: OPAQUE_PROVIDER.into(),
                    data: content.clone(),
                });
            }
        }
    }

    fn new_block_index(&mut self) -> usize {
        self.open = None;
        let index = self.next_index;
        self.next_index += 1;
        index
    }

    /// A step ends when new output follows calls that all have their results.
    fn close_step_if_tools_done(&mut self, out: &mut Vec<Event>) {
        if self.order.is_empty() || !self.order.iter().all(|id| self.calls.get(id).is_some_and(|c| c.done)) {
            return;
        }
        out.push(Event::StepFinished {
            step: self.step,
            reason: FinishReason::ToolUse,
            usage: Usage::default(),
        });
        self.step += 1;
        self.next_index = 0;
        self.open = None;
        self.order.clear();
    }

    fn tool_call(&mut self, update: &Value, out: &mut Vec<Event>) {
        let Some(id) = update.get("toolCallId").and_then(Value::as_str) else {
            return;
        };
        if self.calls.contains_key(id) {
            // A repeated announcement is an update.
            return self.tool_call_update(update, out);
        }
        self.close_step_if_tools_done(out);
        self.open = None;
        let candidates = names(update);
        let host = self.host_name(&candidates);
        let name = host
            .clone()
            .or_else(|| candidates.first().cloned())
            .unwrap_or_else(|| "tool".into());
        let mut call = Call {
            name: name.clone(),
            host: host.is_some(),
            input: Value::Object(Map::new()),
            announced: false,
            done: false,
            facts: Map::new(),
        };
        absorb(&mut call, update);
        self.calls.insert(id.to_owned(), call);
        self.order.push(id.to_owned());
        out.push(Event::ToolCallStart {
            id: id.to_owned(),
            name,
        });
        // An announcement with its input is complete (ACP sends whole inputs, never fragments);
        // an empty one waits for the update that carries it.
        if update.get("rawInput").is_some_and(|input| !is_empty_input(input)) {
            self.announce(id, out);
        }
        self.status(id, update, out);
    }

    fn tool_call_update(&mut self, update: &Value, out: &mut Vec<Event>) {
        let Some(id) = update.get("toolCallId").and_then(Value::as_str) else {
            return;
        };
        let Some(call) = self.calls.get_mut(id) else {
            // An update of a call never announced: announce it now.
            let mut announced = update.clone();
            if let Some(object) = announced.as_object_mut() {
                object.insert("sessionUpdate".into(), "tool_call".into());
            }
            return self.tool_call(&announced, out);
        };
        absorb(call, update);
        self.status(id, update, out);
    }

    fn status(&mut self, id: &str, update: &Value, out: &mut Vec<Event>) {
        match update.get("status").and_then(Value::as_str) {
            Some("in_progress") => self.announce(id, out),
            Some(status @ ("completed" | "failed")) => {
                self.announce(id, out);
                self.result(id, status == "failed", out);
            }
            _ => {}
        }
    }

    fn announce(&mut self, id: &str, out: &mut Vec<Event>) {
        let Some(call) = self.calls.get_mut(id) else { return };
        if call.announced {
            return;
        }
        call.announced = true;
        out.push(Event::ToolCall {
            id: id.to_owned(),
            name: call.name.clone(),
            input: call.input.clone(),
            executed_by: if call.host {
                ExecutedBy::Host
            } else {
                ExecutedBy::Provider
            },
            signature: None,
        });
    }

    fn result(&mut self, id: &str, failed: bool, out: &mut Vec<Event>) {
        let Some(call) = self.calls.get(id) else { return };
        if call.done {
            return;
        }
        let (host, name) = (call.host, call.name.clone());
        let run = self.take_run(host, &name);
        let Some(call) = self.calls.get_mut(id) else { return };
        call.done = true;
        let result = match run {
            Some(run) => run.result,
            None => provider_result(call, failed),
        };
        out.push(Event::ToolResult {
            id: id.to_owned(),
            name: call.name.clone(),
            result,
        });
    }

    /// The tool server's report for `call`: by name for a known host tool, else by input.
    fn take_run(&mut self, host: bool, name: &str) -> Option<HostRun> {
        let at = if host {
            self.runs.iter().position(|run| run.name == name)
        } else {
            None
        };
        self.runs.remove(at?)
    }

    fn host_name(&self, candidates: &[String]) -> Option<String> {
        let server = &self.host_server;
        candidates.iter().find_map(|candidate| {
            self.host_tools
                .iter()
                .find(|tool| {
                    candidate == *tool
                        || *candidate == format!("mcp__{server}__{tool}")
                        || *candidate == format!("{server}__{tool}")
                        || *candidate == format!("{server}/{tool}")
                        || *candidate == format!("Tool: {server}/{tool}")
                        || candidate.starts_with(&format!("{tool} ({server}"))
                })
                .cloned()
        })
    }
}

/// A call's input from its `rawInput`: the `arguments` of an MCP call envelope
/// (`{"server", "tool", "arguments"}`, as Codex sends its MCP calls), else the value itself.
fn call_input(raw: &Value) -> Value {
    match raw.as_object() {
        Some(object) if object.len() == 3 && object.contains_key("server") && object.contains_key("tool") => {
            object.get("arguments").cloned().unwrap_or_default()
        }
        _ => raw.clone(),
    }
}

/// The `server/tool` an MCP call envelope names.
fn envelope_name(update: &Value) -> Option<String> {
    let raw = update.get("rawInput")?;
    let server = raw.get("server")?.as_str()?;
    let tool = raw.get("tool")?.as_str()?;
    raw.get("arguments").map(|_| format!("{server}/{tool}"))
}

/// A JSON object given as the only text content of a tool call.
fn input_in_content(tool_call: &Value) -> Option<Value> {
    let content = tool_call.get("content")?.as_array()?;
    let [item] = content.as_slice() else { return None };
    let text = item.pointer("/content/text")?.as_str()?;
    serde_json::from_str::<Value>(text).ok().filter(Value::is_object)
}

fn is_empty_input(input: &Value) -> bool {
    input.is_null() || input.as_object().is_some_and(Map::is_empty)
}

/// The names an update offers, best first: `name`, a `toolName` in `_meta`, the title.
fn names(update: &Value) -> Vec<String> {
    let mut names = Vec::new();
    if let Some(name) = update.get("name").and_then(Value::as_str) {
        names.push(name.to_owned());
    }
    if let Some(meta) = update.get("_meta").and_then(Value::as_object) {
        for value in meta.values().chain(std::iter::once(&Value::Object(meta.clone()))) {
            if let Some(name) = value.get("toolName").and_then(Value::as_str) {
                names.push(name.to_owned());
                break;
            }
        }
    }
    if let Some(name) = envelope_name(update) {
        names.push(name);
    }
    if let Some(title) = update.get("title").and_then(Value::as_str).filter(|t| !t.is_empty()) {
        names.push(title.to_owned());
    }
    names
}

/// Keep what an announcement or update says about a call.
fn absorb(call: &mut Call, update: &Value) {
    if let Some(input) = update.get("rawInput").filter(|v| !v.is_null()) {
        call.input = call_input(input);
    }
    for (field, key) in [
        ("kind", "kind"),
        ("title", "title"),
        ("locations", "locations"),
        ("rawOutput", "raw_output"),
    ] {
        if let Some(value) = update.get(field).filter(|v| !v.is_null()) {
            call.facts.insert(key.into(), value.clone());
        }
    }
    if let Some(content) = update.get("content").and_then(Value::as_array) {
        call.facts.insert("content".into(), Value::Array(content.clone()));
    }
}

/// The result of an agent's own tool: its content blocks' text, its facts as metadata.
fn provider_result(call: &Call, failed: bool) -> ToolResult {
    let mut content = Vec::new();
    let mut diffs = Vec::new();
    let mut terminals = Vec::new();
    let mut facts = call.facts.clone();
    for item in facts
        .remove("content")
        .and_then(|c| c.as_array().cloned())
        .unwrap_or_default()
    {
        match item.get("type").and_then(Value::as_str) {
            Some("content") => {
                if let Some(block) = item.get("content") {
                    content.push(tool_content(block));
                }
            }
            Some("diff") => diffs.push(item),
            Some("terminal") => terminals.push(item),
            _ => {}
        }
    }
    if !diffs.is_empty() {
        facts.insert("diffs".into(), Value::Array(diffs));
    }
    if !terminals.is_empty() {
        facts.insert("terminals".into(), Value::Array(terminals));
    }
    ToolResult {
        content,
        status: if failed {
            ToolStatus::Failed
        } else {
            ToolStatus::Completed
        },
        metadata: Some(Value::Object(facts)),
    }
}

/// An ACP content block as tool content (text, image, embedded resource; else its JSON).
fn tool_content(block: &Value) -> ToolContent {
    let text = |key: &str| block.get(key).and_then(Value::as_str).map(str::to_owned);
    match block.get("type").and_then(Value::as_str) {
        Some("text") => ToolContent::Text {
            text: text("text").unwrap_or_default(),
        },
        Some("image") => ToolContent::Image {
            media_type: text("mimeType").unwrap_or_default(),
            data: text("data").unwrap_or_default(),
        },
        Some("resource") => {
            let resource = block.get("resource").cloned().unwrap_or_default();
            let field = |key: &str| resource.get(key).and_then(Value::as_str).map(str::to_owned);
            ToolContent::Resource {
                uri: field("uri").unwrap_or_default(),
                mime_type: field("mimeType"),
                text: field("text"),
                blob: field("blob"),
            }
        }
        Some("resource_link") => ToolContent::Text {
            text: text("uri").unwrap_or_default(),
        },
        _ => ToolContent::Text {
            text: block.to_string(),
        },
    }
}

/// ACP's stop reason as patchbay's finish reason.
pub fn finish_reason(stop_reason: &str) -> FinishReason {
    match stop_reason {
        "end_turn" => FinishReason::Stop,
        "max_tokens" => FinishReason::Length,
        "refusal" => FinishReason::Refusal,
        "cancelled" => FinishReason::Cancelled,
        other => FinishReason::Other(other.to_owned()),
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct AcpUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    thought_tokens: Option<u64>,
    cached_read_tokens: Option<u64>,
    cached_write_tokens: Option<u64>,
}

/// The Gemini CLI's `_meta.quota.token_count` (`input_tokens`, `output_tokens`).
fn read_quota(value: &Value) -> Usage {
    Usage {
        input: value.get("input_tokens").and_then(Value::as_u64),
        output: value.get("output_tokens").and_then(Value::as_u64),
        ..Usage::default()
    }
}

/// The prompt response's `usage` (ACP `Usage`) as patchbay's.
fn read_usage(value: &Value) -> Usage {
    let usage: AcpUsage = serde_json::from_value(value.clone()).unwrap_or_default();
    Usage {
        input: usage.input_tokens,
        output: usage.output_tokens,
        reasoning: usage.thought_tokens,
        cache_read: usage.cached_read_tokens,
        cache_write: usage.cached_write_tokens,
        ..Usage::default()
    }
}
