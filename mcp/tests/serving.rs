//! What the tool server serves beyond tools, through public APIs and an rmcp client: log
//! messages at the client's level, resources (fixed, templated, subscribed), prompts,
//! completion, a tool asking its caller (elicitation, sampling), structured output, and
//! serving without a token.
#![allow(deprecated)] // rmcp marks logging, sampling and subscriptions deprecated for 2026-07-28

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use patchbay_core::tool::{LogLevel, LogMessage, ToolContent};
use patchbay_core::{FnTool, RequestContext, ToolContext, ToolResult, ToolSet};
use patchbay_mcp::server::{Prompt, PromptMessage, Resource, ResourceTemplate};
use patchbay_mcp::{McpCaller, ResourceUpdates, ToolServer, ToolServerBuilder};
use rmcp::model::{
    ArgumentInfo, CallToolRequestParams, ClientCapabilities, ClientConfig, CompleteRequestParams,
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult, ElicitationAction,
    GetPromptRequestParams, Implementation, LoggingLevel, LoggingMessageNotificationParam, ReadResourceRequestParams,
    Reference, ResourceContents, ResourceUpdatedNotificationParam, SamplingMessage, SetLevelRequestParams,
    SubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext as McpRequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};

use crate::common::Empty;

/// An rmcp client that answers elicitation and sampling and keeps what it is told.
#[derive(Clone, Default)]
struct Client {
    logs: Arc<Mutex<Vec<LoggingMessageNotificationParam>>>,
    updated: Arc<Mutex<Vec<String>>>,
    asked: Arc<Mutex<Vec<Value>>>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(Default::default());
        capabilities.sampling = Some(Default::default());
        ClientConfig::new(capabilities, Implementation::new("test-client", "1.0.0"))
    }

    async fn on_logging_message(&self, params: LoggingMessageNotificationParam, _: NotificationContext<RoleClient>) {
        self.logs.lock().expect("not poisoned").push(params);
    }

    async fn on_resource_updated(&self, params: ResourceUpdatedNotificationParam, _: NotificationContext<RoleClient>) {
        self.updated.lock().expect("not poisoned").push(params.uri);
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _: McpRequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.asked
            .lock()
            .expect("not poisoned")
            .push(serde_json::to_value(&request).unwrap_or_default());
        let mut result = ElicitResult::new(ElicitationAction::Accept);
        result.content = Some(json!({"name": "Ada"}));
        Ok(result)
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _: McpRequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let asked: String = params.messages[0]
            .content
            .iter()
            .filter_map(|block| block.as_text().map(|t| t.text.clone()))
            .collect();
        Ok(CreateMessageResult::new(
            SamplingMessage::assistant_text(format!("you said: {asked}")),
            "test-model".into(),
        ))
    }
}

/// Wait (up to 5 s) until `done` holds; rmcp hands notifications over on tasks of their own.
async fn eventually(done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() && start.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `builder` served over an in-memory stdio pair to a [`Client`].
async fn connect(builder: ToolServerBuilder) -> (RunningService<RoleClient, Client>, Client) {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        let (read, write) = tokio::io::split(server_io);
        builder.serve_io(read, write, &RequestContext::new()).await
    });
    let client = Client::default();
    let (read, write) = tokio::io::split(client_io);
    let running = client.clone().serve((read, write)).await.expect("handshake");
    (running, client)
}

async fn call(
    client: &RunningService<RoleClient, Client>,
    name: &str,
    arguments: Value,
) -> rmcp::model::CallToolResult {
    let mut params = CallToolRequestParams::new(name.to_owned());
    params.arguments = arguments.as_object().cloned();
    client.call_tool(params).await.expect("call answered")
}

fn tools() -> ToolSet {
    ToolSet::new()
        .with(FnTool::new(
            "chatty",
            "Logs at three levels.",
            |_: Empty, cx: ToolContext| async move {
                cx.log.debug("detail");
                cx.log.info("working");
                cx.log
                    .log(LogMessage::new(LogLevel::Error, json!({"code": 7})).with_logger("db"));
                ToolResult::text("done")
            },
        ))
        .with(FnTool::new(
            "ask",
            "Asks its caller.",
            |_: Empty, cx: ToolContext| async move {
                let Some(caller) = McpCaller::of(&cx) else {
                    return ToolResult::error("no caller");
                };
                let schema = json!({"type": "object", "properties": {"name": {"type": "string", "default": "Bob"}}});
                let answer = caller.elicit("Your name?", schema).await.expect("elicited");
                let sampled = caller.sample_text("hello", 50).await.expect("sampled");
                ToolResult::text(format!("{}|{sampled}", answer.content.unwrap_or_default()["name"]))
            },
        ))
        .with(
            FnTool::new(
                "weather",
                "Structured weather.",
                |_: Empty, _cx: ToolContext| async move {
                    ToolResult {
                        content: vec![
                            ToolContent::text("sunny"),
                            ToolContent::Json {
                                value: json!({"sky": "sunny"}),
                            },
                        ],
                        ..ToolResult::text("")
                    }
                },
            )
            .with_annotations(json!({"title": "Weather", "readOnlyHint": true}))
            .with_output_schema(json!({"type": "object", "properties": {"sky": {"type": "string"}}})),
        )
}

