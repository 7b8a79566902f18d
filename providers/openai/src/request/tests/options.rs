//! The rest of the body: store and include, the reasoning-call guess, sampling, reasoning,
//! text, pass-through options, refused options, context warnings, one whole body.

use std::collections::BTreeMap;

use patchbay_core::context::{McpServerConfig, McpTransport, Sampling, Session, ToolChoice};
use patchbay_core::tool::ToolContent;
use patchbay_core::{
    CacheControl, ContentBlock, ErrorKind, Message, OutputSchema, RequestContext, Role, ToolSet, Warning,
};
use serde_json::{Value, json};

use super::{
    MODEL, built_for, call, codes, message, refused, result, thinking, toolset, try_build, weather, with_options,
};
use crate::NAME;
use crate::request::generation::reasoning_model;

fn sampling(configure: impl FnOnce(&mut Sampling)) -> RequestContext {
    let mut sampling = Sampling::default();
    configure(&mut sampling);
    RequestContext::new().with_sampling(sampling)
}

#[test]
fn a_plain_call_on_a_model_that_does_not_reason() {
    let context = RequestContext::new().with_system("Be brief.");
    let built = built_for("gpt-4.1", &context);
    assert_eq!(
        built.body,
        json!({
            "model": "gpt-4.1",
            "stream": true,
            "store": false,
            "instructions": "Be brief.",
            "input": [{ "type": "message", "role": "user", "content": [{ "type": "input_text", "text": "Hi" }] }],
        })
    );
    assert!(built.warnings.is_empty(), "{:?}", built.warnings);
    let empty_system = built_for("gpt-4.1", &RequestContext::new().with_system(""));
    assert!(empty_system.body.get("instructions").is_none());
}

#[test]
fn reasoning_models_are_guessed_from_the_name() {
    for model in [
        "o1",
        "o1-mini",
        "o3",
        "o3-mini-2025-01-31",
        "O4-mini",
        "gpt-5",
        "gpt-5-mini",
        "gpt-5.1-codex",
        "codex-mini-latest",
        "gpt-oss-120b",
        "openai/gpt-oss-20b",
        "azure/openai/o3",
    ] {
        assert!(reasoning_model(model), "{model}");
        let built = built_for(model, &RequestContext::new());
        assert_eq!(built.body["include"], json!(["reasoning.encrypted_content"]), "{model}");
    }
    for model in [
        "gpt-5-chat-latest",
        "openai/gpt-5-chat",
        "gpt-4.1",
        "gpt-4o-mini",
        "my-deployment",
        "llama-o1",
        "",
    ] {
        assert!(!reasoning_model(model), "{model}");
        assert!(
            built_for(model, &RequestContext::new()).body.get("include").is_none(),
            "{model}"
        );
    }
}

#[test]
fn the_reasoning_option_a_budget_or_encrypted_reasoning_make_a_reasoning_call() {
    let include = |model: &str, context: RequestContext| built_for(model, &context).body.get("include").cloned();
    let encrypted = Some(json!(["reasoning.encrypted_content"]));
    assert_eq!(include("gpt-4.1", with_options(json!({ "reasoning": {} }))), encrypted);
    assert_eq!(
        include("my-deployment", sampling(|s| s.thinking_budget = Some(1024))),
        encrypted
    );
    assert_eq!(
        include("my-deployment", with_options(json!({ "encrypted_reasoning": true }))),
        encrypted
    );
    assert_eq!(
        include(MODEL, with_options(json!({ "encrypted_reasoning": false }))),
        None
    );
    assert_eq!(
        include(
            MODEL,
            with_options(json!({ "encrypted_reasoning": false, "reasoning": { "effort": "low" } }))
        ),
        None
    );
    // The override decides the sampling too.
    let mut context = with_options(json!({ "encrypted_reasoning": false }));
    context.sampling.temperature = Some(0.5);
    let built = built_for("gpt-oss-120b", &context);
    assert_eq!(built.body["temperature"], 0.5);
    assert!(built.warnings.is_empty(), "{:?}", built.warnings);
}

