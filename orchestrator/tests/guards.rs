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
