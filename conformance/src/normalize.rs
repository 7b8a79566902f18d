//! Normalized outcomes: what a golden snapshot holds, with ids, timings and chunking redacted.

use std::collections::HashMap;

pub use patchbay_core::kit::Recording;
use patchbay_core::{ErrorKind, Event, Metrics, Provider, ProviderError, Signal, Usage};
use serde::Serialize;
use serde_json::{Value, json};

/// Texts longer than this are summarized as length plus hash in snapshots.
pub const LONG_TEXT: usize = 512;

/// The outcome of one run, normalized so that every provider of every wire family produces the
/// same value for the same scenario.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    /// Normalized events.
    pub events: Vec<Value>,
    /// The kind of the error that ended the stream, if any.
    pub error_kind: Option<String>,
}

/// What the conformance suite adds to core's [`Recording`]: normalizing, comparing without
/// timings, and one scenario's first model turn.
pub trait RecordingExt: Sized {
    /// Normalize.
    fn outcome(&self) -> Outcome;

    /// The events with the `Finish` timings zeroed, for comparing two runs.
    fn without_timings(&self) -> Vec<Event>;

    /// One [`Recording::call`] with `scenario`'s messages and the shared tools on
    /// [`SCENARIO_MODEL`](crate::SCENARIO_MODEL), no context: what a provider does for the
    /// scenario's first model turn, without the agent loop.
    fn call_scenario(
        provider: &dyn Provider,
        scenario: &crate::Scenario,
    ) -> impl std::future::Future<Output = Self> + Send;
}

impl RecordingExt for Recording {
    fn outcome(&self) -> Outcome {
        normalize(&self.events, self.error.as_ref().map(ProviderError::kind))
    }

    fn without_timings(&self) -> Vec<Event> {
        without_timings(&self.events)
    }

    async fn call_scenario(provider: &dyn Provider, scenario: &crate::Scenario) -> Self {
        let tools = crate::scenario_tools();
        Self::call(
            provider,
            &scenario.messages,
            &tools,
            crate::SCENARIO_MODEL,
            &Signal::new(),
            None,
        )
        .await
    }
}