#[test]
fn include_follows_store_and_keeps_the_options_entries_once_in_order() {
    let include = |model: &str, options: Value| built_for(model, &with_options(options)).body.get("include").cloned();
    assert_eq!(include(MODEL, json!({ "store": true })), None);
    assert_eq!(
        built_for(MODEL, &with_options(json!({ "store": true }))).body["store"],
        true
    );
    assert_eq!(
        include(MODEL, json!({ "store": true, "include": ["file_search_call.results"] })),
        Some(json!(["file_search_call.results"]))
    );
    assert_eq!(
        include(
            MODEL,
            json!({ "include": ["message.output_text.logprobs", "reasoning.encrypted_content", "message.output_text.logprobs"] })
        ),
        Some(json!(["reasoning.encrypted_content", "message.output_text.logprobs"]))
    );
    assert_eq!(
        include("gpt-4.1", json!({ "include": ["file_search_call.results"] })),
        Some(json!(["file_search_call.results"]))
    );
    assert_eq!(
        include(
            MODEL,
            json!({ "store": true, "include": ["reasoning.encrypted_content"] })
        ),
        Some(json!(["reasoning.encrypted_content"])),
        "a stored call may still ask for the encrypted reasoning"
    );
}

#[test]
fn sampling_on_a_model_that_does_not_reason() {
    let context = sampling(|s| {
        s.max_tokens = Some(1024);
        s.temperature = Some(0.9);
        s.top_p = Some(0.3);
    });
    let built = built_for("gpt-4.1", &context);
    assert_eq!(built.body["max_output_tokens"], 1024);
    assert_eq!(built.body["temperature"], json!(0.9));
    assert_eq!(built.body["top_p"], json!(0.3));
    assert!(built.warnings.is_empty(), "{:?}", built.warnings);
}

#[test]
fn a_reasoning_call_leaves_temperature_and_top_p_out_with_one_warning() {
    let context = sampling(|s| {
        s.max_tokens = Some(1024);
        s.temperature = Some(0.9);
        s.top_p = Some(0.3);
    });
    let built = built_for(MODEL, &context);
    assert_eq!(built.body["max_output_tokens"], 1024);
    assert!(built.body.get("temperature").is_none() && built.body.get("top_p").is_none());
    assert_eq!(codes(&built.warnings), [Warning::UNSUPPORTED_OPTION]);
    assert_eq!(
        built.warnings[0].message,
        "`temperature` and `top_p` left out: reasoning models refuse sampling parameters"
    );
    let only_top_p = built_for(MODEL, &sampling(|s| s.top_p = Some(0.5)));
    assert!(only_top_p.warnings[0].message.starts_with("`top_p` left out"));
}

#[test]
fn top_k_and_stop_sequences_have_no_field() {
    let context = sampling(|s| {
        s.top_k = Some(40);
        s.stop_sequences = vec!["sk-secret-stop".into()];
    });
    let built = built_for("gpt-4.1", &context);
    assert_eq!(
        codes(&built.warnings),
        [Warning::UNSUPPORTED_OPTION, Warning::UNSUPPORTED_OPTION]
    );
    assert!(built.warnings.iter().all(|w| !w.message.contains("sk-secret")));
    assert!(built.body.get("top_k").is_none() && built.body.get("stop").is_none());
}

#[test]
fn reasoning_from_the_option_or_the_budget_never_with_an_unasked_summary() {
    let reasoning = |context: RequestContext| {
        let built = built_for(MODEL, &context);
        (built.body.get("reasoning").cloned(), codes(&built.warnings).join(","))
    };
    assert_eq!(reasoning(RequestContext::new()), (None, String::new()));
    let given = json!({ "effort": "high", "summary": "detailed" });
    assert_eq!(
        reasoning(with_options(json!({ "reasoning": given }))),
        (Some(given.clone()), String::new())
    );
    for (budget, effort) in [
        (0, "minimal"),
        (1, "low"),
        (2048, "low"),
        (2049, "medium"),
        (8192, "medium"),
        (8193, "high"),
        (u32::MAX, "high"),
    ] {
        assert_eq!(
            reasoning(sampling(|s| s.thinking_budget = Some(budget))),
            (Some(json!({ "effort": effort })), String::new()),
            "{budget}"
        );
    }
    let mut context = with_options(json!({ "reasoning": { "summary": "auto" } }));
    context.sampling.thinking_budget = Some(4000);
    assert_eq!(
        reasoning(context),
        (Some(json!({ "summary": "auto", "effort": "medium" })), String::new())
    );
    let mut context = with_options(json!({ "reasoning": { "effort": "xhigh" } }));
    context.sampling.thinking_budget = Some(100);
    assert_eq!(
        reasoning(context),
        (
            Some(json!({ "effort": "xhigh" })),
            Warning::UNSUPPORTED_OPTION.to_string()
        )
    );
}

