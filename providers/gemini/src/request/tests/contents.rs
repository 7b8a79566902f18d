//! The conversation: blocks to parts, signatures, results, media.

use super::*;

#[test]
fn text_thinking_and_their_signatures() {
    let messages = [
        Message::user("Hello"),
        message(
            Role::Assistant,
            vec![
                ContentBlock::Thinking {
                    text: "Let me think.".into(),
                    signature: None,
                },
                ContentBlock::Thinking {
                    text: "Signed thought.".into(),
                    signature: Some(SIG.into()),
                },
                ContentBlock::Thinking {
                    text: String::new(),
                    signature: Some("sig-on-empty-thought".into()),
                },
                ContentBlock::Thinking {
                    text: String::new(),
                    signature: None,
                },
                ContentBlock::Text {
                    text: "Hi.".into(),
                    citations: vec![json!({ "uri": "https://example.com" })],
                    cache_control: None,
                    signature: Some("sig-text".into()),
                },
                text("", None),
            ],
        ),
    ];
    let built = built(&messages, None);
    assert_eq!(
        built.body["contents"],
        json!([
            { "role": "user", "parts": [{ "text": "Hello" }] },
            { "role": "model", "parts": [
                { "text": "Let me think.", "thought": true },
                { "text": "Signed thought.", "thought": true, "thoughtSignature": SIG },
                { "text": "", "thoughtSignature": "sig-on-empty-thought" },
                { "text": "Hi.", "thoughtSignature": "sig-text" },
            ] },
        ])
    );
    assert!(built.warnings.is_empty(), "{:?}", built.warnings);
    assert_eq!(
        built.body.as_object().map(Map::len),
        Some(1),
        "only contents: {}",
        built.body
    );
}

#[test]
fn a_signature_on_an_empty_text_part_round_trips() {
    let messages = [
        Message::user("Hi"),
        message(Role::Assistant, vec![text("Hello!", None), text("", Some(SIG))]),
        Message::user("Again"),
    ];
    let built = built(&messages, None);
    assert_eq!(
        built.body["contents"][1],
        json!({ "role": "model", "parts": [{ "text": "Hello!" }, { "text": "", "thoughtSignature": SIG }] })
    );
}

