//! Issue 25's refusals, through the service and the MCP tools alike: folders outside the
//! projects root, cycles in the parent chain, callbacks nobody can receive, caller names that
//! break the rule or name no session.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Harness, TestResult, call, called_by, ended, within};
use patchbay_orchestrator::tools::agent_session_tools;
use patchbay_orchestrator::{OrchestratorError, ResumeRequest, StartRequest};
use serde_json::json;

fn start(name: &str) -> StartRequest {
    StartRequest {
        session_name: name.to_owned(),
        prompt: "work".to_owned(),
        ..StartRequest::default()
    }
}

fn resume(name: &str, caller: Option<&str>) -> ResumeRequest {
    ResumeRequest {
        session_name: name.to_owned(),
        prompt: "again".to_owned(),
        caller: caller.map(str::to_owned),
        ..ResumeRequest::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_dir_outside_the_projects_root_is_refused() -> TestResult {
    let h = Harness::start(vec![], 1).await?;
    let o = &h.orchestrator;
    std::fs::create_dir_all(h.project.join("inside"))?;
    let outside = tempfile::tempdir()?;
    #[cfg(unix)]
    std::os::unix::fs::symlink(outside.path(), h.project.join("escape"))?;
    for dir in ["../../../../etc", "/", "..", outside.path().to_str().unwrap(), "escape"] {
        let request = StartRequest {
            project_dir: Some(dir.to_owned()),
            ..start("out")
        };
        let error = o.start_session(request).await.err().ok_or(format!("{dir} accepted"))?;
        assert!(matches!(error, OrchestratorError::OutsideRoot { .. }), "{dir}: {error}");
        assert!(error.to_string().contains("projects root"), "{error}");
        assert!(o.session_by_name("out").await.is_err(), "{dir}: a session was created");
    }
    // Over MCP: the same check, as a tool error.
    let tools = agent_session_tools(o);
    let answer = call(
        &tools,
        "start_agent_session",
        json!({"session_name": "out", "prompt": "hi", "project_dir": "/"}),
        &called_by(None),
    )
    .await?;
    assert!(answer.is_error());
    assert!(
        answer.text_content().contains("projects root"),
        "{}",
        answer.text_content()
    );
    // Inside the root: fine.
    let request = StartRequest {
        project_dir: Some("inside".to_owned()),
        ..start("in")
    };
    let report = ended(within("start inside", o.start_session(request)).await??)?;
    assert_eq!(report.session.status, "finished");
    h.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_outside_a_narrower_root_is_refused() -> TestResult {
    let h = Harness::start(vec![], 1).await?;
    std::fs::create_dir_all(h.project.join("a"))?;
    std::fs::create_dir_all(h.project.join("b"))?;
    let request = StartRequest {
        project_dir: Some("a".to_owned()),
        ..start("in-a")
    };
    ended(within("start in a", h.orchestrator.start_session(request)).await??)?;
    let store = h.orchestrator.store().clone();
    within("shutdown", h.orchestrator.shutdown()).await?;
    // Restarted on the same store with the root narrowed to `b`.
    let narrowed = patchbay_orchestrator::Orchestrator::builder(store, Default::default())
        .project_dir(h.project.join("b"))
        .projects_root(h.project.join("b"))
        .start()
        .await?;
    let error = narrowed
        .resume_session(resume("in-a", None))
        .await
        .err()
        .ok_or("resumed outside the root")?;
    assert!(matches!(error, OrchestratorError::OutsideRoot { .. }), "{error}");
    within("shutdown", narrowed.shutdown()).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_cannot_resume_itself_or_an_ancestor() -> TestResult {
    let h = Harness::start(vec![], 2).await?;
    let o = &h.orchestrator;
    ended(within("root", o.start_session(start("root"))).await??)?;
    let child = StartRequest {
        caller: Some("root".to_owned()),
        ..start("child")
    };
    ended(within("child", o.start_session(child)).await??)?;
    let grandchild = StartRequest {
        caller: Some("child".to_owned()),
        ..start("grandchild")
    };
    ended(within("grandchild", o.start_session(grandchild)).await??)?;

    // Refused at once (a bounded wait far below the 600 s sync limit).
    let error = within("self resume", o.resume_session(resume("child", Some("child"))))
        .await?
        .err()
        .ok_or("a session resumed itself")?;
    assert!(matches!(error, OrchestratorError::Cycle(_)), "{error}");
    assert!(error.to_string().contains("cannot resume itself"), "{error}");
    let error = within("ancestor resume", o.resume_session(resume("root", Some("grandchild"))))
        .await?
        .err()
        .ok_or("an ancestor resumed by its descendant")?;
    assert!(matches!(error, OrchestratorError::Cycle(_)), "{error}");
    assert!(error.to_string().contains("ancestor"), "{error}");
    // Nothing changed: the parents are as they were.
    let root = o.session_by_name("root").await?;
    assert_eq!(root.parent_session_name, None);
    // Over MCP the same refusal is a tool error.
    let tools = agent_session_tools(o);
    let answer = call(
        &tools,
        "resume_agent_session",
        json!({"session_name": "grandchild", "prompt": "again"}),
        &called_by(Some("grandchild")),
    )
    .await?;
    assert!(answer.is_error(), "{}", answer.text_content());
    // A descendant resuming a sibling branch is fine.
    ended(within("cousin", o.start_session(start("cousin"))).await??)?;
    ended(within("resume cousin", o.resume_session(resume("cousin", Some("grandchild")))).await??)?;
    h.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callback_nobody_can_receive_is_refused() -> TestResult {
    let h = Harness::start(vec![], 1).await?;
    let o = &h.orchestrator;
    let request = StartRequest {
        callback: true,
        async_mode: true,
        ..start("orphan")
    };
    let error = o
        .start_session(request)
        .await
        .err()
        .ok_or("callback without a caller accepted")?;
    assert!(matches!(error, OrchestratorError::NoCallbackTarget), "{error}");
    assert!(o.session_by_name("orphan").await.is_err());
    // Over MCP from a client that is no session (a person's Claude Code): told at once.
    let tools = agent_session_tools(o);
    let answer = call(
        &tools,
        "start_agent_session",
        json!({"session_name": "orphan", "prompt": "hi", "async_mode": true, "callback": true}),
        &called_by(None),
    )
    .await?;
    assert!(answer.is_error());
    assert!(answer.text_content().contains("callback"), "{}", answer.text_content());
    h.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_name_is_checked_over_mcp_as_over_the_api() -> TestResult {
    let h = Harness::start(vec![], 1).await?;
    let o = &h.orchestrator;
    let tools = agent_session_tools(o);
    let answer = call(
        &tools,
        "start_agent_session",
        json!({"session_name": "kid", "prompt": "hi"}),
        &called_by(Some("../../evil name")),
    )
    .await?;
    assert!(answer.is_error(), "{}", answer.text_content());
    assert!(answer.text_content().contains("invalid"), "{}", answer.text_content());
    assert!(o.session_by_name("kid").await.is_err(), "stored with a bad parent name");
    h.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_that_does_not_exist_is_refused() -> TestResult {
    let h = Harness::start(vec![], 1).await?;
    let o = &h.orchestrator;
    let request = StartRequest {
        caller: Some("nobody".to_owned()),
        async_mode: true,
        ..start("kid")
    };
    let error = o
        .start_session(request)
        .await
        .err()
        .ok_or("linked to a missing parent")?;
    assert!(matches!(error, OrchestratorError::UnknownCaller(_)), "{error}");
    assert_eq!(error.http_status(), 404);
    assert!(o.session_by_name("kid").await.is_err());
    h.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starts_past_the_depth_and_children_limits_are_refused() -> TestResult {
    let limits = patchbay_orchestrator::limits::Limits {
        max_depth: 3,
        ..Default::default()
    };
    let mut narrow = common::answering("narrow", "ok");
    narrow.limits.max_children = Some(1);
    let h = Harness::start_with(vec![narrow], 2, |b| b.limits(limits)).await?;
    let o = &h.orchestrator;
    let child_of = |name: &str, parent: &str| StartRequest {
        caller: Some(parent.to_owned()),
        ..start(name)
    };
    ended(within("1", o.start_session(start("d1"))).await??)?;
    ended(within("2", o.start_session(child_of("d2", "d1"))).await??)?;
    ended(within("3", o.start_session(child_of("d3", "d2"))).await??)?;
    let error = o
        .start_session(child_of("d4", "d3"))
        .await
        .err()
        .ok_or("past the depth")?;
    assert_eq!(error.code(), "limit_reached", "{error}");
    assert!(error.to_string().contains("max_depth"), "{error}");
    // A parent on a blueprint allowing one child.
    let parent = StartRequest {
        blueprint: Some("narrow".to_owned()),
        ..start("p")
    };
    ended(within("p", o.start_session(parent)).await??)?;
    ended(within("first child", o.start_session(child_of("c1", "p"))).await??)?;
    let error = o
        .start_session(child_of("c2", "p"))
        .await
        .err()
        .ok_or("past max_children")?;
    assert!(error.to_string().contains("max_children"), "{error}");
    assert!(o.session_by_name("c2").await.is_err());
    // A resume by a new parent makes the session that parent's child: the same limits.
    ended(within("a root", o.start_session(start("stray"))).await??)?;
    let error = o
        .resume_session(resume("stray", Some("p")))
        .await
        .err()
        .ok_or("adopting past max_children")?;
    assert!(error.to_string().contains("max_children"), "{error}");
    assert_eq!(o.session_by_name("stray").await?.parent_session_name, None);
    // Its own parent resuming it again is not a new child.
    ended(within("c1 again", o.resume_session(resume("c1", Some("p")))).await??)?;
    h.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_running_at_once_are_limited() -> TestResult {
    let limits = patchbay_orchestrator::limits::Limits {
        max_running_children: 1,
        ..Default::default()
    };
    let h = Harness::start_with(vec![common::stalling("stall")], 2, |b| b.limits(limits)).await?;
    let o = &h.orchestrator;
    ended(within("parent", o.start_session(start("boss"))).await??)?;
    let child = |name: &str| StartRequest {
        caller: Some("boss".to_owned()),
        blueprint: Some("stall".to_owned()),
        async_mode: true,
        ..start(name)
    };
    o.start_session(child("k1")).await?;
    let error = o
        .start_session(child("k2"))
        .await
        .err()
        .ok_or("a second child at once")?;
    assert!(error.to_string().contains("max_running_children"), "{error}");
    o.cancel_session("k1").await?;
    o.start_session(child("k2")).await?;
    h.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_past_its_timeout_is_cancelled_and_says_so() -> TestResult {
    let mut slow = common::stalling("slow");
    slow.limits.timeout_seconds = Some(1);
    let h = Harness::start(vec![slow], 1).await?;
    let o = &h.orchestrator;
    let request = StartRequest {
        blueprint: Some("slow".to_owned()),
        ..start("late")
    };
    let report = ended(within("timed-out run", o.start_session(request)).await??)?;
    assert_eq!(report.session.status, "cancelled", "{report:?}");
    assert_eq!(report.job_status.as_deref(), Some("cancelled"));
    let error = report.error.unwrap_or_default();
    assert!(error.starts_with("timed out after 1s"), "{error}");
    h.stop().await
}
