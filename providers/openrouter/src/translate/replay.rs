//! Recorded bodies for the `replay` command.

use patchbay_core::{Event, ProviderError};
use serde_json::Value;

use super::translator::{Framing, Translator};

/// A payload after the end of a response that starts no new one: no choices, no error (some
/// servers send a last `{"choices": [], "cost": ...}` after `[DONE]`).
fn trailer(payload: &[u8]) -> bool {
    match serde_json::from_slice::<Value>(payload) {
        Ok(value) => {
            value.get("error").is_none() && value.get("choices").and_then(Value::as_array).is_none_or(Vec::is_empty)
        }
        Err(_) => payload == b"[DONE]",
    }
}

/// One response of a recorded body, as [`replay`] translates it.
#[derive(Debug)]
pub struct Replayed {
    /// The events, in order.
    pub events: Vec<Event>,
    /// The error that ended the response, if any.
    pub error: Option<ProviderError>,
}

/// Translate a recorded body (the `replay` command's `--family openai`): raw SSE or one JSON
/// payload per line (detected from the first non-blank line); a body holding several responses
/// (more payloads after a `[DONE]`, a finish or an error) gives one [`Replayed`] per response;
/// trailing payloads without choices are not a new response.
pub fn replay(body: &[u8]) -> Vec<Replayed> {
    let first = body
        .split(|&b| b == b'\n')
        .map(<[u8]>::trim_ascii)
        .find(|line| !line.is_empty());
    let framing = match first {
        Some(line) if line.starts_with(b"{") => Framing::JsonLines,
        _ => Framing::Sse,
    };
    let mut responses = Vec::new();
    let mut translator = Translator::new(framing);
    let mut events = Vec::new();
    let mut error = None;
    for line in body.split_inclusive(|&b| b == b'\n') {
        if translator.is_done() {
            match framing.payload(line) {
                Some(payload) if !trailer(payload) => {}
                _ => continue,
            }
            responses.push(Replayed {
                events: std::mem::take(&mut events),
                error: error.take(),
            });
            translator = Translator::new(framing);
        }
        if let Err(e) = translator.feed(line, &mut events) {
            error = Some(e);
        }
    }
    if let Err(e) = translator.finish(&mut events) {
        error = Some(e);
    }
    responses.push(Replayed { events, error });
    responses
}