/// The text of every `TextDelta` in `events`, joined in order (reasoning and tool input left
/// out): what a reader of the answer sees.
///
/// ```
/// use patchbay_conformance::text_of;
/// use patchbay_core::Event;
///
/// let events = [
///     Event::TextDelta { index: 0, text: "Hello, ".into() },
///     Event::ReasoningDelta { index: 1, text: "(thinking)".into() },
///     Event::TextDelta { index: 2, text: "world.".into() },
/// ];
/// assert_eq!(text_of(&events), "Hello, world.");
/// ```
pub fn text_of(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            Event::TextDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// `events` with the `Finish` timings zeroed (counts kept), for comparing two runs.
pub fn without_timings(events: &[Event]) -> Vec<Event> {
    events
        .iter()
        .cloned()
        .map(|event| match event {
            Event::Finish { reason, usage, metrics } => Event::Finish {
                reason,
                usage,
                metrics: Metrics {
                    first_event_ms: None,
                    first_text_ms: None,
                    total_ms: 0,
                    ..metrics
                },
            },
            other => other,
        })
        .collect()
}

fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A text as it appears in a snapshot: itself, or `<N chars, fnv1a XXXX>` when long.
pub fn summarize(text: &str) -> String {
    let chars = text.chars().count();
    if chars > LONG_TEXT {
        format!("<{chars} chars, fnv1a {:016x}>", fnv1a(text))
    } else {
        text.to_string()
    }
}

fn usage_json(usage: &Usage) -> Value {
    json!({ "input": usage.input, "output": usage.output })
}

/// Normalize raw events:
/// - `Usage` updates and `ToolCallDelta` fragments are dropped (their chunking differs by wire;
///   the validator checks deltas against the final `ToolCall`);
/// - consecutive deltas of one block are joined; block indexes become ordinals per step;
/// - ids become ordinals (`call_1`...), response and session ids and warnings are dropped;
/// - timings are dropped; usage keeps input and output tokens; long texts are summarized.
pub fn normalize(events: &[Event], error: Option<ErrorKind>) -> Outcome {
    let mut normalizer = Normalizer::default();
    for event in events {
        normalizer.push(event);
    }
    normalizer.flush();
    normalizer.flush_sources();
    Outcome {
        events: normalizer.out,
        error_kind: error.map(|kind| kind.as_str().to_string()),
    }
}

/// The state of [`normalize`] between events.
#[derive(Default)]
struct Normalizer {
    out: Vec<Value>,
    /// Raw tool call id to its ordinal id (`call_1`...), over the whole run.
    ids: HashMap<String, String>,
    /// Raw block index to its ordinal within the current step.
    blocks: HashMap<usize, usize>,
    /// (kind, ordinal) of the text being joined, and its text so far.
    open: Option<(&'static str, usize, String)>,
    /// Sources of the current step: where they fall among a step's events differs by wire
    /// (Anthropic sends a citation before its text, OpenAI annotations after it), so each
    /// step's sources are written at its end, ordered by block and id.
    sources: Vec<(usize, String, Value)>,
}

impl Normalizer {
    /// Take in one event: deltas are joined, `Usage` and tool input fragments dropped, any
    /// other event ends the joined text and is added in its normal form.
    fn push(&mut self, event: &Event) {
        match event {
            Event::TextDelta { index, text } => self.join("text", *index, text),
            Event::ReasoningDelta { index, text } => self.join("reasoning", *index, text),
            Event::Usage(_) | Event::ToolCallDelta { .. } => {}
            Event::Source(source) => {
                let index = self.ordinal(source.index);
                // `supports` is left out: wires differ in it (an Anthropic citation covers its
                // whole block and says no span; an OpenAI annotation gives one).
                let value = json!({
                    "type": "source", "index": index, "id": source.id, "target": source.target,
                    "title": source.title, "cited_text": source.cited_text,
                });
                self.sources.push((index, source.id.clone(), value));
            }
            other => {
                if matches!(other, Event::StepFinished { .. } | Event::Finish { .. }) {
                    self.flush_sources();
                }
                self.flush();
                let value = self.value(other);
                self.out.extend(value);
            }
        }
    }

    /// Add a delta to the text being joined, or start joining a new block.
    fn join(&mut self, kind: &'static str, index: usize, text: &str) {
        let index = self.ordinal(index);
        match &mut self.open {
            Some((k, i, acc)) if *k == kind && *i == index => acc.push_str(text),
            _ => {
                self.flush();
                self.open = Some((kind, index, text.to_owned()));
            }
        }
    }

    /// Write the step's sources, ordered by block and id.
    fn flush_sources(&mut self) {
        self.flush();
        let mut sources = std::mem::take(&mut self.sources);
        sources.sort_by(|a, b| (a.0, a.1.len(), &a.1).cmp(&(b.0, b.1.len(), &b.1)));
        self.out.extend(sources.into_iter().map(|(_, _, value)| value));
    }

    /// Add the joined text, if any, as one delta.
    fn flush(&mut self) {
        if let Some((kind, index, text)) = self.open.take() {
            self.out
                .push(json!({ "type": kind, "index": index, "text": summarize(&text) }));
        }
    }

    /// The ordinal id of a raw tool call id.
    fn call_id(&mut self, id: &str) -> String {
        let next = self.ids.len() + 1;
        self.ids
            .entry(id.to_string())
            .or_insert_with(|| format!("call_{next}"))
            .clone()
    }

    /// The ordinal of a raw block index within the current step.
    fn ordinal(&mut self, index: usize) -> usize {
        let next = self.blocks.len();
        *self.blocks.entry(index).or_insert(next)
    }

    /// The normal form of a non-delta event (`None` for deltas and `Usage`).
    fn value(&mut self, event: &Event) -> Option<Value> {
        let value = match event {
            Event::Started { model, .. } => json!({ "type": "started", "model": model }),
            Event::McpConnected { servers, failed } => json!({
                "type": "mcp_connected",
                "servers": servers,
                "failed": failed.iter().map(|f| &f.name).collect::<Vec<_>>(),
            }),
            Event::ReasoningSignature { index, signature } => {
                json!({ "type": "reasoning_signature", "index": self.ordinal(*index), "signature": summarize(signature) })
            }
            Event::RedactedReasoning { index, data } => {
                json!({ "type": "redacted_reasoning", "index": self.ordinal(*index), "data": summarize(data) })
            }
            Event::Opaque { index, provider, data } => {
                json!({ "type": "opaque", "index": self.ordinal(*index), "provider": provider, "data": data })
            }
            Event::ToolCallStart { id, name } => {
                json!({ "type": "tool_call_start", "id": self.call_id(id), "name": name })
            }
            Event::SubagentMessage {
                parent_tool_use_id,
                subagent,
                message,
            } => json!({
                "type": "subagent_message", "parent": self.call_id(parent_tool_use_id),
                "subagent": subagent, "message": message,
            }),
            Event::ToolProgress {
                id,
                message,
                progress,
                total,
            } => json!({
                "type": "tool_progress", "id": self.call_id(id), "message": message,
                "progress": progress, "total": total,
            }),
            Event::Log {
                source,
                level,
                logger,
                data,
            } => json!({ "type": "log", "source": source, "level": level, "logger": logger, "data": data }),
            Event::ApprovalRequested { calls } => json!({
                "type": "approval_requested",
                "calls": calls.iter().map(|call| json!({
                    "id": self.call_id(&call.tool_use_id), "name": call.tool_name, "input": call.input,
                })).collect::<Vec<_>>(),
            }),
            Event::ToolCall {
                id,
                name,
                input,
                executed_by,
                signature,
            } => {
                let mut call = json!({
                    "type": "tool_call", "id": self.call_id(id), "name": name, "input": input, "executed_by": executed_by,
                });
                // Only a wire that signs calls (Gemini) has one; the shared goldens have none.
                if let Some(signature) = signature {
                    call["signature"] = json!(summarize(signature));
                }
                call
            }
            Event::ToolResult { id, name, result } => json!({
                "type": "tool_result", "id": self.call_id(id), "name": name,
                "status": result.status, "content": result.content, "metadata": result.metadata,
            }),
            Event::StepFinished { step, reason, usage } => {
                self.blocks.clear();
                json!({ "type": "step_finished", "step": step, "reason": reason, "usage": usage_json(usage) })
            }
            Event::Finish { reason, usage, metrics } => json!({
                "type": "finish", "reason": reason, "usage": usage_json(usage),
                "text_chars": metrics.text_chars, "reasoning_chars": metrics.reasoning_chars,
            }),
            Event::TextDelta { .. }
            | Event::ReasoningDelta { .. }
            | Event::Usage(_)
            | Event::ToolCallDelta { .. }
            | Event::Source(_) => {
                return None;
            }
        };
        Some(value)
    }
}
