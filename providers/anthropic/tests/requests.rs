//! Golden requests: what goes on the wire for the shared scenarios and for a conversation that
//! uses every block kind, tool result conversions, and the round trip of a recorded answer.

use crate::common::replay;
use patchbay_anthropic::{
    DEFAULT_MAX_TOKENS, RequestParts, StructuredOutput, build_request, build_request_with, tool_result_block,
};
use patchbay_conformance::mock::anthropic::AnthropicWire;
use patchbay_conformance::{Fixture, Target, snapshot_requests};
use patchbay_core::kit::ContentBuilder;
use patchbay_core::{
    CacheControl, ContentBlock, ExecutedBy, ImageSource, Message, RequestContext, Role, Tool, ToolContext, ToolResult,
    ToolSet, ToolSpec, context::Sampling, context::ToolChoice, tool::ToolContent,
};
use serde_json::{Value, json};

use crate::common::{fixtures_dir, provider, settings};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_scenario_requests_match_their_goldens() {
    let target = Target::new("anthropic", |case| async move {
        let server = case.mock(AnthropicWire).await?;
        Ok(Fixture::new(provider(&server.url())).with_guard(server))
    });
    snapshot_requests(&target, |r| {
        json!({
            "method": r.method, "path": r.path,
            "anthropic-version": r.header("anthropic-version"),
            "x-api-key": r.header("x-api-key"),
            "body": r.body,
        })
    })
    .await;
}

/// A host tool whose spec carries a cache marker.
struct CachedTool(ToolSpec);

#[async_trait::async_trait]
impl Tool for CachedTool {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    async fn execute(&self, _input: Value, _cx: &ToolContext) -> ToolResult {
        ToolResult::text("sunny")
    }
}

fn every_block_kind() -> (Vec<Message>, ToolSet, RequestContext) {
    let cached = Some(CacheControl::ephemeral());
    let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    let mut weather = ToolSpec::new("get_weather", "Weather for a city.", schema);
    weather.cache_control = Some(CacheControl {
        kind: "ephemeral".into(),
        ttl: Some("1h".into()),
    });
    let tools = ToolSet::new().with(CachedTool(weather));
    let messages = vec![
        Message::new(
            Role::User,
            vec![
                ContentBlock::Text {
                    text: "Look at these.".into(),
                    citations: vec![],
                    cache_control: cached.clone(),
                    signature: None,
                },
                ContentBlock::Image {
                    media_type: "image/png".into(),
                    source: ImageSource::Base64 {
                        data: "iVBORw0KGgo=".into(),
                    },
                    cache_control: None,
                },
                ContentBlock::Image {
                    media_type: "image/jpeg".into(),
                    source: ImageSource::Url {
                        url: "https://example.com/a.jpg".into(),
                    },
                    cache_control: None,
                },
                ContentBlock::text(""),
            ],
        ),
        Message::new(
            Role::Assistant,
            vec![
                ContentBlock::Thinking {
                    text: "Signed thoughts.".into(),
                    signature: Some("c2ln".into()),
                },
                ContentBlock::Thinking {
                    text: "Unsigned thoughts from another provider.".into(),
                    signature: None,
                },
                ContentBlock::RedactedThinking {
                    data: "EncryptedBlob==".into(),
                },
                ContentBlock::ToolUse {
                    id: "srvtoolu_1".into(),
                    name: "web_search".into(),
                    input: json!({"query": "paris"}),
                    executed_by: ExecutedBy::Provider,
                    signature: None,
                },
                ContentBlock::Opaque {
                    provider: "anthropic".into(),
                    data: json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "paris"}}),
                },
                ContentBlock::Opaque {
                    provider: "anthropic".into(),
                    data: json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [{"type": "web_search_result", "url": "https://example.com", "encrypted_content": "abc"}]}),
                },
                ContentBlock::ToolResult {
                    tool_use_id: "srvtoolu_1".into(),
                    content: vec![ToolContent::text("ignored copy")],
                    is_error: false,
                    cache_control: None,
                },
                ContentBlock::text("Paris is sunny."),
                ContentBlock::Opaque {
                    provider: "anthropic".into(),
                    data: json!({"type": "text_citations", "citations": [{"type": "web_search_result_location", "url": "https://example.com", "cited_text": "sunny"}]}),
                },
                ContentBlock::Opaque {
                    provider: "anthropic".into(),
                    data: json!({"type": "server_tool_usage", "server_tool_use": {"web_search_requests": 1}}),
                },
                ContentBlock::Opaque {
                    provider: "openai".into(),
                    data: json!({"type": "reasoning"}),
                },
                ContentBlock::tool_use("toolu_1", "get_weather", json!({"city": "Paris"})),
            ],
        ),
        Message::new(
            Role::User,
            vec![ContentBlock::ToolResult {
                tool_use_id: "toolu_1".into(),
                content: vec![
                    ToolContent::text("Sunny."),
                    ToolContent::Image {
                        media_type: "image/png".into(),
                        data: "iVBORw0KGgo=".into(),
                    },
                ],
                is_error: true,
                cache_control: cached,
            }],
        ),
    ];
    let mut sampling = Sampling::default();
    sampling.temperature = Some(1.0);
    sampling.top_p = Some(0.9);
    sampling.top_k = Some(40);
    sampling.stop_sequences = vec!["END".into()];
    sampling.thinking_budget = Some(8000);
    let mut context = RequestContext::new()
        .with_system("You are terse.")
        .with_sampling(sampling)
        .with_tool_choice(ToolChoice::Tool("get_weather".into()))
        .with_env("HOME", "/secret")
        .with_provider_options(
            "anthropic",
            json!({
                "betas": ["web-search-2025-03-05"],
                "tools": [{"type": "web_search_20250305", "name": "web_search", "max_uses": 3}],
                "metadata": {"user_id": "u1"},
            }),
        );
    context.system_cache_control = Some(CacheControl::ephemeral());
    (messages, tools, context)
}

