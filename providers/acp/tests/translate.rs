//! The translator on `session/update` JSON, through its public API.

use patchbay_acp::Translator;
use patchbay_acp::translate::HostRun;
use patchbay_core::tool::ToolStatus;
use patchbay_core::{Event, ExecutedBy, FinishReason, ToolResult};
use serde_json::{Value, json};

fn run(translator: &mut Translator, updates: &[Value]) -> Vec<Event> {
    let mut out = Vec::new();
    for update in updates {
        translator.update(update, &mut out);
    }
    out
}

fn text(t: &str) -> Value {
    json!({ "sessionUpdate": "agent_message_chunk", "content": { "type": "text", "text": t } })
}

#[test]
fn message_and_thought_chunks_are_text_and_reasoning_blocks() {
    let mut translator = Translator::new("host", Vec::<String>::new());
    let events = run(
        &mut translator,
        &[
            json!({ "sessionUpdate": "agent_thought_chunk", "content": { "type": "text", "text": "Hmm" } }),
            text("Hel"),
            text("lo"),
            json!({ "sessionUpdate": "available_commands_update", "availableCommands": [] }),
        ],
    );
    assert_eq!(
        events,
        [
            Event::ReasoningDelta {
                index: 0,
                text: "Hmm".into()
            },
            Event::TextDelta {
                index: 1,
                text: "Hel".into()
            },
            Event::TextDelta {
                index: 1,
                text: "lo".into()
            },
        ]
    );
}

