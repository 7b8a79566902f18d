//! The OpenAI chat-completions translator (`patchbay_openrouter::translate::Translator`) on raw
//! bytes: the same events and error whole and cut at a fuzzer-chosen point, the lifecycle rules
//! it owns (unique tool call ids included: it makes them unique), and `replay` without a panic.
//!
//! Input: byte 0 picks SSE or JSON-lines framing, byte 1 the split point; the rest is the body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use patchbay_core::Rule;
use patchbay_fuzz::{TRANSLATOR_RULES, check_lifecycle, outcome, split_at_selector};
use patchbay_openrouter::translate::{Framing, Translator, replay};

fuzz_target!(|data: &[u8]| {
    let [mode, split, body @ ..] = data else {
        return;
    };
    let framing = if mode & 1 == 0 {
        Framing::Sse
    } else {
        Framing::JsonLines
    };
    let rules: Vec<Rule> = TRANSLATOR_RULES
        .iter()
        .copied()
        .chain([Rule::ToolCallIdUnique])
        .collect();

    let (events, error) = Translator::new(framing).with_model("fuzz-model").translate_all([body]);
    check_lifecycle(&events, error.as_ref(), &rules);
    let whole = outcome(events, error.as_ref());

    let (events, error) = Translator::new(framing)
        .with_model("fuzz-model")
        .translate_all(split_at_selector(body, *split));
    assert_eq!(whole, outcome(events, error.as_ref()), "cut at {split}/255");

    for response in replay(body) {
        check_lifecycle(&response.events, response.error.as_ref(), &rules);
    }
});
