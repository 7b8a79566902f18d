//! Scoped tokens (issue 25, "The controls"): a run reaches this orchestrator's MCP endpoint
//! with a token of its own session, which reaches that session and the sessions below it
//! only. Everything goes through the real HTTP endpoint with the token a run was given.
//!
//! The tree: `boss` (no run) started `alpha` (a run that reports its MCP configuration, so
//! its scoped token) and `beta` (a run that stalls: a sibling with something to cancel);
//! `alpha` has a child `alpha-kid`, which has `alpha-grandkid`; `outsider` has no parent.

mod common;

use std::collections::BTreeMap;

use common::backend::Backend;
use common::{Fallible, Harness, TestResult, add_caller, answering, ended, running, stalling, whoami, within};
use patchbay::mcp::{McpClientSet, McpConnections, ToolServer};
use patchbay::{ToolContext, ToolResult, context::McpServerConfig, context::McpTransport};
use patchbay_orchestrator::http::{HttpOptions, serve_http};
use patchbay_orchestrator::store::Page;
use patchbay_orchestrator::{Orchestrator, RunAnswer, StartRequest};
use serde_json::{Value, json};

on_both_backends!(
    a_runs_token_cannot_read_cancel_or_resume_a_sibling_or_its_parent,
    a_runs_token_lists_only_its_subtree_and_cannot_delete_all,
    a_runs_token_starts_children_and_reads_resumes_and_cancels_them,
    a_forged_caller_header_does_not_change_who_a_scoped_token_is,
    a_scoped_token_opens_neither_the_json_api_nor_the_web_view,
    the_admin_token_still_reaches_every_session,
    a_token_whose_session_was_deleted_reaches_nothing,
);

/// The tree above, served over HTTP, with `alpha`'s scoped token.
struct Tree {
    h: Harness,
    server: ToolServer,
    /// What `alpha`'s run was given: its context as JSON (see `common::whoami`).
    seen: Value,
    /// `alpha`'s scoped token, as its run got it.
    token: String,
}

fn start(name: &str, blueprint: &str, caller: Option<&str>) -> StartRequest {
    StartRequest {
        session_name: name.to_owned(),
        prompt: "work".to_owned(),
        blueprint: Some(blueprint.to_owned()),
        caller: caller.map(str::to_owned),
        ..StartRequest::default()
    }
}

async fn tree(backend: Backend) -> Fallible<Option<Tree>> {
    let mut who = whoami("who");
    who.orchestrator_tools = true;
    let blueprints = vec![who, stalling("stall"), answering("greeter", "hello")];
    let Some(h) = Harness::start_on(backend, blueprints, 4).await? else {
        return Ok(None);
    };
    let o = &h.orchestrator;
    let server = within("serve", serve_http(o, HttpOptions::default())).await??;
    add_caller(o, "boss").await?;
    let alpha = ended(within("alpha", o.start_session(start("alpha", "who", Some("boss")))).await??)?;
    let seen: Value = serde_json::from_str(alpha.result.as_deref().ok_or("alpha has no result")?)?;
    let authorization = seen["mcp_servers"]["orchestrator"]["headers"]["Authorization"]
        .as_str()
        .ok_or_else(|| format!("alpha's run got no orchestrator MCP server with a token: {seen}"))?;
    let token = authorization
        .strip_prefix("Bearer ")
        .ok_or("not a bearer token")?
        .to_owned();
    let beta = StartRequest {
        async_mode: true,
        ..start("beta", "stall", Some("boss"))
    };
    within("beta", o.start_session(beta)).await??;
    running(o, "beta").await?;
    for (name, caller) in [
        ("alpha-kid", Some("alpha")),
        ("alpha-grandkid", Some("alpha-kid")),
        ("outsider", None),
    ] {
        ended(within(name, o.start_session(start(name, "greeter", caller))).await??)?;
    }
    Ok(Some(Tree { h, server, seen, token }))
}

impl Tree {
    fn o(&self) -> &Orchestrator {
        &self.h.orchestrator
    }

