//! The store's behaviour: one shared suite, run on both backends (SQLite and PostgreSQL), each
//! test on its own fresh database; then what only one backend has.

mod common;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use common::TestResult;
use common::backend::{Backend, TestStore};
use patchbay_orchestrator::store::{
    DB_FILE, DEFAULT_LEASE, INTERRUPTED, JobKind, JobStatus, LEASE_EXPIRED, NewJob, NewSession, Page, SessionStatus,
    SessionUpdate, SqliteStore, Store, StoreError,
};
use serde_json::json;

/// A fresh store on `backend`, or a return from the test when the backend is missing.
macro_rules! open {
    ($backend:expr) => {
        match TestStore::open($backend).await? {
            Some(fixture) => fixture,
            None => return Ok(()),
        }
    };
}

on_both_backends!(
    sessions_are_created_read_listed_updated_and_deleted,
    duplicate_session_name_is_refused,
    jobs_are_claimed_in_fifo_order,
    second_job_of_a_session_waits_until_the_first_finishes,
    job_transitions_are_checked,
    deleting_a_session_cancels_its_waiting_jobs_and_stops_its_run,
    concurrent_claims_take_every_job_exactly_once,
    concurrent_claims_never_run_two_jobs_of_a_session,
    events_are_appended_and_read_back_in_order,
    a_batch_of_events_keeps_every_text_and_its_order,
    reopening_the_database_keeps_everything,
    leases_are_renewed_while_held_and_settled_when_they_run_out,
    a_cancel_request_reaches_the_worker_through_its_renewal,
    only_the_claiming_worker_starts_a_job,
    store_is_usable_as_a_trait_object,
);

const LEASE: Duration = DEFAULT_LEASE;

fn new_session(name: &str) -> NewSession {
    NewSession {
        session_name: name.to_owned(),
        agent_name: "default".to_owned(),
        project_dir: "/tmp/project".to_owned(),
        parent_session_name: None,
    }
}

fn new_job(session: &str, kind: JobKind, prompt: &str) -> NewJob {
    NewJob {
        kind,
        session_name: session.to_owned(),
        agent_name: "default".to_owned(),
        prompt: prompt.to_owned(),
        project_dir: "/tmp/project".to_owned(),
        parent_session_name: Some("parent".to_owned()),
        callback: true,
    }
}

// SQLite only ------------------------------------------------------------------------------

#[tokio::test]
async fn open_creates_one_database_file_in_the_data_directory() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = SqliteStore::open(dir.path().join("data")).await?;
    assert_eq!(store.path(), dir.path().join("data").join(DB_FILE));
    assert!(store.path().exists());
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(store.pool())
        .await?;
    assert_eq!(mode, "wal");
    let fk: i64 = sqlx::query_scalar("PRAGMA foreign_keys")
        .fetch_one(store.pool())
        .await?;
    assert_eq!(fk, 1);
    Ok(())
}

