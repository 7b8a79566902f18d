//! Recording (`record_dir`): every line both ways, secrets scrubbed, a manifest line; and the
//! recorded transcript replayed through the fake agent gives the same events.

use patchbay_core::{Event, Message, Signal, ToolSet};
use serde_json::{Value, json};

use crate::support::{Fake, call};

#[tokio::test]
async fn a_recorded_call_keeps_every_line_without_the_secrets_and_replays_the_same() {
    let fake = Fake::new(&json!({ "prompts": [[
        { "update": { "sessionUpdate": "agent_thought_chunk", "content": { "type": "text", "text": "Hmm." } } },
        { "update": { "sessionUpdate": "agent_message_chunk", "content": { "type": "text", "text": "Hi!" } } },
        { "end": { "stop_reason": "end_turn", "usage": { "inputTokens": 4, "outputTokens": 2, "totalTokens": 6 } } },
    ]] }));
    let records = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let config = fake
        .config()
        .with_env("FAKE_TOKEN", "sk-very-secret-value")
        .with_record_dir(Some(records.path().to_path_buf()));
    let provider = patchbay_acp::AcpProvider::new(config).unwrap_or_else(|e| panic!("{e}"));
    let first = call(
        &provider,
        &[Message::user("Hello")],
        &ToolSet::new(),
        &fake.context(),
        &Signal::new(),
    )
    .await;
    assert!(first.error.is_none(), "{:?}", first.error);

    let bodies: Vec<_> = walk(records.path())
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    let transcript = bodies
        .iter()
        .find(|p| !p.ends_with("manifest.jsonl"))
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .unwrap_or_else(|| panic!("no transcript in {bodies:?}"));
    assert!(!transcript.contains("sk-very-secret-value"));
    let lines: Vec<Value> = transcript
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let methods: Vec<_> = lines
        .iter()
        .filter(|l| l["dir"] == "send")
        .filter_map(|l| l["msg"]["method"].as_str())
        .collect();
    assert_eq!(methods, ["initialize", "session/new", "session/prompt"]);
    assert!(
        lines
            .iter()
            .any(|l| l["dir"] == "recv" && l["msg"]["method"] == "session/update")
    );

    let replay = Fake::new(&crate::replay::script_of(&transcript));
    let second = call(
        &*replay.provider(),
        &[Message::user("Hello")],
        &ToolSet::new(),
        &replay.context(),
        &Signal::new(),
    )
    .await;
    assert_eq!(without_timings(&first.events), without_timings(&second.events));
}

fn without_timings(events: &[Event]) -> Vec<Event> {
    events
        .iter()
        .map(|event| match event {
            Event::Finish { reason, usage, .. } => Event::Finish {
                reason: reason.clone(),
                usage: *usage,
                metrics: Default::default(),
            },
            other => other.clone(),
        })
        .collect()
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
