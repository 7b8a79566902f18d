//! The ACP path after the transport: every line the fuzzer writes is one message from the agent,
//! fed as the provider feeds it: a `session/update`'s `update` to `Translator::update`, a
//! `session/request_permission`'s `toolCall` to `Translator::permission`, a prompt's answer to
//! `Translator::finish`, which ends the turn. No panic, and the lifecycle rules the translator
//! owns hold (the provider adds `Started` and `Finish` around them).
//!
//! Input: JSON lines; a line that is not JSON is skipped (the SDK skips it too). A line whose
//! `method` is `session/update` or `session/request_permission` is one of those; any other object
//! with a `result` is the prompt's answer.
#![no_main]

use libfuzzer_sys::fuzz_target;
use patchbay_acp::Translator;
use patchbay_core::{Event, FinishReason, Metrics, Usage};
use patchbay_fuzz::{TRANSLATOR_RULES, check_lifecycle};
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let mut translator = Translator::new("host", ["get_weather", "explode"]);
    let mut events = vec![Event::Started {
        response_id: None,
        model: "fuzz-model".into(),
        session_id: Some("s".into()),
        warnings: Vec::new(),
    }];
    let mut finished = false;
    for line in data.split(|b| *b == b'\n') {
        let Ok(message) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        match message.get("method").and_then(Value::as_str) {
            Some("session/update") => {
                if let Some(update) = message.pointer("/params/update") {
                    translator.update(update, &mut events);
                }
            }
            Some("session/request_permission") => {
                let call = message.pointer("/params/toolCall").cloned().unwrap_or_default();
                let _ = translator.permission(&call, &mut events);
            }
            _ => {
                if let Some(result) = message.get("result") {
                    let (reason, usage) = translator.finish(result, &mut events);
                    events.push(finish(reason, usage));
                    finished = true;
                    break;
                }
            }
        }
    }
    if !finished {
        // The turn ends when the agent goes away: the run loop aborts the open calls.
        translator.abort_open(&mut events);
        events.push(finish(FinishReason::Stop, Usage::default()));
    }
    check_lifecycle(&events, None, TRANSLATOR_RULES);
});

fn finish(reason: FinishReason, usage: Usage) -> Event {
    Event::Finish {
        reason,
        usage,
        metrics: Metrics::default(),
    }
}
