//! The lifecycle validator: checks that a stream keeps the rules every provider must keep.
//!
//! Usable by any test, in-tree or third-party:
//!
//! ```
//! use patchbay_core::{validate::validate, Event, FinishReason, Metrics, Usage};
//! let events = vec![
//!     Ok(Event::Started { response_id: None, model: "m".into(), session_id: None, warnings: vec![] }),
//!     Ok(Event::TextDelta { index: 0, text: "hi".into() }),
//!     Ok(Event::Finish { reason: FinishReason::Stop, usage: Usage::default(), metrics: Metrics::default() }),
//! ];
//! assert!(validate(events.iter().map(|e| e.as_ref())).is_ok());
//! ```

use std::collections::{HashMap, HashSet};
use std::fmt;

use serde::Serialize;

use crate::error::{ErrorKind, ProviderError};
use crate::event::Event;
use crate::source::{Location, Source, SourceTarget};
use crate::tool::ToolStatus;

/// Which rule a stream broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Rule {
    /// `Started` must come first (an error may instead be the only item).
    StartedFirst,
    /// `Started` appears only once.
    StartedOnce,
    /// `Finish` is last and appears once; nothing follows it.
    FinishLast,
    /// A successful stream ends with `Finish`.
    FinishMissing,
    /// An error ends the stream; nothing follows it.
    NothingAfterError,
    /// A `ToolCall` is emitted only after its input is complete: no delta after it, and its
    /// input equals the streamed deltas.
    ToolCallAfterInput,
    /// Every `ToolCallStart` is followed by its `ToolCall` before the step ends, or, when an
    /// agent runtime abandoned the call before its input was complete, by a `ToolResult` for it
    /// with status `Aborted`.
    ToolCallStartClosed,
    /// A tool call id is used once per run.
    ToolCallIdUnique,
    /// A `ToolResult` answers a `ToolCall` seen before (or, with status `Aborted`, a
    /// `ToolCallStart` whose call was abandoned).
    ToolResultAfterCall,
    /// The text of one block is never emitted twice: no block receives its whole text again
    /// as one delta, no two blocks of one step carry the same text, and a block is not
    /// reopened after another block began. Texts shorter than 16 characters are exempt.
    TextNotDuplicated,
    /// `ApprovalRequested` ends the run: `Finish` with reason `ToolUse` comes right after it,
    /// and each call it waits for was a `ToolCall` of the run with no result yet.
    ApprovalEndsRun,
    /// A `Source` has an id unique within its step (a source is not announced twice), a
    /// non-empty URL when it points at one, and ranges that do not run backwards.
    SourceWellFormed,
}

/// One broken rule, with the position of the offending item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// Zero-based position in the stream.
    pub position: usize,
    /// The rule.
    pub rule: Rule,
    /// What happened.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "item {}: {:?}: {}", self.position, self.rule, self.message)
    }
}

/// Repeated text shorter than this is not flagged: models do say "ha ha".
const DUPLICATE_MIN_CHARS: usize = 16;

#[derive(Debug, Default)]
struct Block {
    text: String,
    deltas: usize,
    closed: bool,
}

