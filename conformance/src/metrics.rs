//! [`check_finish_metrics`]: `Finish` metrics of a wire provider over real HTTP, against a mock
//! server that is slow to its first byte and slow again to its first text. Timings are checked
//! with lower bounds only (plus a loose ceiling that only a hang reaches), so a loaded machine
//! cannot fail them.

use std::sync::Arc;
use std::time::Duration;

use patchbay_core::{Event, Message, Metrics, Provider, Signal, ToolSet};
use patchbay_scripted::{Part, Response, Turn};

use crate::mock::{MockServer, Serve, WireFormat};
use crate::normalize::Recording;

/// How long the mock waits before its status line and headers.
pub const FIRST_BYTE: Duration = Duration::from_millis(150);
/// How long it waits again, after the first frames, before the frame with the first text.
pub const FIRST_TEXT: Duration = Duration::from_millis(250);
/// No timing may exceed this: a hang, not a slow machine.
const SANITY: Duration = Duration::from_secs(5);

fn ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// `response` as `wire` serves it after [`FIRST_BYTE`], with a [`FIRST_TEXT`] pause before
/// the first frame that carries the first word of its first text part. Panics when no frame
/// does (the response must stream text).
pub fn slow_response(wire: &impl WireFormat, response: Response) -> Serve {
    let first_word: String = response
        .parts
        .iter()
        .find_map(|part| match part {
            Part::Text { text } => Some(text.chars().take_while(char::is_ascii_alphanumeric).collect()),
            _ => None,
        })
        .unwrap_or_default();
    assert!(
        !first_word.is_empty(),
        "the response must start its text with an ASCII word"
    );
    let frames = wire.render_response(&response, "metrics-model");
    let first_text = frames
        .iter()
        .position(|frame| frame.contains(&first_word))
        .unwrap_or_else(|| panic!("no frame of {} carries `{first_word}`", wire.name()));
    Serve::Delay(
        FIRST_BYTE,
        Box::new(Serve::PauseBefore {
            before: first_text,
            wait: FIRST_TEXT,
            serve: Box::new(Serve::Turn(Turn::Respond(response))),
        }),
    )
}

/// The `Finish` metrics of `events` (the last event), checked: the first event no sooner than
/// `first_event`, the first text no sooner than `first_text`, in order, all under a ceiling,
/// and `events` counting every event including `Finish`.
pub fn assert_finish_metrics(events: &[Event], first_event: Duration, first_text: Duration) -> Metrics {
    let Some(Event::Finish { metrics, .. }) = events.last() else {
        panic!("the stream does not end with Finish: {events:#?}");
    };
    let seen_event = metrics.first_event_ms.expect("first_event_ms is set");
    let seen_text = metrics.first_text_ms.expect("first_text_ms is set");
    assert!(seen_event >= ms(first_event), "{metrics:?}");
    assert!(seen_text >= ms(first_text), "{metrics:?}");
    assert!(seen_text >= seen_event, "{metrics:?}");
    assert!(metrics.total_ms >= seen_text, "{metrics:?}");
    assert!(metrics.total_ms < ms(SANITY), "{metrics:?}");
    assert_eq!(metrics.events, events.len() as u64, "every event, `Finish` included");
    *metrics
}

/// The `Finish` metrics of a stream that finished, checked against the events before it: every
/// event counted (`Finish` included), the characters (not bytes) of text and of reasoning, a
/// first event time whenever there was an event, a first text time exactly when there was text,
/// and the times in order. The suite runs it on every recording of every target; a stream that
/// ended with an error has no `Finish` to check.
pub fn check_metrics(events: &[Event]) -> Result<(), String> {
    let Some(Event::Finish { metrics, .. }) = events.last() else {
        return Ok(());
    };
    let mut problems = Vec::new();
    if metrics.events != events.len() as u64 {
        problems.push(format!("{} events counted, {} emitted", metrics.events, events.len()));
    }
    let text = joined(events, false).chars().count() as u64;
    if metrics.text_chars != text {
        problems.push(format!(
            "{} text characters counted, {text} emitted",
            metrics.text_chars
        ));
    }
    let reasoning = joined(events, true).chars().count() as u64;
    if metrics.reasoning_chars != reasoning {
        problems.push(format!(
            "{} reasoning characters counted, {reasoning} emitted",
            metrics.reasoning_chars
        ));
    }
    let has_text = events.iter().any(|e| matches!(e, Event::TextDelta { .. }));
    if metrics.first_text_ms.is_some() != has_text {
        problems.push(format!(
            "first_text_ms is {:?} for a stream {} text",
            metrics.first_text_ms,
            if has_text { "with" } else { "without" }
        ));
    }
    match metrics.first_event_ms {
        None => problems.push("first_event_ms is not set".into()),
        Some(first) => {
            if metrics.first_text_ms.is_some_and(|text| text < first) {
                problems.push("the first text came before the first event".into());
            }
            if metrics.total_ms < metrics.first_text_ms.unwrap_or(first) {
                problems.push("total_ms is less than a time before it".into());
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{problems:?} in {metrics:?}"))
    }
}

fn joined(events: &[Event], reasoning: bool) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            Event::TextDelta { text, .. } if !reasoning => Some(text.as_str()),
            Event::ReasoningDelta { text, .. } if reasoning => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// Runs the metrics checks on a wire provider: `provider` builds it pointed at a mock server's
/// URL. A text answer (characters counted, not bytes) and, when `reasoning`, a reasoning answer
/// (counted apart from text), each served slow to its first byte and to its first text.
pub async fn check_finish_metrics<W>(wire: W, reasoning: bool, provider: impl Fn(&str) -> Arc<dyn Provider>)
where
    W: WireFormat + Clone,
{
    let text = "Hello there, wide wörld 🎉";
    let thinking = "Let me think about ünïcode first.";
    let mut cases = vec![(Response::new(vec![Part::text(text)]), None)];
    if reasoning {
        cases.push((
            Response::new(vec![Part::thinking(thinking, "sig-1"), Part::text("Done.")]),
            Some(thinking),
        ));
    }
    for (response, thought) in cases {
        let answer: String = response
            .parts
            .iter()
            .filter_map(|part| match part {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        let server = MockServer::builder(wire.clone())
            .serve([slow_response(&wire, response)])
            .start()
            .await
            .expect("the mock server starts");
        let provider = provider(&server.url());
        let messages = [Message::user("hi")];
        let recording = Recording::call(&*provider, &messages, &ToolSet::new(), "m", &Signal::new(), None).await;
        assert!(recording.error.is_none(), "{:?}", recording.error);
        let metrics = assert_finish_metrics(&recording.events, FIRST_BYTE, FIRST_BYTE + FIRST_TEXT);
        assert_eq!(joined(&recording.events, false), answer);
        assert_eq!(metrics.text_chars, answer.chars().count() as u64, "chars, not bytes");
        let thought = thought.unwrap_or_default();
        assert_eq!(joined(&recording.events, true), thought);
        assert_eq!(metrics.reasoning_chars, thought.chars().count() as u64);
    }
}