async fn sessions_are_created_read_listed_updated_and_deleted(backend: Backend) -> TestResult {
    let fixture = open!(backend);
    let store = &fixture.store;
    let a = store.create_session(new_session("alpha")).await?;
    assert_eq!(a.status, SessionStatus::Pending);
    assert_eq!(a.conversation, json!([]));
    assert_eq!(a.finished_at, None);
    assert_eq!(uuid::Uuid::parse_str(&a.session_id)?.get_version_num(), 4);
    let b = store.create_session(new_session("beta")).await?;

    assert_eq!(store.get_session(&a.session_id).await?, Some(a.clone()));
    assert_eq!(store.get_session_by_name("beta").await?, Some(b.clone()));
    assert_eq!(store.get_session_by_name("gamma").await?, None);
    assert_eq!(store.get_session("nope").await?, None);

    let names =
        |list: Vec<patchbay_orchestrator::store::Session>| list.into_iter().map(|s| s.session_name).collect::<Vec<_>>();
    assert_eq!(names(store.list_sessions(Page::default()).await?), ["alpha", "beta"]);
    assert_eq!(
        names(store.list_sessions(Page { limit: 1, offset: 1 }).await?),
        ["beta"]
    );

    let running = store
        .update_session(
            &a.session_id,
            SessionUpdate {
                status: Some(SessionStatus::Running),
                ..Default::default()
            },
        )
        .await?;
    assert_eq!(running.status, SessionStatus::Running);
    assert_eq!(running.finished_at, None);

    let conversation = json!([{"role": "user", "content": "hi"}]);
    let done = store
        .update_session(
            &a.session_id,
            SessionUpdate {
                status: Some(SessionStatus::Finished),
                last_result: Some("done".to_owned()),
                provider_session_id: Some("prov-1".to_owned()),
                conversation: Some(conversation.clone()),
                parent_session_name: Some("boss".to_owned()),
            },
        )
        .await?;
    assert_eq!(done.status, SessionStatus::Finished);
    assert!(done.finished_at.is_some());
    assert_eq!(done.last_result.as_deref(), Some("done"));
    assert_eq!(done.provider_session_id.as_deref(), Some("prov-1"));
    assert_eq!(done.parent_session_name.as_deref(), Some("boss"));
    assert_eq!(done.conversation, conversation);
    assert_eq!(store.get_session(&a.session_id).await?, Some(done.clone()));

    // An empty update keeps everything but the update time.
    let same = store.update_session(&a.session_id, SessionUpdate::default()).await?;
    assert_eq!(same.last_result, done.last_result);
    assert_eq!(same.finished_at, done.finished_at);

    // Running again (a resume) clears the finish time.
    let resumed = store
        .update_session(
            &a.session_id,
            SessionUpdate {
                status: Some(SessionStatus::Running),
                ..Default::default()
            },
        )
        .await?;
    assert_eq!(resumed.finished_at, None);
    assert_eq!(resumed.last_result.as_deref(), Some("done"));

    let missing = store.update_session("nope", SessionUpdate::default()).await;
    assert!(matches!(missing, Err(StoreError::SessionNotFound(id)) if id == "nope"));

    let deleted = store.delete_session(&a.session_id).await?;
    assert_eq!(deleted.session_name, "alpha");
    assert_eq!(store.get_session(&a.session_id).await?, None);
    assert!(matches!(
        store.delete_session(&a.session_id).await,
        Err(StoreError::SessionNotFound(_))
    ));

    store.create_session(new_session("gamma")).await?;
    assert_eq!(store.delete_all_sessions().await?, 2);
    assert!(store.list_sessions(Page::default()).await?.is_empty());
    Ok(())
}

async fn duplicate_session_name_is_refused(backend: Backend) -> TestResult {
    let fixture = open!(backend);
    let store = &fixture.store;
    store.create_session(new_session("twin")).await?;
    let err = store.create_session(new_session("twin")).await;
    assert!(matches!(&err, Err(StoreError::SessionExists(name)) if name == "twin"));
    let message = err.err().map(|e| e.to_string()).unwrap_or_default();
    assert_eq!(message, "a session named `twin` already exists");

    // Nothing partly written: the job of a refused start is not queued either.
    let again = store
        .create_session_with_job(new_session("twin"), new_job("twin", JobKind::StartSession, "x"))
        .await;
    assert!(matches!(again, Err(StoreError::SessionExists(_))));
    assert!(store.list_jobs(None, Page::default()).await?.is_empty());
    Ok(())
}

async fn jobs_are_claimed_in_fifo_order(backend: Backend) -> TestResult {
    let fixture = open!(backend);
    let store = &fixture.store;
    let mut ids = Vec::new();
    for i in 0..5 {
        let job = store
            .enqueue_job(new_job(&format!("s{i}"), JobKind::StartSession, "go"))
            .await?;
        assert_eq!(job.status, JobStatus::Pending);
        assert!(job.callback);
        ids.push(job.job_id);
    }
    let mut claimed = Vec::new();
    while let Some(job) = store.claim_next_job("w1", LEASE).await? {
        assert_eq!(job.status, JobStatus::Claimed);
        assert_eq!(job.claimed_by.as_deref(), Some("w1"));
        assert!(job.claimed_at.is_some());
        claimed.push(job.job_id);
    }
    assert_eq!(claimed, ids);
    let listed: Vec<_> = store.list_jobs(None, Page::default()).await?;
    assert_eq!(listed.iter().map(|j| j.job_id.clone()).collect::<Vec<_>>(), ids);
    assert_eq!(store.list_jobs(Some("s3"), Page::default()).await?.len(), 1);
    Ok(())
}

