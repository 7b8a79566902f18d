//! The service: the operations behind the MCP tools and the HTTP API, on one [`Orchestrator`].

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

use crate::blueprint::{Blueprint, BlueprintStatus, Blueprints};
use crate::error::OrchestratorError;
use crate::names::validate_session_name;
mod builder;
pub(crate) mod reports;
mod requests;

pub use crate::caller::{CALLER_ENV, CALLER_HEADER, CALLER_METADATA_KEY};
pub(crate) use crate::runtime::Inner;
pub use crate::runtime::{DEFAULT_MAX_REQUEST_BYTES, DEFAULT_SYNC_WAIT, DEFAULT_WORKERS, McpEndpoint, STOP_GRACE};

pub use builder::OrchestratorBuilder;
pub(crate) use reports::rfc3339;
use reports::{
    BlueprintSummary, JobAccepted, STARTED_IN_BACKGROUND, SessionReport, SessionSummary, settled, with_tree,
};
pub use reports::{RunAnswer, report, summary};
pub use requests::{ResumeRequest, StartRequest};

use crate::store::{
    Job, JobKind, JobStatus, NewJob, NewSession, Page, Session, SessionCursor, SessionFilter, SessionStatus,
    SessionUpdate, Store,
};

/// The agent-session service: a store, blueprints and a worker pool. Cheap to clone.
#[derive(Clone)]
pub struct Orchestrator {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Orchestrator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Orchestrator")
            .field("blueprints", &self.inner.blueprints.len())
            .field("running", &self.running_jobs())
            .finish_non_exhaustive()
    }
}

impl Orchestrator {
    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// The blueprints.
    pub fn blueprints(&self) -> &Blueprints {
        &self.inner.blueprints
    }

    /// Tell runs where this orchestrator's MCP tools are (needed by blueprints with
    /// `orchestrator_tools`).
    pub fn set_mcp_endpoint(&self, endpoint: McpEndpoint) {
        if let Ok(mut slot) = self.inner.endpoint.lock() {
            *slot = Some(endpoint);
        }
    }

    /// The largest request taken over MCP and the JSON API, in bytes.
    pub fn max_request_bytes(&self) -> usize {
        self.inner.max_request_bytes
    }

    /// The id this process's claims carry (`orchestrator-<uuid>`).
    pub fn worker_id(&self) -> &str {
        &self.inner.worker_id
    }

    /// How many runs are in progress in this process.
    pub fn running_jobs(&self) -> usize {
        self.inner.running.lock().map(|r| r.len()).unwrap_or_default()
    }

    /// The active blueprints.
    pub fn list_blueprints(&self) -> Vec<BlueprintSummary> {
        self.inner.blueprints.active().map(BlueprintSummary::from).collect()
    }

    /// A blueprint by name, active or retired.
    pub fn blueprint(&self, name: &str) -> Result<&Blueprint, OrchestratorError> {
        self.inner
            .blueprints
            .get(name)
            .ok_or_else(|| OrchestratorError::UnknownBlueprint(name.to_owned()))
    }

    /// Every session, oldest first.
    pub async fn list_sessions(&self) -> Result<Vec<SessionSummary>, OrchestratorError> {
        let mut all = Vec::new();
        let mut page = Page::first(Page::DEFAULT_LIMIT);
        loop {
            let batch = self.inner.store.list_sessions(page).await?;
            let done = batch.len() < page.limit as usize;
            all.extend(batch.iter().map(summary));
            if done {
                return Ok(all);
            }
            page.offset += u64::from(page.limit);
        }
    }

    /// A keyset page of the sessions matching `filter` (oldest first), after the cursor `after`
    /// (a previous page's `next_after`), at most `limit` (1 to 1000): the summaries, how many
    /// match in all, and the cursor of the next page when this one came back full.
    pub async fn find_sessions(
        &self,
        filter: &SessionFilter,
        after: Option<&str>,
        limit: u32,
    ) -> Result<(Vec<SessionSummary>, u64, Option<String>), OrchestratorError> {
        let cursor = match after.map(str::trim).filter(|a| !a.is_empty()) {
            Some(text) => Some(SessionCursor::decode(text).ok_or_else(|| {
                OrchestratorError::Invalid(format!(
                    "`after` must be a listing's next_after (`<created_at>.<session_name>`), not `{text}`"
                ))
            })?),
            None => None,
        };
        let limit = limit.clamp(1, 1000);
        let (sessions, total) = self.inner.store.find_sessions(filter, cursor.as_ref(), limit).await?;
        let next = (sessions.len() == limit as usize)
            .then(|| sessions.last().map(|s| SessionCursor::after(s).encode()))
            .flatten();
        Ok((sessions.iter().map(summary).collect(), total, next))
    }

