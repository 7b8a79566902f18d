//! Tools, tool choice, generation config, call options, warnings, two whole bodies.

use super::*;

#[test]
fn tools_are_declarations_then_server_tools_then_raw_tools() {
    let tools = toolset(vec![
        weather(),
        ToolSpec::new("now", "", json!({ "type": "object", "properties": {} })),
        ToolSpec::new(
            "lookup",
            "Find a thing.",
            json!({
                "type": "object",
                "properties": {
                    "id": { "oneOf": [{ "type": "string" }, { "type": "integer" }] },
                    "at": { "type": "string", "format": "date" },
                },
            }),
        ),
    ]);
    let context = with_options(json!({
        "google_search": true,
        "url_context": { "note": "config object" },
        "code_execution": false,
        "tools": [{ "googleMaps": {} }],
    }));
    let built = try_build(&[Message::user("Hi")], &tools, Some(&context)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        built.body["tools"],
        json!([
            { "functionDeclarations": [
                {
                    "name": "get_weather",
                    "description": "The weather in a city.",
                    "parameters": { "type": "object", "properties": { "city": { "type": "string" } }, "required": ["city"] },
                },
                { "name": "now" },
                {
                    "name": "lookup",
                    "description": "Find a thing.",
                    "parameters": { "type": "object", "properties": {
                        "id": { "anyOf": [{ "type": "string" }, { "type": "integer" }] },
                        "at": { "type": "string" },
                    } },
                },
            ] },
            { "googleSearch": {} },
            { "urlContext": { "note": "config object" } },
            { "googleMaps": {} },
        ])
    );
    assert_eq!(codes(&built.warnings), [Warning::UNSUPPORTED_OPTION]);
    let message = &built.warnings[0].message;
    assert!(message.starts_with("tool `lookup`:"), "{message}");
    assert!(
        message.contains("`oneOf` sent as `anyOf` at #/properties/id") && message.contains("`format` dropped"),
        "{message}"
    );
    assert!(!message.contains("date"), "no values: {message}");
    // No tools, no `tools`.
    let bare = try_build(&[Message::user("Hi")], &ToolSet::new(), None).unwrap_or_else(|e| panic!("{e}"));
    assert!(built_has_no("tools", &bare));
}

fn built_has_no(key: &str, built: &Built) -> bool {
    built.body.get(key).is_none()
}

#[test]
fn a_long_list_of_schema_notes_is_cut() {
    let properties: Map<String, Value> = (0..12)
        .map(|i| (format!("p{i}"), json!({ "type": "number", "multipleOf": 2 })))
        .collect();
    let tools = toolset(vec![ToolSpec::new(
        "many",
        "d",
        json!({ "type": "object", "properties": properties }),
    )]);
    let built = try_build(&[Message::user("Hi")], &tools, None).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(built.warnings.len(), 1);
    assert!(
        built.warnings[0].message.ends_with("; and 4 more"),
        "{:?}",
        built.warnings
    );
}

#[test]
fn tool_choice_and_function_calling_options() {
    let config = |choice: Option<ToolChoice>, options: Value| {
        let mut context = with_options(options);
        context.tool_choice = choice;
        let built = built(&[Message::user("Hi")], Some(&context));
        (built.body.get("toolConfig").cloned(), codes(&built.warnings).join(","))
    };
    assert_eq!(config(None, json!({})), (None, String::new()));
    let mode = |mode: &str| Some(json!({ "functionCallingConfig": { "mode": mode } }));
    assert_eq!(config(Some(ToolChoice::Auto), json!({})).0, mode("AUTO"));
    assert_eq!(config(Some(ToolChoice::Any), json!({})).0, mode("ANY"));
    assert_eq!(config(Some(ToolChoice::None), json!({})).0, mode("NONE"));
    assert_eq!(
        config(Some(ToolChoice::Tool("get_weather".into())), json!({})).0,
        Some(json!({ "functionCallingConfig": { "mode": "ANY", "allowedFunctionNames": ["get_weather"] } }))
    );
    assert_eq!(
        config(None, json!({ "allowed_function_names": ["a", "b"] })),
        (
            Some(json!({ "functionCallingConfig": { "mode": "ANY", "allowedFunctionNames": ["a", "b"] } })),
            String::new()
        )
    );
    assert_eq!(
        config(
            Some(ToolChoice::Tool("x".into())),
            json!({ "allowed_function_names": ["a"], "function_calling_mode": "validated" })
        )
        .0,
        Some(json!({ "functionCallingConfig": { "mode": "VALIDATED", "allowedFunctionNames": ["a"] } }))
    );
    assert_eq!(
        config(Some(ToolChoice::Auto), json!({ "allowed_function_names": ["a"] })),
        (
            Some(json!({ "functionCallingConfig": { "mode": "ANY", "allowedFunctionNames": ["a"] } })),
            Warning::UNSUPPORTED_OPTION.to_string()
        )
    );
    assert_eq!(
        config(Some(ToolChoice::Any), json!({ "function_calling_mode": "NONE" })).0,
        mode("NONE")
    );
}

