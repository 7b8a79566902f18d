//! The store's behaviour on its SQLite backend, each test on its own temporary database.

use std::collections::HashSet;
use std::sync::Arc;

use patchbay_orchestrator::store::{
    DB_FILE, INTERRUPTED, JobKind, JobStatus, NewJob, NewSession, Page, SessionStatus, SessionUpdate, SqliteStore,
    Store, StoreError,
};
use serde_json::json;
use tempfile::TempDir;

type TestResult = Result<(), Box<dyn std::error::Error>>;

async fn open() -> Result<(TempDir, SqliteStore), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store = SqliteStore::open(dir.path().join("data")).await?;
    Ok((dir, store))
}

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

#[tokio::test]
async fn open_creates_one_database_file_in_the_data_directory() -> TestResult {
    let (dir, store) = open().await?;
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

#[tokio::test]
async fn sessions_are_created_read_listed_updated_and_deleted() -> TestResult {
    let (_dir, store) = open().await?;
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

#[tokio::test]
async fn duplicate_session_name_is_refused() -> TestResult {
    let (_dir, store) = open().await?;
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

#[tokio::test]
async fn jobs_are_claimed_in_fifo_order() -> TestResult {
    let (_dir, store) = open().await?;
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
    while let Some(job) = store.claim_next_job("w1").await? {
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

#[tokio::test]
async fn second_job_of_a_session_waits_until_the_first_finishes() -> TestResult {
    let (_dir, store) = open().await?;
    let (_, first) = store
        .create_session_with_job(new_session("s"), new_job("s", JobKind::StartSession, "one"))
        .await?;
    let second = store.enqueue_job(new_job("s", JobKind::ResumeSession, "two")).await?;
    let other = store.enqueue_job(new_job("t", JobKind::StartSession, "other")).await?;

    let claimed = store.claim_next_job("w").await?.map(|j| j.job_id);
    assert_eq!(claimed.as_deref(), Some(first.job_id.as_str()));
    // While the first is claimed, the next claim skips the session's second job.
    let claimed = store.claim_next_job("w").await?.map(|j| j.job_id);
    assert_eq!(claimed.as_deref(), Some(other.job_id.as_str()));
    assert!(store.claim_next_job("w").await?.is_none());

    let running = store.mark_job_running(&first.job_id).await?;
    assert_eq!(running.status, JobStatus::Running);
    assert!(running.started_at.is_some());
    assert!(store.claim_next_job("w").await?.is_none());

    let done = store.finish_job(&first.job_id, JobStatus::Completed, None).await?;
    assert_eq!(done.status, JobStatus::Completed);
    assert!(done.finished_at.is_some());
    let claimed = store.claim_next_job("w").await?;
    assert_eq!(
        claimed.as_ref().map(|j| j.job_id.as_str()),
        Some(second.job_id.as_str())
    );
    assert_eq!(claimed.map(|j| j.kind), Some(JobKind::ResumeSession));
    Ok(())
}

#[tokio::test]
async fn job_transitions_are_checked() -> TestResult {
    let (_dir, store) = open().await?;
    let job = store.enqueue_job(new_job("s", JobKind::StartSession, "go")).await?;
    assert!(matches!(
        store.mark_job_running(&job.job_id).await,
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
    assert!(store.claim_next_job("w").await?.is_none());
    assert!(matches!(
        store.mark_job_running("nope").await,
        Err(StoreError::JobNotFound(_))
    ));
    assert!(store.get_job("nope").await?.is_none());
    Ok(())
}

#[tokio::test]
async fn deleting_a_session_cancels_its_waiting_jobs() -> TestResult {
    let (_dir, store) = open().await?;
    let (session, job) = store
        .create_session_with_job(new_session("s"), new_job("s", JobKind::StartSession, "go"))
        .await?;
    store.delete_session(&session.session_id).await?;
    let job = store.get_job(&job.job_id).await?;
    assert_eq!(job.as_ref().map(|j| j.status), Some(JobStatus::Cancelled));
    assert_eq!(job.and_then(|j| j.error).as_deref(), Some("session deleted"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_claims_take_every_job_exactly_once() -> TestResult {
    let (_dir, store) = open().await?;
    let store: Arc<dyn Store> = Arc::new(store);
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
            while let Some(job) = store.claim_next_job(&format!("w{w}")).await? {
                store.mark_job_running(&job.job_id).await?;
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

#[tokio::test]
async fn events_are_appended_and_read_back_in_order() -> TestResult {
    let (_dir, store) = open().await?;
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

    let missing = store.append_event("nope", None, json!({})).await;
    assert!(matches!(missing, Err(StoreError::SessionNotFound(_))));

    // Events go with their session.
    store.delete_session(id).await?;
    assert!(store.events_since(id, 0).await?.is_empty());
    Ok(())
}

#[tokio::test]
async fn recover_after_crash_fails_running_jobs_and_requeues_claimed_ones() -> TestResult {
    let (_dir, store) = open().await?;
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
        store.claim_next_job("w").await?.map(|j| j.job_id),
        Some(running.job_id.clone())
    );
    store.mark_job_running(&running.job_id).await?;
    let running_update = SessionUpdate {
        status: Some(SessionStatus::Running),
        ..Default::default()
    };
    store.update_session(&run_session.session_id, running_update).await?;
    assert_eq!(
        store.claim_next_job("w").await?.map(|j| j.job_id),
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
    assert_eq!(session.status, SessionStatus::Failed);
    assert!(session.finished_at.is_some());
    let session = store
        .get_session(&claim_session.session_id)
        .await?
        .ok_or("session gone")?;
    assert_eq!(session.status, SessionStatus::Pending);

    // Everything left runs, in order: the requeued claim, the pending start, the resume.
    let mut order = Vec::new();
    while let Some(job) = store.claim_next_job("w2").await? {
        store.finish_job(&job.job_id, JobStatus::Completed, None).await?;
        order.push(job.job_id);
    }
    assert_eq!(order, [claimed.job_id, pending.job_id, queued_resume.job_id]);
    assert_eq!(store.recover_after_crash().await?, Default::default());
    Ok(())
}

#[tokio::test]
async fn reopening_the_database_keeps_everything() -> TestResult {
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("data");
    let (session, job) = {
        let store = SqliteStore::open(&data).await?;
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
        store.close().await;
        (session, created.1)
    };
    let store = SqliteStore::open(&data).await?;
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
    let (_dir, store) = open().await?;
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

#[tokio::test]
async fn store_is_usable_as_a_trait_object() -> TestResult {
    let (_dir, store) = open().await?;
    let store: Arc<dyn Store> = Arc::new(store);
    let session = store.create_session(new_session("dyn")).await?;
    assert_eq!(
        store.get_session_by_name("dyn").await?.map(|s| s.session_id),
        Some(session.session_id)
    );
    Ok(())
}