#[tokio::test]
async fn a_tools_log_messages_reach_the_client_at_or_above_its_level() {
    let (client, seen) = connect(ToolServer::builder(tools())).await;
    // No level set: every message goes out.
    call(&client, "chatty", json!({})).await;
    eventually(|| seen.logs.lock().expect("not poisoned").len() >= 3).await;
    let levels: Vec<_> = seen
        .logs
        .lock()
        .expect("not poisoned")
        .iter()
        .map(|l| l.level)
        .collect();
    assert_eq!(levels, [LoggingLevel::Debug, LoggingLevel::Info, LoggingLevel::Error]);
    seen.logs.lock().expect("not poisoned").clear();

    client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Info))
        .await
        .expect("setLevel answered");
    call(&client, "chatty", json!({})).await;
    eventually(|| seen.logs.lock().expect("not poisoned").len() >= 2).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let logs = seen.logs.lock().expect("not poisoned").clone();
    assert_eq!(logs.len(), 2, "debug is filtered out: {logs:?}");
    assert_eq!((logs[0].level, &logs[0].data), (LoggingLevel::Info, &json!("working")));
    assert_eq!(logs[1].logger.as_deref(), Some("db"));
    client.cancel().await.expect("closed");
}

fn with_resources(updates_out: &mut Option<ResourceUpdates>) -> ToolServerBuilder {
    let builder = ToolServer::builder(ToolSet::new())
        .resource(Resource::text("notes://today", "today", "Buy milk.").with_description("Today"))
        .resource(Resource::blob("img://dot", "dot", "image/png", "iVBORw0KGgo="))
        .resource_template(
            ResourceTemplate::new("users://{id}/profile", "profile", |request| async move {
                Ok(vec![ToolContent::Json {
                    value: json!({"id": request.variables["id"]}),
                }])
            })
            .with_completion(|_, typed| vec![format!("{typed}1"), format!("{typed}2")]),
        );
    *updates_out = Some(builder.resource_updates());
    builder
}

#[tokio::test]
async fn resources_are_listed_read_by_uri_and_template_and_subscribed_to() {
    let mut updates = None;
    let (client, seen) = connect(with_resources(&mut updates)).await;
    let updates = updates.expect("a handle");

    let listed = client.list_all_resources().await.expect("listed");
    let uris: Vec<_> = listed.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["notes://today", "img://dot"]);
    assert_eq!(listed[0].mime_type.as_deref(), Some("text/plain"));
    let templates = client.list_all_resource_templates().await.expect("listed");
    assert_eq!(templates[0].uri_template, "users://{id}/profile");

    let read = |uri: &str| client.read_resource(ReadResourceRequestParams::new(uri));
    let text = read("notes://today").await.expect("read");
    assert!(
        matches!(&text.contents[0], ResourceContents::TextResourceContents { text, mime_type, .. } if text == "Buy milk." && mime_type.as_deref() == Some("text/plain")),
        "{text:?}"
    );
    let blob = read("img://dot").await.expect("read");
    assert!(matches!(&blob.contents[0], ResourceContents::BlobResourceContents { blob, .. } if blob == "iVBORw0KGgo="));
    let user = read("users://42/profile").await.expect("read");
    assert!(
        matches!(&user.contents[0], ResourceContents::TextResourceContents { uri, text, mime_type, .. } if uri == "users://42/profile" && text == r#"{"id":"42"}"# && mime_type.as_deref() == Some("application/json")),
        "{user:?}"
    );
    assert!(read("nothing://here").await.is_err(), "an unknown URI is an error");

    client
        .subscribe(SubscribeRequestParams::new("notes://today"))
        .await
        .expect("subscribed");
    assert_eq!(updates.subscribers("notes://today"), 1);
    assert_eq!(updates.updated("notes://today").await, 1);
    eventually(|| !seen.updated.lock().expect("not poisoned").is_empty()).await;
    assert_eq!(*seen.updated.lock().expect("not poisoned"), ["notes://today"]);

    let completion = client
        .complete(CompleteRequestParams::new(
            Reference::for_resource("users://{id}/profile"),
            ArgumentInfo::new("id", "4"),
        ))
        .await
        .expect("completed");
    assert_eq!(completion.completion.values, ["41", "42"]);
    client.cancel().await.expect("closed");
}