fn generation(context: &RequestContext) -> (Option<Value>, Vec<Warning>) {
    let built = built(&[Message::user("Hi")], Some(context));
    (built.body.get("generationConfig").cloned(), built.warnings)
}

#[test]
fn sampling_maps_to_generation_config() {
    let mut sampling = Sampling::default();
    sampling.max_tokens = Some(1024);
    sampling.temperature = Some(0.7);
    sampling.top_p = Some(0.9);
    sampling.top_k = Some(40);
    sampling.stop_sequences = vec!["END".into()];
    let (config, warnings) = generation(&RequestContext::new().with_sampling(sampling));
    assert_eq!(
        config,
        Some(json!({
            "maxOutputTokens": 1024,
            "temperature": 0.7,
            "topP": 0.9,
            "topK": 40,
            "stopSequences": ["END"],
        }))
    );
    assert!(warnings.is_empty());
    assert_eq!(
        generation(&RequestContext::new()).0,
        None,
        "nothing asked, nothing sent"
    );
}

#[test]
fn thinking_config_only_when_asked() {
    let thinking = |context: RequestContext| {
        let (config, warnings) = generation(&context);
        (
            config.and_then(|c| c.get("thinkingConfig").cloned()),
            codes(&warnings).len(),
        )
    };
    let mut sampling = Sampling::default();
    sampling.thinking_budget = Some(2048);
    assert_eq!(
        thinking(RequestContext::new().with_sampling(sampling.clone())),
        (Some(json!({ "thinkingBudget": 2048, "includeThoughts": true })), 0)
    );
    assert_eq!(
        thinking(with_options(json!({ "thinking_budget": -1 }))),
        (Some(json!({ "thinkingBudget": -1, "includeThoughts": true })), 0)
    );
    assert_eq!(
        thinking(with_options(json!({ "thinking_budget": 0 }))),
        (Some(json!({ "thinkingBudget": 0 })), 0)
    );
    assert_eq!(
        thinking(with_options(json!({ "thinking_budget": 512 })).with_sampling(sampling.clone())),
        (Some(json!({ "thinkingBudget": 512, "includeThoughts": true })), 0),
        "the option wins over the sampling"
    );
    assert_eq!(
        thinking(with_options(json!({ "thinking_level": "Low" }))),
        (Some(json!({ "thinkingLevel": "LOW", "includeThoughts": true })), 0)
    );
    assert_eq!(
        thinking(with_options(json!({ "thinking_level": "high", "include_thoughts": false })).with_sampling(sampling)),
        (Some(json!({ "thinkingLevel": "HIGH", "includeThoughts": false })), 1),
        "the sampling budget gives way to the level, with a warning"
    );
    assert_eq!(
        thinking(with_options(json!({ "include_thoughts": true }))),
        (Some(json!({ "includeThoughts": true })), 0)
    );
    assert_eq!(thinking(with_options(json!({}))), (None, 0));
}

