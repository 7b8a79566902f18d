//! The seven MCP tools of the orchestrator: called directly as a patchbay `ToolSet` (both
//! response formats, a bad format, results cut at 25,000 characters) and over MCP streamable
//! HTTP with patchbay's MCP client (the `X-Agent-Session-Name` header makes the caller the
//! child's parent, a resume by another parent updates it), and a run whose blueprint reaches the
//! orchestrator's tools starting a grandchild that is recorded as its child (also with a single
//! worker, where the nested sync start answers at the wait limit and the grandchild runs after).

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{Fallible, Harness, TestResult, answering, call, called_by, ok_text, scripted, within};
use patchbay::mcp::{McpClientSet, McpConnections};
use patchbay::{ToolContext, context::McpServerConfig, context::McpTransport, tool::ToolStatus};
use patchbay_orchestrator::format::{MAX_RESULT_CHARS, ResponseFormat, render_session};
use patchbay_orchestrator::http::{HttpOptions, serve_http};
use patchbay_orchestrator::tools::agent_session_tools;
use patchbay_orchestrator::{RunAnswer, StartRequest};
use serde_json::{Value, json};

use common::backend::Backend;

on_both_backends!(
    results_over_25000_characters_are_truncated_in_both_formats_and_over_the_tools,
    the_tools_answer_in_markdown_and_json_and_refuse_other_formats,
    the_caller_header_makes_the_parent_and_a_resume_by_another_parent_updates_it,
    a_run_that_starts_a_grandchild_is_recorded_as_its_parent,
    a_nested_sync_start_with_one_worker_lends_the_slot_and_gets_the_result,
);

/// A result text of 30,000 characters, some of them two bytes long, in 300 words (each word
/// is one streamed delta and one stored event: few words keep the test quick).
fn long_text() -> String {
    format!("{}é ", "x".repeat(98)).repeat(300)
}

const TRUNCATION_LINE: &str = "[truncated: the result had 30,000 characters; the first 25,000 are shown]";

/// `text` with its truncation line checked and removed: the kept part.
fn kept_part(text: &str) -> Fallible<String> {
    let (kept, line) = text
        .rsplit_once("\n\n")
        .ok_or_else(|| format!("no truncation line in {} characters", text.chars().count()))?;
    assert_eq!(line.trim_end(), TRUNCATION_LINE);
    Ok(kept.to_owned())
}

async fn results_over_25000_characters_are_truncated_in_both_formats_and_over_the_tools(
    backend: Backend,
) -> TestResult {
    let full = long_text();
    assert_eq!(full.chars().count(), 30_000);
    let expected: String = full.chars().take(MAX_RESULT_CHARS).collect();
    let Some(h) = Harness::start_on(backend, vec![answering("long", &full)], 2).await? else {
        return Ok(());
    };
    let o = &h.orchestrator;

    let request = StartRequest {
        session_name: "wordy".to_owned(),
        prompt: "write a lot".to_owned(),
        blueprint: Some("long".to_owned()),
        ..StartRequest::default()
    };
    let RunAnswer::Ended(report) = within("start", o.start_session(request)).await?? else {
        return Err("the sync start did not wait".into());
    };
    // The stored result is whole; answers cut it.
    assert_eq!(report.result.as_deref(), Some(full.as_str()));

    let json: Value = serde_json::from_str(&render_session(&report, ResponseFormat::Json))?;
    let result = json["result"].as_str().ok_or("no result in the JSON")?;
    assert_eq!(kept_part(result)?, expected);

    let markdown = render_session(&report, ResponseFormat::Markdown);
    let (_, result) = markdown.split_once("\n### result\n\n").ok_or("no result heading")?;
    assert_eq!(kept_part(result)?, expected);

    // Through the MCP tools: the result call and a sync start, both formats.
    let tools = agent_session_tools(o);
    let cx = called_by(None);
    let text = ok_text(
        &call(
            &tools,
            "get_agent_session_result",
            json!({"session_name": "wordy"}),
            &cx,
        )
        .await?,
    )?;
    let (_, result) = text.split_once("\n### result\n\n").ok_or("no result heading")?;
    assert_eq!(kept_part(result)?, expected);
    let input = json!({"session_name": "wordy", "response_format": "json"});
    let text = ok_text(&call(&tools, "get_agent_session_result", input, &cx).await?)?;
    let json: Value = serde_json::from_str(&text)?;
    assert_eq!(kept_part(json["result"].as_str().ok_or("no result")?)?, expected);
    let input =
        json!({"session_name": "wordy2", "prompt": "again", "agent_blueprint_name": "long", "response_format": "json"});
    let text = ok_text(&call(&tools, "start_agent_session", input, &cx).await?)?;
    let json: Value = serde_json::from_str(&text)?;
    assert_eq!(json["status"], "finished");
    assert_eq!(kept_part(json["result"].as_str().ok_or("no result")?)?, expected);
    h.stop().await
}