async fn second_job_of_a_session_waits_until_the_first_finishes(backend: Backend) -> TestResult {
    let fixture = open!(backend);
    let store = &fixture.store;
    let (_, first) = store
        .create_session_with_job(new_session("s"), new_job("s", JobKind::StartSession, "one"))
        .await?;
    let second = store.enqueue_job(new_job("s", JobKind::ResumeSession, "two")).await?;
    let other = store.enqueue_job(new_job("t", JobKind::StartSession, "other")).await?;

    let claimed = store.claim_next_job("w", LEASE).await?.map(|j| j.job_id);
    assert_eq!(claimed.as_deref(), Some(first.job_id.as_str()));
    // While the first is claimed, the next claim skips the session's second job.
    let claimed = store.claim_next_job("w", LEASE).await?.map(|j| j.job_id);
    assert_eq!(claimed.as_deref(), Some(other.job_id.as_str()));
    assert!(store.claim_next_job("w", LEASE).await?.is_none());

    let running = store.mark_job_running(&first.job_id, "w").await?;
    assert_eq!(running.status, JobStatus::Running);
    assert!(running.started_at.is_some());
    assert!(store.claim_next_job("w", LEASE).await?.is_none());

    let done = store.finish_job(&first.job_id, JobStatus::Completed, None).await?;
    assert_eq!(done.status, JobStatus::Completed);
    assert!(done.finished_at.is_some());
    let claimed = store.claim_next_job("w", LEASE).await?;
    assert_eq!(
        claimed.as_ref().map(|j| j.job_id.as_str()),
        Some(second.job_id.as_str())
    );
    assert_eq!(claimed.map(|j| j.kind), Some(JobKind::ResumeSession));
    Ok(())
}

async fn job_transitions_are_checked(backend: Backend) -> TestResult {
    let fixture = open!(backend);
    let store = &fixture.store;
    let job = store.enqueue_job(new_job("s", JobKind::StartSession, "go")).await?;
    assert!(matches!(
        store.mark_job_running(&job.job_id, "w").await,
        Err(StoreError::InvalidTransition {
            from: JobStatus::Pending,
            to: JobStatus::Running,
            ..
        })
    ));
    assert!(matches!(
        store.finish_job(&job.job_id, JobStatus::Running, None).await,
        Err(StoreError::InvalidTransition { .. })
    ));
    let cancelled = store.cancel_job(&job.job_id).await?;
    assert_eq!(cancelled.status, JobStatus::Cancelled);
    assert!(matches!(
        store.cancel_job(&job.job_id).await,
        Err(StoreError::InvalidTransition {
            from: JobStatus::Cancelled,
            ..
        })
    ));
    assert!(store.claim_next_job("w", LEASE).await?.is_none());
    assert!(matches!(
        store.mark_job_running("nope", "w").await,
        Err(StoreError::JobNotFound(_))
    ));
    assert!(store.get_job("nope").await?.is_none());
    Ok(())
}

async fn deleting_a_session_cancels_its_waiting_jobs_and_stops_its_run(backend: Backend) -> TestResult {
    let fixture = open!(backend);
    let store = &fixture.store;
    let (session, job) = store
        .create_session_with_job(new_session("s"), new_job("s", JobKind::StartSession, "go"))
        .await?;
    let (busy, running) = store
        .create_session_with_job(new_session("busy"), new_job("busy", JobKind::StartSession, "go"))
        .await?;
    store.delete_session(&session.session_id).await?;
    let job = store.get_job(&job.job_id).await?;
    assert_eq!(job.as_ref().map(|j| j.status), Some(JobStatus::Cancelled));
    assert_eq!(job.and_then(|j| j.error).as_deref(), Some("session deleted"));

    // A running job of a deleted session is the worker's to stop: its renewal says so.
    let claimed = store.claim_next_job("w", LEASE).await?.ok_or("nothing to claim")?;
    assert_eq!(claimed.job_id, running.job_id);
    store.mark_job_running(&running.job_id, "w").await?;
    let ids = [running.job_id.clone()];
    assert!(store.renew_leases("w", &ids, LEASE).await?.is_empty());
    store.delete_session(&busy.session_id).await?;
    assert_eq!(store.renew_leases("w", &ids, LEASE).await?, ids);
    let ended = store
        .finish_job(&running.job_id, JobStatus::Cancelled, Some("cancelled".into()))
        .await?;
    assert_eq!(ended.status, JobStatus::Cancelled);
    Ok(())
}

