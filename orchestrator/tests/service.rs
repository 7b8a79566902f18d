//! The orchestrator service end to end through its public API, on the scripted provider and an
//! `echo` provider (see `common`): sync and async starts, resume with the conversation kept, a
//! resume queued behind a running one, status with `wait`, result before and after the run,
//! refused names and requests, callbacks resuming the parent (idle or still running), cancel
//! and delete of running and queued work, 100 async starts at once, and shutdown.
//!
//! No assertion is timed except generous upper bounds; every wait is bounded.

mod common;

use std::time::{Duration, Instant};

use common::{
    Harness, TestResult, accepted, answering, echo, echo_answer, ended, eventually, gate, heard, running, scripted,
    stalling, whoami, within, within_for,
};
use patchbay::ErrorKind;
use patchbay::scripted::{Script, ScriptedError, Turn};
use patchbay_orchestrator::store::{JobKind, JobStatus, Page};
use patchbay_orchestrator::{OrchestratorError, ResumeRequest, StartRequest};

use common::backend::Backend;

on_both_backends!(
    sync_start_returns_the_finished_report_with_the_result,
    async_start_returns_at_once_and_the_run_then_finishes,
    a_sync_start_past_the_wait_limit_answers_with_the_job_and_the_run_goes_on,
    each_run_knows_its_own_session_name_and_works_in_its_project_folder,
    resume_continues_the_same_conversation,
    a_resume_queued_while_the_session_runs_waits_for_the_run,
    status_with_wait_returns_when_the_run_ends_and_at_once_when_settled,
    result_is_an_error_while_running_and_the_text_after,
    unknown_sessions_existing_names_and_bad_names_are_refused_clearly,
    callback_resumes_the_parent_with_the_childs_result,
    callback_to_a_running_parent_waits_for_its_run_then_runs,
    callback_after_a_failed_child_carries_the_error,
    a_cancelled_run_leaves_the_conversation_as_it_was,
    cancelling_a_running_job_ends_it_and_its_session_cancelled,
    deleting_a_running_session_stops_its_run,
    cancelling_a_pending_job_works_and_an_ended_one_is_an_error,
    a_hundred_async_starts_at_once_all_finish,
    shutdown_cancels_a_running_job_with_the_reason,
);

fn start(name: &str, prompt: &str) -> StartRequest {
    StartRequest {
        session_name: name.to_owned(),
        prompt: prompt.to_owned(),
        ..StartRequest::default()
    }
}

fn start_on(name: &str, blueprint: &str, prompt: &str) -> StartRequest {
    StartRequest {
        blueprint: Some(blueprint.to_owned()),
        ..start(name, prompt)
    }
}

fn resume(name: &str, prompt: &str) -> ResumeRequest {
    ResumeRequest {
        session_name: name.to_owned(),
        prompt: prompt.to_owned(),
        ..ResumeRequest::default()
    }
}

async fn sync_start_returns_the_finished_report_with_the_result(backend: Backend) -> TestResult {
    let Some(h) = Harness::start_on(backend, vec![answering("greeter", "Hi there, parent.")], 2).await? else {
        return Ok(());
    };
    let o = &h.orchestrator;

    let report = ended(within("sync start", o.start_session(start_on("s1", "greeter", "hello"))).await??)?;
    assert_eq!(report.session.session_name, "s1");
    assert_eq!(report.session.agent_name, "greeter");
    assert_eq!(report.session.status, "finished");
    assert_eq!(report.job_status.as_deref(), Some("completed"));
    assert_eq!(report.result.as_deref(), Some("Hi there, parent."));
    assert!(report.finished_at.is_some());
    assert_eq!(report.error, None);
    let project = std::fs::canonicalize(&h.project)?;
    assert_eq!(
        report.session.project_dir.as_deref(),
        Some(project.to_string_lossy().as_ref())
    );

    // No blueprint named: the built-in default on the scripted provider.
    let report = ended(within("default start", o.start_session(start("s2", "hello"))).await??)?;
    assert_eq!(report.session.agent_name, "default");
    assert_eq!(report.result.as_deref(), Some("Hello from the scripted provider."));
    h.stop().await
}

async fn async_start_returns_at_once_and_the_run_then_finishes(backend: Backend) -> TestResult {
    let g = gate(&format!("async-start-{backend:?}"));
    let Some(h) = Harness::start_on(
        backend,
        vec![echo("held", Some(&format!("async-start-{backend:?}")))],
        2,
    )
    .await?
    else {
        return Ok(());
    };
    let o = &h.orchestrator;

    // The run cannot finish before the gate opens, so the answer came without waiting for it.
    let request = StartRequest {
        async_mode: true,
        ..start_on("bg", "held", "work in the background")
    };
    let job = accepted(within("async start", o.start_session(request)).await??)?;
    assert_eq!(job.session_name, "bg");
    assert!(!job.job_id.is_empty());
    assert!(
        ["pending", "claimed", "running"].contains(&job.status.as_str()),
        "{job:?}"
    );
    assert_eq!(job.callback_to, None);

    // With a callback and a caller session, the answer says whom the result goes to.
    ended(within("parent", o.start_session(start("parent", "lead"))).await??)?;
    let request = StartRequest {
        async_mode: true,
        callback: true,
        caller: Some("parent".to_owned()),
        ..start("bg2", "and report back")
    };
    let job2 = accepted(within("async start with callback", o.start_session(request)).await??)?;
    assert_eq!(job2.callback_to.as_deref(), Some("parent"));

    g.arrived(1).await?;
    g.release(1);
    let done = o.wait_for_job(&job.job_id, "bg", common::LIMIT).await?;
    assert_eq!(done.status, JobStatus::Completed);
    let report = o.result("bg").await?;
    assert_eq!(
        report.result.as_deref(),
        Some(echo_answer(&[("user", "work in the background")]).as_str())
    );
    let done2 = o.wait_for_job(&job2.job_id, "bg2", common::LIMIT).await?;
    assert_eq!(done2.status, JobStatus::Completed);
    h.stop().await
}