#[tokio::test]
async fn prompts_are_listed_and_got_with_arguments_images_and_resources() {
    let review = Prompt::new("review", "Review a file.", |args| async move {
        Ok(vec![
            PromptMessage::user(ToolContent::Resource {
                uri: format!("file://{}", args["path"]),
                mime_type: Some("text/plain".into()),
                text: Some("fn main() {}".into()),
                blob: None,
            }),
            PromptMessage::assistant(ToolContent::Image {
                media_type: "image/png".into(),
                data: "iVBORw0KGgo=".into(),
            }),
            PromptMessage::user(ToolContent::text(format!("Review {}.", args["path"]))),
        ])
    })
    .with_argument("path", "The file", true)
    .with_completion(|argument, typed| vec![format!("{argument}:{typed}")]);
    let (client, _) = connect(ToolServer::builder(ToolSet::new()).prompt(review)).await;

    let listed = client.list_all_prompts().await.expect("listed");
    assert_eq!(listed[0].name, "review");
    assert_eq!(listed[0].arguments.as_ref().expect("arguments")[0].required, Some(true));

    let mut params = GetPromptRequestParams::new("review");
    params.arguments = json!({"path": "main.rs"}).as_object().cloned();
    let got = client.get_prompt(params).await.expect("got");
    let messages = serde_json::to_value(&got.messages).expect("serializes");
    assert_eq!(messages[0]["content"]["type"], "resource");
    assert_eq!(messages[0]["content"]["resource"]["uri"], "file://main.rs");
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["content"]["type"], "image");
    assert_eq!(messages[2]["content"]["text"], "Review main.rs.");

    let missing = client.get_prompt(GetPromptRequestParams::new("review")).await;
    assert!(
        format!("{:?}", missing.expect_err("refused")).contains("needs the argument `path`"),
        "a required argument missing is refused"
    );
    let completion = client
        .complete(CompleteRequestParams::new(
            Reference::for_prompt("review"),
            ArgumentInfo::new("path", "ma"),
        ))
        .await
        .expect("completed");
    assert_eq!(completion.completion.values, ["path:ma"]);
    client.cancel().await.expect("closed");
}

#[tokio::test]
async fn a_tool_asks_its_caller_for_input_and_for_a_models_answer() {
    let (client, seen) = connect(ToolServer::builder(tools())).await;
    let answer = call(&client, "ask", json!({})).await;
    let text = patchbay_mcp::from_call_tool_result(answer).text_content();
    assert_eq!(text, r#""Ada"|you said: hello"#);
    let asked = seen.asked.lock().expect("not poisoned").clone();
    assert_eq!(asked[0]["message"], "Your name?");
    assert_eq!(asked[0]["requestedSchema"]["properties"]["name"]["default"], "Bob");
    client.cancel().await.expect("closed");
}

#[tokio::test]
async fn a_tool_with_an_output_schema_lists_it_and_answers_structured_content() {
    let (client, _) = connect(ToolServer::builder(tools())).await;
    let listed = client.list_all_tools().await.expect("listed");
    let weather = listed.iter().find(|t| t.name == "weather").expect("listed");
    assert_eq!(weather.output_schema.as_ref().expect("output schema")["type"], "object");
    assert_eq!(weather.title.as_deref(), Some("Weather"));
    assert_eq!(weather.annotations.as_ref().and_then(|a| a.read_only_hint), Some(true));
    let back = patchbay_mcp::spec_from_mcp(weather, "weather");
    assert_eq!(back.output_schema.expect("kept")["properties"]["sky"]["type"], "string");

    let answer = call(&client, "weather", json!({})).await;
    assert_eq!(answer.structured_content, Some(json!({"sky": "sunny"})));
    assert_eq!(answer.content.len(), 2, "the JSON is also sent as text");
    client.cancel().await.expect("closed");
}

#[tokio::test]
async fn a_server_without_a_token_serves_any_local_caller_and_its_own_origin_only() {
    let server = ToolServer::builder(tools())
        .allow_anonymous()
        .without_token()
        .start()
        .await
        .expect("server starts");
    let client = patchbay_http::client_builder().build().expect("client");
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let post = |origin: Option<String>| {
        let mut request = client
            .post(server.url())
            .header("accept", "application/json, text/event-stream")
            .json(&initialize);
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        request.send()
    };
    assert!(
        post(None).await.expect("answered").status().is_success(),
        "no token needed"
    );
    let own = format!("http://127.0.0.1:{}", server.addr().port());
    assert!(
        post(Some(own)).await.expect("answered").status().is_success(),
        "its own origin"
    );
    let foreign = post(Some("http://evil.example".into())).await.expect("answered");
    assert!(
        foreign.status().is_client_error(),
        "another origin: {}",
        foreign.status()
    );
    server.shutdown().await;

    // The default keeps the token.
    let guarded = ToolServer::builder(tools())
        .allow_anonymous()
        .start()
        .await
        .expect("starts");
    let refused = client
        .post(guarded.url())
        .header("accept", "application/json, text/event-stream")
        .json(&initialize)
        .send()
        .await
        .expect("answered");
    assert_eq!(refused.status(), 401);
    guarded.shutdown().await;
}
