//! Issue 25's defects about runs, on both backends: a crash or a lost lease fires the callback
//! exactly once; a session's status and result follow all its jobs and a wait lasts until the
//! session settles; a result belongs to the run that made it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::backend::{Backend, TestStore};
use common::{Fallible, Harness, TestResult, accepted, answering, echo, ended, gate, running, within};
use patchbay_orchestrator::format::JobAccepted;
use patchbay_orchestrator::store::{
    INTERRUPTED, JobEnd, JobKind, JobStatus, LEASE_EXPIRED, NewJob, NewSession, Page, SessionStatus, Store,
};
use patchbay_orchestrator::{Orchestrator, ResumeRequest, StartRequest};

on_both_backends!(
    an_interrupted_child_calls_its_parent_back_exactly_once,
    a_queued_resume_cancelled_does_not_end_the_wait_for_the_run_still_going,
    a_status_wait_lasts_until_the_session_settles,
    a_cancelled_resume_does_not_show_the_previous_result,
    a_failed_resume_answers_its_error_not_the_previous_result,
    sessions_are_listed_by_filter_in_keyset_pages,
    a_run_whose_job_ended_elsewhere_leaves_no_finish_and_no_conversation,
);

fn start_on(name: &str, blueprint: &str, prompt: &str) -> StartRequest {
    StartRequest {
        session_name: name.to_owned(),
        prompt: prompt.to_owned(),
        blueprint: Some(blueprint.to_owned()),
        ..StartRequest::default()
    }
}

fn resume(name: &str, prompt: &str) -> ResumeRequest {
    ResumeRequest {
        session_name: name.to_owned(),
        prompt: prompt.to_owned(),
        ..ResumeRequest::default()
    }
}

/// Start session `name` on `blueprint` without waiting for the run.
async fn start_async(o: &Orchestrator, name: &str, blueprint: &str, prompt: &str) -> Fallible<JobAccepted> {
    let request = StartRequest {
        async_mode: true,
        ..start_on(name, blueprint, prompt)
    };
    accepted(o.start_session(request).await?)
}

/// Queue a resume of session `name` without waiting for its run.
async fn resume_async(o: &Orchestrator, name: &str, prompt: &str) -> Fallible<JobAccepted> {
    let request = ResumeRequest {
        async_mode: true,
        ..resume(name, prompt)
    };
    accepted(o.resume_session(request).await?)
}

fn session(name: &str, parent: Option<&str>) -> NewSession {
    NewSession {
        session_name: name.to_owned(),
        agent_name: "default".to_owned(),
        project_dir: ".".to_owned(),
        parent_session_name: parent.map(str::to_owned),
    }
}

fn job(session: &str, parent: Option<&str>, callback: bool) -> NewJob {
    NewJob {
        kind: JobKind::StartSession,
        session_name: session.to_owned(),
        agent_name: "default".to_owned(),
        prompt: "work".to_owned(),
        project_dir: ".".to_owned(),
        parent_session_name: parent.map(str::to_owned),
        callback,
    }
}

async fn jobs_of(store: &Arc<dyn Store>, session: &str) -> Result<Vec<patchbay_orchestrator::store::Job>, String> {
    store
        .list_jobs(Some(session), Page::first(100))
        .await
        .map_err(|e| e.to_string())
}

