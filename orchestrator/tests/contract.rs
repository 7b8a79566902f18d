//! The MCP tools' answers where the README says nothing else: the orchestrator design they come
//! from (issue 25, "Seed 003 is the contract").
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Harness, TestResult, call, called_by, scripted};
use patchbay::ErrorKind;
use patchbay::scripted::{Script, ScriptedError, Turn};
use patchbay_orchestrator::tools::agent_session_tools;
use serde_json::{Value, json};

fn failing() -> patchbay_orchestrator::blueprint::Blueprint {
    let script = Script::new(vec![Turn::Fail(ScriptedError::new(
        ErrorKind::InvalidRequest,
        "boom at the model",
    ))]);
    scripted("broken", json!({ "script": script }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_session_has_the_status_not_existent() -> TestResult {
    let h = Harness::start(vec![], 1).await?;
    let tools = agent_session_tools(&h.orchestrator);
    let cx = called_by(None);
    let answer = call(
        &tools,
        "get_agent_session_status",
        json!({"session_name": "ghost", "response_format": "json"}),
        &cx,
    )
    .await?;
    assert!(!answer.is_error(), "{}", answer.text_content());
    let json: Value = serde_json::from_str(&answer.text_content())?;
    assert_eq!(json["status"], "not_existent");
    let answer = call(
        &tools,
        "get_agent_session_status",
        json!({"session_name": "ghost"}),
        &cx,
    )
    .await?;
    assert!(!answer.is_error());
    assert!(
        answer.text_content().contains("- status: not_existent"),
        "{}",
        answer.text_content()
    );
    // The result of an unknown session is still an error that says so.
    let answer = call(
        &tools,
        "get_agent_session_result",
        json!({"session_name": "ghost"}),
        &cx,
    )
    .await?;
    assert!(answer.is_error());
    h.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_run_is_an_error_answer_with_its_error() -> TestResult {
    let h = Harness::start(vec![failing()], 1).await?;
    let tools = agent_session_tools(&h.orchestrator);
    let cx = called_by(None);
    let input =
        json!({"session_name": "f", "prompt": "try", "agent_blueprint_name": "broken", "response_format": "json"});
    let answer = call(&tools, "start_agent_session", input, &cx).await?;
    assert!(answer.is_error(), "a failed sync run answered as a success");
    let json: Value = serde_json::from_str(&answer.text_content())?;
    assert_eq!(json["status"], "failed");
    assert!(
        json["error"].as_str().is_some_and(|e| e.contains("boom at the model")),
        "{json}"
    );
    let answer = call(
        &tools,
        "get_agent_session_result",
        json!({"session_name": "f", "response_format": "json"}),
        &cx,
    )
    .await?;
    assert!(answer.is_error());
    assert!(answer.text_content().contains("boom at the model"));
    // The status itself is no error: it answers what the status is.
    let answer = call(&tools, "get_agent_session_status", json!({"session_name": "f"}), &cx).await?;
    assert!(!answer.is_error());
    h.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_listings_carry_their_total() -> TestResult {
    let h = Harness::start(vec![], 1).await?;
    let tools = agent_session_tools(&h.orchestrator);
    let cx = called_by(None);
    let text = call(&tools, "list_agent_sessions", json!({}), &cx)
        .await?
        .text_content();
    assert_eq!(text, "No sessions found.\n");
    call(
        &tools,
        "start_agent_session",
        json!({"session_name": "a", "prompt": "hi"}),
        &cx,
    )
    .await?;
    let text = call(&tools, "list_agent_sessions", json!({"response_format": "json"}), &cx)
        .await?
        .text_content();
    let json: Value = serde_json::from_str(&text)?;
    assert_eq!(json["total"], 1);
    let text = call(&tools, "list_agent_blueprints", json!({"response_format": "json"}), &cx)
        .await?
        .text_content();
    let json: Value = serde_json::from_str(&text)?;
    assert_eq!(json["total"], json["blueprints"].as_array().map(Vec::len).unwrap_or(99));
    h.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemas_state_their_constraints_and_tools_their_annotations() -> TestResult {
    let h = Harness::start(vec![], 1).await?;
    let tools = agent_session_tools(&h.orchestrator);
    let spec = |name: &str| tools.get(name).unwrap().spec().clone();
    let start = spec("start_agent_session");
    let name = &start.input_schema["properties"]["session_name"];
    assert_eq!(name["maxLength"], 60, "{name}");
    assert_eq!(name["minLength"], 1, "{name}");
    assert_eq!(name["pattern"], "^[a-zA-Z0-9_-]+$", "{name}");
    let format = &start.input_schema["properties"]["response_format"];
    assert_eq!(format["enum"], json!(["markdown", "json"]), "{format}");
    let status = spec("get_agent_session_status");
    let wait = &status.input_schema["properties"]["wait_seconds"];
    assert_eq!(wait["maximum"], 600, "{wait}");
    assert_eq!(wait["minimum"], 0, "{wait}");
    for read_only in [
        "list_agent_blueprints",
        "list_agent_sessions",
        "get_agent_session_status",
        "get_agent_session_result",
    ] {
        let annotations = spec(read_only).annotations.expect("annotations");
        assert_eq!(annotations["readOnlyHint"], true, "{read_only}");
    }
    let delete = spec("delete_all_agent_sessions").annotations.expect("annotations");
    assert_eq!(delete["destructiveHint"], true);
    assert_eq!(delete["readOnlyHint"], false);
    let start = start.annotations.expect("annotations");
    assert_eq!(start["readOnlyHint"], false);
    h.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_agent_session_stops_the_run_and_its_queued_resumes() -> TestResult {
    let h = Harness::start(vec![common::stalling("stall")], 2).await?;
    let o = &h.orchestrator;
    let tools = agent_session_tools(o);
    let cx = called_by(None);
    let input = json!({"session_name": "s", "prompt": "go", "agent_blueprint_name": "stall", "async_mode": true});
    assert!(!call(&tools, "start_agent_session", input, &cx).await?.is_error());
    common::running(o, "s").await?;
    let input = json!({"session_name": "s", "prompt": "more", "async_mode": true});
    assert!(!call(&tools, "resume_agent_session", input, &cx).await?.is_error());
    let answer = call(
        &tools,
        "cancel_agent_session",
        json!({"session_name": "s", "response_format": "json"}),
        &cx,
    )
    .await?;
    assert!(!answer.is_error(), "{}", answer.text_content());
    let report: Value = serde_json::from_str(&answer.text_content())?;
    assert_eq!(report["status"], "cancelled", "{report}");
    let jobs = o
        .store()
        .list_jobs(Some("s"), patchbay_orchestrator::store::Page::first(10))
        .await?;
    assert!(jobs.iter().all(|j| j.status.as_str() == "cancelled"), "{jobs:?}");
    // Nothing left to cancel: an error saying so; an unknown session: an error too.
    let again = call(&tools, "cancel_agent_session", json!({"session_name": "s"}), &cx).await?;
    assert!(
        again.is_error() && again.text_content().contains("no run"),
        "{}",
        again.text_content()
    );
    let ghost = call(&tools, "cancel_agent_session", json!({"session_name": "ghost"}), &cx).await?;
    assert!(ghost.is_error());
    h.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_agent_session_events_pages_the_transcript() -> TestResult {
    let h = Harness::start(vec![common::answering("hi", "Hello there, parent.")], 1).await?;
    let o = &h.orchestrator;
    let tools = agent_session_tools(o);
    let cx = called_by(None);
    let input = json!({"session_name": "t", "prompt": "say hello", "agent_blueprint_name": "hi"});
    assert!(!call(&tools, "start_agent_session", input, &cx).await?.is_error());
    let text = call(&tools, "get_agent_session_events", json!({"session_name": "t"}), &cx)
        .await?
        .text_content();
    assert!(text.starts_with("## t events\n"), "{text}");
    assert!(text.contains("text: Hello there, parent."), "{text}");
    assert!(text.contains("finished (stop)"), "{text}");
    assert!(!text.contains("more events"), "{text}");
    // JSON, one event a page: next_after leads through every event once.
    let mut after = 0;
    let mut seqs = Vec::new();
    loop {
        let input = json!({"session_name": "t", "after": after, "limit": 1, "response_format": "json"});
        let page: Value = serde_json::from_str(
            &call(&tools, "get_agent_session_events", input, &cx)
                .await?
                .text_content(),
        )?;
        let events = page["events"].as_array().ok_or("events")?;
        assert_eq!(events.len(), 1, "{page}");
        seqs.push(events[0]["seq"].as_i64().ok_or("seq")?);
        assert!(
            events[0]["created_at"].as_str().is_some_and(|t| t.ends_with('Z')),
            "{page}"
        );
        match page["next_after"].as_i64() {
            Some(next) => after = next,
            None => break,
        }
    }
    let expected: Vec<i64> = (1..=seqs.len() as i64).collect();
    assert_eq!(seqs, expected);
    assert!(seqs.len() >= 3, "{seqs:?}");
    let ghost = call(
        &tools,
        "get_agent_session_events",
        json!({"session_name": "ghost"}),
        &cx,
    )
    .await?;
    assert!(ghost.is_error());
    h.stop().await
}
