//! `mcp-serve --conformance`: the reference tools, resources and prompts the official MCP
//! conformance suite (`@modelcontextprotocol/conformance`, `conformance server --url URL`)
//! calls, each built from patchbay's own types (`Tool`, `ToolResult`, `ToolContent`, the
//! tool context's progress, log and caller) so that every scenario checks patchbay's
//! plumbing, not hand-written MCP.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use patchbay_core::tool::{ProgressUpdate, ToolContent};
use patchbay_core::{Tool, ToolContext, ToolResult, ToolSet, ToolSpec, async_trait};
use patchbay_mcp::rmcp::model::ElicitationAction;
use patchbay_mcp::server::{Prompt, PromptMessage, Resource, ResourceTemplate};
use patchbay_mcp::{McpCaller, ToolServer, ToolServerBuilder, audio_content};
use serde_json::{Value, json};

/// A 1x1 red PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
/// A WAV of eight silent samples (8 kHz, mono, 8 bit).
const WAV: &str = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

type Run = dyn Fn(Value, ToolContext) -> Pin<Box<dyn Future<Output = ToolResult> + Send>> + Send + Sync;

/// A tool from a spec and an async function.
struct Reference {
    spec: ToolSpec,
    run: Arc<Run>,
}

#[async_trait]
impl Tool for Reference {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn execute(&self, input: Value, cx: &ToolContext) -> ToolResult {
        (self.run)(input, cx.clone()).await
    }
}

fn tool<F, Fut>(name: &str, description: &str, schema: Value, run: F) -> Reference
where
    F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolResult> + Send + 'static,
{
    Reference {
        spec: ToolSpec::new(name, description, schema),
        run: Arc::new(move |input, cx| Box::pin(run(input, cx))),
    }
}

fn no_arguments() -> Value {
    json!({"type": "object", "properties": {}})
}

fn one_string(name: &str, description: &str) -> Value {
    json!({"type": "object", "properties": {name: {"type": "string", "description": description}}, "required": [name]})
}

fn content(pieces: Vec<ToolContent>) -> ToolResult {
    ToolResult {
        content: pieces,
        ..ToolResult::text("")
    }
}

fn embedded(uri: &str, mime_type: &str, text: &str) -> ToolContent {
    ToolContent::Resource {
        uri: uri.into(),
        mime_type: Some(mime_type.into()),
        text: Some(text.into()),
        blob: None,
    }
}

fn image() -> ToolContent {
    ToolContent::Image {
        media_type: "image/png".into(),
        data: PNG.into(),
    }
}

async fn pause() {
    tokio::time::sleep(Duration::from_millis(50)).await;
}

/// Ask the caller to fill `schema`; the tool's answer says what came back.
async fn elicit(cx: &ToolContext, message: &str, schema: Value) -> ToolResult {
    let Some(caller) = McpCaller::of(cx) else {
        return ToolResult::error("not called over MCP");
    };
    match caller.elicit(message, schema).await {
        Ok(answer) => {
            let action = match answer.action {
                ElicitationAction::Accept => "accept",
                ElicitationAction::Decline => "decline",
                _ => "cancel",
            };
            let content = answer.content.unwrap_or(Value::Null);
            ToolResult::text(format!("Elicitation completed: action={action}, content={content}"))
        }
        Err(error) => ToolResult::error(error.to_string()),
    }
}

fn content_tools() -> ToolSet {
    ToolSet::new()
        .with(tool("test_simple_text", "Returns simple text.", no_arguments(), |_, _| async {
            ToolResult::text("This is a simple text response for testing.")
        }))
        .with(tool("test_image_content", "Returns an image.", no_arguments(), |_, _| async {
            content(vec![image()])
        }))
        .with(tool("test_audio_content", "Returns audio.", no_arguments(), |_, _| async {
            content(vec![audio_content("audio/wav", WAV)])
        }))
        .with(tool("test_embedded_resource", "Returns an embedded resource.", no_arguments(), |_, _| async {
            content(vec![embedded(
                "test://embedded-resource",
                "text/plain",
                "This is an embedded resource content.",
            )])
        }))
        .with(tool(
            "test_multiple_content_types",
            "Returns text, an image and a resource.",
            no_arguments(),
            |_, _| async {
                content(vec![
                    ToolContent::text("Multiple content types test:"),
                    image(),
                    embedded(
                        "test://mixed-content-resource",
                        "application/json",
                        r#"{"test":"data","value":123}"#,
                    ),
                ])
            },
        ))
        .with(tool("test_error_handling", "Always fails.", no_arguments(), |_, _| async {
            ToolResult::error("This tool intentionally returns an error for testing")
        }))
        .with(tool(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
                "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
                "additionalProperties": false
            }),
            |input, _| async move { ToolResult::text(format!("received: {input}")) },
        ))
        .with(tool(
            "test_reconnection",
            "Answers on its own stream (the server does not close streams mid-call).",
            no_arguments(),
            |_, _| async {
                pause().await;
                ToolResult::text("Reconnection test completed")
            },
        ))
}

