//! The parser-free read of the common event: an object whose keys are only `type`,
//! `sequence_number`, `output_index`, `content_index`, `summary_index`, `delta` and keys the
//! translator does not read (`item_id`, `logprobs`, `obfuscation`...), in any order, with JSON
//! whitespace anywhere. That is every delta event (`response.output_text.delta`,
//! `response.reasoning_summary_text.delta`, `response.function_call_arguments.delta`), most of
//! a stream. It gives exactly the [`StreamEvent`] serde gives or `None`, and serde reads
//! anything else: another key the translator reads (`item`, `response`, `text`...), a repeated
//! key, a `delta` that is not a string, an escaped surrogate, a number that is not a plain
//! count. Values it does not keep are checked as JSON, not parsed. The `openai_responses` fuzz
//! target compares it with serde on every frame it takes.

use patchbay_core::kit::JsonCursor;

use super::event::StreamEvent;

/// The event serde would read from `payload`, when it is a common event; else `None`.
pub(crate) fn event(payload: &str) -> Option<StreamEvent<'_>> {
    let mut cursor = JsonCursor::new(payload);
    cursor.eat(b'{')?;
    let mut kind = None;
    let mut event = StreamEvent::empty();
    let mut seen = 0u8;
    let mut first = |bit: u8| {
        let new = seen & bit == 0;
        seen |= bit;
        new.then_some(())
    };
    if cursor.peek()? == b'}' {
        return None; // No `type`: serde's error to give.
    }
    loop {
        match cursor.key()? {
            "type" => {
                first(1)?;
                kind = Some(cursor.text_value()?);
            }
            "sequence_number" => {
                first(2)?;
                event.sequence_number = Some(cursor.count()?);
            }
            "output_index" => {
                first(4)?;
                event.output_index = Some(usize::try_from(cursor.count()?).ok()?);
            }
            "content_index" => {
                first(8)?;
                event.content_index = Some(usize::try_from(cursor.count()?).ok()?);
            }
            "summary_index" => {
                first(16)?;
                event.summary_index = Some(usize::try_from(cursor.count()?).ok()?);
            }
            "delta" => {
                first(32)?;
                event.delta = Some(cursor.text_value()?);
            }
            // The keys serde reads into other fields: serde's to read.
            "text" | "refusal" | "arguments" | "item" | "annotation" | "response" | "code" | "message" | "error" => {
                return None;
            }
            _ => cursor.skip_value(0)?,
        }
        if !cursor.more(b'}')? {
            break;
        }
    }
    if !cursor.at_end() {
        return None;
    }
    event.kind = kind?;
    Some(event)
}

/// Check that the parser-free read agrees with serde on one payload (the fuzz target calls
/// this on every frame): when it reads an event, serde reads the same.
///
/// # Panics
/// When they differ.
pub fn check(payload: &[u8]) {
    let Ok(text) = std::str::from_utf8(payload.trim_ascii()) else {
        return;
    };
    if let Some(fast) = event(text) {
        let slow: StreamEvent<'_> = serde_json::from_str(text)
            .unwrap_or_else(|error| panic!("the fast read took a payload serde refuses ({error}): {text}"));
        assert_eq!(fast, slow, "the fast read and serde differ on {text}");
    }
}