async fn the_tools_answer_in_markdown_and_json_and_refuse_other_formats(backend: Backend) -> TestResult {
    let Some(h) = Harness::start_on(backend, vec![answering("greeter", "Hello, boss.")], 2).await? else {
        return Ok(());
    };
    let o = &h.orchestrator;
    common::add_caller(o, "boss").await?;
    let tools = agent_session_tools(o);
    let names: Vec<&str> = tools.specs().map(|s| s.name.as_str()).collect();
    for name in [
        "list_agent_blueprints",
        "list_agent_sessions",
        "start_agent_session",
        "resume_agent_session",
        "get_agent_session_status",
        "get_agent_session_result",
        "delete_all_agent_sessions",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    let cx = called_by(Some("boss"));

    // Blueprints.
    let text = ok_text(&call(&tools, "list_agent_blueprints", json!({}), &cx).await?)?;
    assert!(
        text.contains("## greeter\n- description: test blueprint greeter\n- provider: scripted\n"),
        "{text}"
    );
    assert!(text.contains("## default\n"), "{text}");
    let text = ok_text(&call(&tools, "list_agent_blueprints", json!({"response_format": "json"}), &cx).await?)?;
    let json: Value = serde_json::from_str(&text)?;
    let listed: Vec<&str> = json["blueprints"]
        .as_array()
        .ok_or("no blueprints array")?
        .iter()
        .filter_map(|b| b["name"].as_str())
        .collect();
    assert_eq!(listed, ["default", "greeter"]);

    // A sync start in markdown: the session, its job and the result; the caller is the parent.
    let input = json!({"session_name": "md", "prompt": "hi", "agent_blueprint_name": "greeter"});
    let text = ok_text(&call(&tools, "start_agent_session", input, &cx).await?)?;
    assert!(text.starts_with("## md\n"), "{text}");
    assert!(text.contains("- status: finished\n"), "{text}");
    assert!(text.contains("- parent_session_name: boss\n"), "{text}");
    assert!(text.contains("- job_status: completed\n"), "{text}");
    assert!(text.ends_with("\n### result\n\nHello, boss.\n"), "{text}");

    // A sync start in JSON.
    let input =
        json!({"session_name": "js", "prompt": "hi", "agent_blueprint_name": "greeter", "response_format": "json"});
    let text = ok_text(&call(&tools, "start_agent_session", input, &cx).await?)?;
    let json: Value = serde_json::from_str(&text)?;
    assert_eq!(json["session_name"], "js");
    assert_eq!(json["status"], "finished");
    assert_eq!(json["job_status"], "completed");
    assert_eq!(json["parent_session_name"], "boss");
    assert_eq!(json["result"], "Hello, boss.");

    // An async start with a callback, both formats.
    let input = json!({"session_name": "bg-md", "prompt": "hi", "async_mode": true, "callback": true});
    let text = ok_text(&call(&tools, "start_agent_session", input, &cx).await?)?;
    assert!(text.starts_with("## bg-md\n- status: running\n- job_id: "), "{text}");
    assert!(text.contains("\n- job_status: "), "{text}");
    assert!(text.contains("- callback_to: boss\n"), "{text}");
    assert!(
        text.ends_with("Use get_agent_session_status to poll for completion.\n"),
        "{text}"
    );
    let input = json!({"session_name": "bg-js", "prompt": "hi", "async_mode": true, "response_format": "json"});
    let text = ok_text(&call(&tools, "start_agent_session", input, &cx).await?)?;
    let json: Value = serde_json::from_str(&text)?;
    assert_eq!(json["session_name"], "bg-js");
    assert!(json["job_id"].as_str().is_some_and(|id| !id.is_empty()), "{json}");
    assert!(json["status"].is_string(), "{json}");
    assert!(json.get("callback_to").is_none(), "{json}");

    // Status (with a wait), result, resume and the list in both formats.
    let input = json!({"session_name": "bg-js", "wait_seconds": 30, "response_format": "json"});
    let text = ok_text(&call(&tools, "get_agent_session_status", input, &cx).await?)?;
    let json: Value = serde_json::from_str(&text)?;
    assert_eq!(json["session_name"], "bg-js");
    let input = json!({"session_name": "js"});
    let text = ok_text(&call(&tools, "get_agent_session_status", input, &cx).await?)?;
    assert!(
        text.starts_with("## js\n") && text.contains("- status: finished\n"),
        "{text}"
    );
    let input = json!({"session_name": "md", "prompt": "more", "response_format": "json"});
    let text = ok_text(&call(&tools, "resume_agent_session", input, &cx).await?)?;
    let json: Value = serde_json::from_str(&text)?;
    assert_eq!(json["result"], "Hello, boss.");
    let text = ok_text(&call(&tools, "list_agent_sessions", json!({}), &cx).await?)?;
    for name in ["md", "js", "bg-md", "bg-js"] {
        assert!(text.contains(&format!("## {name}\n")), "{text}");
    }
    let text = ok_text(&call(&tools, "list_agent_sessions", json!({"response_format": "json"}), &cx).await?)?;
    let json: Value = serde_json::from_str(&text)?;
    // The four and their caller `boss`.
    assert_eq!(json["sessions"].as_array().map(Vec::len), Some(5));

    // Errors are tool errors with the service's message.
    for (tool, input) in [
        ("list_agent_blueprints", json!({"response_format": "xml"})),
        ("list_agent_sessions", json!({"response_format": "XML"})),
        (
            "start_agent_session",
            json!({"session_name": "x", "prompt": "hi", "response_format": "yaml"}),
        ),
        (
            "get_agent_session_status",
            json!({"session_name": "md", "response_format": "html"}),
        ),
        (
            "get_agent_session_result",
            json!({"session_name": "md", "response_format": ""}),
        ),
    ] {
        let result = call(&tools, tool, input, &cx).await?;
        assert_eq!(result.status, ToolStatus::Failed, "{tool}");
        let text = result.text_content();
        assert!(
            text.contains("is not supported: use `markdown` or `json`"),
            "{tool}: {text}"
        );
    }
    assert!(
        o.session_by_name("x").await.is_err(),
        "a refused start wrote its session"
    );
    let result = call(
        &tools,
        "get_agent_session_result",
        json!({"session_name": "ghost"}),
        &cx,
    )
    .await?;
    assert!(
        result.is_error() && result.text_content().contains("`ghost`"),
        "{result:?}"
    );
    let result = call(
        &tools,
        "start_agent_session",
        json!({"session_name": "a b", "prompt": "hi"}),
        &cx,
    )
    .await?;
    assert!(
        result.is_error() && result.text_content().contains("1 to 60 characters"),
        "{result:?}"
    );

    // Delete them all (the async ones may still run).
    let text = ok_text(&call(&tools, "delete_all_agent_sessions", json!({}), &cx).await?)?;
    assert_eq!(text, "Deleted 5 sessions.");
    assert!(o.list_sessions().await?.is_empty());
    h.stop().await
}

/// Connect to the orchestrator's MCP endpoint as the session `caller` would.
async fn connect(url: &str, token: &str, caller: &str) -> Fallible<McpConnections> {
    let headers = BTreeMap::from([
        ("Authorization".to_owned(), format!("Bearer {token}")),
        ("X-Agent-Session-Name".to_owned(), caller.to_owned()),
    ]);
    let set = McpClientSet::new().with_server(McpServerConfig {
        name: "orchestrator".to_owned(),
        transport: McpTransport::Http {
            url: url.to_owned(),
            headers,
        },
    });
    let connections = within("connect", set.connect()).await?;
    if !connections.failed().is_empty() {
        return Err(format!("cannot connect: {:?}", connections.failed()).into());
    }
    Ok(connections)
}

async fn call_over_mcp(connections: &McpConnections, tool: &str, input: Value) -> Fallible<String> {
    let client = connections.client("orchestrator").ok_or("not connected")?;
    let result = within(tool, client.call_tool(tool, input, &ToolContext::new(), None)).await?;
    ok_text(&result)
}

async fn the_caller_header_makes_the_parent_and_a_resume_by_another_parent_updates_it(backend: Backend) -> TestResult {
    let Some(h) = Harness::start_on(backend, vec![answering("greeter", "Hello over HTTP.")], 2).await? else {
        return Ok(());
    };
    let o = &h.orchestrator;
    common::add_caller(o, "boss2").await?;
    common::add_caller(o, "boss").await?;
    let server = within("serve", serve_http(o, HttpOptions::default())).await??;

    let boss = connect(server.url(), server.token(), "boss").await?;
    let input =
        json!({"session_name": "child", "prompt": "hi", "agent_blueprint_name": "greeter", "response_format": "json"});
    let text = call_over_mcp(&boss, "start_agent_session", input).await?;
    let json: Value = serde_json::from_str(&text)?;
    assert_eq!(json["result"], "Hello over HTTP.");
    assert_eq!(json["parent_session_name"], "boss");
    assert_eq!(
        o.session_by_name("child").await?.parent_session_name.as_deref(),
        Some("boss")
    );

    // Async over MCP with a callback names the caller it will go to.
    let input = json!({"session_name": "child2", "prompt": "hi", "async_mode": true, "callback": true, "response_format": "json"});
    let json: Value = serde_json::from_str(&call_over_mcp(&boss, "start_agent_session", input).await?)?;
    assert_eq!(json["callback_to"], "boss");

    let boss2 = connect(server.url(), server.token(), "boss2").await?;
    let input = json!({"session_name": "child", "prompt": "again", "response_format": "json"});
    let json: Value = serde_json::from_str(&call_over_mcp(&boss2, "resume_agent_session", input).await?)?;
    assert_eq!(json["parent_session_name"], "boss2");
    assert_eq!(
        o.session_by_name("child").await?.parent_session_name.as_deref(),
        Some("boss2")
    );
    let jobs = o
        .store()
        .list_jobs(Some("child"), patchbay_orchestrator::store::Page::first(10))
        .await?;
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[1].parent_session_name.as_deref(), Some("boss2"));
    // A resume by a caller that names no session keeps the parent.
    let tools = agent_session_tools(o);
    let input = json!({"session_name": "child", "prompt": "third"});
    ok_text(&call(&tools, "resume_agent_session", input, &called_by(None)).await?)?;
    assert_eq!(
        o.session_by_name("child").await?.parent_session_name.as_deref(),
        Some("boss2")
    );

    // Without the token the endpoint refuses.
    let wrong = McpClientSet::new().with_server(McpServerConfig {
        name: "orchestrator".to_owned(),
        transport: McpTransport::Http {
            url: server.url().to_owned(),
            headers: BTreeMap::from([("Authorization".to_owned(), "Bearer wrong".to_owned())]),
        },
    });
    let refused = within("connect with a wrong token", wrong.connect()).await?;
    assert_eq!(refused.failed().len(), 1);

    within("close", boss.close()).await?;
    within("close", boss2.close()).await?;
    within("stop serving", server.shutdown()).await?;
    h.stop().await
}