    /// Start a session: create it and queue its first run in one transaction, then wait for
    /// the run unless `async_mode`.
    pub async fn start_session(&self, request: StartRequest) -> Result<RunAnswer, OrchestratorError> {
        self.accepting()?;
        validate_session_name(&request.session_name)?;
        check_prompt(&request.prompt)?;
        let blueprint = match &request.blueprint {
            Some(name) => self.blueprint(name)?,
            None => self.inner.blueprints.default_blueprint(),
        };
        if blueprint.status == BlueprintStatus::Retired {
            return Err(OrchestratorError::RetiredBlueprint(blueprint.name.clone()));
        }
        let caller = self.caller_session(request.caller.as_deref()).await?;
        if request.callback && caller.is_none() {
            return Err(OrchestratorError::NoCallbackTarget);
        }
        if let Some(parent) = &caller {
            self.check_child_limits(parent).await?;
            self.check_tree_budget(&parent.session_name).await?;
        }
        let project_dir = match request.project_dir.as_deref().map(str::trim).filter(|d| !d.is_empty()) {
            Some(dir) => self.confine(Path::new(dir))?,
            // A child of a session works where its parent works.
            None => match &caller {
                Some(parent) => self.confine(Path::new(&parent.project_dir))?,
                None => self.confine(&self.inner.project_dir)?,
            },
        };
        let project_dir = project_dir.to_string_lossy().into_owned();
        let session = NewSession {
            session_name: request.session_name.clone(),
            agent_name: blueprint.name.clone(),
            project_dir: project_dir.clone(),
            parent_session_name: request.caller.clone(),
        };
        let job = NewJob {
            kind: JobKind::StartSession,
            session_name: request.session_name.clone(),
            agent_name: blueprint.name.clone(),
            prompt: request.prompt,
            project_dir,
            parent_session_name: request.caller.clone(),
            callback: request.callback,
        };
        let (_, job) = self.inner.store.create_session_with_job(session, job).await?;
        self.queued(&job);
        let callback_to = request.callback.then(|| request.caller.clone()).flatten();
        self.answer(job, request.async_mode, callback_to, request.caller.as_deref())
            .await
    }

    /// While a run of this orchestrator (the session `caller`) waits on another session, lend
    /// its worker slot to the queue: a chain of nested sync starts deeper than the worker
    /// count would otherwise wait out its limit with every worker waiting. The slot is taken
    /// back (as soon as one is free) when the guard drops, so at most the waiting runs are
    /// over the count.
    fn lend_slot(&self, caller: Option<&str>) -> Option<LentSlot> {
        let caller = caller?;
        let running = self.inner.running.lock().ok()?;
        running.values().any(|run| run.session_name == caller).then(|| {
            self.inner.slots.add_permits(1);
            self.inner.queue.notify_waiters();
            LentSlot {
                slots: self.inner.slots.clone(),
            }
        })
    }

    /// Resume a session with a new prompt; it runs after any run of the session in progress.
    pub async fn resume_session(&self, request: ResumeRequest) -> Result<RunAnswer, OrchestratorError> {
        self.accepting()?;
        validate_session_name(&request.session_name)?;
        check_prompt(&request.prompt)?;
        let session = self.session_by_name(&request.session_name).await?;
        let caller = self.caller_session(request.caller.as_deref()).await?;
        if let Some(caller) = &caller {
            self.refuse_cycle(&session.session_name, caller).await?;
            if session.parent_session_name.as_deref() != Some(caller.session_name.as_str()) {
                // A new parent: the session joins the caller's tree, under the caller's limits.
                self.check_child_limits(caller).await?;
            }
        }
        if request.callback && caller.is_none() && session.parent_session_name.is_none() {
            return Err(OrchestratorError::NoCallbackTarget);
        }
        // The folder is checked again: the projects root may have changed since the start.
        self.confine(Path::new(&session.project_dir))?;
        // The tree the run will be in: the caller's when it becomes the new parent.
        self.check_tree_budget(caller.as_ref().map_or(&session.session_name, |c| &c.session_name))
            .await?;
        if let Some(caller) = &request.caller
            && session.parent_session_name.as_deref() != Some(caller)
        {
            let update = SessionUpdate {
                parent_session_name: Some(caller.clone()),
                ..SessionUpdate::default()
            };
            self.inner.store.update_session(&session.session_id, update).await?;
        }
        let job = NewJob {
            kind: JobKind::ResumeSession,
            session_name: session.session_name.clone(),
            agent_name: session.agent_name.clone(),
            prompt: request.prompt,
            project_dir: session.project_dir.clone(),
            parent_session_name: request.caller.clone().or(session.parent_session_name.clone()),
            callback: request.callback,
        };
        let job = self.inner.store.enqueue_job(job).await?;
        self.queued(&job);
        let callback_to = request.callback.then(|| job.parent_session_name.clone()).flatten();
        self.answer(job, request.async_mode, callback_to, request.caller.as_deref())
            .await
    }