async fn concurrent_claims_take_every_job_exactly_once(backend: Backend) -> TestResult {
    let fixture = open!(backend);
    let store = fixture.store.clone();
    let mut enqueued = HashSet::new();
    for i in 0..50 {
        let job = store
            .enqueue_job(new_job(&format!("s{i}"), JobKind::StartSession, "go"))
            .await?;
        enqueued.insert(job.job_id);
    }
    let mut tasks = Vec::new();
    for w in 0..8 {
        let store = Arc::clone(&store);
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            while let Some(job) = store.claim_next_job(&format!("w{w}"), LEASE).await? {
                store.mark_job_running(&job.job_id, &format!("w{w}")).await?;
                store.finish_job(&job.job_id, JobStatus::Completed, None).await?;
                mine.push(job.job_id);
            }
            Ok::<_, StoreError>(mine)
        }));
    }
    let mut claimed = Vec::new();
    for task in tasks {
        claimed.extend(task.await??);
    }
    assert_eq!(claimed.len(), 50, "a job was claimed twice or not at all");
    assert_eq!(claimed.into_iter().collect::<HashSet<_>>(), enqueued);
    Ok(())
}

async fn events_are_appended_and_read_back_in_order(backend: Backend) -> TestResult {
    let fixture = open!(backend);
    let store = &fixture.store;
    let session = store.create_session(new_session("s")).await?;
    let id = session.session_id.as_str();
    let first = store.append_event(id, Some("job-1"), json!({"type": "start"})).await?;
    assert_eq!(first.seq, 1);
    let batch = store
        .append_events(
            id,
            Some("job-1"),
            (0..3).map(|i| json!({"type": "delta", "i": i})).collect(),
        )
        .await?;
    assert_eq!(batch.iter().map(|e| e.seq).collect::<Vec<_>>(), [2, 3, 4]);
    store.append_event(id, None, json!({"type": "end"})).await?;

    let all = store.events_since(id, 0).await?;
    assert_eq!(all.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3, 4, 5]);
    assert_eq!(all[0], first);
    assert_eq!(all[2].event, json!({"type": "delta", "i": 1}));
    assert_eq!(all[4].job_id, None);
    let later = store.events_since(id, 3).await?;
    assert_eq!(later.iter().map(|e| e.seq).collect::<Vec<_>>(), [4, 5]);
    assert!(store.events_since(id, 5).await?.is_empty());
    // The last ones, by session name, in order (what a progress report reads).
    let last = store.last_events("s", 2).await?;
    assert_eq!(last.iter().map(|e| e.seq).collect::<Vec<_>>(), [4, 5]);
    assert_eq!(store.last_events("s", 100).await?, all);
    assert!(store.last_events("nobody", 2).await?.is_empty());

    let missing = store.append_event("nope", None, json!({})).await;
    assert!(matches!(missing, Err(StoreError::SessionNotFound(_))));

    // Events go with their session.
    store.delete_session(id).await?;
    assert!(store.events_since(id, 0).await?.is_empty());
    Ok(())
}

/// A batch is bound as one JSON array of the events' texts: whatever an event holds (a bare
/// string, quotes, backslashes, an escaped NUL, any script) comes back as it went in, in order.
async fn a_batch_of_events_keeps_every_text_and_its_order(backend: Backend) -> TestResult {
    let fixture = open!(backend);
    let store = &fixture.store;
    let session = store.create_session(new_session("s")).await?;
    let id = session.session_id.as_str();
    let odd = [
        json!("a bare string"),
        json!({"text": "quotes \" and \\ backslashes \\\" mixed"}),
        json!({"text": "a NUL \u{0} and a tab \t and a newline \n"}),
        json!({"text": "Grüße, 日本語, 🦀"}),
        json!(null),
        json!(42.5),
        json!([1, {"nested": ["deep", {"deeper": true}]}]),
    ];
    let many: Vec<_> = odd.iter().cloned().chain((0..300).map(|i| json!({"i": i}))).collect();
    let stored = store.append_events(id, Some("job-1"), many.clone()).await?;
    assert_eq!(
        stored.iter().map(|e| e.seq).collect::<Vec<_>>(),
        (1..=307).collect::<Vec<_>>()
    );
    let read = store.events_since(id, 0).await?;
    assert_eq!(read.iter().map(|e| e.event.clone()).collect::<Vec<_>>(), many);
    assert_eq!(read, stored);
    // An empty batch stores nothing and numbers nothing.
    assert!(store.append_events(id, None, Vec::new()).await?.is_empty());
    assert_eq!(store.append_event(id, None, json!("next")).await?.seq, 308);
    Ok(())
}