/// A blueprint whose run calls `start_agent_session` (sync) for `grandchild` on `greeter` over
/// the orchestrator's own MCP tools, then answers `the grandchild is done`. The run's MCP client
/// names the orchestrator's tools plainly (`ToolNaming::Plain`): `start_agent_session`.
fn spawner() -> patchbay_orchestrator::blueprint::Blueprint {
    let script = json!({ "script": { "turns": [
        { "type": "respond", "parts": [ { "type": "tool_call", "id": "call-1", "name": "start_agent_session",
            "input": { "session_name": "grandchild", "prompt": "help your parent", "agent_blueprint_name": "greeter" } } ],
          "end": { "type": "finish", "reason": "tool_use" } },
        { "type": "respond", "parts": [ { "type": "text", "text": "the grandchild is done" } ] }
    ] } });
    let mut spawner = scripted("spawner", script);
    spawner.orchestrator_tools = true;
    spawner
}

async fn a_run_that_starts_a_grandchild_is_recorded_as_its_parent(backend: Backend) -> TestResult {
    let Some(h) = Harness::start_on(backend, vec![spawner(), answering("greeter", "Hello, grandparent.")], 2).await?
    else {
        return Ok(());
    };
    let o = &h.orchestrator;
    common::add_caller(o, "boss").await?;
    let server = within("serve", serve_http(o, HttpOptions::default())).await??;

    let request = StartRequest {
        session_name: "child".to_owned(),
        prompt: "start a helper".to_owned(),
        blueprint: Some("spawner".to_owned()),
        caller: Some("boss".to_owned()),
        ..StartRequest::default()
    };
    let RunAnswer::Ended(report) = within("child run", o.start_session(request)).await?? else {
        return Err("the sync start did not wait".into());
    };
    assert_eq!(report.job_status.as_deref(), Some("completed"), "{report:?}");
    assert_eq!(report.result.as_deref(), Some("the grandchild is done"));
    assert_eq!(report.session.parent_session_name.as_deref(), Some("boss"));

    let grandchild = o.session_by_name("grandchild").await?;
    assert_eq!(grandchild.parent_session_name.as_deref(), Some("child"));
    assert_eq!(grandchild.last_result.as_deref(), Some("Hello, grandparent."));

    // The child's events hold the tool call and its completed result.
    let child = o.session_by_name("child").await?;
    let events = o.store().events_since(&child.session_id, 0).await?;
    let result = events
        .iter()
        .map(|e| &e.event)
        .find(|e| e["type"] == "tool_result" && e["name"] == "start_agent_session")
        .ok_or("no tool result among the child's events")?;
    assert_eq!(result["result"]["status"], "completed", "{result}");
    assert!(result.to_string().contains("Hello, grandparent."), "{result}");

    within("stop serving", server.shutdown()).await?;
    h.stop().await
}