    /// Queue a job as the HTTP API's `POST /jobs` does: a start creates its session.
    pub async fn submit(&self, kind: JobKind, request: StartRequest) -> Result<Job, OrchestratorError> {
        let answer = match kind {
            JobKind::StartSession => {
                self.start_session(StartRequest {
                    async_mode: true,
                    ..request
                })
                .await?
            }
            JobKind::ResumeSession => {
                let resume = ResumeRequest {
                    session_name: request.session_name,
                    prompt: request.prompt,
                    async_mode: true,
                    callback: request.callback,
                    caller: request.caller,
                };
                self.resume_session(resume).await?
            }
        };
        let job_id = match answer {
            RunAnswer::Accepted(accepted) => accepted.job_id,
            RunAnswer::Ended(report) => report.job_id.unwrap_or_default(),
        };
        self.job(&job_id).await
    }

    /// A session's status and, once ended, its result. With `wait`, waits up to that long for
    /// the session to settle (every job of it ended) first; a settled session answers at once.
    pub async fn status(&self, session_name: &str, wait: Option<Duration>) -> Result<SessionReport, OrchestratorError> {
        self.status_as(session_name, wait, None).await
    }

    /// [`Orchestrator::status`] for the session `caller`: while a run of the caller waits, its
    /// worker slot is lent to the queue.
    pub async fn status_as(
        &self,
        session_name: &str,
        wait: Option<Duration>,
        caller: Option<&str>,
    ) -> Result<SessionReport, OrchestratorError> {
        let deadline = wait.map(|wait| tokio::time::Instant::now() + wait);
        let mut _lent = None;
        loop {
            let seen = self.inner.status.version(session_name);
            let report = self.report_by_name(session_name).await?;
            let left = deadline.map_or(Duration::ZERO, |d| {
                d.saturating_duration_since(tokio::time::Instant::now())
            });
            if settled(&report) || left.is_zero() || self.inner.released.is_cancelled() {
                return Ok(report);
            }
            if _lent.is_none() {
                _lent = Some(self.lend_slot(caller));
            }
            tokio::select! {
                _ = self.inner.status.changed(session_name, seen, left) => {}
                () = self.inner.released.cancelled() => {}
            }
        }
    }

    /// The result of a session whose jobs have all ended: the report of its last run (completed
    /// with its text, or failed or cancelled with its error); an error while a job of it is
    /// queued or running.
    pub async fn result(&self, session_name: &str) -> Result<SessionReport, OrchestratorError> {
        let report = self.report_by_name(session_name).await?;
        if !settled(&report) {
            return Err(OrchestratorError::StillRunning {
                session_name: session_name.to_owned(),
                status: report.session.status.clone(),
            });
        }
        Ok(report)
    }

    /// The session named `name`.
    pub async fn session_by_name(&self, name: &str) -> Result<Session, OrchestratorError> {
        self.inner
            .store
            .get_session_by_name(name)
            .await?
            .ok_or_else(|| OrchestratorError::SessionNotFound(name.to_owned()))
    }

    /// The session with id `id`.
    pub async fn session(&self, id: &str) -> Result<Session, OrchestratorError> {
        self.inner
            .store
            .get_session(id)
            .await?
            .ok_or_else(|| OrchestratorError::SessionNotFound(id.to_owned()))
    }

    /// The job with id `id`.
    pub async fn job(&self, id: &str) -> Result<Job, OrchestratorError> {
        self.inner
            .store
            .get_job(id)
            .await?
            .ok_or_else(|| OrchestratorError::JobNotFound(id.to_owned()))
    }

    /// The report of a session: its status, its current job (the run going on, else the last
    /// one that ran), that run's result or error, and the usage of the run, the session and
    /// its tree.
    pub async fn report(&self, session: &Session) -> Result<SessionReport, OrchestratorError> {
        let current = self.inner.store.current_job(&session.session_name).await?;
        self.with_tree_usage(report(session, current.as_ref())).await
    }

