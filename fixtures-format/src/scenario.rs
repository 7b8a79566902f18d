//! What a recorded call shows, detected from its events alone: the `scenario` column of a
//! recording's manifest line.

use std::collections::BTreeSet;

use patchbay_core::{ErrorKind, Event, FinishReason, ProviderError};
use serde_json::Value;

/// Reads a call's events one by one and names what they show (see [`detect_scenario`] for the
/// words). A recorder feeds it the events as they pass (`patchbay_http`'s `Tape::watch`), so no
/// event is kept.
#[derive(Debug, Clone, Default)]
pub struct Detector {
    model: Option<String>,
    text: bool,
    reasoning: bool,
    signature: bool,
    redacted: bool,
    tool_calls: usize,
    no_args: bool,
    sources: bool,
    finish: Option<FinishReason>,
    error: Option<ErrorKind>,
}

impl Detector {
    /// A detector that has seen nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Take one event.
    pub fn event(&mut self, event: &Event) {
        match event {
            Event::Started { model, .. } => {
                self.model.get_or_insert_with(|| model.clone());
            }
            Event::TextDelta { text, .. } if !text.is_empty() => self.text = true,
            Event::ReasoningDelta { .. } => self.reasoning = true,
            Event::ReasoningSignature { .. } => {
                self.reasoning = true;
                self.signature = true;
            }
            Event::RedactedReasoning { .. } => self.redacted = true,
            Event::ToolCall { input, .. } => {
                self.tool_calls += 1;
                self.no_args |= is_empty_input(input);
            }
            Event::Source(_) => self.sources = true,
            Event::Finish { reason, .. } => self.finish = Some(reason.clone()),
            _ => {}
        }
    }

    /// Take the error that ended the stream.
    pub fn error(&mut self, error: &ProviderError) {
        self.error.get_or_insert(error.kind());
    }

    /// The model `Started` named, if it came.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// Whether the stream has ended (a `Finish` or an error was seen).
    pub fn ended(&self) -> bool {
        self.finish.is_some() || self.error.is_some()
    }

    /// What the events seen so far show: the words of [`detect_scenario`], sorted and joined
    /// with `; `.
    pub fn scenario(&self) -> String {
        let mut words = BTreeSet::new();
        if self.text && self.tool_calls == 0 && !self.reasoning && !self.redacted {
            words.insert("text only".to_string());
        }
        match self.tool_calls {
            0 => {}
            1 => {
                words.insert("single tool call".into());
            }
            _ => {
                words.insert("parallel tool calls".into());
            }
        }
        if self.tool_calls > 0 && self.text {
            words.insert("text + tool use".into());
        }
        if self.tool_calls > 0 && self.reasoning {
            words.insert("thinking + tool use".into());
        }
        if self.no_args {
            words.insert("tool call no args".into());
        }
        if self.reasoning {
            words.insert(
                if self.signature {
                    "thinking with signature"
                } else {
                    "thinking"
                }
                .into(),
            );
        }
        if self.redacted {
            words.insert("redacted thinking".into());
        }
        if self.sources {
            words.insert("citations".into());
        }
        match &self.finish {
            Some(FinishReason::Stop | FinishReason::ToolUse) | None => {}
            Some(FinishReason::Length) => {
                words.insert("finish:length".into());
            }
            Some(FinishReason::ContentFilter) => {
                words.insert("finish:content_filter".into());
            }
            Some(FinishReason::Refusal) => {
                words.insert("finish:refusal".into());
            }
            Some(FinishReason::Cancelled) => {
                words.insert("cancelled".into());
            }
            Some(FinishReason::Other(raw)) => {
                words.insert(format!("finish:{raw}"));
            }
        }
        match self.error {
            Some(ErrorKind::Cancelled) => {
                words.insert("cancelled".into());
            }
            Some(kind) => {
                words.insert(format!("error:{}", kind.as_str()));
            }
            None if self.finish.is_none() => {
                words.insert("dropped".into());
            }
            None => {}
        }
        if self.finish.is_some() && !self.text && !self.reasoning && !self.redacted && self.tool_calls == 0 {
            words.insert("empty answer".into());
        }
        words.into_iter().collect::<Vec<_>>().join("; ")
    }
}

/// What a call's events show, for the `scenario` column of a recording's manifest line: a pure
/// function of the events (and the error that ended them), in the words of the shipped
/// manifest where it has them, sorted and joined with `; `.
///
/// | word | when |
/// | --- | --- |
/// | `text only` | text, and no tool call or reasoning |
/// | `single tool call` / `parallel tool calls` | one / several `ToolCall`s |
/// | `text + tool use`, `thinking + tool use` | tool calls beside text / reasoning |
/// | `tool call no args` | a `ToolCall` whose input is `{}` |
/// | `thinking with signature`, `thinking`, `redacted thinking` | reasoning with / without a signature, encrypted reasoning |
/// | `citations` | a `Source` |
/// | `finish:length`, `finish:refusal`, `finish:content_filter`, `finish:<other>` | a `Finish` other than `Stop` or `ToolUse`, named after patchbay's [`FinishReason`] (one vocabulary for every wire) |
/// | `empty answer` | a `Finish` with nothing before it |
/// | `error:<kind>` | an error ended the stream (`error:RateLimited`...), kind as [`ErrorKind::as_str`] |
/// | `cancelled` | the stream ended `Cancelled` |
/// | `dropped` | neither a `Finish` nor an error: the caller dropped the stream early |
///
/// ```
/// use patchbay_core::{Event, FinishReason};
/// use patchbay_fixtures::detect_scenario;
///
/// let events = [
///     Event::TextDelta { index: 0, text: "Hi".into() },
///     Event::Finish { reason: FinishReason::Length, usage: Default::default(), metrics: Default::default() },
/// ];
/// assert_eq!(detect_scenario(events.iter().map(Ok)), "finish:length; text only");
/// ```
pub fn detect_scenario<'a>(items: impl IntoIterator<Item = Result<&'a Event, &'a ProviderError>>) -> String {
    let mut detector = Detector::new();
    for item in items {
        match item {
            Ok(event) => detector.event(event),
            Err(error) => detector.error(error),
        }
    }
    detector.scenario()
}