async fn a_nested_sync_start_with_one_worker_lends_the_slot_and_gets_the_result(backend: Backend) -> TestResult {
    // One worker: the child's run holds it while its tool call waits for the grandchild. The
    // waiting run lends its slot, so the grandchild runs at once and the child gets its result
    // (without lending, the call would answer only at the 60 s limit with a pending job).
    let blueprints = vec![spawner(), answering("greeter", "Hello, grandparent.")];
    let Some(h) =
        Harness::start_on_with(backend, blueprints, 1, |b| b.sync_wait_limit(Duration::from_secs(60))).await?
    else {
        return Ok(());
    };
    let o = &h.orchestrator;
    let server = within("serve", serve_http(o, HttpOptions::default())).await??;

    let request = StartRequest {
        session_name: "child".to_owned(),
        prompt: "start a helper".to_owned(),
        blueprint: Some("spawner".to_owned()),
        async_mode: true,
        ..StartRequest::default()
    };
    let RunAnswer::Accepted(job) = o.start_session(request).await? else {
        return Err("the async start waited".into());
    };
    let child_job = o.wait_for_job(&job.job_id, "child", common::LIMIT).await?;
    assert_eq!(child_job.status, patchbay_orchestrator::store::JobStatus::Completed);
    let child = o.session_by_name("child").await?;
    let events = o.store().events_since(&child.session_id, 0).await?;
    let result = events
        .iter()
        .map(|e| &e.event)
        .find(|e| e["type"] == "tool_result")
        .ok_or("no tool result among the child's events")?;
    assert_eq!(result["result"]["status"], "completed", "{result}");
    let text = result["result"]["content"][0]["text"].as_str().ok_or("no text")?;
    assert!(text.starts_with("## grandchild\n"), "{text}");
    assert!(text.contains("- job_status: completed"), "{text}");
    assert!(text.contains("Hello, grandparent."), "{text}");

    let grandchild = o.session_by_name("grandchild").await?;
    assert_eq!(grandchild.parent_session_name.as_deref(), Some("child"));
    assert_eq!(
        grandchild.project_dir, child.project_dir,
        "a child works where its parent works"
    );
    within("stop serving", server.shutdown()).await?;
    h.stop().await
}
