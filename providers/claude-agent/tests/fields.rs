//! No field of any recorded CLI transcript is dropped unknowingly: every field of every stdout
//! line is turned into an event or listed as ignored, with its reason, in `FIELDS.md` (the crate
//! docs show it), and conformance's field audit proves both claims by changing each field and
//! watching the events.

use std::path::PathBuf;

use patchbay_claude_agent::Translator;
use patchbay_conformance::fields::{FieldAudit, FieldTable};
use patchbay_core::{ErrorKind, Event, ProviderError};
use serde_json::{Value, json};

/// The recorded real-CLI transcripts.
fn transcripts() -> Vec<PathBuf> {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/transcripts"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the transcripts folder")
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    files.sort();
    files
}

/// A line's kind: its `type`, with the inner event's type for `stream_event` lines and the
/// `subtype` for `system` lines (`stream_event/content_block_delta`, `system/init`).
fn kind_of(line: &Value) -> String {
    let kind = line.get("type").and_then(Value::as_str).unwrap_or_default();
    let inner = match kind {
        "stream_event" => line.pointer("/event/type"),
        "system" => line.get("subtype"),
        _ => None,
    };
    match inner.and_then(Value::as_str) {
        Some(inner) => format!("{kind}/{inner}"),
        None => kind.to_owned(),
    }
}

/// The lines of one transcript through one translator, as `tests/translate.rs` feeds them, with
/// structured output on (as a run with `--json-schema` has it; only the `structured_output`
/// transcript calls the CLI's `StructuredOutput` tool) and the MCP report on (as a run with MCP
/// servers of the caller's has it), so that what those turn into is audited too.
fn translate(frames: &[String]) -> (Vec<Event>, Option<ErrorKind>) {
    let mut translator = Translator::new("conformance-model", "host")
        .with_session_marker(Some(2))
        .with_output_tool(true)
        .with_mcp_report(true);
    let mut events = Vec::new();
    for frame in frames {
        let Ok(line) = serde_json::from_str::<Value>(frame) else {
            continue;
        };
        let pushed = translator.push_value(&line);
        while let Some(event) = translator.next_event() {
            events.push(event);
        }
        if let Err(error) = pushed {
            return (with_error(events, &error), Some(error.kind()));
        }
        if translator.is_done() {
            return (events, None);
        }
    }
    match translator.finish() {
        Ok(()) => (events, None),
        Err(error) => (with_error(events, &error), Some(error.kind())),
    }
}

/// The events with the error's message and facts (status, provider code, request id...) as a
/// last item: they reach the host too, and the audit compares only events and error kinds.
fn with_error(mut events: Vec<Event>, error: &ProviderError) -> Vec<Event> {
    events.push(Event::Opaque {
        index: 0,
        provider: "the error".into(),
        data: json!({ "message": error.message(), "facts": format!("{:?}", error.facts()) }),
    });
    events
}

#[test]
fn every_field_of_every_transcript_is_mapped_or_knowingly_ignored() {
    let table = FieldTable::from_markdown(include_str!("../FIELDS.md")).expect("FIELDS.md parses");
    let files = transcripts();
    assert!(files.len() >= 15, "the recorded transcripts are missing: {files:?}");
    let audit = FieldAudit::new(table, files, |frames| vec![translate(frames)]).with_kind_of(kind_of);
    match audit.run() {
        Ok(summary) => eprintln!("{summary:?}"),
        Err(problems) => panic!("{problems}"),
    }
}