/// A child with `callback = true` is running when its process dies (SQLite: the restart's
/// recovery; PostgreSQL: its lease runs out): the parent is resumed once, with the
/// interruption as the child's error, however often recovery runs.
async fn an_interrupted_child_calls_its_parent_back_exactly_once(backend: Backend) -> TestResult {
    let Some(fixture) = TestStore::open(backend).await? else {
        return Ok(());
    };
    let store = fixture.store.clone();
    let (_, parent_job) = store
        .create_session_with_job(session("boss", None), job("boss", None, false))
        .await?;
    let lease = Duration::from_millis(300);
    store
        .claim_next_job("live-worker", Duration::from_secs(60))
        .await?
        .ok_or("no parent job")?;
    store.mark_job_running(&parent_job.job_id, "live-worker").await?;
    store.finish_job(&parent_job.job_id, JobStatus::Completed, None).await?;
    let (_, child_job) = store
        .create_session_with_job(session("kid", Some("boss")), job("kid", Some("boss"), true))
        .await?;
    let claimed = store
        .claim_next_job("dead-worker", lease)
        .await?
        .ok_or("nothing claimed")?;
    assert_eq!(claimed.job_id, child_job.job_id);
    store.mark_job_running(&claimed.job_id, "dead-worker").await?;

    // The process dies here. A new one opens the store.
    let (reopened, error) = match backend {
        Backend::Sqlite => {
            drop(store);
            let reopened = fixture.reopen().await?;
            let recovery = reopened.recover_after_crash().await?;
            assert_eq!(recovery.failed_jobs, vec![child_job.job_id.clone()]);
            assert_eq!(recovery.callbacks.len(), 1, "{recovery:?}");
            (reopened, INTERRUPTED)
        }
        Backend::Postgres => {
            let reopened = fixture.reopen().await?;
            tokio::time::sleep(lease * 2).await;
            let recovery = reopened.expire_leases().await?;
            assert_eq!(recovery.failed_jobs, vec![child_job.job_id.clone()]);
            assert_eq!(recovery.callbacks.len(), 1, "{recovery:?}");
            (reopened, LEASE_EXPIRED)
        }
    };
    // Recovery again (another restart, another process settling leases): nothing more.
    assert!(reopened.recover_after_crash().await?.callbacks.is_empty());
    assert!(reopened.expire_leases().await?.callbacks.is_empty());

    let child = reopened.get_job(&child_job.job_id).await?.ok_or("child job gone")?;
    assert_eq!(child.status, JobStatus::Failed);
    assert_eq!(child.error.as_deref(), Some(error));
    let kid = reopened.get_session_by_name("kid").await?.ok_or("kid gone")?;
    assert_eq!(kid.status, SessionStatus::Failed);

    let parent_jobs = jobs_of(&reopened, "boss").await?;
    assert_eq!(parent_jobs.len(), 2, "{parent_jobs:?}");
    let callback = &parent_jobs[1];
    assert_eq!(callback.kind, JobKind::ResumeSession);
    assert_eq!(callback.status, JobStatus::Pending);
    assert!(!callback.callback);
    assert!(callback.prompt.contains("`kid` failed"), "{}", callback.prompt);
    assert!(callback.prompt.contains(error), "{}", callback.prompt);
    // The parent waits for its callback's run: it shows as running.
    let boss = reopened.get_session_by_name("boss").await?.ok_or("boss gone")?;
    assert_eq!(boss.status, SessionStatus::Running);
    Ok(())
}

/// A first run still going and a queued resume cancelled: the session is running, a status
/// wait waits for the run, the result is an error until it ends, then the run's own text.
async fn a_queued_resume_cancelled_does_not_end_the_wait_for_the_run_still_going(backend: Backend) -> TestResult {
    let name = format!("queued-cancel-{backend:?}");
    let g = gate(&name);
    let Some(h) = Harness::start_on(backend, vec![echo("held", Some(&name))], 2).await? else {
        return Ok(());
    };
    let o = &h.orchestrator;
    start_async(o, "s", "held", "first").await?;
    g.arrived(1).await?;
    let queued = resume_async(o, "s", "second").await?;
    let cancelled = o.cancel_job(&queued.job_id).await?;
    assert_eq!(cancelled.status, JobStatus::Cancelled);

    let report = o.status("s", None).await?;
    assert_eq!(report.session.status, "running", "{report:?}");
    assert_eq!(report.job_status.as_deref(), Some("running"), "{report:?}");
    let error = o
        .result("s")
        .await
        .err()
        .ok_or("a result while the first run goes on")?;
    assert!(error.to_string().contains("still running"), "{error}");

    let waiter = {
        let o = o.clone();
        tokio::spawn(async move { o.status("s", Some(Duration::from_secs(30))).await })
    };
    g.release(1);
    let report = within("the status wait", waiter).await???;
    assert_eq!(report.session.status, "finished", "{report:?}");
    assert_eq!(report.job_status.as_deref(), Some("completed"));
    let result = o.result("s").await?;
    assert!(
        result.result.as_deref().is_some_and(|r| r.contains("first")),
        "{result:?}"
    );
    assert_ne!(result.job_id.as_deref(), Some(queued.job_id.as_str()));
    h.stop().await
}

