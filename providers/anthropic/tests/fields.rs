//! No field of any recorded stream is dropped unknowingly: every field is turned into an event
//! or listed as ignored, with its reason, in `FIELDS.md` (the crate docs show it), and
//! conformance's field audit proves both claims by changing each field and watching the events.

use crate::common::replay;
use patchbay_conformance::fields::{FieldAudit, FieldTable, sse_body};
use patchbay_conformance::fixtures;
use serde_json::Value;

#[test]
fn every_field_of_every_recording_is_mapped_or_knowingly_ignored() {
    let table = FieldTable::from_markdown(include_str!("../FIELDS.md")).expect("FIELDS.md parses");
    let files = fixtures::files("anthropic");
    assert!(files.len() >= 80, "the recorded Anthropic streams are missing");
    let audit = FieldAudit::new(table, files, |frames| {
        replay(&sse_body(frames))
            .into_iter()
            .map(|r| (r.events, r.error.map(|e| e.kind())))
            .collect()
    })
    // A block's fields depend on its kind (a host `tool_use` drops its `caller`, a server tool
    // block keeps it verbatim): `content_block_start` paths name the block type too.
    .with_kind_of(|value| {
        let kind = value.get("type").and_then(Value::as_str).unwrap_or_default();
        match value.pointer("/content_block/type").and_then(Value::as_str) {
            Some(block) if kind == "content_block_start" => format!("{kind}/{block}"),
            _ => kind.to_owned(),
        }
    });
    match audit.run() {
        Ok(summary) => eprintln!("{summary:?}"),
        Err(problems) => panic!("{problems}"),
    }
}
