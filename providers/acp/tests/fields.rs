//! No field of any recorded real-agent transcript is dropped unknowingly: every field of every
//! line the agents sent (and of what patchbay sent them) is turned into an event or listed as
//! ignored, with its reason, in `FIELDS.md` (the crate docs show it), and conformance's field
//! audit proves both claims by changing each field and watching the events.

use std::path::PathBuf;

use patchbay_acp::Translator;
use patchbay_conformance::fields::{FieldAudit, FieldTable, Outcomes};
use patchbay_core::{ErrorKind, Event};
use serde_json::Value;

/// The recorded transcripts of the real agents.
pub(crate) fn transcripts() -> Vec<PathBuf> {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/transcripts"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|entries| entries.flatten().map(|entry| entry.path()).collect())
        .unwrap_or_default();
    files.retain(|path| path.extension().is_some_and(|ext| ext == "jsonl"));
    files.sort();
    files
}

/// A line's kind: its direction, then the method (with the update's kind for
/// `session/update`), or `result` / `error` for an answer: `recv/session/update/tool_call`,
/// `send/session/prompt`, `recv/result/session/prompt` (a prompt's answer), `recv/result`.
fn kind_of(line: &Value) -> String {
    let dir = line.get("dir").and_then(Value::as_str).unwrap_or_default();
    let msg = &line["msg"];
    let what = match msg.get("method").and_then(Value::as_str) {
        Some("session/update") => format!(
            "session/update/{}",
            msg.pointer("/params/update/sessionUpdate")
                .and_then(Value::as_str)
                .unwrap_or_default()
        ),
        Some(method) => method.to_owned(),
        None if msg.get("error").is_some() => "error".into(),
        None if msg.pointer("/result/stopReason").is_some() => "result/session/prompt".into(),
        None => "result".into(),
    };
    format!("{dir}/{what}")
}

/// What the provider does with the agent's lines of one transcript: updates and permission
/// requests into the translator, each prompt's answer into `Finish` (or an error).
fn translate(frames: &[String]) -> Outcomes {
    let mut outcomes = Vec::new();
    let mut translator = Translator::new("host", ["get_weather"]);
    let mut events: Vec<Event> = Vec::new();
    let mut prompts: Vec<Value> = Vec::new();
    for frame in frames {
        let Ok(line) = serde_json::from_str::<Value>(frame) else {
            continue;
        };
        let msg = &line["msg"];
        if line.get("dir").and_then(Value::as_str) != Some("recv") {
            if msg["method"] == "session/prompt" {
                prompts.push(msg["id"].clone());
            }
            continue;
        }
        match msg.get("method").and_then(Value::as_str) {
            Some("session/update") => translator.update(&msg["params"]["update"], &mut events),
            Some("session/request_permission") => {
                let _ = translator.permission(&msg["params"]["toolCall"], &mut events);
            }
            Some(_) => {}
            None if msg.get("id").is_some_and(|id| prompts.contains(id)) => {
                if let Some(error) = msg.get("error") {
                    let code = error.get("code").and_then(Value::as_i64).unwrap_or_default();
                    let kind = if code == -32000 {
                        ErrorKind::Auth
                    } else {
                        ErrorKind::Server
                    };
                    outcomes.push((std::mem::take(&mut events), Some(kind)));
                } else {
                    let (reason, usage) = translator.finish(&msg["result"], &mut events);
                    events.push(Event::Finish {
                        reason,
                        usage,
                        metrics: Default::default(),
                    });
                    outcomes.push((std::mem::take(&mut events), None));
                }
                translator = Translator::new("host", ["get_weather"]);
            }
            None => {}
        }
    }
    if !events.is_empty() {
        outcomes.push((events, None));
    }
    outcomes
}

#[test]
fn every_field_of_the_recorded_transcripts_is_mapped_or_knowingly_ignored() {
    let table = FieldTable::from_markdown(include_str!("../FIELDS.md")).unwrap_or_else(|e| panic!("{e}"));
    let files = transcripts();
    assert!(files.len() >= 20, "the transcripts are missing: {files:?}");
    let summary = FieldAudit::new(table, files, translate)
        .with_kind_of(kind_of)
        .run()
        .unwrap_or_else(|problems| panic!("{problems}"));
    assert!(summary.mapped_proven > 10, "{summary:?}");
}
