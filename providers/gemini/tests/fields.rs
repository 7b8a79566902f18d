//! No field of any recorded stream is dropped unknowingly: every field is turned into an event
//! or listed as ignored, with its reason, in `FIELDS.md` (the crate docs show it), and
//! conformance's field audit proves both claims by changing each field and watching the events.

use patchbay_conformance::fields::{FieldAudit, FieldTable, sse_body};
use patchbay_conformance::fixtures;
use patchbay_core::{Event, ProviderError};
use patchbay_gemini::{ApiError, Translator};
use serde_json::json;

/// An error's facts as an event: status, message, provider code, wait, and the Google status
/// it kept.
fn error_facts(error: &ProviderError) -> Event {
    let api = std::error::Error::source(error).and_then(|source| source.downcast_ref::<ApiError>());
    Event::Opaque {
        index: usize::MAX,
        provider: "error".into(),
        data: json!({
            "status": error.status(),
            "message": error.message(),
            "provider_code": error.facts().provider_code,
            "retry_after_ms": error.retry_after().map(|wait| wait.as_millis() as u64),
            "details": api.map(|api| api.details.clone()),
        }),
    }
}

#[test]
fn every_field_of_every_recording_is_mapped_or_knowingly_ignored() {
    let table = FieldTable::from_markdown(include_str!("../FIELDS.md")).expect("FIELDS.md parses");
    let audit = FieldAudit::new(table, fixtures::files("gemini"), |frames| {
        let (mut events, error) =
            patchbay_core::kit::translate(Translator::default(), [&sse_body(frames)[..]]).into_parts();
        // The audit compares error kinds only; the facts an error body's fields become join the
        // events, so the table's claims about them are proven too.
        if let Some(error) = &error {
            events.push(error_facts(error));
        }
        vec![(events, error.map(|e| e.kind()))]
    })
    .with_kind_of(|_| String::new());
    match audit.run() {
        Ok(summary) => eprintln!("{summary:?}"),
        Err(problems) => panic!("{problems}"),
    }
}