    /// `report` with its session tree's usage.
    async fn with_tree_usage(&self, report: SessionReport) -> Result<SessionReport, OrchestratorError> {
        let tree = self.inner.store.tree_usage(&report.session.session_name).await?;
        Ok(with_tree(report, tree))
    }

    async fn report_by_name(&self, name: &str) -> Result<SessionReport, OrchestratorError> {
        let session = self.session_by_name(name).await?;
        self.report(&session).await
    }

    /// Cancel a job: a queued one at once, a running one through its run's signal (the run
    /// ends `cancelled` promptly), also when another process runs it (it is asked through the
    /// store). A job that has ended is an error.
    pub async fn cancel_job(&self, job_id: &str) -> Result<Job, OrchestratorError> {
        let job = self.job(job_id).await?;
        if self.inner.cancel_runs(|id, _| id == job_id) > 0 {
            return self
                .wait_for_job(job_id, &job.session_name, Duration::from_secs(30))
                .await;
        }
        let job = self.inner.store.request_cancel(job_id).await?;
        self.inner.status.notify(&job.session_name);
        if job.status == JobStatus::Running {
            // Another process runs it; it stops at the notification, or at its next renewal.
            return self
                .wait_for_job(job_id, &job.session_name, self.inner.lease.max(Duration::from_secs(30)))
                .await;
        }
        Ok(job)
    }

    /// Cancel every job of the session that has not ended (its run, and resumes queued behind
    /// it), each as [`Orchestrator::cancel_job`] does; the report afterwards.
    /// [`OrchestratorError::NothingToCancel`] when none is queued or running.
    pub async fn cancel_session(&self, session_name: &str) -> Result<SessionReport, OrchestratorError> {
        self.session_by_name(session_name).await?;
        let mut open = Vec::new();
        let mut page = Page::first(Page::DEFAULT_LIMIT);
        loop {
            let batch = self.inner.store.list_jobs(Some(session_name), page).await?;
            let done = batch.len() < page.limit as usize;
            open.extend(batch.into_iter().filter(|j| !j.status.is_terminal()));
            if done {
                break;
            }
            page.offset += u64::from(page.limit);
        }
        if open.is_empty() {
            return Err(OrchestratorError::NothingToCancel(session_name.to_owned()));
        }
        // The queued ones first, so none starts when the run ends.
        open.reverse();
        for job in open {
            match self.cancel_job(&job.job_id).await {
                Ok(_) | Err(OrchestratorError::JobEnded { .. }) => {}
                Err(error) => return Err(error),
            }
        }
        self.report_by_name(session_name).await
    }

    /// Delete a session (by id) with its events, cancelling its queued jobs and its run.
    pub async fn delete_session(&self, session_id: &str) -> Result<Session, OrchestratorError> {
        let session = self.inner.store.delete_session(session_id).await?;
        self.inner
            .cancel_runs(|_, run| run.session_name == session.session_name);
        self.inner.status.notify(&session.session_name);
        self.inner.events.notify(&session.session_name);
        Ok(session)
    }

    /// Delete every session, cancelling every queued job and every run; returns how many.
    pub async fn delete_all_sessions(&self) -> Result<u64, OrchestratorError> {
        let names: Vec<String> = self
            .list_sessions()
            .await?
            .into_iter()
            .map(|s| s.session_name)
            .collect();
        let deleted = self.inner.store.delete_all_sessions().await?;
        self.inner.cancel_runs(|_, _| true);
        for name in names {
            self.inner.status.notify(&name);
            self.inner.events.notify(&name);
        }
        Ok(deleted)
    }

