//! The body `useChat` posts: read leniently, turned into patchbay messages and decisions.

use patchbay_core::context::Approval;
use patchbay_core::{ContentBlock, ExecutedBy, ImageSource, Role};
use patchbay_ui::request::{ToolState, Trigger, UiPart};
use patchbay_ui::{ChatRequest, request::DEFAULT_DENIAL};
use serde_json::{Value, json};

use crate::settings;

fn request(body: Value) -> ChatRequest {
    ChatRequest::from_json(body.to_string().as_bytes()).expect("a request")
}

fn chat(messages: Value) -> ChatRequest {
    request(json!({ "id": "chat-1", "messages": messages, "trigger": "submit-message", "messageId": null }))
}

/// A conversation with every part kind: two steps with a host call, a provider call, signed
/// reasoning, redacted reasoning, an image, an opaque block, a source and a data part.
fn conversation() -> Value {
    json!([
        { "id": "s1", "role": "system", "parts": [{ "type": "text", "text": "Be brief." }] },
        { "id": "u1", "role": "user", "parts": [
            { "type": "text", "text": "Weather in Paris? See the photo." },
            { "type": "file", "mediaType": "image/png", "url": "data:image/png;base64,iVBORw0KGgo=" },
            { "type": "file", "mediaType": "image/jpeg", "url": "https://example.com/p.jpg" },
            { "type": "file", "mediaType": "application/pdf", "url": "data:application/pdf;base64,JVBE" }
        ] },
        { "id": "a1", "role": "assistant", "parts": [
            { "type": "step-start" },
            { "type": "reasoning", "text": "Check it.", "state": "done",
              "providerMetadata": { "patchbay": { "signature": "sig-1" } } },
            { "type": "reasoning", "text": "", "providerMetadata": { "patchbay": { "redactedData": "xyz" } } },
            { "type": "text", "text": "Checking.", "state": "done" },
            { "type": "tool-web_search", "toolCallId": "srv_1", "state": "output-available",
              "input": { "q": "paris" }, "providerExecuted": true,
              "output": { "content": [{ "type": "text", "text": "3 hits" }], "status": "completed" } },
            { "type": "tool-get_weather", "toolCallId": "call_1", "state": "output-available",
              "input": { "city": "Paris" }, "callProviderMetadata": { "patchbay": { "signature": "sig-call" } },
              "output": { "content": [{ "type": "text", "text": "Sunny." }], "status": "completed" } },
            { "type": "data-opaque", "data": { "index": 3, "provider": "anthropic", "data": { "type": "x" } } },
            { "type": "step-start" },
            { "type": "source-url", "sourceId": "1", "url": "https://example.com" },
            { "type": "data-subagent", "data": { "parentToolCallId": "t" } },
            { "type": "text", "text": "It is sunny." }
        ] },
        { "id": "u2", "role": "user", "parts": [{ "type": "text", "text": "Thanks!" }] }
    ])
}

#[test]
fn to_messages_turns_every_part_into_its_block() {
    let messages = chat(conversation()).to_messages();
    settings("request").bind(|| insta::assert_json_snapshot!("to_messages", messages));
}

#[test]
fn a_step_with_host_calls_becomes_an_assistant_message_and_a_user_message_of_results() {
    let messages = chat(conversation()).to_messages();
    let roles: Vec<Role> = messages.iter().map(|message| message.role).collect();
    // user, assistant (step 1), user (results, then nothing else: step 2 follows), assistant
    // (step 2), user ("Thanks!").
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::User, Role::Assistant, Role::User]
    );
    assert!(matches!(
        &messages[1].content[..],
        [
            ContentBlock::Thinking { signature: Some(_), .. },
            ContentBlock::RedactedThinking { .. },
            ContentBlock::Text { .. },
            ContentBlock::ToolUse {
                executed_by: ExecutedBy::Provider,
                ..
            },
            ContentBlock::ToolResult { .. },
            ContentBlock::ToolUse {
                executed_by: ExecutedBy::Host,
                signature: Some(_),
                ..
            },
            ContentBlock::Opaque { .. }
        ]
    ));
    assert!(matches!(
        &messages[2].content[..],
        [ContentBlock::ToolResult { is_error: false, .. }]
    ));
}

#[test]
fn file_parts_become_images_and_other_files_are_left_out() {
    let messages = chat(conversation()).to_messages();
    let images: Vec<&ImageSource> = messages[0]
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Image { source, .. } => Some(source),
            _ => None,
        })
        .collect();
    assert_eq!(images.len(), 2);
    assert_eq!(
        images[0],
        &ImageSource::Base64 {
            data: "iVBORw0KGgo=".into()
        }
    );
    assert_eq!(
        images[1],
        &ImageSource::Url {
            url: "https://example.com/p.jpg".into()
        }
    );
}

#[test]
fn system_messages_are_given_apart() {
    let request = chat(conversation());
    assert_eq!(request.system().as_deref(), Some("Be brief."));
    assert!(chat(json!([])).system().is_none());
}

