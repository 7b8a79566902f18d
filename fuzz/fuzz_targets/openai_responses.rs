//! The Responses wire on raw bytes: `patchbay_openai::Translator` driven as the driver drives it
//! (whole, and cut at a fuzzer-chosen point: the same events and error), through
//! `kit::translate` (the push path: the same again), through `Wire::whole_body` (the JSON answer
//! of a server that did not stream: no panic) and `kit::replay` (no panic). Whatever the
//! translator emits keeps the lifecycle rules it owns, and every tool call id is unique. Every
//! frame the parser-free read of the common event takes, serde reads the same
//! (`translate::check_fast_read`).
//!
//! Input: byte 0 picks SSE or JSON-lines framing, byte 1 the split point; the rest is the body.
#![no_main]

use std::collections::HashSet;

use libfuzzer_sys::fuzz_target;
use patchbay_core::Event;
use patchbay_core::kit::{self, Framer, Framing, Wire};
use patchbay_fuzz::{TRANSLATOR_RULES, check_lifecycle, drive, outcome, split_at_selector};
use patchbay_openai::Translator;

fn translator(mode: u8) -> Translator {
    let framing = if mode & 1 != 0 {
        Framing::Lines
    } else {
        Framing::DataLines
    };
    Translator::new("fuzz-model").with_framing(framing)
}

fn unique_call_ids(events: &[Event]) {
    let mut seen = HashSet::new();
    for event in events {
        if let Event::ToolCall { id, .. } = event {
            assert!(seen.insert(id.clone()), "tool call id {id} twice");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let [mode, split, body @ ..] = data else {
        return;
    };
    let mut framer = Framer::new(if *mode & 1 != 0 {
        Framing::Lines
    } else {
        Framing::DataLines
    });
    let _ = framer.push(body, |frame| {
        patchbay_openai::translate::check_fast_read(frame);
        Ok(())
    });

    let (events, error) = drive(&mut translator(*mode), &[body]);
    check_lifecycle(&events, error.as_ref(), TRANSLATOR_RULES);
    unique_call_ids(&events);
    let whole = outcome(events, error.as_ref());

    let (events, error) = drive(&mut translator(*mode), &split_at_selector(body, *split));
    check_lifecycle(&events, error.as_ref(), TRANSLATOR_RULES);
    assert_eq!(whole, outcome(events, error.as_ref()), "cut at {split}/255");

    let (events, error) = kit::translate(translator(*mode), [body]).into_parts();
    assert_eq!(whole, outcome(events, error.as_ref()), "kit::translate");

    let mut once = translator(*mode);
    let _ = once.whole_body(body);
    while let Some(event) = once.next_event() {
        let _ = event;
    }

    for response in kit::replay(Translator::default, [body]) {
        check_lifecycle(&response.events, response.error.as_ref(), TRANSLATOR_RULES);
    }
});