#[tokio::test]
async fn recover_after_crash_fails_running_jobs_and_requeues_claimed_ones() -> TestResult {
    let fixture = open!(Backend::Sqlite);
    let store = &fixture.store;
    let (run_session, running) = store
        .create_session_with_job(new_session("r"), new_job("r", JobKind::StartSession, "go"))
        .await?;
    let (claim_session, claimed) = store
        .create_session_with_job(new_session("c"), new_job("c", JobKind::StartSession, "go"))
        .await?;
    let (_, pending) = store
        .create_session_with_job(new_session("p"), new_job("p", JobKind::StartSession, "go"))
        .await?;
    let queued_resume = store.enqueue_job(new_job("r", JobKind::ResumeSession, "more")).await?;

    assert_eq!(
        store.claim_next_job("w", LEASE).await?.map(|j| j.job_id),
        Some(running.job_id.clone())
    );
    store.mark_job_running(&running.job_id, "w").await?;
    let running_update = SessionUpdate {
        status: Some(SessionStatus::Running),
        ..Default::default()
    };
    store.update_session(&run_session.session_id, running_update).await?;
    assert_eq!(
        store.claim_next_job("w", LEASE).await?.map(|j| j.job_id),
        Some(claimed.job_id.clone())
    );

    let recovery = store.recover_after_crash().await?;
    assert_eq!(recovery.failed_jobs, std::slice::from_ref(&running.job_id));
    assert_eq!(recovery.failed_sessions, ["r"]);
    assert_eq!(recovery.requeued_jobs, std::slice::from_ref(&claimed.job_id));

    let job = store.get_job(&running.job_id).await?.ok_or("job gone")?;
    assert_eq!(job.status, JobStatus::Failed);
    assert_eq!(job.error.as_deref(), Some(INTERRUPTED));
    let session = store
        .get_session(&run_session.session_id)
        .await?
        .ok_or("session gone")?;
    // Its queued resume still runs: the session is running until that ends (issue 25).
    assert_eq!(session.status, SessionStatus::Running);
    assert!(session.finished_at.is_none());
    let session = store
        .get_session(&claim_session.session_id)
        .await?
        .ok_or("session gone")?;
    assert_eq!(session.status, SessionStatus::Pending);

    // Everything left runs, in order: the requeued claim, the pending start, the resume.
    let mut order = Vec::new();
    while let Some(job) = store.claim_next_job("w2", LEASE).await? {
        store.finish_job(&job.job_id, JobStatus::Completed, None).await?;
        order.push(job.job_id);
    }
    assert_eq!(order, [claimed.job_id, pending.job_id, queued_resume.job_id]);
    assert_eq!(store.recover_after_crash().await?, Default::default());
    Ok(())
}

async fn reopening_the_database_keeps_everything(backend: Backend) -> TestResult {
    let fixture = open!(backend);
    let (session, job) = {
        let store = &fixture.store;
        let created = store
            .create_session_with_job(new_session("keep"), new_job("keep", JobKind::StartSession, "go"))
            .await?;
        store
            .append_event(&created.0.session_id, Some(&created.1.job_id), json!({"n": 1}))
            .await?;
        let update = SessionUpdate {
            last_result: Some("kept".to_owned()),
            ..Default::default()
        };
        let session = store.update_session(&created.0.session_id, update).await?;
        (session, created.1)
    };
    let store = fixture.reopen().await?;
    assert_eq!(store.get_session_by_name("keep").await?, Some(session.clone()));
    assert_eq!(store.get_job(&job.job_id).await?, Some(job));
    let events = store.events_since(&session.session_id, 0).await?;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].event, json!({"n": 1}));
    // Sequence numbers continue after a reopen.
    let next = store.append_event(&session.session_id, None, json!({"n": 2})).await?;
    assert_eq!(next.seq, 2);
    Ok(())
}