/// A wait on a queued session does not end when the job is claimed or starts running, only
/// when its run ends.
async fn a_status_wait_lasts_until_the_session_settles(backend: Backend) -> TestResult {
    let name = format!("settle-wait-{backend:?}");
    let g = gate(&name);
    let Some(h) = Harness::start_on(backend, vec![echo("held", Some(&name))], 1).await? else {
        return Ok(());
    };
    let o = &h.orchestrator;
    // The only worker is busy: the next session's job waits in the queue.
    start_async(o, "busy", "held", "hold the worker").await?;
    g.arrived(1).await?;
    start_async(o, "queued", "held", "wait your turn").await?;
    let waiter = {
        let o = o.clone();
        tokio::spawn(async move { o.status("queued", Some(Duration::from_secs(30))).await })
    };
    // The first run ends, the queued job is claimed and runs (each a change of state) and
    // reaches the gate; then it is let through.
    g.release(1);
    g.arrived(2).await?;
    running(o, "queued").await?;
    g.release(1);
    let report = within("the status wait", waiter).await???;
    assert_eq!(report.job_status.as_deref(), Some("completed"), "{report:?}");
    assert_eq!(report.session.status, "finished");
    h.stop().await
}

/// A resume cancelled during its run: the session is cancelled, its result is none (not the
/// first run's text), and the report names the cancelled run.
async fn a_cancelled_resume_does_not_show_the_previous_result(backend: Backend) -> TestResult {
    let name = format!("cancelled-resume-{backend:?}");
    let g = gate(&name);
    let Some(h) = Harness::start_on(backend, vec![echo("held", Some(&name))], 2).await? else {
        return Ok(());
    };
    let o = &h.orchestrator;
    g.release(1);
    let first = ended(within("first run", o.start_session(start_on("s", "held", "first"))).await??)?;
    assert!(first.result.is_some());
    let second = resume_async(o, "s", "second").await?;
    g.arrived(2).await?;
    o.cancel_job(&second.job_id).await?;
    let report = o.result("s").await?;
    assert_eq!(report.session.status, "cancelled", "{report:?}");
    assert_eq!(report.job_id.as_deref(), Some(second.job_id.as_str()));
    assert_eq!(report.job_status.as_deref(), Some("cancelled"));
    assert_eq!(report.result, None, "the first run's text shown as the cancelled run's");
    assert!(report.error.is_some());
    // Listings agree with the report.
    let listed = o.list_sessions().await?;
    assert_eq!(listed[0].status, "cancelled");
    h.stop().await
}

/// A resume whose run fails: the report carries its error and no result.
async fn a_failed_resume_answers_its_error_not_the_previous_result(backend: Backend) -> TestResult {
    let Some(h) = Harness::start_on(backend, vec![answering("ok", "all good")], 2).await? else {
        return Ok(());
    };
    let o = &h.orchestrator;
    ended(within("first run", o.start_session(start_on("s", "ok", "first"))).await??)?;
    // The session's stored conversation cannot be read: the next run fails.
    let stored = o.session_by_name("s").await?;
    let update = patchbay_orchestrator::store::SessionUpdate {
        conversation: Some(serde_json::json!("not a conversation")),
        ..Default::default()
    };
    o.store().update_session(&stored.session_id, update).await?;
    let report = ended(within("failing resume", o.resume_session(resume("s", "again"))).await??)?;
    assert_eq!(report.session.status, "failed", "{report:?}");
    assert_eq!(report.result, None, "the first run's text shown as the failed run's");
    assert!(
        report.error.as_deref().is_some_and(|e| e.contains("conversation")),
        "{report:?}"
    );
    let result = o.result("s").await?;
    assert_eq!(result, report);
    h.stop().await
}