#[test]
fn a_two_turn_tool_conversation_keeps_the_signature_on_the_call() {
    let messages = [
        Message::user("Weather in Paris?"),
        message(
            Role::Assistant,
            vec![call("call_1", "get_weather", json!({ "city": "Paris" }), Some(SIG))],
        ),
        message(
            Role::User,
            vec![result("call_1", vec![ToolContent::text(r#"{"celsius": 21}"#)], false)],
        ),
        message(Role::Assistant, vec![text("21 °C.", None)]),
        Message::user("Thanks"),
    ];
    let built = try_build(&messages, &toolset(vec![weather()]), None).unwrap_or_else(|e| panic!("{e}"));
    let contents = &built.body["contents"];
    assert_eq!(
        contents[1],
        json!({ "role": "model", "parts": [
            { "functionCall": { "name": "get_weather", "args": { "city": "Paris" } }, "thoughtSignature": SIG },
        ] })
    );
    assert_eq!(
        contents[1]["parts"][0]["thoughtSignature"].as_str(),
        Some(SIG),
        "byte for byte"
    );
    assert_eq!(
        contents[2],
        json!({ "role": "user", "parts": [
            { "functionResponse": { "name": "get_weather", "response": { "output": { "celsius": 21 } } } },
        ] })
    );
    assert!(!contents.to_string().contains("call_1"), "no ids on the wire");
    assert_eq!(contents.as_array().map(Vec::len), Some(5));
}

#[test]
fn parallel_calls_and_their_results_keep_their_order() {
    let messages = [
        Message::user("Paris and Rome?"),
        message(
            Role::Assistant,
            vec![
                call("a", "get_weather", json!({ "city": "Paris" }), Some(SIG)),
                call("b", "get_weather", json!({ "city": "Rome" }), None),
            ],
        ),
        message(
            Role::User,
            vec![
                result("a", vec![ToolContent::text("sunny")], false),
                result("b", vec![ToolContent::text("rain")], false),
            ],
        ),
    ];
    let built = built(&messages, None);
    assert_eq!(
        built.body["contents"][1],
        json!({ "role": "model", "parts": [
            { "functionCall": { "name": "get_weather", "args": { "city": "Paris" } }, "thoughtSignature": SIG },
            { "functionCall": { "name": "get_weather", "args": { "city": "Rome" } } },
        ] })
    );
    assert_eq!(
        built.body["contents"][2],
        json!({ "role": "user", "parts": [
            { "functionResponse": { "name": "get_weather", "response": { "output": "sunny" } } },
            { "functionResponse": { "name": "get_weather", "response": { "output": "rain" } } },
        ] })
    );
}

#[test]
fn code_execution_round_trips() {
    let messages = [
        Message::user("What is 2+2? Run code."),
        message(
            Role::Assistant,
            vec![
                provider_call(
                    "exec_0",
                    "code_execution",
                    json!({ "language": "PYTHON", "code": "print(2+2)" }),
                    Some(SIG),
                ),
                result("exec_0", vec![ToolContent::text("4\n")], false),
                provider_call(
                    "exec_1",
                    "code_execution",
                    json!({ "language": "PYTHON", "code": "1/0" }),
                    None,
                ),
                result("exec_1", vec![ToolContent::text("ZeroDivisionError")], true),
                text("It is 4.", None),
            ],
        ),
        Message::user("Thanks"),
    ];
    let built = built(&messages, None);
    assert_eq!(
        built.body["contents"][1]["parts"],
        json!([
            { "executableCode": { "language": "PYTHON", "code": "print(2+2)" }, "thoughtSignature": SIG },
            { "codeExecutionResult": { "outcome": "OUTCOME_OK", "output": "4\n" } },
            { "executableCode": { "language": "PYTHON", "code": "1/0" } },
            { "codeExecutionResult": { "outcome": "OUTCOME_FAILED", "output": "ZeroDivisionError" } },
            { "text": "It is 4." },
        ])
    );
    assert!(built.warnings.is_empty(), "{:?}", built.warnings);
}

#[test]
fn other_provider_tools_are_dropped_with_a_warning() {
    let messages = [
        Message::user("Search"),
        message(
            Role::Assistant,
            vec![
                provider_call("srv_1", "web_search", json!({ "query": "x" }), None),
                result("srv_1", vec![ToolContent::text("results")], false),
                result("unknown", vec![ToolContent::text("orphan")], false),
                text("Found it.", None),
            ],
        ),
    ];
    let built = built(&messages, None);
    assert_eq!(built.body["contents"][1]["parts"], json!([{ "text": "Found it." }]));
    assert_eq!(
        codes(&built.warnings),
        [Warning::DROPPED_CONTENT, Warning::DROPPED_CONTENT]
    );
    assert!(
        built.warnings[0].message.contains("`web_search`"),
        "{:?}",
        built.warnings
    );
    assert!(built.warnings[1].message.contains("`unknown`"), "{:?}", built.warnings);
    assert!(!built.warnings.iter().any(|w| w.message.contains("results")));
}

#[test]
fn images_and_files_are_inline_data_or_file_data() {
    let messages = [message(
        Role::User,
        vec![
            text("Look", None),
            ContentBlock::Image {
                media_type: "image/png".into(),
                source: ImageSource::Base64 { data: "iVBOR".into() },
                cache_control: None,
            },
            ContentBlock::Image {
                media_type: "application/pdf".into(),
                source: ImageSource::Base64 { data: "JVBER".into() },
                cache_control: None,
            },
            ContentBlock::Image {
                media_type: "video/mp4".into(),
                source: ImageSource::Url {
                    url: "https://generativelanguage.googleapis.com/v1beta/files/abc".into(),
                },
                cache_control: None,
            },
        ],
    )];
    let built = built(&messages, None);
    assert_eq!(
        built.body["contents"][0]["parts"],
        json!([
            { "text": "Look" },
            { "inlineData": { "mimeType": "image/png", "data": "iVBOR" } },
            { "inlineData": { "mimeType": "application/pdf", "data": "JVBER" } },
            { "fileData": { "mimeType": "video/mp4", "fileUri": "https://generativelanguage.googleapis.com/v1beta/files/abc" } },
        ])
    );
}

#[test]
fn redacted_thinking_is_not_sent() {
    let messages = [
        Message::user("Hi"),
        message(
            Role::Assistant,
            vec![
                ContentBlock::RedactedThinking { data: "enc1".into() },
                ContentBlock::RedactedThinking { data: "enc2".into() },
                text("Hello", None),
            ],
        ),
    ];
    let built = built(&messages, None);
    assert_eq!(built.body["contents"][1]["parts"], json!([{ "text": "Hello" }]));
    assert_eq!(codes(&built.warnings), [Warning::REASONING_NOT_SENT], "one per message");
    assert!(built.warnings[0].message.starts_with("message 1:"));
}

#[test]
fn opaque_blocks() {
    let messages = [
        Message::user("Hi"),
        message(
            Role::Assistant,
            vec![
                ContentBlock::Opaque {
                    provider: NAME.into(),
                    data: json!({ "fileData": { "mimeType": "image/png", "fileUri": "gs://b/o.png" }, "thoughtSignature": "s" }),
                },
                ContentBlock::Opaque {
                    provider: NAME.into(),
                    data: json!({ "finishReason": "STOP", "finishMessage": "done" }),
                },
                ContentBlock::Opaque {
                    provider: NAME.into(),
                    data: json!({ "groundingMetadata": { "webSearchQueries": ["x"] } }),
                },
                ContentBlock::Opaque {
                    provider: "anthropic".into(),
                    data: json!({ "type": "server_tool_use" }),
                },
                text("Done", None),
            ],
        ),
    ];
    let built = built(&messages, None);
    assert_eq!(
        built.body["contents"][1]["parts"],
        json!([
            { "fileData": { "mimeType": "image/png", "fileUri": "gs://b/o.png" }, "thoughtSignature": "s" },
            { "text": "Done" },
        ])
    );
    assert_eq!(codes(&built.warnings), [Warning::DROPPED_CONTENT]);
    assert!(built.warnings[0].message.contains("`anthropic`"));
}

#[test]
fn tool_results_map_to_function_responses() {
    let messages = [
        Message::user("Go"),
        message(
            Role::Assistant,
            vec![
                call("j", "json_tool", json!({}), None),
                call("t", "text_tool", json!({}), None),
                call("e", "failing", json!({}), None),
                call("i", "screenshot", json!({}), None),
                call("r", "read", json!({}), None),
                call("v", "value_tool", json!({}), None),
            ],
        ),
        message(
            Role::User,
            vec![
                result("j", vec![ToolContent::Json { value: json!([1, 2]) }], false),
                result(
                    "t",
                    vec![
                        ToolContent::text("line one"),
                        ToolContent::text("{\"not\": \"parsed\"}"),
                    ],
                    false,
                ),
                result("e", vec![ToolContent::text("boom")], true),
                result(
                    "i",
                    vec![ToolContent::Image {
                        media_type: "image/png".into(),
                        data: "PNGDATA".into(),
                    }],
                    false,
                ),
                result(
                    "r",
                    vec![
                        ToolContent::Resource {
                            uri: "file:///notes.txt".into(),
                            mime_type: Some("text/plain".into()),
                            text: Some("the notes".into()),
                            blob: None,
                        },
                        ToolContent::Resource {
                            uri: "file:///doc.pdf".into(),
                            mime_type: Some("application/pdf".into()),
                            text: None,
                            blob: Some("PDFDATA".into()),
                        },
                    ],
                    false,
                ),
                result("v", vec![ToolContent::text("42")], false),
                text("And more.", None),
            ],
        ),
    ];
    let built = built(&messages, None);
    assert_eq!(
        built.body["contents"][2]["parts"],
        json!([
            { "functionResponse": { "name": "json_tool", "response": { "output": [1, 2] } } },
            { "functionResponse": { "name": "text_tool", "response": { "output": "line one\n{\"not\": \"parsed\"}" } } },
            { "functionResponse": { "name": "failing", "response": { "error": "boom" } } },
            { "functionResponse": { "name": "screenshot", "response": {
                "output": "(the result is the 1 file(s) in the parts after the function responses)",
            } } },
            { "functionResponse": { "name": "read", "response": {
                "output": "file:///notes.txt\nthe notes\nfile:///doc.pdf",
            } } },
            { "functionResponse": { "name": "value_tool", "response": { "output": 42 } } },
            { "inlineData": { "mimeType": "image/png", "data": "PNGDATA" } },
            { "inlineData": { "mimeType": "application/pdf", "data": "PDFDATA" } },
            { "text": "And more." },
        ])
    );
    assert!(built.warnings.is_empty(), "{:?}", built.warnings);
}

#[test]
fn a_result_without_its_call_is_an_invalid_request_naming_the_message() {
    let messages = [
        Message::user("Go"),
        message(Role::Assistant, vec![text("ok", None)]),
        message(Role::User, vec![result("missing", vec![ToolContent::text("x")], false)]),
    ];
    let error = match try_build(&messages, &ToolSet::new(), None) {
        Ok(_) => panic!("accepted"),
        Err(error) => error,
    };
    assert_eq!(error.kind(), ErrorKind::InvalidRequest);
    assert_eq!(error.facts().message_index, Some(2));
    assert!(error.to_string().contains("`missing`"), "{error}");
    // A call made later does not name an earlier result.
    let messages = [
        message(Role::User, vec![result("late", vec![ToolContent::text("x")], false)]),
        message(Role::Assistant, vec![call("late", "f", json!({}), None)]),
    ];
    assert!(try_build(&messages, &ToolSet::new(), None).is_err());
}

#[test]
fn call_inputs_are_objects() {
    let messages = [
        Message::user("Go"),
        message(
            Role::Assistant,
            vec![call("a", "f", Value::Null, None), call("b", "g", json!([1, 2]), None)],
        ),
    ];
    let built = built(&messages, None);
    assert_eq!(
        built.body["contents"][1]["parts"],
        json!([
            { "functionCall": { "name": "f", "args": {} } },
            { "functionCall": { "name": "g", "args": { "value": [1, 2] } } },
        ])
    );
    assert_eq!(codes(&built.warnings), [Warning::UNSUPPORTED_CONTENT]);
    assert!(built.warnings[0].message.contains("`g`"));
}

#[test]
fn empty_messages_are_left_out() {
    let messages = [
        Message::user("Hi"),
        message(Role::Assistant, vec![]),
        message(
            Role::Assistant,
            vec![
                ContentBlock::Thinking {
                    text: String::new(),
                    signature: None,
                },
                text("", None),
            ],
        ),
        Message::user("Still there?"),
    ];
    let built = built(&messages, None);
    assert_eq!(
        built.body["contents"],
        json!([
            { "role": "user", "parts": [{ "text": "Hi" }] },
            { "role": "user", "parts": [{ "text": "Still there?" }] },
        ])
    );
}

#[test]
fn cache_markers_give_one_warning() {
    let mut marked = weather();
    marked.cache_control = Some(CacheControl::ephemeral());
    let messages = [message(
        Role::User,
        vec![
            ContentBlock::Text {
                text: "a".into(),
                citations: Vec::new(),
                cache_control: Some(CacheControl::ephemeral()),
                signature: None,
            },
            ContentBlock::Text {
                text: "b".into(),
                citations: Vec::new(),
                cache_control: Some(CacheControl::ephemeral()),
                signature: None,
            },
        ],
    )];
    let mut context = RequestContext::new().with_system("Be brief.");
    context.system_cache_control = Some(CacheControl::ephemeral());
    let built = try_build(&messages, &toolset(vec![marked]), Some(&context)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(codes(&built.warnings), [Warning::UNSUPPORTED_OPTION]);
    assert!(built.warnings[0].message.contains("`cached_content`"));
    assert!(!built.body.to_string().contains("cache_control"));
    assert_eq!(
        built.body["systemInstruction"],
        json!({ "parts": [{ "text": "Be brief." }] })
    );
}