async fn a_sync_start_past_the_wait_limit_answers_with_the_job_and_the_run_goes_on(backend: Backend) -> TestResult {
    let g = gate(&format!("sync-limit-{backend:?}"));
    let blueprints = vec![echo("held", Some(&format!("sync-limit-{backend:?}")))];
    let Some(h) = Harness::start_on_with(backend, blueprints, 2, |b| {
        b.sync_wait_limit(Duration::from_millis(300))
    })
    .await?
    else {
        return Ok(());
    };
    let o = &h.orchestrator;

    let job = accepted(within("sync start", o.start_session(start_on("long", "held", "slow work"))).await??)?;
    assert_eq!(job.session_name, "long");
    assert!(
        ["pending", "claimed", "running"].contains(&job.status.as_str()),
        "{job:?}"
    );
    g.release(1);
    let done = o.wait_for_job(&job.job_id, "long", common::LIMIT).await?;
    assert_eq!(done.status, JobStatus::Completed);
    assert_eq!(
        o.result("long").await?.result.as_deref(),
        Some(echo_answer(&[("user", "slow work")]).as_str())
    );
    h.stop().await
}

async fn each_run_knows_its_own_session_name_and_works_in_its_project_folder(backend: Backend) -> TestResult {
    let mut bp = whoami("whoami");
    bp.system = Some("You are a test.".to_owned());
    let Some(h) = Harness::start_on(backend, vec![bp], 2).await? else {
        return Ok(());
    };
    let o = &h.orchestrator;
    std::fs::create_dir_all(h.project.join("sub"))?;

    ended(within("parent", o.start_session(start("boss", "lead"))).await??)?;
    let request = StartRequest {
        project_dir: Some("sub".to_owned()),
        caller: Some("boss".to_owned()),
        ..start_on("who", "whoami", "who am I?")
    };
    let report = ended(within("start", o.start_session(request)).await??)?;
    let seen: serde_json::Value = serde_json::from_str(report.result.as_deref().ok_or("no result")?)?;
    assert_eq!(seen["env"]["AGENT_SESSION_NAME"], "who");
    assert_eq!(seen["metadata"]["agent_session_name"], "who");
    let sub = std::fs::canonicalize(h.project.join("sub"))?;
    assert_eq!(seen["working_dir"], sub.to_string_lossy().as_ref());
    assert_eq!(
        report.session.project_dir.as_deref(),
        Some(sub.to_string_lossy().as_ref())
    );
    assert_eq!(seen["system"], "You are a test.");

    // A project folder that does not exist is refused before anything is written.
    let request = StartRequest {
        project_dir: Some("missing".to_owned()),
        ..start_on("nowhere", "whoami", "hi")
    };
    let error = o
        .start_session(request)
        .await
        .err()
        .ok_or("started in a missing folder")?;
    assert!(error.to_string().contains("missing"), "{error}");
    assert!(o.session_by_name("nowhere").await.is_err());
    h.stop().await
}

