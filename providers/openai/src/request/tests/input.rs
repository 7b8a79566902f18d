//! The conversation: messages to `input` items, tool outputs, reasoning, built-in tools.

use patchbay_core::tool::ToolContent;
use patchbay_core::{ContentBlock, Message, RequestContext, Role, ToolSet, Warning};
use serde_json::json;

use super::{
    MODEL, base64, built, call, codes, image, input, message, opaque, provider_call, result, signature, text, thinking,
    toolset, try_build, url, weather, with_options,
};

#[test]
fn user_text_images_and_files() {
    let messages = [message(
        Role::User,
        vec![
            text("Look:"),
            image("image/png", base64("iVBORw0K")),
            image("image/jpeg", url("https://example.com/cat.jpg")),
            image("application/pdf", base64("JVBERi0x")),
            image("application/pdf", url("https://example.com/report.pdf")),
            image(
                "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
                base64("UEsDBA"),
            ),
            image("application/x-very-long-subtype", base64("AAAA")),
            image("text/plain; charset=utf-8", base64("aGk=")),
            text(""),
        ],
    )];
    let built = built(&messages, None);
    assert_eq!(
        input(&built),
        [json!({ "type": "message", "role": "user", "content": [
            { "type": "input_text", "text": "Look:" },
            { "type": "input_image", "image_url": "data:image/png;base64,iVBORw0K", "detail": "auto" },
            { "type": "input_image", "image_url": "https://example.com/cat.jpg", "detail": "auto" },
            { "type": "input_file", "filename": "file.pdf", "file_data": "data:application/pdf;base64,JVBERi0x" },
            { "type": "input_file", "file_url": "https://example.com/report.pdf" },
            { "type": "input_file", "filename": "file.docx",
              "file_data": "data:application/vnd.openxmlformats-officedocument.wordprocessingml.document;base64,UEsDBA" },
            { "type": "input_file", "filename": "file.bin", "file_data": "data:application/x-very-long-subtype;base64,AAAA" },
            { "type": "input_file", "filename": "file.txt", "file_data": "data:text/plain;charset=utf-8;base64,aGk=" },
        ] })]
    );
    assert!(built.warnings.is_empty(), "{:?}", built.warnings);
    let high = built_with(&messages, json!({ "image_detail": "high" }));
    assert_eq!(high.body["input"][0]["content"][1]["detail"], "high");
    assert_eq!(high.body["input"][0]["content"][2]["detail"], "high");
}

fn built_with(messages: &[Message], options: serde_json::Value) -> super::Built {
    built(messages, Some(&with_options(options)))
}

#[test]
fn a_user_message_with_nothing_to_send_is_no_item() {
    let built = built(&[message(Role::User, vec![text("")])], None);
    assert!(input(&built).is_empty(), "{}", built.body);
}

#[test]
fn tool_results_come_first_then_the_message() {
    let messages = [message(
        Role::User,
        vec![
            text("Here you go."),
            result("call_a", vec![ToolContent::text("sunny")], false),
            result("call_b", vec![ToolContent::text("rain")], false),
        ],
    )];
    assert_eq!(
        input(&built(&messages, None)),
        [
            json!({ "type": "function_call_output", "call_id": "call_a", "output": "sunny" }),
            json!({ "type": "function_call_output", "call_id": "call_b", "output": "rain" }),
            json!({ "type": "message", "role": "user", "content": [{ "type": "input_text", "text": "Here you go." }] }),
        ]
    );
}

#[test]
fn a_result_without_media_is_one_string() {
    let content = vec![
        ToolContent::text("first"),
        ToolContent::Json {
            value: json!({ "celsius": 21 }),
        },
        ToolContent::Resource {
            uri: "file:///notes.md".into(),
            mime_type: Some("text/markdown".into()),
            text: Some("# Notes".into()),
            blob: None,
        },
        ToolContent::Resource {
            uri: "file:///empty".into(),
            mime_type: None,
            text: None,
            blob: None,
        },
        ToolContent::Resource {
            uri: "file:///blob".into(),
            mime_type: None,
            text: None,
            blob: Some("AAAA".into()),
        },
    ];
    let built = built(&[message(Role::User, vec![result("c1", content, false)])], None);
    assert_eq!(
        input(&built)[0]["output"],
        "first\n{\"celsius\":21}\nfile:///notes.md\n# Notes\nfile:///empty\n\
         file:///blob\n[binary resource of unknown type, 4 base64 bytes not shown]"
    );
    let empty = built_with(&[message(Role::User, vec![result("c2", Vec::new(), false)])], json!({}));
    assert_eq!(input(&empty)[0]["output"], "");
}