#[test]
fn failed_and_denied_outputs_become_error_results() {
    let messages = chat(json!([
        { "id": "u", "role": "user", "parts": [{ "type": "text", "text": "Go" }] },
        { "id": "a", "role": "assistant", "parts": [
            { "type": "tool-explode", "toolCallId": "c1", "state": "output-error", "input": {}, "errorText": "boom" },
            { "type": "tool-explode", "toolCallId": "c2", "state": "output-denied", "input": {},
              "approval": { "id": "c2", "approved": false } },
            { "type": "dynamic-tool", "toolName": "lookup", "toolCallId": "c3", "state": "output-available",
              "input": {}, "output": "plain text from a client tool" }
        ] }
    ]))
    .to_messages();
    let results: Vec<(String, bool)> = messages[2]
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ToolResult { content, is_error, .. } => {
                let text = serde_json::to_value(content).ok()?[0]["text"].as_str()?.to_owned();
                Some((text, *is_error))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            ("boom".to_owned(), true),
            (DEFAULT_DENIAL.to_owned(), true),
            ("plain text from a client tool".to_owned(), false)
        ]
    );
}

#[test]
fn calls_without_a_result_are_kept_only_at_the_end() {
    let pending = json!({ "id": "a", "role": "assistant", "parts": [
        { "type": "text", "text": "Let me check." },
        { "type": "tool-get_weather", "toolCallId": "c1", "state": "approval-requested",
          "input": { "city": "Paris" }, "approval": { "id": "c1" } }
    ] });
    let user = json!({ "id": "u", "role": "user", "parts": [{ "type": "text", "text": "Weather?" }] });
    let at_end = chat(json!([user.clone(), pending.clone()])).to_messages();
    assert!(matches!(
        at_end.last().map(|m| &m.content[..]),
        Some([ContentBlock::Text { .. }, ContentBlock::ToolUse { .. }])
    ));
    let later = json!({ "id": "u2", "role": "user", "parts": [{ "type": "text", "text": "Never mind." }] });
    let abandoned = chat(json!([user, pending, later])).to_messages();
    assert!(matches!(&abandoned[1].content[..], [ContentBlock::Text { .. }]));
}

#[test]
fn decisions_come_from_approval_responded_parts() {
    let request = chat(json!([
        { "id": "a", "role": "assistant", "parts": [
            { "type": "tool-a", "toolCallId": "yes", "state": "approval-responded", "input": {},
              "approval": { "id": "yes", "approved": true } },
            { "type": "tool-a", "toolCallId": "no", "state": "approval-responded", "input": {},
              "approval": { "id": "no", "approved": false, "reason": "Too risky." } },
            { "type": "tool-a", "toolCallId": "no-reason", "state": "approval-responded", "input": {},
              "approval": { "id": "no-reason", "approved": false } },
            { "type": "tool-a", "toolCallId": "waiting", "state": "approval-requested", "input": {},
              "approval": { "id": "waiting" } },
            { "type": "tool-a", "toolCallId": "done", "state": "output-available", "input": {}, "output": 1,
              "approval": { "id": "done", "approved": true } }
        ] }
    ]));
    let decisions = request.decisions();
    assert_eq!(decisions.len(), 3);
    assert_eq!(decisions["yes"], Approval::Allow);
    assert_eq!(decisions["no"], Approval::deny("Too risky."));
    assert_eq!(decisions["no-reason"], Approval::deny(DEFAULT_DENIAL));
}

#[test]
fn unknown_fields_parts_and_states_are_kept_without_failing() {
    let request = request(json!({
        "id": "chat-1",
        "trigger": "some-new-trigger",
        "model": "fast",
        "messages": [{ "id": "m", "role": "assistant", "futureField": 1, "parts": [
            { "type": "custom", "kind": "x" },
            { "type": "tool-a", "toolCallId": "c", "state": "some-new-state", "input": {} },
            { "type": "text", "text": "ok", "state": "done", "extra": true }
        ] }]
    }));
    assert_eq!(request.trigger, Trigger::Other("some-new-trigger".into()));
    assert_eq!(request.body["model"], "fast");
    let parts = &request.messages[0].parts;
    assert!(matches!(&parts[0], UiPart::Other(value) if value["kind"] == "x"));
    assert!(matches!(&parts[1], UiPart::Tool(tool) if tool.state == ToolState::Other("some-new-state".into())));
    assert!(matches!(&parts[2], UiPart::Text { text, .. } if text == "ok"));
    // A part written back reads the same.
    let again: Vec<UiPart> = serde_json::from_value(json!(parts)).expect("parts");
    assert_eq!(&again, parts);
}

#[test]
fn a_minimal_body_reads_with_defaults() {
    let request = request(json!({ "messages": [] }));
    assert_eq!(request.trigger, Trigger::SubmitMessage);
    assert!(request.message_id.is_none() && request.id.is_empty());
    assert!(request.last_assistant().is_none());
}
