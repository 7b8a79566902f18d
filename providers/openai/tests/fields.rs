//! No field of any recorded stream is dropped unknowingly: every field is turned into an event
//! or listed as ignored, with its reason, in `FIELDS.md` (the crate docs show it), and
//! conformance's field audit proves both claims by changing each field and watching the events.

use patchbay_conformance::fields::{FieldAudit, FieldTable, sse_body};
use patchbay_conformance::fixtures;
use patchbay_core::{Event, ProviderError};
use patchbay_openai::Translator;
use serde_json::{Value, json};

/// An error's facts as an event: message and provider code.
fn error_facts(error: &ProviderError) -> Event {
    Event::Opaque {
        index: usize::MAX,
        provider: "error".into(),
        data: json!({
            "message": error.message(),
            "provider_code": error.facts().provider_code,
        }),
    }
}

#[test]
fn every_field_of_every_recording_is_mapped_or_knowingly_ignored() {
    let table = FieldTable::from_markdown(include_str!("../FIELDS.md")).expect("FIELDS.md parses");
    let audit = FieldAudit::new(table, fixtures::files("openai-responses"), |frames| {
        let (mut events, error) =
            patchbay_core::kit::translate(Translator::default(), [&sse_body(frames)[..]]).into_parts();
        if let Some(error) = &error {
            events.push(error_facts(error));
        }
        vec![(events, error.map(|e| e.kind()))]
    })
    // An item event's kind names its item's type: each item type's fields are their own rows.
    .with_kind_of(|value| {
        let kind = value.get("type").and_then(Value::as_str).unwrap_or_default();
        match value.pointer("/item/type").and_then(Value::as_str) {
            Some(item) => format!("{kind}/{item}"),
            None => kind.to_string(),
        }
    });
    match audit.run() {
        Ok(summary) => eprintln!("{summary:?}"),
        Err(problems) => panic!("{problems}"),
    }
}
