//! The provider over HTTP: a two-turn tool conversation on a reasoning model sends the
//! encrypted reasoning back byte for byte; Azure OpenAI and OpenRouter's Responses endpoint
//! through base URL, key header, headers and query options.

use futures::StreamExt;
use patchbay_conformance::mock::Serve;
use patchbay_core::{Agent, Event, FnTool, Message, Signal, ToolContext, ToolResult, ToolSet};
use patchbay_openai::{OpenAiConfig, OpenAiProvider};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::{call, mock};

/// An encrypted reasoning item as OpenAI sends them: long, with `+`, `/`, `_`, `-` and `=`
/// that must survive.
fn encrypted() -> String {
    format!("gAAAAABo{}+/_-==", "Zm9vYmFy-_x/9+QUJD".repeat(90))
}

/// An SSE body of events, numbered.
fn body(events: &[Value]) -> String {
    events
        .iter()
        .enumerate()
        .map(|(n, event)| {
            let mut event = event.clone();
            event["sequence_number"] = json!(n);
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

#[derive(Deserialize, schemars::JsonSchema)]
struct City {
    /// The city.
    city: String,
}

fn weather_tool() -> ToolSet {
    ToolSet::new().with(FnTool::new(
        "get_weather",
        "The weather in a city.",
        |input: City, _cx: ToolContext| async move { ToolResult::text(format!("Sunny in {}", input.city)) },
    ))
}

/// A short answer.
fn hello() -> Serve {
    Serve::sse(body(&[
        json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "Hello"}),
        json!({"type": "response.completed", "response": {"status": "completed"}}),
    ]))
}

fn created(id: &str) -> Value {
    json!({"type": "response.created", "response": {"id": id, "model": "gpt-5-2025-08-07", "status": "in_progress", "output": []}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_turn_tool_conversation_sends_the_encrypted_reasoning_back_byte_for_byte() {
    let encrypted = encrypted();
    let reasoning = json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "**Checking the weather**"}], "encrypted_content": encrypted});
    let call_item = json!({"type": "function_call", "id": "fc_1", "call_id": "call_w1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}", "status": "completed"});
    let first = body(&[
        created("resp_1"),
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "**Checking the weather**"}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": reasoning}),
        json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_w1", "name": "get_weather", "arguments": ""}}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "{\"city\":"}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "\"Paris\"}"}),
        json!({"type": "response.output_item.done", "output_index": 1, "item": call_item}),
        json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
            "usage": {"input_tokens": 50, "output_tokens": 30, "output_tokens_details": {"reasoning_tokens": 20}}}}),
    ]);
    let second = body(&[
        created("resp_2"),
        json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "It is sunny in Paris."}),
        json!({"type": "response.completed", "response": {"id": "resp_2", "status": "completed"}}),
    ]);
    let (server, provider) = mock(vec![Serve::sse(first), Serve::sse(second)]).await;
    let agent = Agent::new(provider.clone(), "gpt-5").with_tools(weather_tool());
    let events: Vec<Event> = agent
        .stream(vec![Message::user("Weather in Paris?")], Signal::new())
        .map(|item| item.expect("no error"))
        .collect()
        .await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ReasoningSignature { signature, .. } if *signature == encrypted)),
        "{events:#?}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "one request per step");
    assert_eq!(requests[0].path, "/v1/responses");
    for request in &requests {
        assert_eq!(request.body["store"], false);
        assert_eq!(request.body["include"], json!(["reasoning.encrypted_content"]));
    }
    let input = requests[1].body["input"].as_array().expect("input items").clone();
    let kinds: Vec<&str> = input.iter().map(|item| item["type"].as_str().unwrap_or("?")).collect();
    assert_eq!(kinds, ["message", "reasoning", "function_call", "function_call_output"]);
    assert_eq!(
        input[1],
        json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Checking the weather**"}], "encrypted_content": encrypted}),
        "the reasoning item goes back without its id, the encrypted content byte for byte"
    );
    assert_eq!(
        input[2],
        json!({"type": "function_call", "call_id": "call_w1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"})
    );
    assert_eq!(input[3]["call_id"], "call_w1");
    assert_eq!(input[3]["output"], "Sunny in Paris");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_takes_its_key_header_and_api_version_query() {
    let (server, _) = mock(vec![hello()]).await;
    let config =
        OpenAiConfig::azure(format!("{}/openai/v1", server.url()), "azure-key").with_query("api-version", "preview");
    let provider = OpenAiProvider::new(config).expect("builds");
    let recording = call(&provider, &[Message::user("hi")], &ToolSet::new(), None).await;
    assert!(recording.error.is_none(), "{:?}", recording.error);
    let request = &server.requests()[0];
    assert_eq!(request.path, "/openai/v1/responses?api-version=preview");
    assert!(request.header("api-key").is_some(), "the key goes in `api-key`");
    assert!(request.header("authorization").is_none(), "and nowhere else");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openrouters_responses_endpoint_takes_a_bearer_key_and_its_headers() {
    let (server, _) = mock(vec![hello()]).await;
    let options = json!({
        "base_url": format!("{}/api/v1", server.url()),
        "api_key": "sk-or-key",
        "organization": "org-1",
        "project": "proj-1",
        "headers": {"HTTP-Referer": "https://example.com", "X-Title": "patchbay"},
    });
    let provider = OpenAiProvider::new(OpenAiConfig::from_options(&options).expect("options")).expect("builds");
    let recording = call(&provider, &[Message::user("hi")], &ToolSet::new(), None).await;
    assert!(recording.error.is_none(), "{:?}", recording.error);
    let request = &server.requests()[0];
    assert_eq!(request.path, "/api/v1/responses");
    assert!(request.header("authorization").is_some());
    assert_eq!(request.header("http-referer"), Some("https://example.com"));
    assert_eq!(request.header("x-title"), Some("patchbay"));
    assert_eq!(request.header("openai-organization"), Some("org-1"));
    assert_eq!(request.header("openai-project"), Some("proj-1"));
}

/// A remote MCP tool that needs approval: the request comes as an `Opaque` item, the host
/// answers with an `Opaque` `mcp_approval_response` in its next message, and both go back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_approval_request_is_answered_in_the_next_message() {
    let approval = json!({"type": "mcp_approval_request", "id": "mcpr_1", "server_label": "dice", "name": "roll", "arguments": "{\"sides\":6}"});
    let first = body(&[
        created("resp_1"),
        json!({"type": "response.output_item.added", "output_index": 0, "item": approval}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": approval}),
        json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}}),
    ]);
    let (server, provider) = mock(vec![Serve::sse(first), hello()]).await;
    let mcp = json!([{"type": "mcp", "server_label": "dice", "server_url": "https://dice.example/mcp", "require_approval": "always"}]);
    let context = patchbay_core::RequestContext::new().with_provider_options("openai", json!({ "tools": mcp }));
    let mut messages = vec![Message::user("Roll a die.")];
    let recording = call(provider.as_ref(), &messages, &ToolSet::new(), Some(&context)).await;
    let mut builder = patchbay_core::kit::ContentBuilder::default();
    for event in &recording.events {
        builder.push(event);
    }
    messages.push(Message::new(patchbay_core::Role::Assistant, builder.finish()));
    let answer = json!({"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": true});
    messages.push(Message::new(
        patchbay_core::Role::User,
        vec![patchbay_core::ContentBlock::Opaque {
            provider: "openai".into(),
            data: answer.clone(),
        }],
    ));
    let recording = call(provider.as_ref(), &messages, &ToolSet::new(), Some(&context)).await;
    assert!(recording.error.is_none(), "{:?}", recording.error);
    let requests = server.requests();
    assert_eq!(requests[0].body["tools"], mcp, "the built-in tool goes as given");
    let input = requests[1].body["input"].as_array().expect("input").clone();
    assert_eq!(input[1], approval, "the request goes back verbatim");
    assert_eq!(input[2], answer, "and the host's answer after it");
}