/// At most 80 characters of `text`, for messages.
fn clip(text: &str) -> String {
    match text.char_indices().nth(80) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

#[derive(Debug, Default)]
struct ToolState {
    partial: String,
    saw_delta: bool,
    started: bool,
    done: bool,
}

/// An incremental validator: feed items with [`Validator::push`], then call
/// [`Validator::finish`].
#[derive(Debug, Default)]
pub struct Validator {
    position: usize,
    started: bool,
    finished: bool,
    errored: bool,
    /// Text and reasoning blocks of the current step, by (is_reasoning, index).
    blocks: HashMap<(bool, usize), Block>,
    current_block: Option<(bool, usize)>,
    tools: HashMap<String, ToolState>,
    tool_order: Vec<String>,
    calls: HashSet<String>,
    /// Source ids of the current step.
    sources: HashSet<String>,
    /// Calls that have a `ToolResult`.
    answered: HashSet<String>,
    /// An `ApprovalRequested` went out; only `Finish` may follow.
    paused: bool,
    violations: Vec<Violation>,
}

impl Validator {
    /// A fresh validator.
    pub fn new() -> Self {
        Self::default()
    }

    fn violate(&mut self, rule: Rule, message: impl Into<String>) {
        self.violations.push(Violation {
            position: self.position,
            rule,
            message: message.into(),
        });
    }

    /// Feed one stream item (an event, or the error that ended the stream).
    pub fn push(&mut self, item: Result<&Event, &ProviderError>) {
        self.push_item(item.map_err(|e| e.kind()));
    }

    /// Feed one stream item whose error is known only by kind (a normalized outcome).
    pub fn push_item(&mut self, item: Result<&Event, ErrorKind>) {
        if self.errored {
            self.violate(
                Rule::NothingAfterError,
                "an item followed the error that ended the stream",
            );
        } else if self.finished {
            self.violate(Rule::FinishLast, "an item followed `Finish`");
        }
        match item {
            Err(_) => self.errored = true,
            Ok(event) => self.event(event),
        }
        self.position += 1;
    }

    fn event(&mut self, event: &Event) {
        if !self.started && !matches!(event, Event::Started { .. }) {
            self.violate(Rule::StartedFirst, format!("`{}` came before `Started`", event.kind()));
            self.started = true;
        }
        if self.paused
            && !matches!(
                event,
                Event::Finish {
                    reason: crate::event::FinishReason::ToolUse,
                    ..
                }
            )
        {
            self.violate(
                Rule::ApprovalEndsRun,
                format!(
                    "`{}` followed `ApprovalRequested` (only `Finish` with reason `tool_use` may)",
                    event.kind()
                ),
            );
            self.paused = false;
        }
        match event {
            Event::Started { .. } => {
                if self.started {
                    self.violate(Rule::StartedOnce, "`Started` appeared again");
                }
                self.started = true;
            }
            Event::TextDelta { index, text } => self.delta(false, *index, text),
            Event::ReasoningDelta { index, text } => self.delta(true, *index, text),
            Event::ReasoningSignature { .. }
            | Event::RedactedReasoning { .. }
            | Event::Opaque { .. }
            | Event::SubagentMessage { .. }
            | Event::ToolProgress { .. }
            | Event::Log { .. } => {}
            Event::ApprovalRequested { calls } => self.approval_requested(calls),
            Event::ToolCallStart { id, .. } => self.tool_call_start(id),
            Event::ToolCallDelta { id, partial_json } => self.tool_call_delta(id, partial_json),
            Event::ToolCall { id, input, .. } => self.tool_call(id, input),
            Event::ToolResult { id, result, .. } => self.tool_result(id, result.status),
            Event::Source(source) => self.source(source),
            Event::McpConnected { .. } | Event::Usage(_) => {}
            Event::StepFinished { .. } => {
                self.close_step();
            }
            Event::Finish { .. } => {
                self.close_step();
                self.finished = true;
            }
        }
    }

    /// The run paused for these calls: each must be a call of the run still waiting.
    fn approval_requested(&mut self, calls: &[crate::approval::ApprovalRequest]) {
        self.paused = true;
        for call in calls {
            let id = &call.tool_use_id;
            if !self.calls.contains(id) {
                self.violate(
                    Rule::ApprovalEndsRun,
                    format!("approval requested for `{id}`, which is no `ToolCall` of the run"),
                );
            } else if self.answered.contains(id) {
                self.violate(
                    Rule::ApprovalEndsRun,
                    format!("approval requested for `{id}`, which already has its result"),
                );
            }
        }
    }

    /// A tool call opened: its id must be new in the run.
    fn tool_call_start(&mut self, id: &str) {
        self.current_block = None;
        if self.calls.contains(id) || self.tools.get(id).is_some_and(|t| t.started) {
            self.violate(Rule::ToolCallIdUnique, format!("tool call id `{id}` started twice"));
        }
        let state = self.tools.entry(id.to_owned()).or_default();
        state.started = true;
        self.tool_order.push(id.to_owned());
    }

    /// A piece of a tool call's input: it must come before the call itself.
    fn tool_call_delta(&mut self, id: &str, partial_json: &str) {
        self.current_block = None;
        match self.tools.get_mut(id) {
            Some(state) if state.done => {
                self.violate(
                    Rule::ToolCallAfterInput,
                    format!("input delta for `{id}` arrived after its `ToolCall`: the call was emitted before its input ended"),
                );
            }
            Some(state) => {
                state.partial.push_str(partial_json);
                state.saw_delta = true;
            }
            None => {
                let state = self.tools.entry(id.to_owned()).or_default();
                state.partial.push_str(partial_json);
                state.saw_delta = true;
            }
        }
    }

    /// A complete tool call: emitted once, with the input its deltas streamed.
    fn tool_call(&mut self, id: &str, input: &serde_json::Value) {
        self.current_block = None;
        if !self.calls.insert(id.to_owned()) {
            self.violate(Rule::ToolCallIdUnique, format!("`ToolCall` for `{id}` emitted twice"));
        }
        let state = self.tools.entry(id.to_owned()).or_default();
        state.done = true;
        if state.saw_delta {
            let streamed = state.partial.trim();
            let expected = if streamed.is_empty() {
                Some(serde_json::Value::Object(Default::default()))
            } else {
                serde_json::from_str::<serde_json::Value>(streamed).ok()
            };
            if expected.as_ref() != Some(input) {
                let message = format!(
                    "`ToolCall` input for `{id}` differs from its streamed deltas ({streamed:?}): emitted before its input ended?"
                );
                self.violate(Rule::ToolCallAfterInput, message);
            }
        }
    }

    /// A source: new in its step, pointing somewhere, with sane ranges.
    fn source(&mut self, source: &Source) {
        if source.id.is_empty() {
            self.violate(Rule::SourceWellFormed, "a `Source` has an empty id");
        } else if !self.sources.insert(source.id.clone()) {
            self.violate(
                Rule::SourceWellFormed,
                format!("`Source` `{}` was announced twice in one step", source.id),
            );
        }
        let location = match &source.target {
            SourceTarget::Url { url } if url.trim().is_empty() => {
                self.violate(
                    Rule::SourceWellFormed,
                    format!("`Source` `{}` has an empty URL", source.id),
                );
                None
            }
            SourceTarget::Url { .. } => None,
            SourceTarget::File { file_id, .. } if file_id.trim().is_empty() => {
                self.violate(
                    Rule::SourceWellFormed,
                    format!("`Source` `{}` has an empty file id", source.id),
                );
                None
            }
            SourceTarget::File { .. } => None,
            SourceTarget::Document { location, .. } | SourceTarget::SearchResult { location, .. } => *location,
        };
        let backwards = source.supports.is_some_and(|span| span.start > span.end)
            || location.is_some_and(|location| match location {
                Location::Chars { start, end } | Location::Pages { start, end } | Location::Blocks { start, end } => {
                    start > end
                }
            });
        if backwards {
            self.violate(
                Rule::SourceWellFormed,
                format!("`Source` `{}` has a range that ends before it starts", source.id),
            );
        }
    }

    /// A tool result: it must answer a call seen before, or close an abandoned one (a started
    /// call whose input never completed, answered as `Aborted`).
    fn tool_result(&mut self, id: &str, status: ToolStatus) {
        self.answered.insert(id.to_owned());
        if self.calls.contains(id) {
            return;
        }
        let abandoned = self.tools.get_mut(id).filter(|t| t.started && !t.done);
        if let Some(state) = abandoned.filter(|_| status == ToolStatus::Aborted) {
            state.done = true;
        } else {
            self.violate(
                Rule::ToolResultAfterCall,
                format!("`ToolResult` for `{id}` without an earlier `ToolCall`"),
            );
        }
    }

    fn delta(&mut self, reasoning: bool, index: usize, text: &str) {
        let key = (reasoning, index);
        if self.current_block != Some(key) {
            if let Some(previous) = self.current_block.and_then(|k| self.blocks.get_mut(&k)) {
                previous.closed = true;
            }
            if self.blocks.get(&key).is_some_and(|b| b.closed) {
                let what = if reasoning { "reasoning" } else { "text" };
                self.violate(
                    Rule::TextNotDuplicated,
                    format!("{what} block {index} was reopened after another block began"),
                );
            }
            self.current_block = Some(key);
        }
        let block = self.blocks.entry(key).or_default();
        // The whole block so far emitted again as one delta (an agent runtime replaying the
        // final message after its partial deltas). Cheap: a length check first.
        let replayed = block.deltas >= 1
            && text.len() == block.text.len()
            && text == block.text
            && text.chars().count() >= DUPLICATE_MIN_CHARS;
        if replayed {
            let message = format!(
                "block {index} received its whole text again as one delta: {:?}",
                clip(text)
            );
            self.violate(Rule::TextNotDuplicated, message);
        }
        let block = self.blocks.entry(key).or_default();
        block.deltas += 1;
        block.text.push_str(text);
    }

    fn close_step(&mut self) {
        // Two different blocks of one step with the same (long enough) text: emitted twice.
        let mut seen: HashMap<(bool, &str), usize> = HashMap::new();
        let mut duplicates = Vec::new();
        let mut keys: Vec<_> = self.blocks.keys().copied().collect();
        keys.sort();
        for key in keys {
            let text = self.blocks[&key].text.as_str();
            if text.chars().count() < DUPLICATE_MIN_CHARS {
                continue;
            }
            if let Some(first) = seen.insert((key.0, text), key.1) {
                duplicates.push(format!(
                    "blocks {first} and {} carry the same text {:?}",
                    key.1,
                    clip(text)
                ));
            }
        }
        for message in duplicates {
            self.violate(Rule::TextNotDuplicated, message);
        }
        let open: Vec<String> = self
            .tool_order
            .iter()
            .filter(|id| self.tools.get(*id).is_some_and(|t| t.started && !t.done))
            .cloned()
            .collect();
        for id in open {
            self.violate(
                Rule::ToolCallStartClosed,
                format!("`ToolCallStart` for `{id}` was never followed by its `ToolCall`"),
            );
        }
        self.blocks.clear();
        self.current_block = None;
        self.tools.clear();
        self.tool_order.clear();
        self.sources.clear();
    }

    /// End of stream: report every violation found.
    pub fn finish(mut self) -> Result<(), Vec<Violation>> {
        if !self.finished && !self.errored {
            if self.position == 0 {
                self.violate(Rule::StartedFirst, "the stream was empty");
            }
            self.violate(Rule::FinishMissing, "the stream ended without `Finish` or an error");
        }
        if self.violations.is_empty() {
            Ok(())
        } else {
            Err(self.violations)
        }
    }
}

/// Validate a whole stream of items.
pub fn validate<'a, I>(items: I) -> Result<(), Vec<Violation>>
where
    I: IntoIterator<Item = Result<&'a Event, &'a ProviderError>>,
{
    let mut validator = Validator::new();
    for item in items {
        validator.push(item);
    }
    validator.finish()
}