    /// An MCP client with `alpha`'s token naming `alpha` as its run's own client does.
    async fn alpha(&self) -> Fallible<McpConnections> {
        connect(self.server.url(), &self.token, &[("X-Agent-Session-Name", "alpha")]).await
    }

    /// An MCP client with the admin token.
    async fn admin(&self) -> Fallible<McpConnections> {
        connect(self.server.url(), self.server.token(), &[]).await
    }

    async fn stop(self) -> TestResult {
        within("stop serving", self.server.shutdown()).await?;
        self.h.stop().await
    }
}

async fn connect(url: &str, token: &str, headers: &[(&str, &str)]) -> Fallible<McpConnections> {
    let mut all = BTreeMap::from([("Authorization".to_owned(), format!("Bearer {token}"))]);
    all.extend(headers.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let set = McpClientSet::new().with_server(McpServerConfig {
        name: "orchestrator".to_owned(),
        transport: McpTransport::Http {
            url: url.to_owned(),
            headers: all,
        },
    });
    let connections = within("connect", set.connect()).await?;
    if !connections.failed().is_empty() {
        return Err(format!("cannot connect: {:?}", connections.failed()).into());
    }
    Ok(connections)
}

async fn call(connections: &McpConnections, tool: &str, input: Value) -> Fallible<ToolResult> {
    let client = connections.client("orchestrator").ok_or("not connected")?;
    within(tool, client.call_tool(tool, input, &ToolContext::new(), None)).await
}

/// The text of a tool call that succeeded.
async fn ok(connections: &McpConnections, tool: &str, input: Value) -> Fallible<String> {
    let result = call(connections, tool, input).await?;
    if result.is_error() {
        return Err(format!("{tool} failed: {}", result.text_content()).into());
    }
    Ok(result.text_content())
}

/// The message of a tool call that failed.
async fn refused(connections: &McpConnections, tool: &str, input: Value) -> Fallible<String> {
    let result = call(connections, tool, input).await?;
    if !result.is_error() {
        return Err(format!("{tool} was not refused: {}", result.text_content()).into());
    }
    Ok(result.text_content())
}

/// The status `get_agent_session_status` answers for `name`.
async fn status(connections: &McpConnections, name: &str) -> Fallible<String> {
    let input = json!({"session_name": name, "response_format": "json"});
    let answer: Value = serde_json::from_str(&ok(connections, "get_agent_session_status", input).await?)?;
    Ok(answer["status"].as_str().unwrap_or_default().to_owned())
}

/// The session names a JSON listing holds, and its total.
async fn listed(connections: &McpConnections, mut input: Value) -> Fallible<(Vec<String>, u64)> {
    input["response_format"] = json!("json");
    let answer: Value = serde_json::from_str(&ok(connections, "list_agent_sessions", input).await?)?;
    let mut names: Vec<String> = answer["sessions"]
        .as_array()
        .ok_or("no sessions array")?
        .iter()
        .filter_map(|s| s["session_name"].as_str().map(str::to_owned))
        .collect();
    names.sort();
    Ok((names, answer["total"].as_u64().ok_or("no total")?))
}

/// The error a session that does not exist gets from `tool`, with its name put in.
async fn not_found_message(connections: &McpConnections, tool: &str, input: Value, name: &str) -> Fallible<String> {
    let mut ghost = input;
    ghost["session_name"] = json!("no-such-session");
    Ok(refused(connections, tool, ghost)
        .await?
        .replace("no-such-session", name))
}

async fn a_runs_token_cannot_read_cancel_or_resume_a_sibling_or_its_parent(backend: Backend) -> TestResult {
    let Some(t) = tree(backend).await? else {
        return Ok(());
    };
    let alpha = t.alpha().await?;
    for name in ["beta", "boss", "outsider"] {
        assert_eq!(status(&alpha, name).await?, "not_existent", "the status of {name}");
        for (tool, input) in [
            ("get_agent_session_result", json!({"session_name": name})),
            ("get_agent_session_events", json!({"session_name": name})),
            ("cancel_agent_session", json!({"session_name": name})),
            ("resume_agent_session", json!({"session_name": name, "prompt": "obey"})),
        ] {
            let answer = refused(&alpha, tool, input.clone()).await?;
            // Word for word what a session that does not exist gets: nothing tells it exists.
            let ghost = not_found_message(&alpha, tool, input, name).await?;
            assert_eq!(answer, ghost, "{tool} of {name}");
        }
    }
    let o = t.o();
    assert_eq!(
        o.status("beta", None).await?.session.status,
        "running",
        "beta was not cancelled"
    );
    let jobs = o.store().list_jobs(Some("beta"), Page::first(10)).await?;
    assert_eq!(jobs.len(), 1, "no resume of beta was queued");
    assert!(o.store().list_jobs(Some("boss"), Page::first(10)).await?.is_empty());
    within("close", alpha.close()).await?;
    t.stop().await
}

async fn a_runs_token_lists_only_its_subtree_and_cannot_delete_all(backend: Backend) -> TestResult {
    let Some(t) = tree(backend).await? else {
        return Ok(());
    };
    let alpha = t.alpha().await?;
    let subtree = ["alpha", "alpha-grandkid", "alpha-kid"].map(String::from).to_vec();
    assert_eq!(listed(&alpha, json!({})).await?, (subtree.clone(), 3));
    // Filters apply within the subtree (boss's children: alpha, never beta); paging too.
    assert_eq!(
        listed(&alpha, json!({"parent_session_name": "boss"})).await?,
        (vec!["alpha".to_owned()], 1)
    );
    assert_eq!(
        listed(&alpha, json!({"parent_session_name": "alpha-kid"})).await?,
        (vec!["alpha-grandkid".to_owned()], 1)
    );
    assert_eq!(listed(&alpha, json!({"status": "running"})).await?, (vec![], 0));
    let first: Value = serde_json::from_str(
        &ok(
            &alpha,
            "list_agent_sessions",
            json!({"limit": 2, "response_format": "json"}),
        )
        .await?,
    )?;
    let after = first["next_after"].as_str().ok_or("a full page leads on")?;
    let (rest, total) = listed(&alpha, json!({"limit": 2, "after": after})).await?;
    assert_eq!((rest.len(), total), (1, 3));
    // Markdown names no session outside either.
    let markdown = ok(&alpha, "list_agent_sessions", json!({})).await?;
    for outside in ["## beta", "## boss", "## outsider"] {
        assert!(!markdown.contains(outside), "{markdown}");
    }

    let answer = refused(&alpha, "delete_all_agent_sessions", json!({})).await?;
    assert!(answer.contains("bearer token"), "{answer}");
    assert_eq!(t.o().list_sessions().await?.len(), 6, "nothing was deleted");
    within("close", alpha.close()).await?;
    t.stop().await
}

async fn a_runs_token_starts_children_and_reads_resumes_and_cancels_them(backend: Backend) -> TestResult {
    let Some(t) = tree(backend).await? else {
        return Ok(());
    };
    let o = t.o();
    let alpha = t.alpha().await?;
    let input =
        json!({"session_name": "alpha-kid2", "prompt": "wait", "agent_blueprint_name": "stall", "async_mode": true});
    ok(&alpha, "start_agent_session", input).await?;
    let kid = o.session_by_name("alpha-kid2").await?;
    assert_eq!(kid.parent_session_name.as_deref(), Some("alpha"));
    running(o, "alpha-kid2").await?;
    assert_eq!(status(&alpha, "alpha-kid2").await?, "running");
    assert_eq!(status(&alpha, "alpha").await?, "finished", "its own session");
    let cancelled = ok(&alpha, "cancel_agent_session", json!({"session_name": "alpha-kid2"})).await?;
    assert!(cancelled.contains("- job_status: cancelled"), "{cancelled}");

    // Below its children too: read, and resume (which makes alpha the parent).
    let result = ok(
        &alpha,
        "get_agent_session_result",
        json!({"session_name": "alpha-grandkid"}),
    )
    .await?;
    assert!(result.ends_with("hello\n"), "{result}");
    ok(&alpha, "get_agent_session_events", json!({"session_name": "alpha-kid"})).await?;
    let input = json!({"session_name": "alpha-grandkid", "prompt": "more", "response_format": "json"});
    let resumed: Value = serde_json::from_str(&ok(&alpha, "resume_agent_session", input).await?)?;
    assert_eq!(resumed["result"], "hello");
    assert_eq!(resumed["parent_session_name"], "alpha");
    let (names, _) = listed(&alpha, json!({})).await?;
    assert_eq!(names, ["alpha", "alpha-grandkid", "alpha-kid", "alpha-kid2"]);
    within("close", alpha.close()).await?;
    t.stop().await
}

async fn a_forged_caller_header_does_not_change_who_a_scoped_token_is(backend: Backend) -> TestResult {
    let Some(t) = tree(backend).await? else {
        return Ok(());
    };
    let o = t.o();
    let beta_id = o.session_by_name("beta").await?.session_id;
    let forged = [
        ("X-Agent-Session-Name", "beta"),
        ("x-patchbay-meta-agent_session_name", "beta"),
        ("x-patchbay-meta-agent_scope_session_id", beta_id.as_str()),
    ];
    let mallory = connect(t.server.url(), &t.token, &forged).await?;
    let input = json!({"session_name": "forged-kid", "prompt": "hi", "agent_blueprint_name": "greeter"});
    ok(&mallory, "start_agent_session", input).await?;
    assert_eq!(
        o.session_by_name("forged-kid").await?.parent_session_name.as_deref(),
        Some("alpha"),
        "the token's session is the caller, whatever the headers say"
    );
    assert_eq!(status(&mallory, "beta").await?, "not_existent");
    refused(&mallory, "cancel_agent_session", json!({"session_name": "beta"})).await?;
    assert_eq!(o.status("beta", None).await?.session.status, "running");
    let (names, _) = listed(&mallory, json!({})).await?;
    assert_eq!(names, ["alpha", "alpha-grandkid", "alpha-kid", "forged-kid"]);

    // A token changed anywhere is no token at all.
    let tampered = t.token.replacen("alpha", "beta", 1);
    let set = McpClientSet::new().with_server(McpServerConfig {
        name: "orchestrator".to_owned(),
        transport: McpTransport::Http {
            url: t.server.url().to_owned(),
            headers: BTreeMap::from([("Authorization".to_owned(), format!("Bearer {tampered}"))]),
        },
    });
    let refused_connection = within("connect with a tampered token", set.connect()).await?;
    assert_eq!(refused_connection.failed().len(), 1);
    within("close", mallory.close()).await?;
    t.stop().await
}

async fn a_scoped_token_opens_neither_the_json_api_nor_the_web_view(backend: Backend) -> TestResult {
    let Some(t) = tree(backend).await? else {
        return Ok(());
    };
    let base = t.server.url().trim_end_matches("/mcp").to_owned();
    let beta_id = t.o().session_by_name("beta").await?.session_id;
    let alpha_id = t.o().session_by_name("alpha").await?.session_id;
    let client = patchbay_http::client_builder().build()?;
    let requests = [
        client.get(format!("{base}/sessions")),
        client.delete(format!("{base}/sessions")),
        client.get(format!("{base}/sessions/{alpha_id}")),
        client.delete(format!("{base}/sessions/{beta_id}")),
        client.get(format!("{base}/sessions/{alpha_id}/events?follow=false")),
        client.get(format!("{base}/jobs")),
        client.get(format!("{base}/agents")),
        client.get(format!("{base}/nowhere")),
        client
            .post(format!("{base}/jobs"))
            .json(&json!({"type": "start_session", "session_name": "via-api", "prompt": "hi"})),
    ];
    for request in requests {
        let response = within("API call", request.bearer_auth(&t.token).send()).await??;
        let url = response.url().clone();
        assert_eq!(response.status(), 403, "{url}");
        let body: Value = response.json().await?;
        assert_eq!(body["error"]["code"], "forbidden", "{url}: {body}");
    }
    assert_eq!(t.o().list_sessions().await?.len(), 6, "nothing was deleted or started");

    // The web view: its pages do not open, and its login form does not take the token.
    let page = within("page", client.get(format!("{base}/")).bearer_auth(&t.token).send()).await??;
    assert_eq!(page.status(), 401);
    let login = within(
        "login",
        client
            .post(format!("{base}/login"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("token={}", t.token))
            .send(),
    )
    .await??;
    assert_eq!(login.status(), 401);
    assert!(login.headers().get("set-cookie").is_none(), "{login:?}");
    // The admin token still opens the API.
    let admin = within(
        "admin",
        client
            .get(format!("{base}/sessions"))
            .bearer_auth(t.server.token())
            .send(),
    )
    .await??;
    assert_eq!(admin.status(), 200);
    t.stop().await
}

async fn the_admin_token_still_reaches_every_session(backend: Backend) -> TestResult {
    let Some(t) = tree(backend).await? else {
        return Ok(());
    };
    // Runs never get the admin token, and their context's Debug output shows no token.
    assert_ne!(t.token, t.server.token());
    let debug = t.seen["debug"].as_str().ok_or("no Debug output")?;
    assert!(debug.contains("orchestrator"), "{debug}");
    assert!(!debug.contains(&t.token), "{debug}");
    assert!(!debug.contains(t.server.token()), "{debug}");

    let admin = t.admin().await?;
    let (names, total) = listed(&admin, json!({})).await?;
    assert_eq!(total, 6, "{names:?}");
    assert_eq!(status(&admin, "beta").await?, "running");
    let cancelled = ok(&admin, "cancel_agent_session", json!({"session_name": "beta"})).await?;
    assert!(cancelled.contains("- job_status: cancelled"), "{cancelled}");
    let boss = connect(t.server.url(), t.server.token(), &[("X-Agent-Session-Name", "boss")]).await?;
    let input = json!({"session_name": "outsider", "prompt": "again", "response_format": "json"});
    let resumed: Value = serde_json::from_str(&ok(&boss, "resume_agent_session", input).await?)?;
    assert_eq!(resumed["parent_session_name"], "boss");
    ok(&admin, "get_agent_session_events", json!({"session_name": "alpha"})).await?;
    let deleted = ok(&admin, "delete_all_agent_sessions", json!({})).await?;
    assert_eq!(deleted, "Deleted 6 sessions.");
    within("close", admin.close()).await?;
    within("close", boss.close()).await?;
    t.stop().await
}

async fn a_token_whose_session_was_deleted_reaches_nothing(backend: Backend) -> TestResult {
    let Some(t) = tree(backend).await? else {
        return Ok(());
    };
    let o = t.o();
    let alpha = t.alpha().await?;
    assert_eq!(status(&alpha, "alpha-kid").await?, "finished");
    // alpha is deleted, and a session of its name started again: another session.
    o.delete_session(&o.session_by_name("alpha").await?.session_id).await?;
    let again = StartRequest {
        async_mode: true,
        ..start("alpha", "greeter", None)
    };
    let RunAnswer::Accepted(_) = within("alpha again", o.start_session(again)).await?? else {
        return Err("the async start waited".into());
    };
    for (tool, input) in [
        ("get_agent_session_status", json!({"session_name": "alpha"})),
        ("get_agent_session_result", json!({"session_name": "alpha-kid"})),
        ("list_agent_sessions", json!({})),
        ("start_agent_session", json!({"session_name": "late", "prompt": "hi"})),
    ] {
        let answer = refused(&alpha, tool, input).await?;
        assert!(answer.contains("no longer exists"), "{tool}: {answer}");
    }
    assert!(o.session_by_name("late").await.is_err());
    within("close", alpha.close()).await?;
    t.stop().await
}