#[test]
fn text_carries_verbosity_and_the_output_schema() {
    let schema = json!({ "type": "object", "properties": { "answer": { "type": "string" } }, "required": ["answer"], "additionalProperties": false });
    let context = RequestContext::new()
        .with_output_schema(
            OutputSchema::new("Answer", schema.clone())
                .with_strict(true)
                .with_description("The answer."),
        )
        .with_provider_options(NAME, json!({ "verbosity": "low" }));
    assert_eq!(
        built_for(MODEL, &context).body["text"],
        json!({
            "verbosity": "low",
            "format": { "type": "json_schema", "name": "Answer", "description": "The answer.", "schema": schema, "strict": true },
        })
    );
    let loose = RequestContext::new().with_output_schema(OutputSchema::new("Answer", json!({ "type": "object" })));
    assert_eq!(
        built_for(MODEL, &loose).body["text"],
        json!({ "format": { "type": "json_schema", "name": "Answer", "schema": { "type": "object" }, "strict": false } })
    );
    assert!(built_for(MODEL, &RequestContext::new()).body.get("text").is_none());
}

#[test]
fn pass_through_options_are_sent_under_their_own_key() {
    let options = json!({
        "service_tier": "flex",
        "prompt_cache_key": "tenant-7",
        "prompt_cache_retention": "24h",
        "metadata": { "run": "r1", "team": "search" },
        "user": "user-1",
        "safety_identifier": "hash-1",
        "truncation": "auto",
        "max_tool_calls": 3,
        "top_logprobs": 20,
        "parallel_tool_calls": false,
    });
    let body = built_for(MODEL, &with_options(options.clone())).body;
    for (key, value) in options.as_object().unwrap() {
        assert_eq!(&body[key], value, "{key}");
    }
}

#[test]
fn metadata_limits_name_the_key_and_never_the_value() {
    let keys = |n: usize| -> BTreeMap<String, String> { (0..n).map(|i| (format!("k{i}"), "v".into())).collect() };
    assert!(
        try_build(
            &[Message::user("Hi")],
            &ToolSet::new(),
            MODEL,
            Some(&with_options(json!({ "metadata": keys(16) })))
        )
        .is_ok()
    );
    let edge = json!({ "metadata": { "k".repeat(64): "v".repeat(512) } });
    assert!(
        try_build(
            &[Message::user("Hi")],
            &ToolSet::new(),
            MODEL,
            Some(&with_options(edge))
        )
        .is_ok()
    );
    let shown = refused(json!({ "metadata": keys(17) })).to_string();
    assert!(shown.contains("`metadata`") && shown.contains("16"), "{shown}");
    let long_key = format!("sk-secret{}", "k".repeat(60));
    let shown = refused(json!({ "metadata": { long_key: "v" } })).to_string();
    assert!(shown.contains("`metadata`") && !shown.contains("sk-secret"), "{shown}");
    let long_value = format!("sk-secret{}", "v".repeat(510));
    let error = refused(json!({ "metadata": { "note": long_value } }));
    let shown = error.to_string();
    assert_eq!(error.kind(), ErrorKind::InvalidRequest);
    assert!(
        shown.contains("`metadata`") && shown.contains("`note`") && !shown.contains("sk-secret"),
        "{shown}"
    );
}

#[test]
fn bad_options_are_invalid_requests_naming_the_key_not_the_value() {
    let secret = "sk-secret";
    for key in [
        "store",
        "include",
        "encrypted_reasoning",
        "previous_response_id",
        "reasoning",
        "verbosity",
        "tools",
        "strict_tools",
        "parallel_tool_calls",
        "image_detail",
        "service_tier",
        "prompt_cache_key",
        "prompt_cache_retention",
        "metadata",
        "user",
        "safety_identifier",
        "truncation",
        "max_tool_calls",
        "top_logprobs",
    ] {
        let wrong = if key == "reasoning" {
            json!([secret])
        } else {
            json!({ secret: 1 })
        };
        let wrong = if matches!(key, "tools" | "include") {
            json!(secret)
        } else {
            wrong
        };
        assert_refused(json!({ key: wrong }), key);
    }
    for (options, key) in [
        (json!({ "stroe": true }), "stroe"),
        (json!({ "background": true }), "background"),
        (json!({ "previous_response_id": " " }), "previous_response_id"),
        (json!({ "reasoning": { "effort": 5 } }), "reasoning"),
        (json!({ "reasoning": { "summary": ["sk-secret"] } }), "reasoning"),
        (json!({ "verbosity": "sk-secret" }), "verbosity"),
        (json!({ "truncation": "sk-secret" }), "truncation"),
        (json!({ "image_detail": "sk-secret" }), "image_detail"),
        (json!({ "include": ["a", 1] }), "include"),
        (json!({ "metadata": { "a": 1 } }), "metadata"),
        (json!({ "max_tool_calls": -1 }), "max_tool_calls"),
        (json!({ "max_tool_calls": 1.5 }), "max_tool_calls"),
        (json!({ "top_logprobs": 21 }), "top_logprobs"),
        (json!({ "store": "sk-secret" }), "store"),
    ] {
        assert_refused(options, key);
    }
    let error = refused(json!("sk-secret"));
    assert_eq!(error.kind(), ErrorKind::InvalidRequest);
    assert!(!error.to_string().contains("sk-secret"));
    let null = try_build(
        &[Message::user("Hi")],
        &ToolSet::new(),
        MODEL,
        Some(&with_options(Value::Null)),
    );
    assert!(null.is_ok(), "null is no options");
}