#[test]
fn a_result_with_media_is_a_list_of_parts_in_order() {
    let content = vec![
        ToolContent::text("Two files:"),
        ToolContent::Image {
            media_type: "image/png".into(),
            data: "iVBORw0K".into(),
        },
        ToolContent::Resource {
            uri: "file:///tmp/report.pdf?v=2".into(),
            mime_type: Some("application/pdf".into()),
            text: None,
            blob: Some("JVBERi0x".into()),
        },
        ToolContent::Resource {
            uri: "mem://scan".into(),
            mime_type: Some("application/pdf".into()),
            text: None,
            blob: Some("JVBERi0y".into()),
        },
        ToolContent::Resource {
            uri: "mem://shot".into(),
            mime_type: Some("image/jpeg".into()),
            text: None,
            blob: Some("/9j/4A".into()),
        },
    ];
    let built = built(&[message(Role::User, vec![result("c1", content, false)])], None);
    assert_eq!(
        input(&built)[0]["output"],
        json!([
            { "type": "input_text", "text": "Two files:" },
            { "type": "input_image", "image_url": "data:image/png;base64,iVBORw0K" },
            { "type": "input_text", "text": "file:///tmp/report.pdf?v=2" },
            { "type": "input_file", "filename": "report.pdf", "file_data": "data:application/pdf;base64,JVBERi0x" },
            { "type": "input_text", "text": "mem://scan" },
            { "type": "input_file", "filename": "file.pdf", "file_data": "data:application/pdf;base64,JVBERi0y" },
            { "type": "input_text", "text": "mem://shot" },
            { "type": "input_image", "image_url": "data:image/jpeg;base64,/9j/4A" },
        ])
    );
}

#[test]
fn an_error_result_is_sent_as_it_is() {
    let messages = [message(
        Role::User,
        vec![result("c1", vec![ToolContent::text("service unavailable")], true)],
    )];
    assert_eq!(
        input(&built(&messages, None)),
        [json!({ "type": "function_call_output", "call_id": "c1", "output": "service unavailable" })]
    );
}

#[test]
fn consecutive_assistant_texts_share_one_message_item_without_ids() {
    let messages = [
        Message::user("Hi"),
        message(
            Role::Assistant,
            vec![
                text("Hello"),
                ContentBlock::Text {
                    text: " there.".into(),
                    citations: vec![json!({ "url": "https://example.com" })],
                    cache_control: None,
                    signature: Some("not-ours".into()),
                },
                text(""),
                thinking("Dropped: no signature.", None),
                text("Still the same item."),
                thinking("Then a step.", Some("enc-1")),
                text("After."),
            ],
        ),
        Message::user("Go on"),
    ];
    let built = built(&messages, None);
    assert_eq!(
        input(&built),
        [
            json!({ "type": "message", "role": "user", "content": [{ "type": "input_text", "text": "Hi" }] }),
            json!({ "type": "message", "role": "assistant", "content": [
                { "type": "output_text", "text": "Hello" },
                { "type": "output_text", "text": " there." },
                { "type": "output_text", "text": "Still the same item." },
            ] }),
            json!({ "type": "reasoning", "summary": [{ "type": "summary_text", "text": "Then a step." }], "encrypted_content": "enc-1" }),
            json!({ "type": "message", "role": "assistant", "content": [{ "type": "output_text", "text": "After." }] }),
            json!({ "type": "message", "role": "user", "content": [{ "type": "input_text", "text": "Go on" }] }),
        ]
    );
    assert_eq!(codes(&built.warnings), [Warning::REASONING_NOT_SENT]);
}

#[test]
fn the_reasoning_round_trip_keeps_the_signature_byte_for_byte_and_sends_no_id() {
    let encrypted = signature();
    assert_eq!(encrypted.len(), 2000);
    let messages = [
        Message::user("Weather in Paris?"),
        message(
            Role::Assistant,
            vec![
                thinking("**Checking the weather**\n\nI should call the tool.", Some(&encrypted)),
                thinking("", Some("enc-empty")),
                call("call_w1", "get_weather", json!({ "city": "Paris" })),
            ],
        ),
        message(
            Role::User,
            vec![result("call_w1", vec![ToolContent::text("Sunny in Paris")], false)],
        ),
    ];
    let built = try_build(&messages, &toolset(vec![weather()]), MODEL, None).unwrap_or_else(|e| panic!("{e}"));
    let items = input(&built);
    let kinds: Vec<&str> = items.iter().map(|item| item["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "message",
            "reasoning",
            "reasoning",
            "function_call",
            "function_call_output"
        ]
    );
    assert_eq!(
        items[1],
        json!({
            "type": "reasoning",
            "summary": [{ "type": "summary_text", "text": "**Checking the weather**\n\nI should call the tool." }],
            "encrypted_content": encrypted,
        })
    );
    assert_eq!(items[1]["encrypted_content"].as_str(), Some(encrypted.as_str()));
    assert_eq!(
        items[2],
        json!({ "type": "reasoning", "summary": [], "encrypted_content": "enc-empty" })
    );
    assert!(items.iter().all(|item| item.get("id").is_none()), "no item ids");
    assert_eq!(built.body["include"], json!(["reasoning.encrypted_content"]));
    assert!(built.warnings.is_empty(), "{:?}", built.warnings);
}

