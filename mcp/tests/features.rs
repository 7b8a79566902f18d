//! The client set against a server that uses what MCP 2025-11-25 offers a client: resources
//! and prompts, progress and log notifications, elicitation, sampling, `tools/list_changed`,
//! and a lost session. The server is an rmcp `ServerHandler` served over streamable HTTP with
//! sessions (server-to-client requests need them).

#![allow(deprecated)] // rmcp marks logging and sampling deprecated (SEP-2577); 2025-11-25 has both.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use patchbay_core::tool::{ProgressUpdate, ToolProgress};
use patchbay_core::{Agent, Event, ToolContext};
use patchbay_mcp::rmcp::model::*;
use patchbay_mcp::rmcp::service::RequestContext;
use patchbay_mcp::rmcp::{ErrorData, RoleServer, ServerHandler};
use patchbay_mcp::{AcceptDefaults, McpClientSet, ProviderSampling, prompt_messages, resource_message};
use patchbay_scripted::{Part, Response, Turn};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::{events, http, provider, serve_rmcp, start_rmcp};

/// The fixture server's state, shared by its sessions.
#[derive(Clone, Default)]
struct Fixture {
    grown: Arc<AtomicBool>,
}

fn tool(name: &'static str) -> Tool {
    Tool::new(
        name,
        name,
        Arc::new(serde_json::Map::from_iter([("type".into(), json!("object"))])),
    )
}

fn text(text: impl Into<String>) -> Result<CallToolResponse, ErrorData> {
    Ok(CallToolResponse::Complete(CallToolResult::success(vec![
        ContentBlock::text(text),
    ])))
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerInfo {
        ServerInfo::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .enable_prompts()
                .enable_logging()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = vec![tool("slow"), tool("ask"), tool("sample"), tool("grow")];
        if self.grown.load(Ordering::SeqCst) {
            tools.push(tool("grown"));
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let peer = context.peer.clone();
        match request.name.as_ref() {
            "slow" => {
                let token = context.meta.get_progress_token();
                let mut log = LoggingMessageNotificationParam::new(LoggingLevel::Info, json!("working"));
                log.logger = Some("fixture".into());
                let _ = peer.notify_logging_message(log).await;
                if let Some(token) = token {
                    for step in 1..=2 {
                        let mut param = ProgressNotificationParam::new(token.clone(), f64::from(step));
                        param.total = Some(2.0);
                        param.message = Some(format!("step {step}"));
                        let _ = peer.notify_progress(param).await;
                    }
                }
                text("slow done")
            }
            "ask" => {
                let schema: ElicitationSchema = serde_json::from_value(json!({
                    "type": "object",
                    "properties": { "name": { "type": "string", "default": "Ada" }, "age": { "type": "integer", "default": 36 } }
                }))
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                let answer = peer
                    .create_elicitation(ElicitRequestParams::FormElicitationParams {
                        meta: None,
                        message: "Who are you?".into(),
                        requested_schema: schema,
                    })
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                text(format!("{:?} {}", answer.action, answer.content.unwrap_or_default()))
            }
            "sample" => {
                let params = CreateMessageRequestParams::new(vec![SamplingMessage::user_text("Say hi")], 100);
                let answer = peer
                    .create_message(params)
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                let said: Vec<String> = answer
                    .message
                    .content
                    .into_vec()
                    .into_iter()
                    .filter_map(|block| match block {
                        SamplingMessageContentBlock::Text(text) => Some(text.text),
                        _ => None,
                    })
                    .collect();
                text(format!("model said: {}", said.join("")))
            }
            "grow" => {
                self.grown.store(true, Ordering::SeqCst);
                let _ = peer.notify_tool_list_changed().await;
                text("grown")
            }
            "grown" => text("the new tool ran"),
            other => Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        }
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new("file:///notes.txt", "notes").with_mime_type("text/plain"),
            Resource::new("file:///dot.png", "dot").with_mime_type("image/png"),
        ]))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new("file:///users/{id}", "user"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let contents = match request.uri.as_str() {
            "file:///dot.png" => ResourceContents::BlobResourceContents {
                uri: request.uri.clone(),
                mime_type: Some("image/png".into()),
                blob: "iVBORw0KGgo=".into(),
                meta: None,
            },
            uri => ResourceContents::text(format!("contents of {uri}"), uri),
        };
        Ok(ReadResourceResponse::Complete(ReadResourceResult::new(vec![contents])))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(vec![Prompt::new(
            "greet",
            Some("Greets someone"),
            Some(vec![PromptArgument::new("name")]),
        )]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let name = request
            .arguments
            .as_ref()
            .and_then(|args| args.get("name"))
            .and_then(|name| name.as_str())
            .unwrap_or("nobody")
            .to_owned();
        Ok(GetPromptResponse::Complete(GetPromptResult::new(vec![
            PromptMessage::new_text(Role::User, format!("Greet {name}.")),
            PromptMessage::new_text(Role::Assistant, "Hello!"),
        ])))
    }
}