#[test]
fn an_agent_tool_call_keeps_its_acp_facts_and_a_step_follows_its_result() {
    let mut translator = Translator::new("host", Vec::<String>::new());
    let events = run(
        &mut translator,
        &[
            json!({ "sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read notes.txt", "kind": "read",
                    "status": "pending", "locations": [{ "path": "/w/notes.txt" }], "rawInput": { "path": "notes.txt" } }),
            json!({ "sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "in_progress" }),
            json!({ "sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed",
                    "content": [{ "type": "content", "content": { "type": "text", "text": "hello" } },
                                { "type": "diff", "path": "/w/a", "oldText": "x", "newText": "y" }] }),
            text("Done."),
        ],
    );
    assert!(matches!(&events[0], Event::ToolCallStart { id, name } if id == "t1" && name == "Read notes.txt"));
    assert!(
        matches!(&events[1], Event::ToolCall { input, executed_by: ExecutedBy::Provider, .. } if input == &json!({ "path": "notes.txt" }))
    );
    let Event::ToolResult { result, .. } = &events[2] else {
        panic!("{events:?}")
    };
    assert_eq!(result.status, ToolStatus::Completed);
    let metadata = result.metadata.clone().unwrap_or_default();
    assert_eq!(metadata["kind"], "read");
    assert_eq!(metadata["locations"][0]["path"], "/w/notes.txt");
    assert_eq!(metadata["diffs"][0]["newText"], "y");
    assert!(matches!(
        &events[3],
        Event::StepFinished {
            step: 0,
            reason: FinishReason::ToolUse,
            ..
        }
    ));
    assert_eq!(
        events[4],
        Event::TextDelta {
            index: 0,
            text: "Done.".into()
        }
    );
}

#[test]
fn a_host_tool_is_named_as_the_host_knows_it_and_carries_its_own_result() {
    for title in [
        "mcp__host__get_weather",
        "get_weather (host MCP Server)",
        "host/get_weather",
        "get_weather",
    ] {
        let mut translator = Translator::new("host", ["get_weather"]);
        translator.host_run(HostRun {
            name: "get_weather".into(),
            input: json!({ "city": "Paris" }),
            result: ToolResult::text("Sunny"),
        });
        let events = run(
            &mut translator,
            &[
                json!({ "sessionUpdate": "tool_call", "toolCallId": "c", "title": title, "rawInput": { "city": "Paris" } }),
                json!({ "sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "completed",
                        "content": [{ "type": "content", "content": { "type": "text", "text": "agent's copy" } }] }),
            ],
        );
        assert!(
            matches!(&events[1], Event::ToolCall { name, executed_by: ExecutedBy::Host, .. } if name == "get_weather"),
            "{title}: {events:?}"
        );
        assert!(
            matches!(&events[2], Event::ToolResult { result, .. } if *result == ToolResult::text("Sunny")),
            "{title}: {events:?}"
        );
    }
}

#[test]
fn the_stop_reason_and_usage_end_the_turn_and_open_calls_are_aborted() {
    let mut translator = Translator::new("host", Vec::<String>::new());
    let mut out = run(
        &mut translator,
        &[json!({ "sessionUpdate": "tool_call", "toolCallId": "t", "title": "Run", "status": "in_progress" })],
    );
    let answer = json!({ "stopReason": "max_tokens",
                         "usage": { "inputTokens": 10, "outputTokens": 5, "totalTokens": 15, "thoughtTokens": 2 } });
    let (reason, total) = translator.finish(&answer, &mut out);
    assert_eq!(reason, FinishReason::Length);
    assert_eq!(
        (total.input, total.output, total.reasoning),
        (Some(10), Some(5), Some(2))
    );
    assert!(matches!(out.last(), Some(Event::ToolResult { result, .. }) if result.status == ToolStatus::Aborted));
    for (stop, expected) in [
        ("end_turn", FinishReason::Stop),
        ("refusal", FinishReason::Refusal),
        ("cancelled", FinishReason::Cancelled),
        ("max_turn_requests", FinishReason::Other("max_turn_requests".into())),
    ] {
        assert_eq!(patchbay_acp::translate::finish_reason(stop), expected);
    }
}

#[test]
fn an_update_for_an_unknown_call_announces_it_and_a_plan_is_opaque() {
    let mut translator = Translator::new("host", Vec::<String>::new());
    let events = run(
        &mut translator,
        &[
            json!({ "sessionUpdate": "plan", "entries": [{ "content": "Look", "priority": "high", "status": "pending" }] }),
            json!({ "sessionUpdate": "tool_call_update", "toolCallId": "x", "title": "Fetch", "status": "failed" }),
            json!({ "sessionUpdate": "some_future_update", "x": 1 }),
            json!({ "no": "tag" }),
        ],
    );
    assert!(
        matches!(&events[0], Event::Opaque { provider, data, .. } if provider == "acp" && data["entries"][0]["content"] == "Look")
    );
    assert!(matches!(&events[1], Event::ToolCallStart { name, .. } if name == "Fetch"));
    assert!(matches!(&events[3], Event::ToolResult { result, .. } if result.status == ToolStatus::Failed));
    assert_eq!(events.len(), 4);
}

#[test]
fn a_permission_without_a_tool_call_announces_it_with_the_input_from_its_content() {
    // The Gemini CLI: no `tool_call`, no `rawInput`; the arguments as JSON text.
    let mut translator = Translator::new("host", ["get_weather"]);
    let tool_call = json!({ "toolCallId": "g1", "status": "pending", "title": "get_weather (host MCP Server)",
        "content": [{ "type": "content", "content": { "type": "text", "text": "{\"city\":\"Paris\"}" } }], "kind": "other" });
    let mut out = Vec::new();
    let (_, shown) = translator.permission(&tool_call, &mut out);
    assert_eq!(shown, json!({ "city": "Paris" }));
    assert!(
        matches!(&out[1], Event::ToolCall { name, input, executed_by: ExecutedBy::Host, .. }
            if name == "get_weather" && input == &json!({ "city": "Paris" })),
        "{out:?}"
    );
}

#[test]
fn the_gemini_quota_is_the_usage_when_there_is_no_usage() {
    let mut translator = Translator::new("host", Vec::<String>::new());
    let answer = json!({ "stopReason": "end_turn",
        "_meta": { "quota": { "token_count": { "input_tokens": 50, "output_tokens": 14 } } } });
    let (_, usage) = translator.finish(&answer, &mut Vec::new());
    assert_eq!((usage.input, usage.output), (Some(50), Some(14)));
}

#[test]
fn a_codex_mcp_call_is_a_host_call_with_its_arguments_and_its_approval_is_not_the_input() {
    let mut translator = Translator::new("host", ["get_weather"]);
    let mut out = run(
        &mut translator,
        &[
            json!({ "sessionUpdate": "tool_call", "toolCallId": "call_1", "title": "Tool: host/get_weather",
                  "status": "in_progress", "rawInput": { "server": "host", "tool": "get_weather", "arguments": { "city": "Paris" } } }),
        ],
    );
    let approval = json!({ "toolCallId": "call_1", "title": "Approve MCP tool call",
                           "rawInput": { "server_name": "host", "id": "mcp_tool_call_approval_call_1" } });
    translator.permission(&approval, &mut out);
    assert!(
        matches!(&out[1], Event::ToolCall { name, input, executed_by: ExecutedBy::Host, .. }
            if name == "get_weather" && input == &json!({ "city": "Paris" })),
        "{out:?}"
    );
    assert_eq!(out.len(), 2, "{out:?}");
}

#[test]
fn a_permission_before_its_tool_call_waits_for_the_real_input() {
    // Codex asks before its `tool_call`, with a `rawInput` describing the approval.
    let mut translator = Translator::new("host", Vec::<String>::new());
    let mut out = Vec::new();
    let approval = json!({ "toolCallId": "x1", "title": "Run echo", "rawInput": { "call_id": "x1", "reason": "r" } });
    let (id, shown) = translator.permission(&approval, &mut out);
    assert_eq!(
        (id.as_str(), &shown),
        ("x1", &json!({ "call_id": "x1", "reason": "r" }))
    );
    assert!(matches!(out.as_slice(), [Event::ToolCallStart { .. }]), "{out:?}");
    translator.update(
        &json!({ "sessionUpdate": "tool_call", "toolCallId": "x1", "title": "echo hi", "status": "in_progress",
                 "rawInput": { "command": ["echo", "hi"] } }),
        &mut out,
    );
    assert!(
        matches!(&out[1], Event::ToolCall { input, .. } if input == &json!({ "command": ["echo", "hi"] })),
        "{out:?}"
    );
}