#[tokio::test]
async fn a_row_with_bad_data_is_an_error_not_a_panic() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = SqliteStore::open(dir.path().join("data")).await?;
    let session = store.create_session(new_session("bad")).await?;
    sqlx::query("UPDATE sessions SET status = 'exploded', conversation = 'not json'")
        .execute(store.pool())
        .await?;
    let err = store.get_session(&session.session_id).await;
    assert!(matches!(
        err,
        Err(StoreError::BadRow {
            table: "sessions",
            column: "status",
            ..
        })
    ));
    sqlx::query("UPDATE sessions SET status = 'pending'")
        .execute(store.pool())
        .await?;
    let err = store.get_session_by_name("bad").await;
    assert!(matches!(
        err,
        Err(StoreError::BadRow {
            table: "sessions",
            column: "conversation",
            ..
        })
    ));
    Ok(())
}

async fn store_is_usable_as_a_trait_object(backend: Backend) -> TestResult {
    let fixture = open!(backend);
    let store: Arc<dyn Store> = Arc::clone(&fixture.store);
    let session = store.create_session(new_session("dyn")).await?;
    assert_eq!(
        store.get_session_by_name("dyn").await?.map(|s| s.session_id),
        Some(session.session_id)
    );
    Ok(())
}

async fn concurrent_claims_never_run_two_jobs_of_a_session(backend: Backend) -> TestResult {
    let fixture = open!(backend);
    let store = fixture.store.clone();
    // Four sessions with ten jobs each; eight workers race. Each worker checks, while it holds
    // a job, that no other job of the session is claimed or running.
    let mut enqueued = HashSet::new();
    for round in 0..10 {
        for s in 0..4 {
            let job = store
                .enqueue_job(new_job(&format!("s{s}"), JobKind::ResumeSession, &format!("{round}")))
                .await?;
            enqueued.insert(job.job_id);
        }
    }
    let mut tasks = Vec::new();
    for w in 0..8 {
        let store = Arc::clone(&store);
        tasks.push(tokio::spawn(async move {
            let worker = format!("w{w}");
            let mut mine = Vec::new();
            while let Some(job) = store.claim_next_job(&worker, LEASE).await? {
                let active = store
                    .list_jobs(Some(&job.session_name), Page::first(100))
                    .await?
                    .into_iter()
                    .filter(|j| matches!(j.status, JobStatus::Claimed | JobStatus::Running))
                    .count();
                store.mark_job_running(&job.job_id, &worker).await?;
                tokio::task::yield_now().await;
                store.finish_job(&job.job_id, JobStatus::Completed, None).await?;
                mine.push((job.job_id, active));
            }
            Ok::<_, StoreError>(mine)
        }));
    }
    let mut claimed = Vec::new();
    for task in tasks {
        claimed.extend(task.await??);
    }
    assert!(
        claimed.iter().all(|(_, active)| *active == 1),
        "two jobs of a session were active at once"
    );
    assert_eq!(claimed.len(), 40);
    assert_eq!(claimed.into_iter().map(|(id, _)| id).collect::<HashSet<_>>(), enqueued);
    Ok(())
}