/// The fixture served with sessions (server-to-client requests need them).
async fn start(fixture: Fixture) -> (String, CancellationToken) {
    start_rmcp(fixture, true).await
}

fn set(url: &str) -> McpClientSet {
    McpClientSet::new()
        .with_server(http("fixture", url, &[]))
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_templates_and_prompts_come_through_the_client_set() {
    let (url, _stop) = start(Fixture::default()).await;
    let connections = set(&url).connect().await;
    let client = connections.client("fixture").expect("connected");
    let resources = client.list_resources().await.expect("resources/list");
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["file:///notes.txt", "file:///dot.png"]);
    let templates = client.list_resource_templates().await.expect("templates");
    assert_eq!(templates[0].uri_template, "file:///users/{id}");

    let notes = client.read_resource("file:///notes.txt").await.expect("read");
    assert_eq!(
        resource_message(&notes).text(),
        "Resource file:///notes.txt:\ncontents of file:///notes.txt"
    );
    let image = client.read_resource("file:///dot.png").await.expect("read");
    assert!(matches!(
        &resource_message(&image).content[0],
        patchbay_core::ContentBlock::Image { media_type, .. } if media_type == "image/png"
    ));
    let filled = client
        .read_resource("file:///users/7")
        .await
        .expect("a template filled in");
    assert!(
        resource_message(&filled)
            .text()
            .ends_with("contents of file:///users/7")
    );

    let prompts = client.list_prompts().await.expect("prompts/list");
    assert_eq!(prompts[0].name, "greet");
    let arguments = serde_json::Map::from_iter([("name".to_owned(), json!("Ada"))]);
    let prompt = client.get_prompt("greet", arguments).await.expect("prompts/get");
    let messages = prompt_messages(&prompt);
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0].text(), "Greet Ada.");
    assert_eq!(messages[1].role, patchbay_core::Role::Assistant);
    connections.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_reaches_the_tool_reporter_and_logs_become_events() {
    let (url, _stop) = start(Fixture::default()).await;
    let connections = set(&url).connect().await;
    let client = connections.client("fixture").expect("connected");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let cx = ToolContext::new().with_progress(ToolProgress::new(move |update: ProgressUpdate| {
        sink.lock()
            .expect("not poisoned")
            .push((update.message, update.progress, update.total));
    }));
    let result = client.call_tool("slow", json!({}), &cx, None).await;
    assert_eq!(result.text_content(), "slow done");
    // rmcp handles notifications concurrently: a report overtaken by a later one is dropped,
    // so what arrives increases and ends with the last step.
    let seen = seen.lock().expect("not poisoned").clone();
    assert!(seen.windows(2).all(|w| w[0].1 < w[1].1), "{seen:?}");
    assert_eq!(seen.last(), Some(&(Some("step 2".to_owned()), Some(2.0), Some(2.0))));
    let events = connections.take_events();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Log { source, level, logger: Some(logger), data }
            if source == "fixture" && level == "info" && logger == "fixture" && data == "working")),
        "{events:#?}"
    );
    connections.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicitation_is_declined_by_default_and_answered_by_a_handler() {
    let (url, _stop) = start(Fixture::default()).await;
    let declined = set(&url).connect().await;
    let result = declined
        .client("fixture")
        .expect("connected")
        .call_tool("ask", json!({}), &ToolContext::new(), None)
        .await;
    assert_eq!(result.text_content(), "Decline null");
    declined.close().await;

    let accepted = set(&url).with_elicitation(AcceptDefaults).connect().await;
    let result = accepted
        .client("fixture")
        .expect("connected")
        .call_tool("ask", json!({}), &ToolContext::new(), None)
        .await;
    let (action, content) = result
        .text_content()
        .split_once(' ')
        .map(|(a, c)| (a.to_owned(), c.to_owned()))
        .unwrap_or_default();
    assert_eq!(action, "Accept");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&content).ok(),
        Some(json!({"name": "Ada", "age": 36}))
    );
    accepted.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_is_answered_by_a_patchbay_provider() {
    let (url, _stop) = start(Fixture::default()).await;
    let model = provider(vec![Turn::Respond(Response::new(vec![Part::text("hi there")]))]);
    let connections = set(&url)
        .with_sampling(ProviderSampling::new(model.clone(), "m"))
        .connect()
        .await;
    let result = connections
        .client("fixture")
        .expect("connected")
        .call_tool("sample", json!({}), &ToolContext::new(), None)
        .await;
    assert_eq!(result.text_content(), "model said: hi there");
    assert_eq!(model.requests()[0].messages[0].text(), "Say hi");
    connections.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_streams_mcp_progress_and_logs_and_sees_tools_added_by_list_changed() {
    let (url, _stop) = start(Fixture::default()).await;
    let model = provider(vec![
        Turn::Respond(Response::new(vec![Part::tool_call("c1", "slow", json!({}))])),
        Turn::Respond(Response::new(vec![Part::tool_call("c2", "grow", json!({}))])),
        Turn::Respond(Response::new(vec![Part::tool_call("c3", "grown", json!({}))])),
        Turn::Respond(Response::new(vec![Part::text("done")])),
    ]);
    let agent = Agent::new(model.clone(), "m").with_tool_source(Arc::new(set(&url)));
    let events = events(&agent, "go").await;
    let progress: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolProgress { id, progress, .. } => Some((id.as_str(), *progress)),
            _ => None,
        })
        .collect();
    // Regression: rmcp handles notifications concurrently and they came out swapped.
    assert!(progress.iter().all(|(id, _)| *id == "c1"), "{events:#?}");
    assert!(
        progress.windows(2).all(|w| w[0].1 < w[1].1),
        "progress must increase: {progress:?}"
    );
    assert_eq!(progress.last(), Some(&("c1", Some(2.0))));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Log { data, .. } if data == "working"))
    );
    let requests = model.requests();
    assert!(!requests[1].tools.contains(&"grown".to_owned()));
    assert!(
        requests[2].tools.contains(&"grown".to_owned()),
        "{:?}",
        requests[2].tools
    );
    let ran = events
        .iter()
        .any(|e| matches!(e, Event::ToolResult { id, result, .. } if id == "c3" && result.text_content() == "the new tool ran"));
    assert!(ran, "{events:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_lost_the_session_is_reinitialized_and_the_call_sent_again() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let url = format!("http://{addr}/mcp");
    let stop = serve_rmcp(listener, Fixture::default(), true);
    let connections = set(&url).connect().await;
    let client = connections.client("fixture").expect("connected");
    assert_eq!(
        client
            .call_tool("grown", json!({}), &ToolContext::new(), None)
            .await
            .text_content(),
        "the new tool ran"
    );
    // The server restarts on the same port: its sessions are gone, it answers 404.
    stop.cancel();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let listener = tokio::net::TcpListener::bind(addr).await.expect("the same port again");
    let _stop = serve_rmcp(listener, Fixture::default(), true);
    let result = tokio::time::timeout(
        Duration::from_secs(20),
        client.call_tool("grown", json!({}), &ToolContext::new(), None),
    )
    .await
    .expect("no hang");
    assert_eq!(result.text_content(), "the new tool ran", "{result:?}");
    connections.close().await;
}
