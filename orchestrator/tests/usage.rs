//! Issue 25, the controls: usage totals per run, per session and per tree (in status, listings
//! and the API), and the token budget of a session tree (starts refused, runs ended), on both
//! store backends.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::backend::Backend;
use common::{Harness, TestResult, ended, within};
use patchbay_orchestrator::http::{HttpOptions, serve_http};
use patchbay_orchestrator::limits::Limits;
use patchbay_orchestrator::store::UsageTotals;
use patchbay_orchestrator::{ResumeRequest, StartRequest};
use serde_json::{Value, json};

/// A scripted blueprint whose every answer spends 100 input and 20 output tokens.
fn spender(name: &str) -> patchbay_orchestrator::blueprint::Blueprint {
    common::scripted(
        name,
        json!({ "script": { "turns": [ {
            "type": "respond", "parts": [ { "type": "text", "text": "done" } ],
            "usage": { "input": 100, "output": 20, "cost_usd": 0.5 }
        } ], "repeat_last": true } }),
    )
}

/// A scripted blueprint that calls a tool at every step, spending 100 + 20 tokens a step.
fn looper(name: &str) -> patchbay_orchestrator::blueprint::Blueprint {
    let mut blueprint = common::scripted(
        name,
        json!({ "script": { "turns": [ {
            "type": "respond",
            "parts": [ { "type": "tool_call", "id": "t", "name": "read", "input": { "path": "missing.txt" } } ],
            "end": { "type": "finish", "reason": "tool_use" },
            "usage": { "input": 100, "output": 20 }
        } ], "repeat_last": true } }),
    );
    blueprint.tools = vec!["read".to_owned()];
    blueprint
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

fn tokens(usage: Option<UsageTotals>) -> u64 {
    usage.map_or(0, |u| u.total_tokens())
}

async fn usage_per_run_session_and_tree(backend: Backend) -> TestResult {
    let Some(h) = Harness::start_on(backend, vec![spender("spend")], 2).await? else {
        return Ok(());
    };
    let o = &h.orchestrator;
    let root = ended(within("root", o.start_session(start("root", "spend", None))).await??)?;
    assert_eq!(tokens(root.run_usage), 120, "{root:?}");
    assert_eq!(root.session.usage.input_tokens, 100);
    assert_eq!(root.session.usage.cost_usd, Some(0.5));
    assert_eq!(root.tree_root.as_deref(), Some("root"));
    assert_eq!(tokens(root.tree_usage), 120);

    let child = ended(within("child", o.start_session(start("child", "spend", Some("root")))).await??)?;
    assert_eq!(tokens(child.run_usage), 120);
    assert_eq!(child.session.usage.total_tokens(), 120);
    assert_eq!(child.tree_root.as_deref(), Some("root"), "{child:?}");
    assert_eq!(tokens(child.tree_usage), 240);

    let resume = ResumeRequest {
        session_name: "root".to_owned(),
        prompt: "again".to_owned(),
        ..ResumeRequest::default()
    };
    let again = ended(within("resume", o.resume_session(resume)).await??)?;
    assert_eq!(tokens(again.run_usage), 120, "a run's own usage");
    assert_eq!(again.session.usage.total_tokens(), 240, "the session's runs");
    assert_eq!(again.session.usage.cost_usd, Some(1.0));
    assert_eq!(tokens(again.tree_usage), 360, "the whole tree");

    // Listings carry each session's usage.
    let listed = o.list_sessions().await?;
    let of = |name: &str| {
        listed
            .iter()
            .find(|s| s.session_name == name)
            .map(|s| s.usage.total_tokens())
    };
    assert_eq!((of("root"), of("child")), (Some(240), Some(120)));

    // The API: sessions, reports and jobs.
    let server = within("serve", serve_http(o, HttpOptions::default())).await??;
    let api = server.url().trim_end_matches("/mcp").to_owned();
    let client = patchbay_http::client_builder().build()?;
    let get = |path: String| {
        let request = client.get(format!("{api}{path}")).bearer_auth(server.token());
        async move { request.send().await?.error_for_status()?.json::<Value>().await }
    };
    let report = get("/sessions/by-name/child".to_owned()).await?;
    assert_eq!(report["usage"]["total_tokens"], 120, "{report}");
    assert_eq!(report["tree_root"], "root");
    assert_eq!(report["tree_usage"]["total_tokens"], 360);
    let jobs = get("/jobs".to_owned()).await?;
    let spent: Vec<u64> = jobs["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["usage"]["total_tokens"].as_u64().unwrap())
        .collect();
    assert_eq!(spent, vec![120, 120, 120], "{jobs}");
    let sessions = get("/sessions".to_owned()).await?;
    assert_eq!(sessions["sessions"][0]["usage"]["output_tokens"], 40, "{sessions}");
    server.shutdown().await;
    h.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_is_summed_per_run_session_and_tree_on_sqlite() -> TestResult {
    usage_per_run_session_and_tree(Backend::Sqlite).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_is_summed_per_run_session_and_tree_on_postgres() -> TestResult {
    usage_per_run_session_and_tree(Backend::Postgres).await
}

async fn a_spent_budget(backend: Backend) -> TestResult {
    let limits = Limits {
        max_tree_tokens: Some(250),
        ..Limits::default()
    };
    let Some(h) =
        Harness::start_on_with(backend, vec![spender("spend"), looper("loop")], 2, |b| b.limits(limits)).await?
    else {
        return Ok(());
    };
    let o = &h.orchestrator;
    // 120 + 120 tokens: under the budget of 250.
    ended(within("root", o.start_session(start("root", "spend", None))).await??)?;
    ended(within("child", o.start_session(start("child", "spend", Some("root")))).await??)?;
    // 240 spent: one more run may start, and it goes past the budget.
    ended(
        within(
            "grandchild",
            o.start_session(start("grandchild", "spend", Some("child"))),
        )
        .await??,
    )?;
    // 360 spent: the whole tree is refused, wherever the start or resume comes from.
    let error = o
        .start_session(start("late", "spend", Some("child")))
        .await
        .err()
        .ok_or("a start past the tree's budget")?;
    assert_eq!(error.code(), "limit_reached", "{error}");
    assert!(error.to_string().contains("max_tree_tokens"), "{error}");
    assert!(error.to_string().contains("`root` used 360 of its 250"), "{error}");
    let resume = ResumeRequest {
        session_name: "grandchild".to_owned(),
        prompt: "more".to_owned(),
        ..ResumeRequest::default()
    };
    let error = o.resume_session(resume).await.err().ok_or("a resume past the budget")?;
    assert_eq!(error.code(), "limit_reached", "{error}");
    // Another tree has its own budget.
    ended(within("other root", o.start_session(start("other", "spend", None))).await??)?;

    // A run that keeps calling tools is stopped at the step that spends the budget.
    let report = ended(within("looping run", o.start_session(start("busy", "loop", None))).await??)?;
    assert_eq!(report.session.status, "cancelled", "{report:?}");
    let error = report.error.clone().unwrap_or_default();
    assert!(error.starts_with("token budget spent"), "{error}");
    assert_eq!(tokens(report.run_usage), 360, "three steps of 120: {report:?}");
    h.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_past_its_token_budget_is_refused_and_its_runs_end_on_sqlite() -> TestResult {
    a_spent_budget(Backend::Sqlite).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_past_its_token_budget_is_refused_and_its_runs_end_on_postgres() -> TestResult {
    a_spent_budget(Backend::Postgres).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_blueprint_sets_its_trees_budget() -> TestResult {
    let mut small = spender("small");
    small.limits.max_tree_tokens = Some(100);
    let h = Harness::start(vec![small, spender("spend")], 2).await?;
    let o = &h.orchestrator;
    ended(within("small root", o.start_session(start("s", "small", None))).await??)?;
    // The child's own blueprint has no budget; the root's counts.
    let error = o
        .start_session(start("c", "spend", Some("s")))
        .await
        .err()
        .ok_or("the root blueprint's budget")?;
    assert!(error.to_string().contains("of its 100 tokens"), "{error}");
    // A root on a blueprint without a budget has none (the orchestrator sets none).
    ended(within("free root", o.start_session(start("f", "spend", None))).await??)?;
    ended(within("free child", o.start_session(start("fc", "spend", Some("f")))).await??)?;
    h.stop().await
}
