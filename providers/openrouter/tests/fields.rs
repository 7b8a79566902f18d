//! No field of any recorded stream is dropped unknowingly: every field is turned into an event
//! or listed as ignored, with its reason, in `FIELDS.md` (the crate docs show it), and
//! conformance's field audit proves both claims by changing each field and watching the events.

use patchbay_conformance::fields::{FieldAudit, FieldTable, sse_body};
use patchbay_conformance::fixtures;
use patchbay_core::kit::Framing;
use patchbay_openrouter::translate::Translator;

use crate::common::FAMILIES;

#[test]
fn every_field_of_every_recording_is_mapped_or_knowingly_ignored() {
    let table = FieldTable::from_markdown(include_str!("../FIELDS.md")).expect("FIELDS.md parses");
    let files = FAMILIES.into_iter().flat_map(fixtures::files).collect();
    let audit = FieldAudit::new(table, files, |frames| {
        let (events, error) =
            patchbay_core::kit::translate(Translator::new(Framing::DataLines), [&sse_body(frames)[..]]).into_parts();
        vec![(events, error.map(|e| e.kind()))]
    })
    .with_kind_of(|_| String::new());
    match audit.run() {
        Ok(summary) => eprintln!("{summary:?}"),
        Err(problems) => panic!("{problems}"),
    }
}