async fn resume_continues_the_same_conversation(backend: Backend) -> TestResult {
    let Some(h) = Harness::start_on(backend, vec![echo("echo", None)], 2).await? else {
        return Ok(());
    };
    let o = &h.orchestrator;

    let first = ended(within("start", o.start_session(start_on("talk", "echo", "first prompt"))).await??)?;
    let first_answer = first.result.ok_or("no first result")?;
    assert_eq!(first_answer, echo_answer(&[("user", "first prompt")]));

    let second = ended(within("resume", o.resume_session(resume("talk", "second prompt"))).await??)?;
    let seen = heard(second.result.as_deref().ok_or("no second result")?)?;
    let expected = [
        ("user", "first prompt"),
        ("assistant", first_answer.as_str()),
        ("user", "second prompt"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(r, t)| ((*r).to_owned(), (*t).to_owned()))
        .collect();
    assert_eq!(seen, expected);

    // A third turn sees all five messages.
    let third = ended(within("resume again", o.resume_session(resume("talk", "third"))).await??)?;
    assert_eq!(heard(third.result.as_deref().ok_or("no third result")?)?.len(), 5);
    h.stop().await
}

async fn a_resume_queued_while_the_session_runs_waits_for_the_run(backend: Backend) -> TestResult {
    let g = gate(&format!("queued-resume-{backend:?}"));
    let Some(h) = Harness::start_on(
        backend,
        vec![echo("held", Some(&format!("queued-resume-{backend:?}")))],
        4,
    )
    .await?
    else {
        return Ok(());
    };
    let o = &h.orchestrator;

    let request = StartRequest {
        async_mode: true,
        ..start_on("busy", "held", "first")
    };
    let first = accepted(o.start_session(request).await?)?;
    g.arrived(1).await?;

    // The first run is held at the gate; the resume is queued behind it, with free workers.
    let request = ResumeRequest {
        async_mode: true,
        ..resume("busy", "second")
    };
    let second = accepted(o.resume_session(request).await?)?;
    assert_eq!(second.status, "running");
    assert_eq!(second.job_status, "pending");
    assert_eq!(o.job(&second.job_id).await?.status, JobStatus::Pending);
    assert_eq!(o.job(&first.job_id).await?.status, JobStatus::Running);
    assert_eq!(g.arrivals(), 1);

    g.release(1);
    let first_job = o.wait_for_job(&first.job_id, "busy", common::LIMIT).await?;
    assert_eq!(first_job.status, JobStatus::Completed);
    g.arrived(2).await?;
    g.release(1);
    let second_job = o.wait_for_job(&second.job_id, "busy", common::LIMIT).await?;
    assert_eq!(second_job.status, JobStatus::Completed);
    assert_eq!(second_job.kind, JobKind::ResumeSession);
    // Never both at the gate, and the resume ran on the finished first turn.
    assert_eq!(g.most_waiting_at_once(), 1);
    let first_answer = echo_answer(&[("user", "first")]);
    let report = o.result("busy").await?;
    assert_eq!(
        report.result.as_deref(),
        Some(echo_answer(&[("user", "first"), ("assistant", &first_answer), ("user", "second")]).as_str())
    );
    assert!(first_job.finished_at <= second_job.started_at);
    h.stop().await
}

async fn status_with_wait_returns_when_the_run_ends_and_at_once_when_settled(backend: Backend) -> TestResult {
    let g = gate(&format!("status-wait-{backend:?}"));
    let Some(h) = Harness::start_on(
        backend,
        vec![echo("held", Some(&format!("status-wait-{backend:?}")))],
        2,
    )
    .await?
    else {
        return Ok(());
    };
    let o = &h.orchestrator;

    let request = StartRequest {
        async_mode: true,
        ..start_on("waited", "held", "take your time")
    };
    accepted(o.start_session(request).await?)?;
    g.arrived(1).await?;

    // A short wait on a run that does not change ends at its limit with the session running.
    let report = within(
        "short status wait",
        o.status("waited", Some(Duration::from_millis(200))),
    )
    .await??;
    assert_eq!(report.session.status, "running");
    assert_eq!(report.result, None);

    // A long wait ends with the run, well before its 30 s.
    let waiter = {
        let o = o.clone();
        tokio::spawn(async move {
            let began = Instant::now();
            let report = o.status("waited", Some(Duration::from_secs(30))).await;
            (report, began.elapsed())
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    g.release(1);
    let (report, took) = within("status wait", waiter).await??;
    let report = report?;
    assert_eq!(report.session.status, "finished");
    assert_eq!(report.job_status.as_deref(), Some("completed"));
    assert_eq!(
        report.result.as_deref(),
        Some(echo_answer(&[("user", "take your time")]).as_str())
    );
    assert!(took < Duration::from_secs(20), "the wait took {took:?}");

    // Settled: nothing can change, so the wait returns at once.
    let began = Instant::now();
    let report = within("settled status wait", o.status("waited", Some(Duration::from_secs(30)))).await??;
    assert_eq!(report.session.status, "finished");
    assert!(began.elapsed() < Duration::from_secs(20));
    h.stop().await
}

async fn result_is_an_error_while_running_and_the_text_after(backend: Backend) -> TestResult {
    let g = gate(&format!("result-early-{backend:?}"));
    let Some(h) = Harness::start_on(
        backend,
        vec![echo("held", Some(&format!("result-early-{backend:?}")))],
        2,
    )
    .await?
    else {
        return Ok(());
    };
    let o = &h.orchestrator;

    let request = StartRequest {
        async_mode: true,
        ..start_on("slow", "held", "answer later")
    };
    let job = accepted(o.start_session(request).await?)?;
    // Before it is even claimed or while it runs: still running.
    let error = o.result("slow").await.err().ok_or("a result while queued or running")?;
    assert!(matches!(error, OrchestratorError::StillRunning { .. }), "{error:?}");
    g.arrived(1).await?;
    let error = o.result("slow").await.err().ok_or("a result while running")?;
    assert!(matches!(error, OrchestratorError::StillRunning { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("`slow` is still running"), "{message}");
    assert!(message.contains("wait_seconds"), "{message}");

    g.release(1);
    o.wait_for_job(&job.job_id, "slow", common::LIMIT).await?;
    let report = o.result("slow").await?;
    assert_eq!(
        report.result.as_deref(),
        Some(echo_answer(&[("user", "answer later")]).as_str())
    );
    h.stop().await
}

async fn unknown_sessions_existing_names_and_bad_names_are_refused_clearly(backend: Backend) -> TestResult {
    let Some(h) = Harness::start_on(backend, Vec::new(), 1).await? else {
        return Ok(());
    };
    let o = &h.orchestrator;

    for error in [
        o.result("ghost").await.err(),
        o.status("ghost", None).await.err(),
        o.status("ghost", Some(Duration::from_secs(5))).await.err(),
    ] {
        let error = error.ok_or("an unknown session answered")?;
        assert!(matches!(error, OrchestratorError::SessionNotFound(_)), "{error:?}");
        assert!(error.to_string().contains("`ghost`"), "{error}");
    }

    ended(within("start", o.start_session(start("taken", "hi"))).await??)?;
    let error = o
        .start_session(start("taken", "again"))
        .await
        .err()
        .ok_or("a second start")?;
    assert!(matches!(error, OrchestratorError::SessionExists(_)), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("`taken` already exists"), "{message}");
    assert!(message.contains("resume_agent_session"), "{message}");
    // The first session is untouched.
    assert_eq!(
        o.result("taken").await?.result.as_deref(),
        Some("Hello from the scripted provider.")
    );

    let error = o
        .resume_session(resume("missing", "hi"))
        .await
        .err()
        .ok_or("a resume of nothing")?;
    assert!(matches!(error, OrchestratorError::SessionNotFound(_)), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("no session named `missing`"), "{message}");
    assert!(message.contains("start_agent_session"), "{message}");

    let rule = "1 to 60 characters from a-z, A-Z, 0-9, `_` and `-`";
    for name in [String::new(), "a".repeat(61), "a b".to_owned(), "ä".to_owned()] {
        let error = o
            .start_session(start(&name, "hi"))
            .await
            .err()
            .ok_or("a bad name started")?;
        assert!(
            matches!(error, OrchestratorError::InvalidName(_)),
            "{name:?}: {error:?}"
        );
        let message = error.to_string();
        assert!(message.contains(rule), "{message}");
        assert!(message.contains(&format!("`{name}`")), "{message}");
        let error = o
            .resume_session(resume(&name, "hi"))
            .await
            .err()
            .ok_or("a bad name resumed")?;
        assert!(error.to_string().contains(rule), "{error}");
    }
    // 60 characters are fine.
    ended(within("60 characters", o.start_session(start(&"a".repeat(60), "hi"))).await??)?;
    // Nothing of the refused calls was written.
    assert_eq!(o.list_sessions().await?.len(), 2);
    let error = o
        .start_session(start("empty", "  "))
        .await
        .err()
        .ok_or("an empty prompt")?;
    assert!(error.to_string().contains("prompt is empty"), "{error}");
    let error = o
        .start_session(start_on("nobp", "nope", "hi"))
        .await
        .err()
        .ok_or("an unknown blueprint")?;
    assert!(matches!(error, OrchestratorError::UnknownBlueprint(_)), "{error:?}");
    assert_eq!(o.list_sessions().await?.len(), 2);
    h.stop().await
}

/// The jobs of a session, in queue order.
async fn jobs_of(
    o: &patchbay_orchestrator::Orchestrator,
    session: &str,
) -> Result<Vec<patchbay_orchestrator::store::Job>, OrchestratorError> {
    Ok(o.store().list_jobs(Some(session), Page::first(100)).await?)
}

async fn callback_resumes_the_parent_with_the_childs_result(backend: Backend) -> TestResult {
    let Some(h) = Harness::start_on(
        backend,
        vec![echo("boss-bp", None), answering("helper", "child says 42")],
        2,
    )
    .await?
    else {
        return Ok(());
    };
    let o = &h.orchestrator;

    let boss = ended(within("parent", o.start_session(start_on("boss", "boss-bp", "lead"))).await??)?;
    let boss_answer = boss.result.ok_or("no parent result")?;

    let request = StartRequest {
        async_mode: true,
        callback: true,
        caller: Some("boss".to_owned()),
        ..start_on("kid", "helper", "find the answer")
    };
    let child = accepted(o.start_session(request).await?)?;
    assert_eq!(child.callback_to.as_deref(), Some("boss"));
    let child_job = o.wait_for_job(&child.job_id, "kid", common::LIMIT).await?;
    assert_eq!(child_job.status, JobStatus::Completed);
    assert_eq!(
        o.session_by_name("kid").await?.parent_session_name.as_deref(),
        Some("boss")
    );

    // The parent gets a resume naming the child and carrying its result, and runs it.
    let callback = eventually("the parent's callback run", || async {
        let jobs = jobs_of(o, "boss").await?;
        Ok(jobs.get(1).filter(|j| j.status.is_terminal()).cloned())
    })
    .await?;
    assert_eq!(callback.kind, JobKind::ResumeSession);
    assert_eq!(callback.status, JobStatus::Completed);
    assert!(callback.prompt.contains("`kid`"), "{}", callback.prompt);
    assert!(callback.prompt.contains("child says 42"), "{}", callback.prompt);
    assert!(
        !callback.callback,
        "a callback's resume asks for no callback of its own"
    );

    let seen = heard(o.result("boss").await?.result.as_deref().ok_or("no parent result")?)?;
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0], ("user".to_owned(), "lead".to_owned()));
    assert_eq!(seen[1], ("assistant".to_owned(), boss_answer));
    assert_eq!(seen[2], ("user".to_owned(), callback.prompt.clone()));
    h.stop().await
}

async fn callback_to_a_running_parent_waits_for_its_run_then_runs(backend: Backend) -> TestResult {
    let g = gate(&format!("callback-busy-parent-{backend:?}"));
    let Some(h) = Harness::start_on(
        backend,
        vec![
            echo("boss-bp", Some(&format!("callback-busy-parent-{backend:?}"))),
            answering("helper", "child done"),
        ],
        4,
    )
    .await?
    else {
        return Ok(());
    };
    let o = &h.orchestrator;

    let request = StartRequest {
        async_mode: true,
        ..start_on("boss", "boss-bp", "lead")
    };
    let boss = accepted(o.start_session(request).await?)?;
    g.arrived(1).await?;

    let request = StartRequest {
        async_mode: true,
        callback: true,
        caller: Some("boss".to_owned()),
        ..start_on("kid", "helper", "quick task")
    };
    let child = accepted(o.start_session(request).await?)?;
    assert_eq!(
        o.wait_for_job(&child.job_id, "kid", common::LIMIT).await?.status,
        JobStatus::Completed
    );

    // The callback is queued behind the parent's run, which is still held at the gate.
    let queued = eventually("the callback queued", || async {
        Ok(jobs_of(o, "boss").await?.get(1).cloned())
    })
    .await?;
    assert_eq!(queued.status, JobStatus::Pending);
    assert!(
        queued.prompt.contains("`kid`") && queued.prompt.contains("child done"),
        "{}",
        queued.prompt
    );
    assert_eq!(o.job(&boss.job_id).await?.status, JobStatus::Running);
    assert_eq!(g.arrivals(), 1);

    g.release(1);
    g.arrived(2).await?;
    g.release(1);
    let callback = o.wait_for_job(&queued.job_id, "boss", common::LIMIT).await?;
    assert_eq!(callback.status, JobStatus::Completed);
    let seen = heard(o.result("boss").await?.result.as_deref().ok_or("no parent result")?)?;
    let first_answer = echo_answer(&[("user", "lead")]);
    assert_eq!(
        seen,
        vec![
            ("user".to_owned(), "lead".to_owned()),
            ("assistant".to_owned(), first_answer),
            ("user".to_owned(), queued.prompt.clone()),
        ]
    );
    assert_eq!(g.most_waiting_at_once(), 1);
    h.stop().await
}

async fn callback_after_a_failed_child_carries_the_error(backend: Backend) -> TestResult {
    let failing = Script::new(vec![Turn::Fail(ScriptedError::new(
        ErrorKind::InvalidRequest,
        "boom at the model",
    ))]);
    let Some(h) = Harness::start_on(
        backend,
        vec![
            echo("boss-bp", None),
            scripted("broken", serde_json::json!({ "script": failing })),
        ],
        2,
    )
    .await?
    else {
        return Ok(());
    };
    let o = &h.orchestrator;
    ended(within("parent", o.start_session(start_on("boss", "boss-bp", "lead"))).await??)?;

    // A sync child with a callback: the caller gets the failed report, the parent a resume.
    let request = StartRequest {
        callback: true,
        caller: Some("boss".to_owned()),
        ..start_on("kid", "broken", "try")
    };
    let report = ended(within("failing child", o.start_session(request)).await??)?;
    assert_eq!(report.session.status, "failed");
    assert_eq!(report.job_status.as_deref(), Some("failed"));
    let error = report.error.ok_or("no error in the report")?;
    assert!(error.contains("boom at the model"), "{error}");
    assert_eq!(report.result, None);

    let callback = eventually("the parent's callback run", || async {
        let jobs = jobs_of(o, "boss").await?;
        Ok(jobs.get(1).filter(|j| j.status.is_terminal()).cloned())
    })
    .await?;
    assert_eq!(callback.status, JobStatus::Completed);
    assert!(callback.prompt.contains("`kid` failed"), "{}", callback.prompt);
    assert!(callback.prompt.contains("boom at the model"), "{}", callback.prompt);
    let seen = heard(o.result("boss").await?.result.as_deref().ok_or("no parent result")?)?;
    assert_eq!(
        seen.last().map(|(_, text)| text.as_str()),
        Some(callback.prompt.as_str())
    );
    h.stop().await
}

async fn a_cancelled_run_leaves_the_conversation_as_it_was(backend: Backend) -> TestResult {
    let g = gate(&format!("cancel-keeps-{backend:?}"));
    let Some(h) = Harness::start_on(
        backend,
        vec![echo("held", Some(&format!("cancel-keeps-{backend:?}")))],
        2,
    )
    .await?
    else {
        return Ok(());
    };
    let o = &h.orchestrator;

    let request = StartRequest {
        async_mode: true,
        ..start_on("keep", "held", "first")
    };
    let first = accepted(o.start_session(request).await?)?;
    g.release(1);
    assert_eq!(
        o.wait_for_job(&first.job_id, "keep", common::LIMIT).await?.status,
        JobStatus::Completed
    );

    let request = ResumeRequest {
        async_mode: true,
        ..resume("keep", "dropped prompt")
    };
    let doomed = accepted(o.resume_session(request).await?)?;
    g.arrived(2).await?;
    let cancelled = within("cancel", o.cancel_job(&doomed.job_id)).await??;
    assert_eq!(cancelled.status, JobStatus::Cancelled);
    assert_eq!(o.status("keep", None).await?.session.status, "cancelled");

    let request = ResumeRequest {
        async_mode: true,
        ..resume("keep", "third")
    };
    let third = accepted(o.resume_session(request).await?)?;
    g.release(1);
    assert_eq!(
        o.wait_for_job(&third.job_id, "keep", common::LIMIT).await?.status,
        JobStatus::Completed
    );
    let first_answer = echo_answer(&[("user", "first")]);
    assert_eq!(
        o.result("keep").await?.result.as_deref(),
        Some(echo_answer(&[("user", "first"), ("assistant", &first_answer), ("user", "third")]).as_str())
    );
    h.stop().await
}

async fn cancelling_a_running_job_ends_it_and_its_session_cancelled(backend: Backend) -> TestResult {
    let Some(h) = Harness::start_on(backend, vec![stalling("stall")], 2).await? else {
        return Ok(());
    };
    let o = &h.orchestrator;

    let request = StartRequest {
        async_mode: true,
        ..start_on("stuck", "stall", "never ends")
    };
    let job = accepted(o.start_session(request).await?)?;
    running(o, "stuck").await?;
    let cancelled = within("cancel", o.cancel_job(&job.job_id)).await??;
    assert_eq!(cancelled.status, JobStatus::Cancelled);
    assert_eq!(cancelled.error.as_deref(), Some("cancelled"));
    let report = o.status("stuck", None).await?;
    assert_eq!(report.session.status, "cancelled");
    assert_eq!(report.job_status.as_deref(), Some("cancelled"));
    // Ended: the result call answers (without a text), and the job cannot be cancelled twice.
    assert_eq!(o.result("stuck").await?.result, None);
    assert_eq!(o.running_jobs(), 0);
    let error = o.cancel_job(&job.job_id).await.err().ok_or("a second cancel")?;
    assert!(matches!(error, OrchestratorError::JobEnded { .. }), "{error:?}");
    assert!(error.to_string().contains("already ended"), "{error}");
    h.stop().await
}

async fn deleting_a_running_session_stops_its_run(backend: Backend) -> TestResult {
    let Some(h) = Harness::start_on(backend, vec![stalling("stall")], 2).await? else {
        return Ok(());
    };
    let o = &h.orchestrator;

    let request = StartRequest {
        async_mode: true,
        ..start_on("doomed", "stall", "never ends")
    };
    let job = accepted(o.start_session(request).await?)?;
    running(o, "doomed").await?;
    let session = o.session_by_name("doomed").await?;
    let deleted = within("delete", o.delete_session(&session.session_id)).await??;
    assert_eq!(deleted.session_name, "doomed");

    let ended_job = o.wait_for_job(&job.job_id, "doomed", common::LIMIT).await?;
    assert_eq!(ended_job.status, JobStatus::Cancelled);
    eventually("the run gone", || async { Ok((o.running_jobs() == 0).then_some(())) }).await?;
    let error = o
        .status("doomed", None)
        .await
        .err()
        .ok_or("a deleted session answered")?;
    assert!(matches!(error, OrchestratorError::SessionNotFound(_)), "{error:?}");
    // The name is free again.
    ended(within("restart", o.start_session(start("doomed", "again"))).await??)?;
    h.stop().await
}

async fn cancelling_a_pending_job_works_and_an_ended_one_is_an_error(backend: Backend) -> TestResult {
    let g = gate(&format!("cancel-pending-{backend:?}"));
    let Some(h) = Harness::start_on(
        backend,
        vec![echo("held", Some(&format!("cancel-pending-{backend:?}")))],
        2,
    )
    .await?
    else {
        return Ok(());
    };
    let o = &h.orchestrator;

    let request = StartRequest {
        async_mode: true,
        ..start_on("queue", "held", "first")
    };
    let first = accepted(o.start_session(request).await?)?;
    g.arrived(1).await?;
    let request = ResumeRequest {
        async_mode: true,
        ..resume("queue", "never runs")
    };
    let pending = accepted(o.resume_session(request).await?)?;
    let cancelled = within("cancel pending", o.cancel_job(&pending.job_id)).await??;
    assert_eq!(cancelled.status, JobStatus::Cancelled);
    assert_eq!(cancelled.started_at, None);

    g.release(1);
    let first_job = o.wait_for_job(&first.job_id, "queue", common::LIMIT).await?;
    assert_eq!(first_job.status, JobStatus::Completed);
    let report = o.status("queue", Some(Duration::from_secs(30))).await?;
    assert_eq!(report.session.status, "finished");
    assert_eq!(
        report.result.as_deref(),
        Some(echo_answer(&[("user", "first")]).as_str())
    );
    assert_eq!(o.job(&pending.job_id).await?.started_at, None);

    let error = o
        .cancel_job(&first.job_id)
        .await
        .err()
        .ok_or("cancelled a completed job")?;
    assert!(matches!(error, OrchestratorError::JobEnded { .. }), "{error:?}");
    let message = error.to_string();
    assert!(
        message.contains("already ended") && message.contains("completed"),
        "{message}"
    );
    let error = o.cancel_job("no-such-job").await.err().ok_or("cancelled nothing")?;
    assert!(matches!(error, OrchestratorError::JobNotFound(_)), "{error:?}");
    h.stop().await
}

async fn a_hundred_async_starts_at_once_all_finish(backend: Backend) -> TestResult {
    let Some(h) = Harness::start_on(backend, Vec::new(), 4).await? else {
        return Ok(());
    };
    let o = &h.orchestrator;

    let starts = (0..100).map(|n| {
        let request = StartRequest {
            async_mode: true,
            ..start(&format!("many-{n}"), &format!("task {n}"))
        };
        o.start_session(request)
    });
    let answers = within_for(
        Duration::from_secs(120),
        "100 starts",
        futures::future::join_all(starts),
    )
    .await?;
    let mut jobs = Vec::new();
    for answer in answers {
        jobs.push(accepted(answer?)?);
    }
    let waits = jobs
        .iter()
        .map(|job| o.wait_for_job(&job.job_id, &job.session_name, Duration::from_secs(120)));
    let ended_jobs = within_for(Duration::from_secs(150), "100 runs", futures::future::join_all(waits)).await?;
    for job in ended_jobs {
        let job = job?;
        assert_eq!(job.status, JobStatus::Completed, "{job:?}");
    }
    let sessions = o.list_sessions().await?;
    assert_eq!(sessions.len(), 100);
    assert!(sessions.iter().all(|s| s.status == "finished"));
    h.stop().await
}

async fn shutdown_cancels_a_running_job_with_the_reason(backend: Backend) -> TestResult {
    let Some(h) = Harness::start_on(backend, vec![stalling("stall")], 2).await? else {
        return Ok(());
    };
    let o = h.orchestrator.clone();

    let request = StartRequest {
        async_mode: true,
        ..start_on("at-close", "stall", "never ends")
    };
    let job = accepted(o.start_session(request).await?)?;
    running(&o, "at-close").await?;
    within("shutdown", o.shutdown()).await?;

    let job = o.job(&job.job_id).await?;
    assert_eq!(job.status, JobStatus::Cancelled);
    assert_eq!(
        job.error.as_deref(),
        Some("cancelled: the orchestrator shut down during the run")
    );
    assert_eq!(o.session_by_name("at-close").await?.status.as_str(), "cancelled");
    assert_eq!(o.running_jobs(), 0);
    let error = o
        .start_session(start("late", "hi"))
        .await
        .err()
        .ok_or("started after shutdown")?;
    assert!(matches!(error, OrchestratorError::ShuttingDown), "{error:?}");
    h.stop().await
}

/// A blueprint may name any compiled-in provider: one on `gemini`, pointed at the Gemini wire
/// mock by its options, runs to its answer like a scripted one (SQLite is enough: the store
/// does not care which provider answered).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_blueprint_on_the_gemini_provider_runs_against_its_wire() -> TestResult {
    use patchbay::scripted::{Part, Response};
    use patchbay_conformance::mock::{MockServer, gemini::GeminiWire};
    let server = MockServer::builder(GeminiWire)
        .script(&Script::new(vec![Turn::Respond(
            Response::new(vec![Part::text("Hello from Gemini.")]).with_usage(12, 4),
        )]))
        .start()
        .await?;
    let blueprint = patchbay_orchestrator::blueprint::Blueprint {
        provider: "gemini".to_owned(),
        model: "gemini-2.5-flash".to_owned(),
        provider_options: serde_json::json!({ "base_url": format!("{}/v1beta", server.url()), "api_key": "AIza-test" }),
        ..scripted("gemini-agent", serde_json::json!({}))
    };
    let Some(h) = Harness::start_on(Backend::Sqlite, vec![blueprint], 1).await? else {
        return Ok(());
    };
    let report = ended(
        within(
            "sync start",
            h.orchestrator.start_session(start_on("g1", "gemini-agent", "hi")),
        )
        .await??,
    )?;
    assert_eq!(report.result.as_deref(), Some("Hello from Gemini."), "{report:?}");
    let request = &server.requests()[0];
    assert!(
        request.path.contains("/models/gemini-2.5-flash:streamGenerateContent"),
        "{}",
        request.path
    );
    Ok(())
}

/// A blueprint may name any compiled-in provider: one on `openai`, pointed at the Responses wire
/// mock by its options, runs to its answer like a scripted one (SQLite is enough: the store
/// does not care which provider answered).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_blueprint_on_the_openai_provider_runs_against_its_wire() -> TestResult {
    use patchbay::scripted::{Part, Response};
    use patchbay_conformance::mock::{MockServer, openai_responses::ResponsesWire};
    let server = MockServer::builder(ResponsesWire::new())
        .script(&Script::new(vec![Turn::Respond(
            Response::new(vec![Part::text("Hello from OpenAI.")]).with_usage(12, 4),
        )]))
        .start()
        .await?;
    let blueprint = patchbay_orchestrator::blueprint::Blueprint {
        provider: "openai".to_owned(),
        model: "gpt-5-mini".to_owned(),
        provider_options: serde_json::json!({ "base_url": format!("{}/v1", server.url()), "api_key": "sk-test" }),
        ..scripted("openai-agent", serde_json::json!({}))
    };
    let Some(h) = Harness::start_on(Backend::Sqlite, vec![blueprint], 1).await? else {
        return Ok(());
    };
    let report = ended(
        within(
            "sync start",
            h.orchestrator.start_session(start_on("o1", "openai-agent", "hi")),
        )
        .await??,
    )?;
    assert_eq!(report.result.as_deref(), Some("Hello from OpenAI."), "{report:?}");
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/responses");
    assert_eq!(request.body["model"], "gpt-5-mini");
    Ok(())
}

/// patchbay-acp's scripted agent, `target/<profile>/patchbay-acp-fake-agent`: built by
/// `cargo build -p patchbay-acp` (and by `cargo test --workspace`, as every package's binaries
/// are). Another package's binary has no `CARGO_BIN_EXE_*` here, so it is looked for next to
/// the `deps` folder this test runs from. Missing: `None` outside CI, a failure in CI.
#[cfg(feature = "acp")]
fn acp_fake_agent() -> Option<std::path::PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let profile_dir = exe.parent()?.parent()?;
    let path = profile_dir.join(format!("patchbay-acp-fake-agent{}", std::env::consts::EXE_SUFFIX));
    if path.is_file() {
        return Some(path);
    }
    let hint = format!(
        "{} is missing: build it first with `cargo build -p patchbay-acp` (`cargo test --workspace` builds it)",
        path.display()
    );
    assert!(!patchbay_conformance::peers::is_ci(), "{hint}");
    eprintln!("skipped the end-to-end part: {hint}");
    None
}

/// A blueprint may name the `acp` provider with its options picking the agent: a preset
/// (`agent = "gemini"`) builds an agent runtime whose program is only looked up when a run
/// starts. Then, on patchbay-acp's fake agent (`command`, its script through `env`), a run
/// ends with the agent's answer, and a resume of the session reaches the agent as
/// `session/load` of the session id the first run reported (an agent runtime resumes its own
/// session rather than being sent the conversation).
#[cfg(feature = "acp")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_blueprint_on_the_acp_provider_runs_on_an_acp_agent() -> TestResult {
    use patchbay::acp::{AcpConfig, Preset};
    let text = r#"
        name = "gemini-cli"
        description = "Google's Gemini CLI over ACP."
        provider = "acp"
        model = "default"

        [provider_options]
        agent = "gemini"
        keep_alive_ms = 30000
    "#;
    let parsed = patchbay_orchestrator::blueprint::parse(text, "acp.toml".as_ref())?;
    let [blueprint] = parsed.as_slice() else {
        return Err(format!("one blueprint: {parsed:?}").into());
    };
    assert_eq!(blueprint.provider, "acp");
    let config = AcpConfig::from_options(&blueprint.provider_options)?;
    assert_eq!(config.preset_kind(), Some(Preset::Gemini), "{config:?}");
    assert_eq!(config.keep_alive(), Some(Duration::from_secs(30)), "{config:?}");
    let provider = patchbay::Registry::compiled().build(&blueprint.provider, &blueprint.provider_options)?;
    assert_eq!(provider.info().name, "acp");
    let capabilities = provider.info().capabilities;
    assert!(capabilities.runs_tools && capabilities.sessions, "{capabilities:?}");

    let Some(agent) = acp_fake_agent() else {
        return Ok(());
    };
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        serde_json::json!({
            "load_session": true,
            "prompts": [[
                { "update": { "sessionUpdate": "agent_message_chunk", "content": { "type": "text", "text": "Hello from an ACP agent." } } },
                { "end": { "stop_reason": "end_turn" } },
            ]],
        })
        .to_string(),
    )?;
    let log = dir.path().join("agent.log");
    let blueprint = patchbay_orchestrator::blueprint::Blueprint {
        provider: "acp".to_owned(),
        model: "default".to_owned(),
        provider_options: serde_json::json!({
            "command": agent,
            "env": { "PATCHBAY_ACP_FAKE_SCRIPT": script, "PATCHBAY_ACP_FAKE_LOG": log },
        }),
        ..scripted("acp-agent", serde_json::json!({}))
    };
    let Some(h) = Harness::start_on(Backend::Sqlite, vec![blueprint], 1).await? else {
        return Ok(());
    };
    let o = &h.orchestrator;
    let report = ended(within("sync start", o.start_session(start_on("a1", "acp-agent", "hi"))).await??)?;
    assert_eq!(report.result.as_deref(), Some("Hello from an ACP agent."), "{report:?}");
    let session = o.session_by_name("a1").await?;
    assert_eq!(session.provider_session_id.as_deref(), Some("sess_1"), "{session:?}");

    // A new agent process (no keep-alive) loads the session instead of being sent the history.
    let second = ended(within("resume", o.resume_session(resume("a1", "again"))).await??)?;
    assert_eq!(second.result.as_deref(), Some("Hello from an ACP agent."), "{second:?}");
    let logged: Vec<serde_json::Value> = std::fs::read_to_string(&log)?
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let methods: Vec<&str> = logged.iter().filter_map(|line| line["method"].as_str()).collect();
    assert_eq!(methods.iter().filter(|m| **m == "initialize").count(), 2, "{methods:?}");
    let load = logged
        .iter()
        .find(|line| line["method"] == "session/load")
        .ok_or_else(|| format!("no session/load: {methods:?}"))?;
    assert_eq!(load["params"]["sessionId"], "sess_1", "{load}");
    h.stop().await
}
