//! Host tools, the `tools` option, `strict`, `tool_choice`.

use patchbay_core::context::ToolChoice;
use patchbay_core::{CacheControl, Message, ToolSet, ToolSpec, Warning};
use serde_json::{Value, json};

use super::{MODEL, built, codes, refused, toolset, try_build, weather, with_options};

/// A tool whose schema does not qualify: an optional property.
fn lookup() -> ToolSpec {
    ToolSpec::new(
        "lookup",
        "Find a thing.",
        json!({
            "type": "object",
            "properties": { "id": { "type": "string" }, "limit": { "type": "integer" } },
            "required": ["id"],
            "additionalProperties": false,
        }),
    )
}

fn tools_of(tools: &ToolSet, options: Value) -> (Value, Vec<Warning>) {
    let built =
        try_build(&[Message::user("Hi")], tools, MODEL, Some(&with_options(options))).unwrap_or_else(|e| panic!("{e}"));
    (built.body["tools"].clone(), built.warnings)
}

#[test]
fn host_tools_are_functions_with_strict_from_their_schema_then_the_options_tools() {
    let tools = toolset(vec![
        weather(),
        lookup(),
        ToolSpec::new("now", "", Value::Null),
        ToolSpec::new("anything", "Takes nothing.", json!({})),
        ToolSpec::new("loose", "d", json!({ "type": "object" })),
    ]);
    let (wire, warnings) = tools_of(
        &tools,
        json!({ "tools": [
            { "type": "web_search" },
            { "type": "file_search", "vector_store_ids": ["vs_1"] },
            { "type": "mcp", "server_label": "deepwiki", "server_url": "https://mcp.deepwiki.com/mcp", "require_approval": "never" },
        ] }),
    );
    let empty = json!({ "type": "object", "properties": {}, "required": [], "additionalProperties": false });
    assert_eq!(
        wire,
        json!([
            { "type": "function", "name": "get_weather", "description": "The weather in a city.",
              "parameters": weather().input_schema, "strict": true },
            { "type": "function", "name": "lookup", "description": "Find a thing.",
              "parameters": lookup().input_schema, "strict": false },
            { "type": "function", "name": "now", "parameters": empty, "strict": true },
            { "type": "function", "name": "anything", "description": "Takes nothing.", "parameters": empty, "strict": true },
            { "type": "function", "name": "loose", "description": "d", "parameters": { "type": "object" }, "strict": false },
            { "type": "web_search" },
            { "type": "file_search", "vector_store_ids": ["vs_1"] },
            { "type": "mcp", "server_label": "deepwiki", "server_url": "https://mcp.deepwiki.com/mcp", "require_approval": "never" },
        ])
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    // No tools at all: no `tools`.
    assert!(built(&[Message::user("Hi")], None).body.get("tools").is_none());
    // Only the option's tools.
    let (wire, _) = tools_of(&ToolSet::new(), json!({ "tools": [{ "type": "image_generation" }] }));
    assert_eq!(wire, json!([{ "type": "image_generation" }]));
}

#[test]
fn strict_tools_forces_strict_either_way() {
    let tools = toolset(vec![weather(), lookup()]);
    let (wire, warnings) = tools_of(&tools, json!({ "strict_tools": true }));
    assert_eq!(
        (wire[0]["strict"].clone(), wire[1]["strict"].clone()),
        (json!(true), json!(true))
    );
    assert_eq!(codes(&warnings), [Warning::UNSUPPORTED_OPTION]);
    assert_eq!(
        warnings[0].message,
        "tool `lookup`: its input schema does not qualify for OpenAI's strict mode (property `limit` is not \
         `required` at #), but `strict_tools` sends it strict: the server may refuse it"
    );
    let (wire, warnings) = tools_of(&tools, json!({ "strict_tools": false }));
    assert_eq!(
        (wire[0]["strict"].clone(), wire[1]["strict"].clone()),
        (json!(false), json!(false))
    );
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn option_tools_must_be_objects_with_a_string_type() {
    for tools in [
        json!([{ "type": "web_search" }, "sk-secret"]),
        json!([{ "name": "sk-secret" }]),
        json!([{ "type": 5 }]),
        json!({ "type": "web_search" }),
    ] {
        let error = refused(json!({ "tools": tools }));
        let shown = error.to_string();
        assert!(shown.contains("`tools`"), "{shown}");
        assert!(!shown.contains("sk-secret"), "{shown}");
    }
    assert!(
        refused(json!({ "tools": [{ "name": "x" }] }))
            .to_string()
            .contains("entry 0")
    );
}

#[test]
fn tool_choice_from_the_context_or_the_option() {
    let choice = |choice: Option<ToolChoice>, options: Value| {
        let mut context = with_options(options);
        context.tool_choice = choice;
        built(&[Message::user("Hi")], Some(&context))
            .body
            .get("tool_choice")
            .cloned()
    };
    assert_eq!(choice(None, json!({})), None);
    assert_eq!(choice(Some(ToolChoice::Auto), json!({})), Some(json!("auto")));
    assert_eq!(choice(Some(ToolChoice::Any), json!({})), Some(json!("required")));
    assert_eq!(choice(Some(ToolChoice::None), json!({})), Some(json!("none")));
    assert_eq!(
        choice(Some(ToolChoice::Tool("get_weather".into())), json!({})),
        Some(json!({ "type": "function", "name": "get_weather" }))
    );
    let allowed = json!({ "type": "allowed_tools", "mode": "auto", "tools": [{ "type": "function", "name": "a" }] });
    assert_eq!(
        choice(Some(ToolChoice::Any), json!({ "tool_choice": allowed })),
        Some(allowed.clone())
    );
    assert_eq!(
        choice(None, json!({ "tool_choice": { "type": "web_search" } })),
        Some(json!({ "type": "web_search" }))
    );
    assert_eq!(choice(None, json!({ "tool_choice": "none" })), Some(json!("none")));
}

#[test]
fn parallel_tool_calls_is_sent_only_when_set() {
    let body = |options: Value| built(&[Message::user("Hi")], Some(&with_options(options))).body;
    assert_eq!(
        body(json!({ "parallel_tool_calls": false }))["parallel_tool_calls"],
        false
    );
    assert_eq!(
        body(json!({ "parallel_tool_calls": true }))["parallel_tool_calls"],
        true
    );
    assert!(body(json!({})).get("parallel_tool_calls").is_none());
}

#[test]
fn a_cache_marker_on_a_tool_gives_the_one_cache_warning() {
    let mut spec = weather();
    spec.cache_control = Some(CacheControl::ephemeral());
    let (_, warnings) = tools_of(&toolset(vec![spec]), json!({}));
    assert_eq!(codes(&warnings), [Warning::UNSUPPORTED_OPTION]);
    assert!(warnings[0].message.contains("`prompt_cache_key`"), "{warnings:?}");
}
