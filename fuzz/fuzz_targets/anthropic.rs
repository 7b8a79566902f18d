//! The Anthropic wire on raw bytes: `patchbay_anthropic::Translator` driven as the driver drives
//! it (whole, and cut at a fuzzer-chosen point: the same events and error), through
//! `kit::translate` (the push path: the same again), `Translator::push_value` on the frames
//! parsed as JSON (no panic), and `kit::replay` (no panic). Whatever the translator emits keeps
//! the lifecycle rules it owns. Every frame the parser-free text-delta read
//! (`wire::text_delta`) accepts parses to the same index and text.
//!
//! Input: byte 0 picks SSE or SSE-or-JSON-lines framing for the parsed-events path and whether a
//! structured-output tool is set, byte 1 the split point; the rest is the body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use patchbay_anthropic::Translator;
use patchbay_anthropic::wire::{HotEvent, text_delta};
use patchbay_core::kit::{self, Framer, Framing};
use patchbay_fuzz::{TRANSLATOR_RULES, check_lifecycle, drive, outcome, split_at_selector};

fn translator(mode: u8) -> Translator {
    let translator = Translator::new().with_model("fuzz-model");
    if mode & 2 != 0 {
        translator.with_output_tool("json_output")
    } else {
        translator
    }
}

/// The translator's parser-free read of a text delta gives what the parser gives, or nothing.
fn check_text_delta(frame: &[u8]) {
    let Ok(text) = std::str::from_utf8(frame) else {
        return;
    };
    if let Some((index, payload)) = text_delta(text) {
        let parsed: HotEvent<'_> = serde_json::from_str(text).expect("a fast-read text delta parses");
        let delta = parsed.delta.expect("with a delta");
        assert_eq!(parsed.kind, "content_block_delta");
        assert_eq!(parsed.index, Some(index));
        assert_eq!((delta.kind.as_ref(), delta.payload.as_ref()), ("text_delta", payload));
    }
}

fuzz_target!(|data: &[u8]| {
    let [mode, split, body @ ..] = data else {
        return;
    };
    let (events, error) = drive(&mut translator(*mode), &[body]);
    check_lifecycle(&events, error.as_ref(), TRANSLATOR_RULES);
    let whole = outcome(events, error.as_ref());

    let (events, error) = drive(&mut translator(*mode), &split_at_selector(body, *split));
    check_lifecycle(&events, error.as_ref(), TRANSLATOR_RULES);
    assert_eq!(whole, outcome(events, error.as_ref()), "cut at {split}/255");

    // The push path (what tests use): the same events, the same error.
    let (events, error) = kit::translate(translator(*mode), [body]).into_parts();
    assert_eq!(whole, outcome(events, error.as_ref()), "kit::translate");

    // The CLI's path: already-parsed events.
    let mut framer = Framer::new(if mode & 1 != 0 {
        Framing::SseOrJsonLines
    } else {
        Framing::Sse
    });
    let mut values = Translator::new();
    let mut error = None;
    let _ = framer.push(body, |frame| {
        check_text_delta(frame);
        if let Ok(value) = serde_json::from_slice(frame)
            && let Err(e) = values.push_value(&value)
        {
            error.get_or_insert(e);
        }
        Ok(())
    });
    if let Err(e) = values.finish() {
        error.get_or_insert(e);
    }
    let events: Vec<_> = values.drain().collect();
    check_lifecycle(&events, error.as_ref(), TRANSLATOR_RULES);

    for response in kit::replay(Translator::new, [body]) {
        check_lifecycle(&response.events, response.error.as_ref(), TRANSLATOR_RULES);
    }
});
