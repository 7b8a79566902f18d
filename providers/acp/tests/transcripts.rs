//! The real agents' recorded transcripts replayed through the provider (the fake agent plays
//! each agent's side, `replay::script_of`): every prompt of every transcript gives valid events,
//! snapshotted (`tests/snapshots/transcripts/<name>.snap`), without the agents installed.

use std::time::Duration;

use patchbay_acp::AcpProvider;
use patchbay_conformance::{normalize, settings_at};
use patchbay_core::context::Session;
use patchbay_core::{Message, Signal, ToolContext, ToolResult, ToolSet};
use serde_json::{Value, json};

use crate::support::{Fake, call};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct CityInput {
    /// The city.
    city: String,
}

fn tools() -> ToolSet {
    ToolSet::new().with(patchbay_core::FnTool::new(
        "get_weather",
        "Current weather for a city.",
        |input: CityInput, _cx: ToolContext| async move { ToolResult::text(format!("Sunny in {}.", input.city)) },
    ))
}

#[tokio::test]
async fn every_recorded_transcript_replays_to_valid_events() {
    let files = crate::fields::transcripts();
    assert!(files.len() >= 20, "the transcripts are missing: {files:?}");
    let settings = settings_at(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots/transcripts").into());
    for path in files {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let transcript = std::fs::read_to_string(&path).unwrap_or_default();
        let script = crate::replay::script_of(&transcript);
        let prompts = script["prompts"].as_array().map_or(0, Vec::len);
        let fake = Fake::new(&script);
        let provider = AcpProvider::new(fake.config().with_keep_alive(Some(Duration::from_secs(30))))
            .unwrap_or_else(|e| panic!("{e}"));
        let mut outcomes: Vec<Value> = Vec::new();
        let mut session = None;
        for turn in 0..prompts {
            let mut context = fake.context();
            if let Some(id) = &session {
                context = context.with_session(Session::Resume { id: String::clone(id) });
            }
            // Tools make every call park-free; keep-alive needs none, so the second turn of a
            // transcript reuses the agent only without them.
            let tools = if prompts > 1 { ToolSet::new() } else { tools() };
            let run = call(
                &provider,
                &[Message::user(format!("turn {turn}"))],
                &tools,
                &context,
                &Signal::new(),
            )
            .await;
            patchbay_core::validate::validate(run.events.iter().map(Ok).chain(run.error.as_ref().map(Err)))
                .unwrap_or_else(|v| panic!("{name}, turn {turn}: {v:?}"));
            session = session.or(run.session());
            let kind = run.error.as_ref().map(|e| format!("{:?}", e.kind()));
            let outcome = normalize(&run.events, run.error.as_ref().map(patchbay_core::ProviderError::kind));
            let mut value = serde_json::to_value(&outcome).unwrap_or_default();
            // Session ids are the fake's own.
            strip_session(&mut value);
            outcomes.push(json!({ "turn": turn, "outcome": value, "error": kind }));
        }
        settings.bind(|| insta::assert_json_snapshot!(name.clone(), outcomes));
    }
}

fn strip_session(value: &mut Value) {
    if let Some(events) = value.get_mut("events").and_then(Value::as_array_mut) {
        for event in events {
            if let Some(object) = event.as_object_mut() {
                object.remove("session_id");
            }
        }
    }
}