/// `list_agent_sessions`: filters (status, parent, blueprint) and keyset pages that visit every
/// session once, in order, with the total; listings carry no conversation.
async fn sessions_are_listed_by_filter_in_keyset_pages(backend: Backend) -> TestResult {
    let Some(h) = Harness::start_on(backend, vec![answering("other", "ok")], 1).await? else {
        return Ok(());
    };
    let o = &h.orchestrator;
    let store = o.store().clone();
    let names: Vec<String> = (0..7).map(|i| format!("s{i}")).collect();
    for (i, name) in names.iter().enumerate() {
        let parent = (i % 2 == 1).then_some("s0");
        store.create_session(session(name, parent)).await?;
    }
    let tools = patchbay_orchestrator::tools::agent_session_tools(o);
    let cx = common::called_by(None);
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let mut input = serde_json::json!({"limit": 3, "response_format": "json"});
        if let Some(after) = &after {
            input["after"] = serde_json::json!(after);
        }
        let page: serde_json::Value = serde_json::from_str(
            &common::call(&tools, "list_agent_sessions", input, &cx)
                .await?
                .text_content(),
        )?;
        assert_eq!(page["total"], 7, "{page}");
        for s in page["sessions"].as_array().ok_or("sessions")? {
            seen.push(s["session_name"].as_str().unwrap_or_default().to_owned());
        }
        match page["next_after"].as_str() {
            Some(next) => after = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen, names);
    let input = serde_json::json!({"parent_session_name": "s0", "response_format": "json"});
    let page: serde_json::Value = serde_json::from_str(
        &common::call(&tools, "list_agent_sessions", input, &cx)
            .await?
            .text_content(),
    )?;
    assert_eq!(page["total"], 3, "{page}");
    let input = serde_json::json!({"status": "finished", "response_format": "json"});
    let page: serde_json::Value = serde_json::from_str(
        &common::call(&tools, "list_agent_sessions", input, &cx)
            .await?
            .text_content(),
    )?;
    assert_eq!(page["total"], 0, "{page}");
    let input = serde_json::json!({"status": "sleeping"});
    assert!(
        common::call(&tools, "list_agent_sessions", input, &cx)
            .await?
            .is_error()
    );
    let input = serde_json::json!({"after": "not-a-cursor"});
    assert!(
        common::call(&tools, "list_agent_sessions", input, &cx)
            .await?
            .is_error()
    );
    // Store level: the blueprint filter, and no conversation read.
    let (found, total) = store
        .find_sessions(
            &patchbay_orchestrator::store::SessionFilter {
                agent_name: Some("default".into()),
                ..Default::default()
            },
            None,
            100,
        )
        .await?;
    assert_eq!(total, 7);
    assert!(found.iter().all(|s| s.conversation.is_null()));
    h.stop().await
}

/// A run goes on while its job is ended elsewhere (another process settled its lease): the
/// run's end must not be stored. Before, the worker stored the `finish` event and the
/// conversation first and only then failed to end the job, so a failed job showed a finished
/// run, and the next resume continued the failed run's conversation (a failed run must leave
/// it as it was). A worker killed between those writes left the same state.
async fn a_run_whose_job_ended_elsewhere_leaves_no_finish_and_no_conversation(backend: Backend) -> TestResult {
    let name = format!("ended-elsewhere-{backend:?}");
    let g = gate(&name);
    let Some(h) = Harness::start_on(backend, vec![echo("held", Some(&name))], 1).await? else {
        return Ok(());
    };
    let o = &h.orchestrator;
    let first = start_async(o, "s", "held", "first").await?;
    g.arrived(1).await?;
    o.store().end_job(&first.job_id, JobEnd::failed(LEASE_EXPIRED)).await?;
    g.release(1);
    // One worker: the resume runs once the first run's end was tried.
    g.release(1);
    let second = ended(within("the resume", o.resume_session(resume("s", "second"))).await??)?;
    let session = o.session_by_name("s").await?;
    let events = o.store().events_since(&session.session_id, 0).await?;
    let finishes: Vec<_> = events
        .iter()
        .filter(|e| e.event["type"] == "finish")
        .map(|e| e.job_id.clone().unwrap_or_default())
        .collect();
    assert!(
        !finishes.contains(&first.job_id),
        "the failed job's run shows a finish: {finishes:?}"
    );
    assert_eq!(finishes.len(), 1, "{finishes:?}");
    // The echo answers with the conversation it got: only the resume's prompt.
    let result = second.result.unwrap_or_default();
    assert!(
        !result.contains("first"),
        "the failed run's conversation was kept: {result}"
    );
    assert!(result.contains("second"), "{result}");
    h.stop().await
}