#[test]
fn a_conversation_with_every_block_kind_maps_as_golden() {
    let (messages, tools, context) = every_block_kind();
    let parts = build_request(&messages, &tools, "claude-test", Some(&context), DEFAULT_MAX_TOKENS).expect("maps");
    let snapshot = json!({ "body": parts.body, "betas": parts.betas, "warnings": parts.warnings });
    settings("requests").bind(|| insta::assert_json_snapshot!("request__every_block_kind", snapshot));
}

#[test]
fn max_tokens_defaults_above_the_thinking_budget() {
    let messages = [Message::user("hi")];
    let body = |context: RequestContext| {
        build_request(&messages, &ToolSet::new(), "m", Some(&context), DEFAULT_MAX_TOKENS)
            .expect("maps")
            .body
    };
    assert_eq!(body(RequestContext::new())["max_tokens"], DEFAULT_MAX_TOKENS);
    assert_eq!(body(RequestContext::new().with_max_tokens(100))["max_tokens"], 100);
    let mut sampling = Sampling::default();
    sampling.thinking_budget = Some(10_000);
    assert_eq!(
        body(RequestContext::new().with_sampling(sampling))["max_tokens"],
        10_000 + DEFAULT_MAX_TOKENS
    );
}

#[test]
fn tool_results_convert_as_golden() {
    let cases = vec![
        ("text", vec![ToolContent::text("hello")], false),
        ("error", vec![ToolContent::text("it failed")], true),
        ("empty", vec![], false),
        (
            "image",
            vec![ToolContent::Image {
                media_type: "image/png".into(),
                data: "iVBORw0KGgo=".into(),
            }],
            false,
        ),
        (
            "resource_text",
            vec![ToolContent::Resource {
                uri: "file:///a.txt".into(),
                mime_type: Some("text/plain".into()),
                text: Some("contents".into()),
                blob: None,
            }],
            false,
        ),
        (
            "resource_pdf",
            vec![ToolContent::Resource {
                uri: "file:///a.pdf".into(),
                mime_type: Some("application/pdf".into()),
                text: None,
                blob: Some("JVBERi0=".into()),
            }],
            false,
        ),
        (
            "resource_image",
            vec![ToolContent::Resource {
                uri: "file:///a.png".into(),
                mime_type: Some("image/png".into()),
                text: None,
                blob: Some("iVBORw0KGgo=".into()),
            }],
            false,
        ),
        (
            "resource_binary",
            vec![ToolContent::Resource {
                uri: "file:///a.bin".into(),
                mime_type: None,
                text: None,
                blob: Some("AAAA".into()),
            }],
            false,
        ),
        (
            "json",
            vec![ToolContent::Json {
                value: json!({"temp": 21, "unit": "C"}),
            }],
            false,
        ),
    ];
    let converted: Vec<Value> = cases
        .into_iter()
        .map(|(name, content, is_error)| json!({ "case": name, "block": tool_result_block("toolu_1", &content, is_error) }))
        .collect();
    settings("requests").bind(|| insta::assert_json_snapshot!("tool_results", converted));
}

#[test]
fn a_recorded_web_search_answer_goes_back_unchanged() {
    let path = fixtures_dir()
        .join("rig/anthropic__streamed_server_tools__streamed_web_search_preserves_server_tool_blocks.sse");
    let bytes = std::fs::read(&path).expect("the fixture");
    let responses = replay(&bytes);
    let mut builder = ContentBuilder::default();
    for event in &responses[0].events {
        builder.push(event);
    }
    let messages = vec![
        Message::user("Search the web."),
        Message::new(Role::Assistant, builder.finish()),
        Message::user("Thanks."),
    ];
    let parts = build_request(&messages, &ToolSet::new(), "m", None, DEFAULT_MAX_TOKENS).expect("maps");
    assert!(parts.warnings.is_empty(), "{:?}", parts.warnings);
    let assistant = &parts.body["messages"][1]["content"];
    let kinds: Vec<&str> = assistant
        .as_array()
        .expect("blocks")
        .iter()
        .filter_map(|b| b["type"].as_str())
        .collect();
    assert!(
        kinds.contains(&"server_tool_use") && kinds.contains(&"web_search_tool_result"),
        "{kinds:?}"
    );
    settings("requests").bind(|| insta::assert_json_snapshot!("round_trip__web_search", assistant));
}

