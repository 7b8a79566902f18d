//! The OpenAI chat-completions wire (`patchbay_openrouter::translate::Translator`) on raw bytes,
//! driven as the driver drives it: the same events and error whole, cut at a fuzzer-chosen point,
//! and through `kit::translate` (the push path); the lifecycle rules it owns (unique tool call ids
//! included: it makes them unique), and `kit::replay` without a panic; every frame the
//! parser-free read of plain text chunks takes, it reads as serde does.
//!
//! Input: byte 0 picks SSE or JSON-lines framing, byte 1 the split point; the rest is the body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use patchbay_core::kit::{self, Framing};
use patchbay_core::validate::Rule;
use patchbay_fuzz::{TRANSLATOR_RULES, check_lifecycle, drive, outcome, split_at_selector};
use patchbay_openrouter::translate::{self, Translator};

fuzz_target!(|data: &[u8]| {
    let [mode, split, body @ ..] = data else {
        return;
    };
    let framing = if mode & 1 == 0 {
        Framing::DataLines
    } else {
        Framing::Lines
    };
    let rules: Vec<Rule> = TRANSLATOR_RULES
        .iter()
        .copied()
        .chain([Rule::ToolCallIdUnique])
        .collect();

    let wire = || Translator::new(framing).with_model("fuzz-model");
    let (events, error) = drive(&mut wire(), &[body]);
    check_lifecycle(&events, error.as_ref(), &rules);
    let whole = outcome(events, error.as_ref());

    let (events, error) = drive(&mut wire(), &split_at_selector(body, *split));
    assert_eq!(whole, outcome(events, error.as_ref()), "cut at {split}/255");

    let (events, error) = kit::translate(wire(), [body]).into_parts();
    assert_eq!(whole, outcome(events, error.as_ref()), "kit::translate");

    // The parser-free read of plain text chunks reads every frame it takes as serde does.
    let _ = kit::Framer::new(framing).push(body, |frame| {
        translate::check_fast_read(frame);
        Ok(())
    });

    for response in kit::replay(Translator::default, [body]) {
        check_lifecycle(&response.events, response.error.as_ref(), &rules);
    }
});