/// Whether a tool input counts as "no args": `{}` or `null`.
fn is_empty_input(input: &Value) -> bool {
    input.is_null() || input.as_object().is_some_and(serde_json::Map::is_empty)
}

#[cfg(test)]
mod tests {
    use patchbay_core::{ExecutedBy, Metrics, Usage};
    use serde_json::json;

    use super::*;

    fn text(text: &str) -> Event {
        Event::TextDelta {
            index: 0,
            text: text.into(),
        }
    }

    fn call(id: &str, input: Value) -> Event {
        Event::ToolCall {
            id: id.into(),
            name: "get_weather".into(),
            input,
            executed_by: ExecutedBy::Host,
            signature: None,
        }
    }

    fn finish(reason: FinishReason) -> Event {
        Event::Finish {
            reason,
            usage: Usage::default(),
            metrics: Metrics::default(),
        }
    }

    fn started() -> Event {
        Event::Started {
            response_id: Some("msg_1".into()),
            model: "claude-test".into(),
            session_id: None,
            warnings: Vec::new(),
        }
    }

    fn scenario(events: &[Event]) -> String {
        detect_scenario(events.iter().map(Ok))
    }

    #[test]
    fn a_text_answer_is_text_only() {
        assert_eq!(
            scenario(&[started(), text("Hello"), finish(FinishReason::Stop)]),
            "text only"
        );
    }

    #[test]
    fn one_tool_call_after_text_is_a_single_tool_call_with_text() {
        let events = [
            started(),
            text("Let me check."),
            call("a", json!({"city": "Paris"})),
            finish(FinishReason::ToolUse),
        ];
        assert_eq!(scenario(&events), "single tool call; text + tool use");
    }

    #[test]
    fn two_tool_calls_are_parallel_and_an_empty_input_has_no_args() {
        let events = [
            started(),
            call("a", json!({"city": "Paris"})),
            call("b", json!({})),
            finish(FinishReason::ToolUse),
        ];
        assert_eq!(scenario(&events), "parallel tool calls; tool call no args");
    }

    #[test]
    fn reasoning_with_a_signature_before_a_tool_call_is_named() {
        let events = [
            started(),
            Event::ReasoningDelta {
                index: 0,
                text: "hmm".into(),
            },
            Event::ReasoningSignature {
                index: 0,
                signature: "sig".into(),
            },
            call("a", json!({"city": "Paris"})),
            finish(FinishReason::ToolUse),
        ];
        assert_eq!(
            scenario(&events),
            "single tool call; thinking + tool use; thinking with signature"
        );
    }

    #[test]
    fn finish_reasons_other_than_stop_are_named() {
        for (reason, word) in [
            (FinishReason::Length, "finish:length"),
            (FinishReason::Refusal, "finish:refusal"),
            (FinishReason::ContentFilter, "finish:content_filter"),
            (FinishReason::Other("pause_turn".into()), "finish:pause_turn"),
        ] {
            assert_eq!(
                scenario(&[started(), text("x"), finish(reason)]),
                format!("{word}; text only")
            );
        }
    }

    #[test]
    fn an_error_names_its_kind_and_cancelling_is_cancelled() {
        let error = ProviderError::new(ErrorKind::RateLimited, "slow down");
        assert_eq!(detect_scenario([Err(&error)]), "error:RateLimited");
        let events = [started(), text("Here is")];
        let overloaded = ProviderError::new(ErrorKind::Overloaded, "Overloaded");
        assert_eq!(
            detect_scenario(events.iter().map(Ok).chain([Err(&overloaded)])),
            "error:Overloaded; text only"
        );
        let cancelled = ProviderError::cancelled();
        assert_eq!(
            detect_scenario(events.iter().map(Ok).chain([Err(&cancelled)])),
            "cancelled; text only"
        );
    }

    #[test]
    fn a_stream_without_finish_or_error_was_dropped() {
        assert_eq!(scenario(&[started(), text("Hel")]), "dropped; text only");
        assert_eq!(scenario(&[]), "dropped");
    }

    #[test]
    fn a_finish_with_nothing_before_it_is_an_empty_answer() {
        assert_eq!(scenario(&[started(), finish(FinishReason::Stop)]), "empty answer");
    }

    #[test]
    fn the_detector_keeps_the_model_started_named() {
        let mut detector = Detector::new();
        assert!(!detector.ended());
        detector.event(&started());
        detector.event(&finish(FinishReason::Stop));
        assert_eq!(detector.model(), Some("claude-test"));
        assert!(detector.ended());
    }
}