async fn leases_are_renewed_while_held_and_settled_when_they_run_out(backend: Backend) -> TestResult {
    let fixture = open!(backend);
    let store = &fixture.store;
    let short = Duration::from_millis(200);
    let (_, started) = store
        .create_session_with_job(new_session("started"), new_job("started", JobKind::StartSession, "go"))
        .await?;
    let (_, waiting) = store
        .create_session_with_job(new_session("waiting"), new_job("waiting", JobKind::StartSession, "go"))
        .await?;
    let (_, kept) = store
        .create_session_with_job(new_session("kept"), new_job("kept", JobKind::StartSession, "go"))
        .await?;
    let claim = store.claim_next_job("dead", short).await?.ok_or("no job")?;
    assert_eq!(claim.job_id, started.job_id);
    assert!(claim.lease_until.is_some());
    store.mark_job_running(&started.job_id, "dead").await?;
    assert_eq!(
        store.claim_next_job("dead", short).await?.map(|j| j.job_id),
        Some(waiting.job_id.clone())
    );
    assert_eq!(
        store.claim_next_job("alive", short).await?.map(|j| j.job_id),
        Some(kept.job_id.clone())
    );

    // Nothing has run out yet.
    assert!(store.expire_leases().await?.is_empty());
    // "alive" renews; "dead" stops renewing.
    let alive = [kept.job_id.clone()];
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(store.renew_leases("alive", &alive, short).await?.is_empty());
    }
    // A worker cannot renew a job that is not its own.
    assert_eq!(
        store
            .renew_leases("alive", std::slice::from_ref(&started.job_id), short)
            .await?,
        std::slice::from_ref(&started.job_id)
    );

    let settled = store.expire_leases().await?;
    assert_eq!(settled.failed_jobs, std::slice::from_ref(&started.job_id));
    assert_eq!(settled.failed_sessions, ["started"]);
    assert_eq!(settled.requeued_jobs, std::slice::from_ref(&waiting.job_id));
    let failed = store.get_job(&started.job_id).await?.ok_or("job gone")?;
    assert_eq!(failed.status, JobStatus::Failed);
    assert_eq!(failed.error.as_deref(), Some(LEASE_EXPIRED));
    let session = store.get_session_by_name("started").await?.ok_or("session gone")?;
    assert_eq!(session.status, SessionStatus::Failed);
    assert_eq!(
        store.get_job(&kept.job_id).await?.map(|j| j.status),
        Some(JobStatus::Claimed)
    );
    // Settled once: a second pass finds nothing.
    assert!(store.expire_leases().await?.is_empty());

    // The dead worker, if it comes back, has lost both jobs.
    let both = [started.job_id.clone(), waiting.job_id.clone()];
    assert_eq!(store.renew_leases("dead", &both, short).await?, both);
    assert!(matches!(
        store.finish_job(&started.job_id, JobStatus::Completed, None).await,
        Err(StoreError::InvalidTransition {
            from: JobStatus::Failed,
            ..
        })
    ));
    // The job that had not started runs again, elsewhere.
    let again = store.claim_next_job("alive", LEASE).await?.ok_or("not requeued")?;
    assert_eq!(again.job_id, waiting.job_id);
    assert_eq!(again.claimed_by.as_deref(), Some("alive"));
    Ok(())
}

async fn a_cancel_request_reaches_the_worker_through_its_renewal(backend: Backend) -> TestResult {
    let fixture = open!(backend);
    let store = &fixture.store;
    let (_, queued) = store
        .create_session_with_job(new_session("q"), new_job("q", JobKind::StartSession, "go"))
        .await?;
    let (_, run) = store
        .create_session_with_job(new_session("r"), new_job("r", JobKind::StartSession, "go"))
        .await?;
    // A job not running yet is cancelled at once.
    let cancelled = store.request_cancel(&queued.job_id).await?;
    assert_eq!(cancelled.status, JobStatus::Cancelled);

    store.claim_next_job("w", LEASE).await?.ok_or("no job")?;
    store.mark_job_running(&run.job_id, "w").await?;
    let asked = store.request_cancel(&run.job_id).await?;
    assert_eq!(asked.status, JobStatus::Running, "the worker ends it");
    let ids = [run.job_id.clone()];
    assert_eq!(store.renew_leases("w", &ids, LEASE).await?, ids);
    store
        .finish_job(&run.job_id, JobStatus::Cancelled, Some("cancelled".into()))
        .await?;
    assert!(matches!(
        store.request_cancel(&run.job_id).await,
        Err(StoreError::InvalidTransition {
            from: JobStatus::Cancelled,
            ..
        })
    ));
    Ok(())
}

async fn only_the_claiming_worker_starts_a_job(backend: Backend) -> TestResult {
    let fixture = open!(backend);
    let store = &fixture.store;
    let job = store.enqueue_job(new_job("s", JobKind::StartSession, "go")).await?;
    store.claim_next_job("mine", LEASE).await?.ok_or("no job")?;
    assert!(matches!(
        store.mark_job_running(&job.job_id, "theirs").await,
        Err(StoreError::InvalidTransition {
            from: JobStatus::Claimed,
            to: JobStatus::Running,
            ..
        })
    ));
    assert_eq!(
        store.mark_job_running(&job.job_id, "mine").await?.status,
        JobStatus::Running
    );
    Ok(())
}