fn context_tools() -> ToolSet {
    ToolSet::new()
        .with(tool("test_tool_with_logging", "Logs three messages while it runs.", no_arguments(), |_, cx| async move {
            cx.log.info("Tool execution started");
            pause().await;
            cx.log.info("Tool processing data");
            pause().await;
            cx.log.info("Tool execution completed");
            ToolResult::text("Logging test completed")
        }))
        .with(tool("test_tool_with_progress", "Reports progress while it runs.", no_arguments(), |_, cx| async move {
            for (step, done) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                if step > 0 {
                    pause().await;
                }
                cx.progress
                    .report(ProgressUpdate::message(format!("{done}% done")).with_progress(done, Some(100.0)));
            }
            ToolResult::text("Progress test completed")
        }))
        .with(tool(
            "test_sampling",
            "Asks the client's model.",
            one_string("prompt", "The prompt to send to the LLM"),
            |input, cx| async move {
                let Some(caller) = McpCaller::of(&cx) else {
                    return ToolResult::error("not called over MCP");
                };
                let prompt = input["prompt"].as_str().unwrap_or_default();
                match caller.sample_text(prompt, 100).await {
                    Ok(answer) => ToolResult::text(format!("LLM response: {answer}")),
                    Err(error) => ToolResult::error(error.to_string()),
                }
            },
        ))
        .with(tool(
            "test_elicitation",
            "Asks the user for a name and an email.",
            one_string("message", "The message to show the user"),
            |input, cx| async move {
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "username": {"type": "string", "description": "User's response"},
                        "email": {"type": "string", "description": "User's email address"}
                    },
                    "required": ["username", "email"]
                });
                elicit(&cx, input["message"].as_str().unwrap_or_default(), schema).await
            },
        ))
        .with(tool(
            "test_elicitation_sep1034_defaults",
            "Asks for fields with defaults.",
            no_arguments(),
            |_, cx| async move {
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "default": "John Doe"},
                        "age": {"type": "integer", "default": 30},
                        "score": {"type": "number", "default": 95.5},
                        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                        "verified": {"type": "boolean", "default": true}
                    }
                });
                elicit(&cx, "Please review your information", schema).await
            },
        ))
        .with(tool(
            "test_elicitation_sep1330_enums",
            "Asks with every kind of enum.",
            no_arguments(),
            |_, cx| async move {
                let titled = |pairs: &[(&str, &str)]| -> Value {
                    pairs.iter().map(|(value, title)| json!({"const": value, "title": title})).collect()
                };
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                        "titledSingle": {"type": "string", "oneOf": titled(&[("value1", "First Option"), ("value2", "Second Option"), ("value3", "Third Option")])},
                        "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
                        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                        "titledMulti": {"type": "array", "items": {"anyOf": titled(&[("value1", "First Choice"), ("value2", "Second Choice"), ("value3", "Third Choice")])}}
                    }
                });
                elicit(&cx, "Please choose", schema).await
            },
        ))
}

fn with_resources(builder: ToolServerBuilder) -> ToolServerBuilder {
    builder
        .resource(
            Resource::text(
                "test://static-text",
                "static-text",
                "This is the content of the static text resource.",
            )
            .with_description("A static text resource"),
        )
        .resource(Resource::blob("test://static-binary", "static-binary", "image/png", PNG).with_description("A PNG"))
        .resource(
            Resource::text("test://watched-resource", "watched-resource", "Watch me.")
                .with_description("A resource to subscribe to"),
        )
        .resource_template(
            ResourceTemplate::new("test://template/{id}/data", "template-data", |request| async move {
                let id = request.variables.get("id").cloned().unwrap_or_default();
                Ok(vec![ToolContent::Json {
                    value: json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}),
                }])
            })
            .with_description("Data for one id")
            .with_mime_type("application/json")
            .with_completion(|_, typed| {
                ["1", "2", "123"]
                    .iter()
                    .filter(|id| id.starts_with(typed))
                    .map(|id| id.to_string())
                    .collect()
            }),
        )
}

fn with_prompts(builder: ToolServerBuilder) -> ToolServerBuilder {
    let text = |text: &str| PromptMessage::user(ToolContent::text(text));
    builder
        .prompt(Prompt::fixed(
            "test_simple_prompt",
            "A simple prompt without arguments",
            vec![text("This is a simple prompt for testing.")],
        ))
        .prompt(
            Prompt::new(
                "test_prompt_with_arguments",
                "A prompt with two arguments",
                |args| async move {
                    let (arg1, arg2) = (&args["arg1"], &args["arg2"]);
                    Ok(vec![PromptMessage::user(ToolContent::text(format!(
                        "Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
                    )))])
                },
            )
            .with_argument("arg1", "First test argument", true)
            .with_argument("arg2", "Second test argument", true)
            .with_completion(|_, typed| {
                ["paris", "park", "party"]
                    .iter()
                    .filter(|word| word.starts_with(typed))
                    .map(|word| word.to_string())
                    .collect()
            }),
        )
        .prompt(
            Prompt::new(
                "test_prompt_with_embedded_resource",
                "A prompt embedding a resource",
                |args| async move {
                    Ok(vec![
                        PromptMessage::user(embedded(
                            &args["resourceUri"],
                            "text/plain",
                            "Embedded resource content for testing.",
                        )),
                        PromptMessage::user(ToolContent::text("Please process the embedded resource above.")),
                    ])
                },
            )
            .with_argument("resourceUri", "URI of the resource to embed", true),
        )
        .prompt(Prompt::fixed(
            "test_prompt_with_image",
            "A prompt with an image",
            vec![PromptMessage::user(image()), text("Please analyze the image above.")],
        ))
}

/// The conformance server: every reference tool, resource and prompt, stateful (the
/// suite's elicitation and sampling scenarios answer the server's requests in a session),
/// without a token (the suite sends none), on loopback.
pub(crate) fn builder() -> ToolServerBuilder {
    let mut tools = content_tools();
    for tool in context_tools().iter() {
        let _ = tools.insert(tool.clone());
    }
    let builder = ToolServer::builder(tools)
        .allow_anonymous()
        .stateful(true)
        .without_token()
        .server_info("patchbay-mcp-conformance", env!("CARGO_PKG_VERSION"));
    with_prompts(with_resources(builder))
}
