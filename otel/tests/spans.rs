//! The spans and metrics of agent runs, read back from in-memory exporters.

use std::sync::Arc;

use opentelemetry::Value;
use opentelemetry::trace::{SpanKind, Status};
use patchbay_conformance::mock::anthropic::AnthropicWire;
use patchbay_conformance::mock::{MockServer, Serve};
use patchbay_core::ErrorKind;
use patchbay_scripted::{Script, ScriptedError, ScriptedProvider, Turn};
use serde_json::json;

use crate::support::{ANTHROPIC_KEY, Memory, anthropic, attribute, names, run, serial, span, value, weather_script};

#[tokio::test]
async fn a_scripted_run_with_a_tool_call_is_an_agent_span_over_chat_and_tool_spans() {
    let _serial = serial().await;
    let memory = Memory::new();
    let provider = Arc::new(ScriptedProvider::new(weather_script()));
    let text = memory
        .record(run(provider, "scripted-model"))
        .await
        .expect("the run succeeds");
    assert_eq!(text, "Sunny in Paris.");

    let spans = memory.finished_spans();
    let agent = span(&spans, "invoke_agent weather-bot");
    assert_eq!(
        attribute(agent, "gen_ai.operation.name").as_deref(),
        Some("invoke_agent")
    );
    assert_eq!(attribute(agent, "gen_ai.agent.name").as_deref(), Some("weather-bot"));
    assert_eq!(attribute(agent, "gen_ai.provider.name").as_deref(), Some("scripted"));
    assert_eq!(attribute(agent, "gen_ai.usage.input_tokens").as_deref(), Some("42"));
    assert_eq!(attribute(agent, "gen_ai.usage.output_tokens").as_deref(), Some("12"));
    assert_eq!(
        attribute(agent, "gen_ai.response.finish_reasons").as_deref(),
        Some(r#"["stop"]"#)
    );

    let chats: Vec<_> = spans.iter().filter(|s| s.name == "chat scripted-model").collect();
    assert_eq!(chats.len(), 2, "one chat span per model call: {:?}", names(&spans));
    for chat in &chats {
        assert_eq!(
            chat.parent_span_id,
            agent.span_context.span_id(),
            "the agent run is the parent"
        );
        assert_eq!(chat.span_kind, SpanKind::Client);
        assert_eq!(attribute(chat, "gen_ai.operation.name").as_deref(), Some("chat"));
        assert_eq!(attribute(chat, "gen_ai.provider.name").as_deref(), Some("scripted"));
        assert_eq!(
            attribute(chat, "gen_ai.request.model").as_deref(),
            Some("scripted-model")
        );
        assert_eq!(
            attribute(chat, "gen_ai.response.model").as_deref(),
            Some("scripted-model")
        );
        assert!(attribute(chat, "gen_ai.response.id").is_some_and(|id| id.starts_with("scripted-")));
        assert!(
            matches!(value(chat, "gen_ai.response.time_to_first_chunk"), Some(Value::F64(s)) if *s >= 0.0),
            "time to first chunk in seconds: {:?}",
            chat.attributes
        );
        assert!(attribute(chat, "error.type").is_none());
        assert!(
            attribute(chat, "gen_ai.input.messages").is_none(),
            "no content unless asked for"
        );
        assert!(
            attribute(chat, "gen_ai.output.messages").is_none(),
            "no content unless asked for"
        );
    }
    let reasons: Vec<_> = chats
        .iter()
        .map(|c| attribute(c, "gen_ai.response.finish_reasons"))
        .collect();
    assert!(reasons.contains(&Some(r#"["tool_call"]"#.into())), "{reasons:?}");
    assert!(reasons.contains(&Some(r#"["stop"]"#.into())), "{reasons:?}");
    let first = chats
        .iter()
        .find(|c| attribute(c, "gen_ai.response.finish_reasons").as_deref() == Some(r#"["tool_call"]"#))
        .expect("the tool-call step");
    assert_eq!(
        value(first, "gen_ai.usage.input_tokens"),
        Some(&Value::I64(12)),
        "an integer attribute"
    );
    assert_eq!(attribute(first, "gen_ai.usage.output_tokens").as_deref(), Some("7"));

    let tool = span(&spans, "execute_tool get_weather");
    assert_eq!(tool.parent_span_id, agent.span_context.span_id());
    assert_eq!(tool.span_kind, SpanKind::Internal);
    assert_eq!(
        attribute(tool, "gen_ai.operation.name").as_deref(),
        Some("execute_tool")
    );
    assert_eq!(attribute(tool, "gen_ai.tool.name").as_deref(), Some("get_weather"));
    assert_eq!(attribute(tool, "gen_ai.tool.call.id").as_deref(), Some("call_1"));
    assert_eq!(attribute(tool, "gen_ai.tool.type").as_deref(), Some("function"));
    assert_eq!(attribute(tool, "patchbay.tool.status").as_deref(), Some("completed"));
    assert!(attribute(tool, "gen_ai.tool.call.arguments").is_none());
    assert_eq!(tool.status, Status::Unset);

    let durations = memory.histogram("gen_ai.client.operation.duration");
    assert_eq!(durations.iter().map(|p| p.count).sum::<u64>(), 2, "{durations:?}");
    let point = &durations[0];
    assert_eq!(point.attribute("gen_ai.operation.name").as_deref(), Some("chat"));
    assert_eq!(point.attribute("gen_ai.provider.name").as_deref(), Some("scripted"));
    assert_eq!(
        point.attribute("gen_ai.request.model").as_deref(),
        Some("scripted-model")
    );
    assert_eq!(point.attribute("error.type"), None);
    let tokens = memory.histogram("gen_ai.client.token.usage");
    assert_eq!(memory.tokens("input"), 42.0, "{tokens:?}");
    assert_eq!(memory.tokens("output"), 12.0, "{tokens:?}");
    let first_chunk = memory.histogram("gen_ai.client.operation.time_to_first_chunk");
    assert_eq!(first_chunk.iter().map(|p| p.count).sum::<u64>(), 2, "{first_chunk:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anthropic_run_against_the_mock_has_the_wire_facts_on_its_spans() {
    let _serial = serial().await;
    let server = MockServer::builder(AnthropicWire)
        .script(&weather_script())
        .start()
        .await
        .expect("mock starts");
    let provider = anthropic(server.url());
    let memory = Memory::new();
    let text = memory
        .record(run(provider, "claude-test"))
        .await
        .expect("the run succeeds");
    assert_eq!(text, "Sunny in Paris.");

    let spans = memory.finished_spans();
    let chats: Vec<_> = spans.iter().filter(|s| s.name == "chat claude-test").collect();
    assert_eq!(chats.len(), 2, "{:?}", names(&spans));
    for chat in &chats {
        assert_eq!(attribute(chat, "gen_ai.provider.name").as_deref(), Some("anthropic"));
        assert!(attribute(chat, "gen_ai.response.id").is_some_and(|id| !id.is_empty()));
        assert!(attribute(chat, "gen_ai.response.model").is_some());
        assert!(attribute(chat, "gen_ai.usage.input_tokens").is_some());
        assert!(attribute(chat, "gen_ai.usage.output_tokens").is_some());
        assert_eq!(
            attribute(chat, "gen_ai.request.max_tokens"),
            None,
            "only parameters that were set"
        );
    }
    span(&spans, "execute_tool get_weather");
    let everything = format!("{spans:?}");
    assert!(!everything.contains(ANTHROPIC_KEY), "no key on any span");

    // The mock reports the script's usage: 12 + 30 input tokens, 7 + 5 output tokens.
    let tokens = memory.histogram("gen_ai.client.token.usage");
    assert_eq!(
        (memory.tokens("input"), memory.tokens("output")),
        (42.0, 12.0),
        "{tokens:?}"
    );
    assert!(
        tokens
            .iter()
            .all(|p| p.attribute("gen_ai.provider.name").as_deref() == Some("anthropic"))
    );
    let durations = memory.histogram("gen_ai.client.operation.duration");
    assert_eq!(durations.iter().map(|p| p.count).sum::<u64>(), 2, "{durations:?}");
    let first_chunk = memory.histogram("gen_ai.client.operation.time_to_first_chunk");
    assert_eq!(first_chunk.iter().map(|p| p.count).sum::<u64>(), 2, "{first_chunk:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_run_sets_the_error_status_and_error_type() {
    let _serial = serial().await;
    let server = MockServer::builder(AnthropicWire)
        .serve([Serve::status(
            429,
            json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}).to_string(),
            Some(7),
        )])
        .start()
        .await
        .expect("mock starts");
    let provider = anthropic(server.url());
    let memory = Memory::new();
    let error = memory
        .record(run(provider, "claude-test"))
        .await
        .expect_err("rate limited");
    assert_eq!(error.kind(), ErrorKind::RateLimited);

    let spans = memory.finished_spans();
    for name in ["chat claude-test", "invoke_agent weather-bot"] {
        let failed = span(&spans, name);
        assert_eq!(
            attribute(failed, "error.type").as_deref(),
            Some("rate_limited"),
            "{name}"
        );
        assert!(
            matches!(&failed.status, Status::Error { description } if !description.is_empty()),
            "{name}: {:?}",
            failed.status
        );
    }
    let durations = memory.histogram("gen_ai.client.operation.duration");
    assert_eq!(durations.len(), 1, "{durations:?}");
    assert_eq!(durations[0].attribute("error.type").as_deref(), Some("rate_limited"));
    assert!(
        memory.histogram("gen_ai.client.token.usage").is_empty(),
        "no usage was reported"
    );
}

#[tokio::test]
async fn a_later_failing_call_is_on_its_chat_span_and_an_unknown_tool_is_never_executed() {
    let _serial = serial().await;
    let script = Script::new(vec![
        Turn::Respond(patchbay_scripted::Response::new(vec![
            patchbay_scripted::Part::tool_call("call_9", "missing_tool", json!({})),
        ])),
        Turn::Fail(ScriptedError::new(ErrorKind::Overloaded, "overloaded")),
    ]);
    let memory = Memory::new();
    let error = memory
        .record(run(Arc::new(ScriptedProvider::new(script)), "scripted-model"))
        .await
        .expect_err("the second call fails");
    assert_eq!(error.kind(), ErrorKind::Overloaded);
    let spans = memory.finished_spans();
    let chats: Vec<_> = spans.iter().filter(|s| s.name == "chat scripted-model").collect();
    assert_eq!(chats.len(), 2, "{:?}", names(&spans));
    assert!(
        chats
            .iter()
            .any(|c| attribute(c, "error.type").as_deref() == Some("overloaded"))
    );
    // An unknown tool is never executed: no execute_tool span, and the run goes on.
    assert!(
        !names(&spans).iter().any(|n| n.starts_with("execute_tool")),
        "{:?}",
        names(&spans)
    );
}

#[tokio::test]
async fn content_is_recorded_only_when_capture_is_on() {
    let _serial = serial().await;
    patchbay_core::telemetry::set_capture_content(true);
    let memory = Memory::new();
    let provider = Arc::new(ScriptedProvider::new(weather_script()));
    let result = memory.record(run(provider, "scripted-model")).await;
    patchbay_core::telemetry::set_capture_content(false);
    result.expect("the run succeeds");

    let spans = memory.finished_spans();
    let chats: Vec<_> = spans.iter().filter(|s| s.name == "chat scripted-model").collect();
    let input = attribute(chats[0], "gen_ai.input.messages").expect("input messages");
    let input: serde_json::Value = serde_json::from_str(&input).expect("JSON");
    assert_eq!(input[0]["role"], "user");
    assert_eq!(
        input[0]["parts"][0],
        json!({"type": "text", "content": "Weather in Paris?"})
    );
    let outputs: Vec<serde_json::Value> = chats
        .iter()
        .filter_map(|c| attribute(c, "gen_ai.output.messages"))
        .map(|text| serde_json::from_str(&text).expect("JSON"))
        .collect();
    assert!(
        outputs.iter().any(|o| o[0]["parts"][0]
            == json!({"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}})),
        "{outputs:?}"
    );
    assert!(
        outputs.iter().any(|o| o[0]["parts"][0]["content"] == "Sunny in Paris."),
        "{outputs:?}"
    );
    let second_input = chats
        .iter()
        .filter_map(|c| attribute(c, "gen_ai.input.messages"))
        .find(|m| m.contains("tool_call_response"))
        .expect("the second call sends the tool result");
    assert!(second_input.contains("sunny, 24 C"), "{second_input}");
    let tool = span(&spans, "execute_tool get_weather");
    assert_eq!(
        attribute(tool, "gen_ai.tool.call.arguments").as_deref(),
        Some(r#"{"city":"Paris"}"#)
    );
    assert!(attribute(tool, "gen_ai.tool.call.result").is_some_and(|r| r.contains("sunny, 24 C")));
}
