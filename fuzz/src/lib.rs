//! Helpers shared by the fuzz targets: cutting input into chunks, driving a
//! [`kit::Wire`] the way core's `Driver` does, comparing event streams without their
//! timings, and checking the lifecycle rules a translator owns.

use patchbay_core::kit;
use patchbay_core::validate::{Rule, Validator};
use patchbay_core::{ErrorKind, Event, Metrics, ProviderError};

/// What a run produced: events (timings zeroed) and the kind and text of the error that ended
/// it, if any.
pub type Outcome = (Vec<Event>, Option<(ErrorKind, String)>);

/// The input cut in two at a point chosen by `selector` (0..=255 scaled to the length).
pub fn split_at_selector(body: &[u8], selector: u8) -> [&[u8]; 2] {
    let at = body.len() * usize::from(selector) / 255;
    let (a, b) = body.split_at(at);
    [a, b]
}

/// The event with what depends on the clock (the metrics of `Finish`) zeroed.
pub fn without_timings(mut event: Event) -> Event {
    if let Event::Finish { metrics, .. } = &mut event {
        *metrics = Metrics::default();
    }
    event
}

/// The error as the kind and text a caller would see.
pub fn error_of(error: &ProviderError) -> (ErrorKind, String) {
    (error.kind(), error.to_string())
}

/// Drive a [`kit::Wire`] over `chunks` exactly as core's `Driver` polls it: frames pulled one
/// at a time, every event taken before the next frame, no frame read once the wire is done,
/// `end` after the last chunk; the first error ends the run.
pub fn drive<W: kit::Wire>(wire: &mut W, chunks: &[&[u8]]) -> (Vec<Event>, Option<ProviderError>) {
    let mut framer = kit::Framer::new(wire.framing());
    let mut events = Vec::new();
    let mut failed = None;
    'body: for chunk in chunks {
        if wire.is_done() {
            break;
        }
        if let Err(error) = framer.feed(chunk) {
            failed = Some(error);
            break;
        }
        while !wire.is_done() {
            match framer.next_frame() {
                Ok(Some(frame)) => match wire.frame(frame) {
                    Ok(first) => events.extend(first),
                    Err(error) => {
                        failed = Some(error);
                        break 'body;
                    }
                },
                Ok(None) => break,
                Err(error) => {
                    failed = Some(error);
                    break 'body;
                }
            }
            events.extend(std::iter::from_fn(|| wire.next_event()));
        }
    }
    if failed.is_none() && !wire.is_done() {
        loop {
            match framer.end() {
                Ok(Some(frame)) => match wire.frame(frame) {
                    Ok(first) => events.extend(first),
                    Err(error) => {
                        failed = Some(error);
                        break;
                    }
                },
                Ok(None) => break,
                Err(error) => {
                    failed = Some(error);
                    break;
                }
            }
            events.extend(std::iter::from_fn(|| wire.next_event()));
            if wire.is_done() {
                break;
            }
        }
    }
    if failed.is_none()
        && let Err(error) = wire.end()
    {
        failed = Some(error);
    }
    events.extend(std::iter::from_fn(|| wire.next_event()));
    (events, failed)
}

/// The rules a translator keeps whatever the wire says. The others (no text twice, unique ids,
/// well-formed sources, results after calls) are about what the server sent, which a fuzzer
/// makes up freely; they are checked on recorded streams by the conformance fixtures instead.
pub const TRANSLATOR_RULES: &[Rule] = &[
    Rule::StartedFirst,
    Rule::StartedOnce,
    Rule::FinishLast,
    Rule::FinishMissing,
    Rule::NothingAfterError,
    Rule::ToolCallAfterInput,
    Rule::ToolCallStartClosed,
];

/// Panic (a fuzz finding) when the stream breaks one of `rules`.
pub fn check_lifecycle(events: &[Event], error: Option<&ProviderError>, rules: &[Rule]) {
    let mut validator = Validator::new();
    for event in events {
        validator.push(Ok(event));
    }
    if let Some(error) = error {
        validator.push(Err(error));
    }
    // A wire that uses one tool call id twice (a `ToolCallIdUnique` matter, the server's) also
    // trips the per-call rules on the second call; those are checked only when ids are unique.
    let mut ids = std::collections::HashSet::new();
    let reused = events
        .iter()
        .any(|event| matches!(event, Event::ToolCallStart { id, .. } if !ids.insert(id.as_str())));
    let per_call = |rule: &Rule| matches!(rule, Rule::ToolCallAfterInput | Rule::ToolCallStartClosed);
    if let Err(violations) = validator.finish() {
        let broken: Vec<_> = violations
            .iter()
            .filter(|v| rules.contains(&v.rule) && !(reused && per_call(&v.rule)))
            .collect();
        assert!(
            broken.is_empty(),
            "the translator broke the lifecycle rules: {broken:#?}\nevents: {events:#?}\nerror: {error:?}"
        );
    }
}

/// Events and error as an [`Outcome`] to compare runs.
pub fn outcome(events: Vec<Event>, error: Option<&ProviderError>) -> Outcome {
    (events.into_iter().map(without_timings).collect(), error.map(error_of))
}