#[test]
fn structured_output_and_generation_config_option() {
    let schema = json!({
        "type": "object",
        "properties": { "city": { "type": "string", "format": "email" } },
        "additionalProperties": false,
    });
    let context = RequestContext::new().with_output_schema(OutputSchema::new("City", schema.clone()));
    let (config, warnings) = generation(&context);
    assert_eq!(
        config,
        Some(json!({ "responseMimeType": "application/json", "responseJsonSchema": schema }))
    );
    assert!(warnings.is_empty());
    let mut strict = OutputSchema::new("City", schema.clone());
    strict.strict = true;
    let context = with_options(json!({
        "response_mime_type": "text/x.enum",
        "generation_config": { "seed": 7, "responseMimeType": "application/json", "temperature": 0.1 },
    }))
    .with_output_schema(strict)
    .with_sampling({
        let mut sampling = Sampling::default();
        sampling.temperature = Some(1.0);
        sampling
    });
    let (config, warnings) = generation(&context);
    assert_eq!(
        config,
        Some(json!({
            "temperature": 0.1,
            "seed": 7,
            "responseMimeType": "application/json",
            "responseJsonSchema": schema,
        })),
        "generation_config keys win"
    );
    assert!(warnings.is_empty(), "strict needs no warning: {warnings:?}");
    assert_eq!(
        generation(&with_options(json!({ "response_mime_type": "text/x.enum" }))).0,
        Some(json!({ "responseMimeType": "text/x.enum" }))
    );
}

