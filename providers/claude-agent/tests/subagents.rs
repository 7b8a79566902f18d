//! A sub-agent's lines (`parent_tool_use_id` set) as typed `SubagentMessage` events.

use patchbay_claude_agent::Translator;
use patchbay_core::{ContentBlock, Event, ExecutedBy, Message, Role, tool::ToolContent, validate::validate};
use serde_json::{Value, json};

fn translate(lines: &[Value]) -> Vec<Event> {
    let mut translator = Translator::new("m", "host");
    let mut events = Vec::new();
    for line in lines {
        translator.push_value(line).unwrap_or_else(|e| panic!("{e}"));
        while let Some(event) = translator.next_event() {
            events.push(event);
        }
    }
    assert!(validate(events.iter().map(Ok)).is_ok(), "{events:?}");
    events
}

fn sub(kind: &str, parent: &str, content: Value) -> Value {
    json!({ "type": kind, "message": { "role": kind, "id": "sub-m", "content": content }, "parent_tool_use_id": parent })
}

#[test]
fn a_subagents_messages_carry_the_parent_call_and_its_type() {
    let start = json!({ "subagent_type": "reviewer", "description": "Review", "prompt": "Review main.rs" });
    let lines = vec![
        json!({ "type": "system", "subtype": "init", "session_id": "s-1", "model": "m" }),
        json!({ "type": "assistant", "message": { "id": "m1", "model": "m", "content": [
            { "type": "tool_use", "id": "call-1", "name": "Agent", "input": start },
        ], "usage": { "input_tokens": 3, "output_tokens": 2 } }, "parent_tool_use_id": null }),
        // Partials of the sub-agent are skipped: its whole message follows.
        json!({ "type": "stream_event", "event": { "type": "message_start", "message": { "id": "sub-m" } }, "parent_tool_use_id": "call-1" }),
        sub("user", "call-1", json!([{ "type": "text", "text": "Review main.rs" }])),
        sub(
            "assistant",
            "call-1",
            json!([
                { "type": "thinking", "thinking": "look", "signature": "sig" },
                { "type": "tool_use", "id": "call-2", "name": "mcp__host__lookup", "input": { "q": "x" } },
                { "type": "tool_use", "id": "call-3", "name": "Read", "input": { "file_path": "main.rs" } },
            ]),
        ),
        sub(
            "user",
            "call-1",
            json!([
                { "type": "tool_result", "tool_use_id": "call-3", "content": "fn main() {}", "is_error": false },
            ]),
        ),
        sub("user", "call-unknown", json!("plain text")),
        json!({ "type": "result", "subtype": "success", "is_error": false, "session_id": "s-1" }),
    ];
    let events = translate(&lines);
    let messages: Vec<(&str, Option<&str>, &Message)> = events
        .iter()
        .filter_map(|e| match e {
            Event::SubagentMessage {
                parent_tool_use_id,
                subagent,
                message,
            } => Some((parent_tool_use_id.as_str(), subagent.as_deref(), message)),
            _ => None,
        })
        .collect();
    assert_eq!(messages.len(), 4, "{events:?}");
    assert!(
        messages[..3]
            .iter()
            .all(|(parent, kind, _)| *parent == "call-1" && *kind == Some("reviewer"))
    );
    assert_eq!(messages[0].2.role, Role::User);
    assert_eq!(messages[0].2.text(), "Review main.rs");
    let assistant = messages[1].2;
    assert_eq!(assistant.role, Role::Assistant);
    assert_eq!(
        assistant.content[0],
        ContentBlock::Thinking {
            text: "look".into(),
            signature: Some("sig".into())
        }
    );
    assert!(matches!(
        &assistant.content[1],
        ContentBlock::ToolUse { name, executed_by: ExecutedBy::Host, .. } if name == "lookup"
    ));
    assert!(matches!(
        &assistant.content[2],
        ContentBlock::ToolUse { name, executed_by: ExecutedBy::Provider, .. } if name == "Read"
    ));
    assert!(matches!(
        &messages[2].2.content[0],
        ContentBlock::ToolResult { tool_use_id, content, is_error: false, .. }
            if tool_use_id == "call-3" && content == &vec![ToolContent::text("fn main() {}")]
    ));
    assert_eq!(
        (messages[3].0, messages[3].1),
        ("call-unknown", None),
        "a parent never seen: no type"
    );
    assert_eq!(messages[3].2.text(), "plain text");
    assert!(
        !events.iter().any(|e| matches!(e, Event::Opaque { .. })),
        "no sub-agent line is left opaque: {events:?}"
    );
}