    /// Wait until the job has ended (`Ok` with it) or `limit` passed (`Ok` with it as it is);
    /// during a shutdown, only until the runs have stopped.
    pub async fn wait_for_job(
        &self,
        job_id: &str,
        session_name: &str,
        limit: Duration,
    ) -> Result<Job, OrchestratorError> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let seen = self.inner.status.version(session_name);
            let job = self.job(job_id).await?;
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if job.status.is_terminal() || left.is_zero() || self.inner.released.is_cancelled() {
                return Ok(job);
            }
            tokio::select! {
                _ = self.inner.status.changed(session_name, seen, left) => {}
                () = self.inner.released.cancelled() => {}
            }
        }
    }

    /// Wait for events of a session after `seen` (a value of [`Orchestrator::events_version`]).
    pub async fn events_changed(&self, session_name: &str, seen: u64, limit: Duration) -> bool {
        self.inner.events.changed(session_name, seen, limit).await
    }

    /// The change counter of a session's events, for [`Orchestrator::events_changed`].
    pub fn events_version(&self, session_name: &str) -> u64 {
        self.inner.events.version(session_name)
    }

    /// Resolves when [`Orchestrator::shutdown`] began.
    pub async fn stopping(&self) {
        self.inner.stop.cancelled().await;
    }

    /// Stop taking jobs, cancel the runs in progress (their jobs end `cancelled`), wait for
    /// the workers to end, then end every wait still going (a sync start of a job that will
    /// not run now answers with its status, a status wait at once), so that the servers
    /// closed next wait for no call.
    ///
    /// Bounded by [`STOP_GRACE`] whatever the store does: a database that does not answer
    /// (PostgreSQL gone) cannot hold the stop. Runs whose end could not be recorded by then are
    /// named in an error log; their jobs are settled later as any interrupted run's (at the
    /// next start on SQLite, when their lease runs out on PostgreSQL).
    pub async fn shutdown(&self) {
        self.shutdown_within(STOP_GRACE).await;
    }

    /// [`Orchestrator::shutdown`] with its own bound.
    pub async fn shutdown_within(&self, grace: Duration) {
        self.inner.stop.cancel();
        self.inner.cancel_runs(|_, _| true);
        self.inner.queue.notify_waiters();
        let deadline = tokio::time::Instant::now() + grace;
        let dispatcher = self.inner.dispatcher.lock().ok().and_then(|mut slot| slot.take());
        if let Some(mut dispatcher) = dispatcher
            && tokio::time::timeout_at(deadline, &mut dispatcher).await.is_err()
        {
            // Stuck in a claim the store does not answer.
            dispatcher.abort();
        }
        self.inner.runs.close();
        if tokio::time::timeout_at(deadline, self.inner.runs.wait()).await.is_err() {
            let unrecorded: Vec<String> = {
                let running = self.inner.running.lock().unwrap_or_else(|p| p.into_inner());
                running.keys().cloned().collect()
            };
            tracing::error!(
                runs = unrecorded.len(),
                jobs = %unrecorded.join(", "),
                "stopping without recording the end of these runs: the store did not answer within {grace:?}; \
                 they are settled as interrupted at the next start (SQLite) or when their lease runs out (PostgreSQL)"
            );
        }
        self.inner.released.cancel();
    }

    fn accepting(&self) -> Result<(), OrchestratorError> {
        if self.inner.stop.is_cancelled() {
            return Err(OrchestratorError::ShuttingDown);
        }
        Ok(())
    }

    fn queued(&self, job: &Job) {
        self.inner.status.notify(&job.session_name);
        self.inner.queue.notify_waiters();
    }

    async fn answer(
        &self,
        job: Job,
        async_mode: bool,
        callback_to: Option<String>,
        caller: Option<&str>,
    ) -> Result<RunAnswer, OrchestratorError> {
        let job = if async_mode {
            job
        } else {
            let _lent = self.lend_slot(caller);
            self.wait_for_job(&job.job_id, &job.session_name, self.inner.sync_wait)
                .await?
        };
        if !job.status.is_terminal() {
            return Ok(RunAnswer::Accepted(JobAccepted {
                session_name: job.session_name,
                status: SessionStatus::Running.as_str().to_owned(),
                message: STARTED_IN_BACKGROUND.to_owned(),
                job_id: job.job_id,
                job_status: job.status.as_str().to_owned(),
                callback_to,
            }));
        }
        let session = self.session_by_name(&job.session_name).await?;
        let report = self.with_tree_usage(report(&session, Some(&job))).await?;
        Ok(RunAnswer::Ended(Box::new(report)))
    }
}

fn check_prompt(prompt: &str) -> Result<(), OrchestratorError> {
    if prompt.trim().is_empty() {
        return Err(OrchestratorError::Invalid("the prompt is empty".to_owned()));
    }
    Ok(())
}

/// A worker slot lent by [`Orchestrator::lend_slot`]; dropping it takes one slot back.
struct LentSlot {
    slots: Arc<Semaphore>,
}

impl Drop for LentSlot {
    fn drop(&mut self) {
        match self.slots.clone().try_acquire_owned() {
            Ok(permit) => permit.forget(),
            Err(_) => {
                // Every slot is busy: take the next one that frees.
                let slots = self.slots.clone();
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    runtime.spawn(async move {
                        if let Ok(permit) = slots.acquire_owned().await {
                            permit.forget();
                        }
                    });
                }
            }
        }
    }
}