#[test]
fn reasoning_without_a_signature_gives_one_warning() {
    let messages = [
        Message::user("Hi"),
        message(
            Role::Assistant,
            vec![
                thinking("unsigned", None),
                ContentBlock::RedactedThinking {
                    data: "anthropic".into(),
                },
                text("Hello."),
            ],
        ),
        message(Role::Assistant, vec![thinking("again", None)]),
        Message::user("Bye"),
    ];
    let built = built(&messages, None);
    assert_eq!(codes(&built.warnings), [Warning::REASONING_NOT_SENT]);
    assert!(!built.warnings[0].message.contains("unsigned"), "no content quoted");
    assert!(!input(&built).iter().any(|item| item["type"] == "reasoning"));
}

#[test]
fn parallel_function_calls_and_their_outputs_keep_their_order() {
    let messages = [
        Message::user("Paris, Rome and the time?"),
        message(
            Role::Assistant,
            vec![
                thinking("", Some("enc-1")),
                call("call_a", "get_weather", json!({ "city": "Paris" })),
                call("call_b", "get_weather", json!({ "city": "Rome" })),
                call("call_c", "now", serde_json::Value::Null),
            ],
        ),
        message(
            Role::User,
            vec![
                result("call_a", vec![ToolContent::text("sunny")], false),
                result("call_b", vec![ToolContent::text("rain")], false),
                result("call_c", vec![ToolContent::text("noon")], false),
            ],
        ),
    ];
    let items = input(&built(&messages, None));
    assert_eq!(
        items[1..],
        [
            json!({ "type": "reasoning", "summary": [], "encrypted_content": "enc-1" }),
            json!({ "type": "function_call", "call_id": "call_a", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}" }),
            json!({ "type": "function_call", "call_id": "call_b", "name": "get_weather", "arguments": "{\"city\":\"Rome\"}" }),
            json!({ "type": "function_call", "call_id": "call_c", "name": "now", "arguments": "{}" }),
            json!({ "type": "function_call_output", "call_id": "call_a", "output": "sunny" }),
            json!({ "type": "function_call_output", "call_id": "call_b", "output": "rain" }),
            json!({ "type": "function_call_output", "call_id": "call_c", "output": "noon" }),
        ]
    );
}

/// A conversation with a web search and a code interpreter run by OpenAI.
fn built_in_conversation() -> Vec<Message> {
    vec![
        Message::user("Search, then compute."),
        message(
            Role::Assistant,
            vec![
                provider_call(
                    "ws_1",
                    "web_search",
                    json!({ "type": "search", "query": "secret query" }),
                ),
                result("ws_1", vec![ToolContent::text("[]")], false),
                provider_call("ci_1", "code_interpreter", json!({ "code": "print(1)" })),
                result("ci_1", vec![ToolContent::text("1")], false),
                text("Done."),
            ],
        ),
        Message::user("Thanks"),
    ]
}

#[test]
fn built_in_calls_are_left_out_when_nothing_was_stored() {
    let built = built(&built_in_conversation(), None);
    let kinds: Vec<String> = input(&built).iter().map(|item| item["type"].to_string()).collect();
    assert_eq!(kinds, ["\"message\"", "\"message\"", "\"message\""]);
    assert_eq!(codes(&built.warnings), [Warning::DROPPED_CONTENT], "one warning");
    assert!(!built.warnings[0].message.contains("secret"));
}

#[test]
fn built_in_calls_are_item_references_once_per_id_when_stored() {
    let built = built(&built_in_conversation(), Some(&with_options(json!({ "store": true }))));
    assert_eq!(
        input(&built)[1..3],
        [
            json!({ "type": "item_reference", "id": "ws_1" }),
            json!({ "type": "item_reference", "id": "ci_1" }),
        ]
    );
    assert_eq!(
        input(&built)[3],
        json!({ "type": "message", "role": "assistant", "content": [{ "type": "output_text", "text": "Done." }] })
    );
    assert!(built.warnings.is_empty(), "{:?}", built.warnings);
    assert_eq!(built.body["store"], true);
}

#[test]
fn openai_opaque_blocks_go_back_verbatim_and_others_are_dropped() {
    let approval_request = json!({ "type": "mcp_approval_request", "id": "mcpr_1", "server_label": "deepwiki", "name": "ask", "arguments": "{}" });
    let approval = json!({ "type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": true });
    let part = json!({ "type": "input_file", "file_id": "file-123" });
    let messages = [
        Message::user("Ask the wiki."),
        message(
            Role::Assistant,
            vec![
                text("I need approval."),
                opaque("openai", approval_request.clone()),
                opaque("openai", json!({ "finish": { "status": "completed" } })),
                opaque("anthropic", json!({ "type": "server_tool_use" })),
            ],
        ),
        message(
            Role::User,
            vec![
                text("Approved:"),
                opaque("openai", approval.clone()),
                text("and this file"),
                opaque("openai", part.clone()),
                opaque("openai", json!({ "no_type": true })),
                opaque("gemini", json!({ "text": "x" })),
            ],
        ),
    ];
    let built = built(&messages, None);
    assert_eq!(
        input(&built)[1..],
        [
            json!({ "type": "message", "role": "assistant", "content": [{ "type": "output_text", "text": "I need approval." }] }),
            approval_request,
            json!({ "type": "message", "role": "user", "content": [{ "type": "input_text", "text": "Approved:" }] }),
            approval,
            json!({ "type": "message", "role": "user", "content": [{ "type": "input_text", "text": "and this file" }, part] }),
        ]
    );
    assert_eq!(
        codes(&built.warnings),
        [Warning::DROPPED_CONTENT, Warning::DROPPED_CONTENT]
    );
    assert!(built.warnings[0].message.starts_with("message 1:") && built.warnings[0].message.contains("anthropic"));
    assert!(built.warnings[1].message.starts_with("message 2:") && built.warnings[1].message.contains("gemini"));
}

#[test]
fn reasoning_and_calls_in_a_user_message_and_images_in_an_answer_are_not_sent() {
    let messages = [
        message(
            Role::User,
            vec![
                text("canary-user"),
                thinking("canary-thought", Some("sig")),
                call("c1", "get_weather", json!({ "city": "canary" })),
                ContentBlock::RedactedThinking {
                    data: "canary-redacted".into(),
                },
            ],
        ),
        message(
            Role::Assistant,
            vec![image("image/png", base64("canary-image")), text("ok")],
        ),
        Message::user("Next"),
    ];
    let built = built(&messages, None);
    assert_eq!(
        input(&built),
        [
            json!({ "type": "message", "role": "user", "content": [{ "type": "input_text", "text": "canary-user" }] }),
            json!({ "type": "message", "role": "assistant", "content": [{ "type": "output_text", "text": "ok" }] }),
            json!({ "type": "message", "role": "user", "content": [{ "type": "input_text", "text": "Next" }] }),
        ]
    );
    assert_eq!(
        codes(&built.warnings),
        [Warning::UNSUPPORTED_CONTENT, Warning::UNSUPPORTED_CONTENT],
        "one per message: {:?}",
        built.warnings
    );
    assert!(built.warnings.iter().all(|w| !w.message.contains("canary")));
}

#[test]
fn previous_response_id_sends_only_what_follows_the_last_answer() {
    let messages = [
        Message::user("Weather in Paris?"),
        message(
            Role::Assistant,
            vec![
                thinking("", Some("enc-1")),
                call("call_w1", "get_weather", json!({ "city": "Paris" })),
            ],
        ),
        message(
            Role::User,
            vec![result("call_w1", vec![ToolContent::text("sunny")], false)],
        ),
        Message::user("And tomorrow?"),
    ];
    let context = with_options(json!({ "previous_response_id": "resp_1" }));
    let cut = built(&messages, Some(&context));
    assert_eq!(cut.body["previous_response_id"], "resp_1");
    assert_eq!(
        input(&cut),
        [
            json!({ "type": "function_call_output", "call_id": "call_w1", "output": "sunny" }),
            json!({ "type": "message", "role": "user", "content": [{ "type": "input_text", "text": "And tomorrow?" }] }),
        ]
    );
    // No answer yet: everything is sent.
    let first = built(&messages[..1], Some(&context));
    assert_eq!(input(&first).len(), 1);
    // Without the option, the whole conversation.
    assert_eq!(input(&built_with(&messages, json!({}))).len(), 5);
    assert!(
        built_with(&messages, json!({}))
            .body
            .get("previous_response_id")
            .is_none()
    );
}

#[test]
fn content_warnings_name_the_message_and_never_quote_it() {
    let messages = [message(
        Role::User,
        vec![
            opaque("claude-agent", json!({ "type": "canary-secret" })),
            opaque("claude-agent", json!({ "type": "canary-secret-2" })),
        ],
    )];
    let context = RequestContext::new();
    let built = try_build(&messages, &ToolSet::new(), MODEL, Some(&context)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(codes(&built.warnings), [Warning::DROPPED_CONTENT], "deduplicated");
    assert_eq!(
        built.warnings[0].message,
        "message 0: a block from provider `claude-agent` cannot be sent to OpenAI and was dropped"
    );
}