fn structured(model: &str, mode: StructuredOutput, tools: &ToolSet, context: RequestContext) -> RequestParts {
    let context = context.with_output_schema(patchbay_conformance::weather_schema());
    build_request_with(
        &[Message::user("Weather?")],
        tools,
        model,
        Some(&context),
        DEFAULT_MAX_TOKENS,
        mode,
    )
    .expect("maps")
}

fn host_tools() -> ToolSet {
    patchbay_conformance::scenario_tools()
}

#[test]
fn structured_output_is_native_for_the_models_that_take_it() {
    let parts = structured(
        "claude-sonnet-4-5-20250929",
        StructuredOutput::Auto,
        &ToolSet::new(),
        RequestContext::new(),
    );
    assert_eq!(
        parts.body["output_config"],
        json!({"format": {"type": "json_schema", "schema": patchbay_conformance::weather_schema().schema}})
    );
    assert!(parts.betas.is_empty(), "generally available: no beta header");
    assert!(
        parts.body.get("output_format").is_none(),
        "the deprecated beta field is not sent"
    );
    assert_eq!(parts.output_tool, None);
    assert!(parts.body.get("tools").is_none() && parts.body.get("tool_choice").is_none());
    let forced = structured(
        "claude-3-5-haiku",
        StructuredOutput::Native,
        &ToolSet::new(),
        RequestContext::new(),
    );
    assert!(forced.body.get("output_config").is_some());
}

#[test]
fn claude_versions_are_read_from_model_names() {
    use patchbay_anthropic::claude_version;
    for (model, version) in [
        ("claude-sonnet-4-5-20250929", Some((4, 5))),
        ("claude-haiku-4-5", Some((4, 5))),
        ("claude-opus-4-6", Some((4, 6))),
        ("claude-opus-4-20250514", Some((4, 0))),
        ("claude-opus-4-1", Some((4, 1))),
        ("claude-3-7-sonnet-latest", Some((3, 7))),
        ("claude-3-5-haiku-20241022", Some((3, 5))),
        ("claude-sonnet-5", Some((5, 0))),
        ("conformance-model", None),
        ("claude-instant", None),
    ] {
        assert_eq!(claude_version(model), version, "{model}");
    }
    let native = |model| StructuredOutput::Auto.is_native(model);
    assert!(native("claude-opus-4-6") && native("claude-sonnet-5") && native("claude-haiku-4-5-20251001"));
    assert!(!native("claude-opus-4-1") && !native("claude-3-7-sonnet-latest") && !native("my-gateway-alias"));
}

#[test]
fn structured_output_is_a_forced_tool_for_other_models() {
    let parts = structured(
        "claude-3-5-haiku",
        StructuredOutput::Auto,
        &ToolSet::new(),
        RequestContext::new(),
    );
    assert_eq!(parts.output_tool.as_deref(), Some("weather"));
    assert!(parts.body.get("output_format").is_none() && parts.betas.is_empty());
    assert_eq!(parts.body["tool_choice"], json!({"type": "tool", "name": "weather"}));
    let tool = &parts.body["tools"][0];
    assert_eq!(tool["name"], "weather");
    assert_eq!(tool["input_schema"], patchbay_conformance::weather_schema().schema);
    assert!(parts.warnings.is_empty());
    // Beside host tools the model must call some tool, and may call theirs first.
    let parts = structured(
        "claude-sonnet-4-5",
        StructuredOutput::Tool,
        &host_tools(),
        RequestContext::new(),
    );
    assert_eq!(parts.body["tool_choice"], json!({"type": "any"}));
    assert_eq!(parts.body["tools"].as_array().map(Vec::len), Some(3));
}

#[test]
fn the_output_tool_overrides_a_tool_choice_and_yields_to_thinking_with_warnings() {
    let choice = RequestContext::new().with_tool_choice(ToolChoice::Auto);
    let parts = structured("m", StructuredOutput::Tool, &ToolSet::new(), choice);
    assert_eq!(parts.body["tool_choice"]["type"], "tool");
    assert_eq!(parts.warnings.len(), 1);
    let mut sampling = Sampling::default();
    sampling.thinking_budget = Some(2048);
    let parts = structured(
        "m",
        StructuredOutput::Tool,
        &ToolSet::new(),
        RequestContext::new().with_sampling(sampling),
    );
    assert_eq!(parts.body["tool_choice"], json!({"type": "auto"}));
    assert!(
        parts.warnings.iter().any(|w| w.message.contains("thinking")),
        "{:?}",
        parts.warnings
    );
}

#[test]
fn an_output_schema_named_like_a_host_tool_is_refused_before_any_io() {
    let context = RequestContext::new().with_output_schema(patchbay_core::OutputSchema::new("get_weather", json!({})));
    let error = build_request_with(
        &[Message::user("hi")],
        &host_tools(),
        "m",
        Some(&context),
        DEFAULT_MAX_TOKENS,
        StructuredOutput::Tool,
    )
    .expect_err("clash");
    assert_eq!(error.kind(), patchbay_core::ErrorKind::InvalidRequest);
}