#[test]
fn safety_cache_and_labels() {
    let context = with_options(json!({
        "safety_settings": [{ "category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE" }],
        "cached_content": "cachedContents/abc",
        "labels": { "team": "search" },
    }));
    let gemini = built(&[Message::user("Hi")], Some(&context));
    assert_eq!(
        gemini.body["safetySettings"],
        json!([{ "category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE" }])
    );
    assert_eq!(gemini.body["cachedContent"], json!("cachedContents/abc"));
    assert!(built_has_no("labels", &gemini));
    assert_eq!(codes(&gemini.warnings), [Warning::UNSUPPORTED_OPTION]);
    assert!(gemini.warnings[0].message.contains("`labels`"));
    assert!(!gemini.warnings[0].message.contains("search"), "no values");
    let vertex = build(
        &[Message::user("Hi")],
        &ToolSet::new(),
        "gemini-2.5-pro",
        Some(&context),
        Backend::VertexAi,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(vertex.body["labels"], json!({ "team": "search" }));
    assert!(vertex.warnings.is_empty(), "{:?}", vertex.warnings);
}

#[test]
fn context_warnings_for_session_env_and_mcp() {
    let context = RequestContext::new()
        .with_session(Session::Resume { id: "s1".into() })
        .with_env("TOKEN", "secret")
        .with_mcp_server(McpServerConfig {
            name: "github".into(),
            transport: McpTransport::Http {
                url: "https://mcp.example.com".into(),
                headers: BTreeMap::new(),
            },
        });
    let (_, warnings) = generation(&context);
    assert_eq!(
        codes(&warnings),
        [
            Warning::UNSUPPORTED_OPTION,
            Warning::MCP_SERVERS_IGNORED,
            Warning::UNSUPPORTED_OPTION
        ]
    );
    assert!(
        !warnings
            .iter()
            .any(|w| w.message.contains("secret") || w.message.contains("s1"))
    );
    let fresh = RequestContext::new().with_session(Session::New { id: None });
    assert!(generation(&fresh).1.is_empty(), "a new session is what every call is");
}

#[test]
fn bad_options_are_invalid_requests_naming_the_key_not_the_value() {
    for (options, key) in [
        (json!({ "googel_search": true }), "googel_search"),
        (json!({ "thinking_budget": "sk-secret-1" }), "thinking_budget"),
        (json!({ "thinking_budget": -5 }), "thinking_budget"),
        (json!({ "thinking_level": "sk-secret-2" }), "thinking_level"),
        (
            json!({ "thinking_level": "low", "thinking_budget": 100 }),
            "thinking_level",
        ),
        (
            json!({ "function_calling_mode": "sk-secret-3" }),
            "function_calling_mode",
        ),
        (json!({ "allowed_function_names": [] }), "allowed_function_names"),
        (
            json!({ "allowed_function_names": "sk-secret-4" }),
            "allowed_function_names",
        ),
        (json!({ "tools": ["sk-secret-5"] }), "tools"),
        (json!({ "google_search": "sk-secret-6" }), "google_search"),
        (json!({ "labels": { "team": 5 } }), "labels"),
        (json!({ "generation_config": "sk-secret-7" }), "generation_config"),
        (json!({ "safety_settings": { "sk-secret-8": 1 } }), "safety_settings"),
        (json!({ "cached_content": " " }), "cached_content"),
    ] {
        let error = refused(options.clone());
        let shown = error.to_string();
        assert_eq!(error.kind(), ErrorKind::InvalidRequest, "{options}");
        assert!(shown.contains(&format!("`{key}`")), "{options}: {shown}");
        assert!(!shown.contains("sk-secret"), "{options}: {shown}");
    }
    let error = refused(json!("sk-secret-9"));
    assert_eq!(error.kind(), ErrorKind::InvalidRequest);
    assert!(!error.to_string().contains("sk-secret"));
    // Null is no options.
    assert!(
        try_build(
            &[Message::user("Hi")],
            &ToolSet::new(),
            Some(&with_options(Value::Null))
        )
        .is_ok()
    );
}

#[test]
fn snapshot_a_tool_conversation() {
    let messages = [
        Message::user("What's the weather in Paris and Rome, and what is 2**10?"),
        message(
            Role::Assistant,
            vec![
                ContentBlock::Thinking {
                    text: "I should call the tool twice and run code.".into(),
                    signature: None,
                },
                provider_call(
                    "exec_0",
                    "code_execution",
                    json!({ "language": "PYTHON", "code": "print(2**10)" }),
                    Some("c2lnLWNvZGU="),
                ),
                result("exec_0", vec![ToolContent::text("1024\n")], false),
                call("c1", "get_weather", json!({ "city": "Paris" }), Some(SIG)),
                call("c2", "get_weather", json!({ "city": "Rome" }), None),
            ],
        ),
        message(
            Role::User,
            vec![
                result(
                    "c1",
                    vec![ToolContent::text(r#"{"celsius": 21, "sky": "clear"}"#)],
                    false,
                ),
                result("c2", vec![ToolContent::text("service unavailable")], true),
            ],
        ),
        message(
            Role::Assistant,
            vec![
                text("Paris: 21 °C and clear; Rome: unknown. 2**10 is 1024.", None),
                text("", Some("c2lnLWVuZA==")),
            ],
        ),
        Message::user("Thanks!"),
    ];
    let mut sampling = Sampling::default();
    sampling.max_tokens = Some(2048);
    sampling.temperature = Some(0.2);
    sampling.thinking_budget = Some(1024);
    let context = RequestContext::new()
        .with_system("You are a weather assistant.")
        .with_sampling(sampling)
        .with_tool_choice(ToolChoice::Auto)
        .with_provider_options(NAME, json!({ "code_execution": true }));
    let built = try_build(&messages, &toolset(vec![weather()]), Some(&context)).unwrap_or_else(|e| panic!("{e}"));
    assert!(built.warnings.is_empty(), "{:?}", built.warnings);
    insta::with_settings!({ sort_maps => true }, { insta::assert_json_snapshot!("tool_conversation", built.body) });
}

#[test]
fn snapshot_options_on_vertex() {
    let context = RequestContext::new()
        .with_output_schema(OutputSchema::new(
            "Answer",
            json!({ "type": "object", "properties": { "answer": { "type": "string" } }, "required": ["answer"] }),
        ))
        .with_provider_options(
            NAME,
            json!({
                "google_search": { "timeRangeFilter": { "startTime": "2025-01-01T00:00:00Z" } },
                "url_context": true,
                "thinking_level": "medium",
                "safety_settings": [{ "category": "HARM_CATEGORY_DANGEROUS_CONTENT", "threshold": "BLOCK_ONLY_HIGH" }],
                "labels": { "env": "test" },
                "generation_config": { "seed": 42 },
            }),
        );
    let built = build(
        &[Message::user("Summarise https://example.com")],
        &ToolSet::new(),
        "gemini-3-pro-preview",
        Some(&context),
        Backend::VertexAi,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(built.warnings.is_empty(), "{:?}", built.warnings);
    insta::with_settings!({ sort_maps => true }, { insta::assert_json_snapshot!("options_on_vertex", built.body) });
}
