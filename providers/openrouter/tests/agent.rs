//! The seed behaviour: an agent on this provider uses native tools and tools merged from
//! elsewhere (MCP lands in patchbay-mcp) through one merged `ToolSet`; neither the loop nor
//! the translation needs anything more.

use std::sync::Arc;

use async_trait::async_trait;
use patchbay_conformance::mock::Serve;
use patchbay_core::{
    Agent, ContentBlock, Event, FnTool, Message, Provider, RequestContext, Signal, ToolContext, ToolResult, ToolSet,
    ToolSource, agent::AttachedTools,
};
use patchbay_scripted::{Part, Turn};
use serde::Deserialize;
use serde_json::json;

use crate::common::mock;

#[derive(Deserialize, schemars::JsonSchema)]
struct Echo {
    /// What to echo.
    text: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct City {
    /// The city.
    city: String,
}

fn native() -> ToolSet {
    ToolSet::new().with(FnTool::new(
        "get_weather",
        "Weather.",
        |input: City, _cx: ToolContext| async move { ToolResult::text(format!("sunny in {}", input.city)) },
    ))
}

/// Tools as an MCP client set would hand them over: one clashes with a native tool.
fn remote() -> ToolSet {
    ToolSet::new()
        .with(FnTool::new(
            "mcp__host__echo",
            "Echo.",
            |input: Echo, _cx: ToolContext| async move {
                ToolResult::text(input.text).with_metadata(json!({"documents": ["d1"]}))
            },
        ))
        .with(FnTool::new(
            "get_weather",
            "Remote weather (shadowed).",
            |_: City, _cx: ToolContext| async move { ToolResult::text("remote weather must not run") },
        ))
}

fn script() -> Vec<Serve> {
    vec![
        Serve::Turn(Turn::parts(vec![
            Part::tool_call("call_w", "get_weather", json!({"city": "Oslo"})),
            Part::tool_call("call_e", "mcp__host__echo", json!({"text": "hello"})),
        ])),
        Serve::Turn(Turn::text("Done.")),
    ]
}

fn results(events: &[Event]) -> Vec<(String, String, Option<serde_json::Value>)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolResult { name, result, .. } => {
                Some((name.clone(), result.text_content(), result.metadata.clone()))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_and_merged_tools_run_through_one_toolset() {
    let (server, provider) = mock(script()).await;
    let mut tools = native();
    let warnings = tools.merge(remote());
    assert_eq!(
        warnings.len(),
        1,
        "the clashing remote tool is reported, not silently dropped"
    );
    let provider: Arc<dyn Provider> = provider;
    let agent = Agent::new(provider, "m").with_tools(tools);
    let outcome = agent.run(vec![Message::user("go")], Signal::new()).await.expect("runs");
    assert_eq!(outcome.response.text(), "Done.");
    let tool_messages = &outcome.messages[2];
    assert!(
        matches!(&tool_messages.content[0], ContentBlock::ToolResult { tool_use_id, .. } if tool_use_id == "call_w")
    );
    // Both tools were offered to the model, native first.
    let offered: Vec<String> = server.requests()[0].body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect();
    assert_eq!(offered, vec!["get_weather", "mcp__host__echo"]);
    // The second request carries both results as tool messages.
    let second = &server.requests()[1].body["messages"];
    assert_eq!(second[2]["content"], "sunny in Oslo");
    assert_eq!(second[3]["content"], "hello");
}

struct FakeMcp;

#[async_trait]
impl ToolSource for FakeMcp {
    async fn attach(&self, _context: &RequestContext, _signal: &Signal) -> AttachedTools {
        AttachedTools {
            tools: remote(),
            connected: vec!["host".into()],
            ..AttachedTools::default()
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_attached_by_a_source_reach_the_model_and_keep_their_metadata() {
    let (_server, provider) = mock(script()).await;
    let provider: Arc<dyn Provider> = provider;
    let agent = Agent::new(provider, "m")
        .with_tools(native())
        .with_tool_source(Arc::new(FakeMcp));
    let events: Vec<Event> =
        futures::StreamExt::collect::<Vec<_>>(agent.stream(vec![Message::user("go")], Signal::new()))
            .await
            .into_iter()
            .collect::<Result<_, _>>()
            .expect("no error");
    assert!(matches!(&events[1], Event::McpConnected { servers, .. } if servers == &["host"]));
    let results = results(&events);
    assert_eq!(results[0].0, "get_weather");
    assert_eq!(results[0].1, "sunny in Oslo", "the native tool wins the name clash");
    assert_eq!(
        results[1],
        (
            "mcp__host__echo".into(),
            "hello".into(),
            Some(json!({"documents": ["d1"]}))
        )
    );
    let items = events.iter().map(Ok::<_, &patchbay_core::ProviderError>);
    patchbay_core::validate::validate(items).expect("one valid run");
}