fn assert_refused(options: Value, key: &str) {
    let error = refused(options.clone());
    let shown = error.to_string();
    assert_eq!(error.kind(), ErrorKind::InvalidRequest, "{options}");
    assert_eq!(error.facts().provider.as_deref(), Some(NAME), "{options}");
    assert!(shown.contains(&format!("`{key}`")), "{options}: {shown}");
    assert!(
        !shown.contains("sk-secret") && !format!("{error:?}").contains("sk-secret"),
        "{options}: {shown}"
    );
}

#[test]
fn context_warnings_come_once_each() {
    let mut context = RequestContext::new()
        .with_session(Session::Resume { id: "s1".into() })
        .with_env("TOKEN", "sk-secret")
        .with_mcp_server(McpServerConfig {
            name: "github".into(),
            transport: McpTransport::Http {
                url: "https://example.com/mcp".into(),
                headers: BTreeMap::new(),
            },
        });
    context.system = Some("sys".into());
    context.system_cache_control = Some(CacheControl::ephemeral());
    let marked = ContentBlock::Text {
        text: "cached".into(),
        citations: Vec::new(),
        cache_control: Some(CacheControl::ephemeral()),
        signature: None,
    };
    let messages = [message(Role::User, vec![marked.clone(), marked])];
    let built = try_build(&messages, &ToolSet::new(), MODEL, Some(&context)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        codes(&built.warnings),
        [
            Warning::UNSUPPORTED_OPTION,
            Warning::MCP_SERVERS_IGNORED,
            Warning::UNSUPPORTED_OPTION,
            Warning::UNSUPPORTED_OPTION,
        ]
    );
    assert!(built.warnings[0].message.contains("`previous_response_id`"));
    assert!(built.warnings[3].message.contains("`prompt_cache_key`"));
    assert!(
        built
            .warnings
            .iter()
            .all(|w| !w.message.contains("sk-secret") && !w.message.contains("s1"))
    );
    let fresh = RequestContext::new().with_session(Session::New { id: None });
    assert!(built_for(MODEL, &fresh).warnings.is_empty());
}

#[test]
fn a_whole_tool_conversation() {
    let messages = [
        Message::user("Weather in Paris and Rome?"),
        message(
            Role::Assistant,
            vec![
                thinking("**Planning**", Some("gAAAAABo-encrypted==")),
                call("call_1", "get_weather", json!({ "city": "Paris" })),
                call("call_2", "get_weather", json!({ "city": "Rome" })),
            ],
        ),
        message(
            Role::User,
            vec![
                result("call_1", vec![ToolContent::text("21 °C, clear")], false),
                result("call_2", vec![ToolContent::text("service unavailable")], true),
            ],
        ),
        message(
            Role::Assistant,
            vec![super::text("Paris: 21 °C and clear; Rome: unknown.")],
        ),
        Message::user("Thanks!"),
    ];
    let mut sampling = Sampling::default();
    sampling.max_tokens = Some(2048);
    let context = RequestContext::new()
        .with_system("You are a weather assistant.")
        .with_sampling(sampling)
        .with_tool_choice(ToolChoice::Auto)
        .with_provider_options(
            NAME,
            json!({ "reasoning": { "effort": "low", "summary": "auto" }, "verbosity": "low", "tools": [{ "type": "web_search" }] }),
        );
    let built =
        try_build(&messages, &toolset(vec![weather()]), "gpt-5", Some(&context)).unwrap_or_else(|e| panic!("{e}"));
    assert!(built.warnings.is_empty(), "{:?}", built.warnings);
    insta::with_settings!({ sort_maps => true }, { insta::assert_json_snapshot!("tool_conversation", built.body) });
}
