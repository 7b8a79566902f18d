//! The worker pool: claim a job, run it through patchbay's `Agent`, store every event, end it.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use patchbay::kit::ContentBuilder;
use patchbay::mcp::McpClientSet;
use patchbay::tools::{Workspace, coding_tools};
use patchbay::{
    Agent, ErrorKind, Event, EventStream, Message, ProviderError, RequestContext, Signal, ToolSet, Transcript,
    context::McpServerConfig, context::McpTransport,
};

use crate::blueprint::Blueprint;
use crate::budget::UsageMeter;
use crate::caller::{CALLER_ENV, CALLER_HEADER, CALLER_METADATA_KEY};
use crate::orphans::RUN_ENV;
use crate::runtime::{Inner, Running};
use crate::store::{Change, Job, JobEnd, JobKind, Session, SessionUpdate, StoreError};

/// The most events stored in one transaction (a burst of deltas is stored together).
const EVENT_BATCH: usize = 256;
/// How many events may wait for the writer before the run waits for it.
const EVENT_QUEUE: usize = 4096;

/// The dispatcher: while a worker slot is free, claims the next job and runs it in a task of
/// its own holding the slot; sleeps on the queue's wake-up when nothing can be claimed.
pub(crate) async fn dispatch(inner: Arc<Inner>) {
    let worker_id = inner.worker_id.clone();
    loop {
        let permit = tokio::select! {
            biased;
            () = inner.stop.cancelled() => return,
            permit = inner.slots.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => return,
            },
        };
        // Listen before claiming, so a job queued in between is never missed.
        let wake = inner.queue.notified();
        tokio::pin!(wake);
        wake.as_mut().enable();
        if inner.stop.is_cancelled() {
            return;
        }
        match inner.store.claim_next_job(&worker_id, inner.lease).await {
            Ok(Some(job)) => {
                let run_inner = inner.clone();
                inner.runs.spawn(async move {
                    run_job(&run_inner, job).await;
                    drop(permit);
                    run_inner.queue.notify_waiters();
                });
            }
            Ok(None) => {
                drop(permit);
                tokio::select! {
                    () = wake => {}
                    () = inner.stop.cancelled() => return,
                }
            }
            Err(error) => {
                drop(permit);
                tracing::error!(%error, "cannot claim a job; retrying in a second");
                tokio::select! {
                    () = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
                    () = inner.stop.cancelled() => return,
                }
            }
        }
    }
}

/// Every third of the lease: renews the leases of this process's runs (stopping those it lost
/// or was asked to stop), then settles the jobs of workers that stopped renewing theirs.
pub(crate) async fn keep_leases(inner: Arc<Inner>) {
    let period = inner.lease / 3;
    loop {
        tokio::select! {
            () = inner.released.cancelled() => return,
            () = tokio::time::sleep(period) => {}
        }
        let mine: Vec<String> = {
            let running = inner.running.lock().unwrap_or_else(|p| p.into_inner());
            running.keys().cloned().collect()
        };
        match inner.store.renew_leases(&inner.worker_id, &mine, inner.lease).await {
            Ok(lost) => {
                for job_id in lost {
                    if inner.cancel_runs(|id, _| *id == job_id) > 0 {
                        tracing::warn!(job = %job_id, "stopping a run: its job was cancelled, ended or taken elsewhere");
                    }
                }
            }
            Err(error) => tracing::error!(%error, "cannot renew the leases of this process's runs"),
        }
        match inner.store.expire_leases().await {
            Ok(settled) if !settled.is_empty() => {
                crate::orphans::kill_runs(&settled.failed_jobs);
                tracing::warn!(
                    failed = settled.failed_jobs.len(),
                    requeued = settled.requeued_jobs.len(),
                    "settled the jobs of a worker that stopped renewing its leases"
                );
                for name in &settled.failed_sessions {
                    inner.status.notify(name);
                }
                if !settled.callbacks.is_empty() {
                    // The parents resumed by callbacks changed too.
                    inner.status.notify_all();
                }
                inner.queue.notify_waiters();
            }
            Ok(_) => {}
            Err(error) => tracing::error!(%error, "cannot settle expired leases"),
        }
    }
}

/// Turns changes announced by other processes sharing the store into this process's wake-ups
/// (and stops runs another process cancelled).
pub(crate) async fn follow_changes(inner: Arc<Inner>, mut changes: tokio::sync::broadcast::Receiver<Change>) {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        let change = tokio::select! {
            () = inner.released.cancelled() => return,
            change = changes.recv() => change,
        };
        match change {
            Ok(Change::Queued) => inner.queue.notify_waiters(),
            Ok(Change::Session(name)) => inner.status.notify(&name),
            Ok(Change::Events(name)) => inner.events.notify(&name),
            Ok(Change::Cancel(job_id)) => {
                inner.cancel_runs(|id, _| *id == job_id);
            }
            Ok(Change::Resync) | Err(RecvError::Lagged(_)) => {
                inner.status.notify_all();
                inner.events.notify_all();
                inner.queue.notify_waiters();
            }
            Err(RecvError::Closed) => return,
        }
    }
}

/// How a run ended.
enum Outcome {
    Completed {
        text: String,
        conversation: Option<Vec<Message>>,
        provider_session_id: Option<String>,
    },
    Failed(String),
    Cancelled(String),
}

async fn run_job(inner: &Arc<Inner>, job: Job) {
    let signal = Signal::new();
    if inner.stop.is_cancelled() {
        signal.cancel();
    }
    register(inner, &job, &signal);
    let (outcome, last) = match inner.store.mark_job_running(&job.job_id, &inner.worker_id).await {
        // Cancelled between the claim and now.
        Err(StoreError::InvalidTransition { .. }) => {
            unregister(inner, &job);
            return;
        }
        Err(error) => (Outcome::Failed(format!("storage error: {error}")), None),
        Ok(job) => run(inner, &job, &signal).await,
    };
    finish(inner, &job, outcome, last).await;
    unregister(inner, &job);
    inner.status.notify(&job.session_name);
    inner.queue.notify_waiters();
}

fn register(inner: &Inner, job: &Job, signal: &Signal) {
    let mut running = inner.running.lock().unwrap_or_else(|p| p.into_inner());
    running.insert(
        job.job_id.clone(),
        Running {
            session_name: job.session_name.clone(),
            signal: signal.clone(),
        },
    );
}

fn unregister(inner: &Inner, job: &Job) {
    let mut running = inner.running.lock().unwrap_or_else(|p| p.into_inner());
    running.remove(&job.job_id);
}

/// Run the job; returns how it ended and the run's last event (its `finish` or its error),
/// which is stored with the job's end rather than with the other events.
async fn run(inner: &Arc<Inner>, job: &Job, signal: &Signal) -> (Outcome, Option<serde_json::Value>) {
    let (session, blueprint) = match session_and_blueprint(inner, job).await {
        Ok(found) => found,
        Err(outcome) => return (outcome, None),
    };
    let (agent, messages) = match agent_for(inner, job, &session, &blueprint) {
        Ok(built) => built,
        Err(outcome) => return (outcome, None),
    };
    let timeout = blueprint.limits.over(&inner.limits).run_timeout;
    let (stream, transcript) = agent.stream_with_transcript(messages, signal.clone());
    let (events, queue) = tokio::sync::mpsc::channel(EVENT_QUEUE);
    let writer = tokio::spawn(write_events(inner.clone(), session.clone(), job.job_id.clone(), queue));
    // Past the timeout the run is cancelled; its stream then ends promptly.
    let (mut record, timed_out) = {
        let forwarded = forward_events(inner, job, stream, &events, signal);
        tokio::pin!(forwarded);
        tokio::select! {
            record = &mut forwarded => (record, false),
            () = tokio::time::sleep(timeout) => {
                signal.cancel();
                (forwarded.await, true)
            }
        }
    };
    // Every event but the last is stored before the job ends.
    drop(events);
    let _ = writer.await;
    let last = record.last.take();
    if timed_out {
        let reason = format!(
            "timed out after {} (timeout_seconds)",
            humantime::format_duration(timeout)
        );
        return (Outcome::Cancelled(reason), last);
    }
    (record.outcome(inner, signal, &transcript), last)
}

/// The job's session and blueprint (the store marked the session running with the job); the
/// outcome instead when the session is gone, the blueprint no longer loaded or the store failed.
async fn session_and_blueprint(inner: &Inner, job: &Job) -> Result<(Session, Blueprint), Outcome> {
    let session = match inner.store.get_session_by_name(&job.session_name).await {
        Ok(Some(session)) => session,
        Ok(None) => return Err(Outcome::Cancelled("the session was deleted".to_owned())),
        Err(error) => return Err(Outcome::Failed(format!("storage error: {error}"))),
    };
    let Some(blueprint) = inner.blueprints.get(&job.agent_name).cloned() else {
        return Err(Outcome::Failed(format!(
            "the agent blueprint `{}` is no longer loaded",
            job.agent_name
        )));
    };
    inner.status.notify(&job.session_name);
    Ok((session, blueprint))
}

/// The agent for this run and its input: the stored conversation (unless the provider resumes
/// its own session) followed by the job's prompt.
fn agent_for(
    inner: &Inner,
    job: &Job,
    session: &Session,
    blueprint: &Blueprint,
) -> Result<(Agent, Vec<Message>), Outcome> {
    let provider = match inner.registry.build(&blueprint.provider, &blueprint.provider_options) {
        Ok(provider) => provider,
        Err(error) => {
            return Err(Outcome::Failed(format!(
                "cannot build the provider `{}`: {error}",
                blueprint.provider
            )));
        }
    };
    let capabilities = provider.info().capabilities;
    let resume_id = session.provider_session_id.clone().filter(|_| capabilities.sessions);
    let mut messages = match (&resume_id, job.kind) {
        (Some(_), _) | (None, JobKind::StartSession) => Vec::new(),
        (None, JobKind::ResumeSession) => match serde_json::from_value::<Vec<Message>>(session.conversation.clone()) {
            Ok(messages) => messages,
            Err(error) => {
                return Err(Outcome::Failed(format!(
                    "the stored conversation cannot be read: {error}"
                )));
            }
        },
    };
    messages.push(Message::user(job.prompt.clone()));
    // Every process the run starts carries its job id (see `orphans`).
    let context = context_for(inner, session, blueprint, resume_id).with_env(RUN_ENV, &job.job_id);
    let mut agent = Agent::new(provider, blueprint.model.clone())
        .with_name(blueprint.name.clone())
        .with_tools(tools_for(blueprint, session, &job.job_id))
        .with_context(context);
    if !capabilities.runs_tools {
        // A direct API connects no MCP servers itself: the agent loop does.
        agent = agent.with_tool_source(Arc::new(McpClientSet::new()));
    }
    if let Some(max_steps) = blueprint.max_steps {
        agent = agent.with_max_steps(max_steps);
    }
    Ok((agent, messages))
}

/// Send every item of the run to the event writer, noting what the outcome needs and storing
/// what the run spends (see [`UsageMeter`]).
async fn forward_events(
    inner: &Inner,
    job: &Job,
    mut stream: EventStream,
    events: &tokio::sync::mpsc::Sender<serde_json::Value>,
    signal: &Signal,
) -> RunRecord {
    let mut record = RunRecord::default();
    let mut meter = UsageMeter::new();
    while let Some(item) = stream.next().await {
        if let Ok(event) = &item {
            meter.note(inner, &job.job_id, &job.session_name, event, signal).await;
        }
        let last = matches!(item, Ok(Event::Finish { .. }) | Err(_));
        let mut value = record.note(item);
        // The run's end is stored with the job's end (see `finish`); an earlier one, if a
        // run sent two, goes to the writer.
        if last {
            match record.last.replace(value) {
                Some(earlier) => value = earlier,
                None => continue,
            }
        }
        // Waits only when the writer is EVENT_QUEUE events behind.
        let _ = events.send(value).await;
    }
    meter.close(inner, &job.job_id).await;
    record.budget_spent = meter.spent;
    record
}

/// What a run's events said, as far as the job's outcome needs.
#[derive(Default)]
struct RunRecord {
    /// The content of the current step (the final answer once the run finished).
    content: ContentBuilder,
    provider_session_id: Option<String>,
    finished: bool,
    error: Option<ProviderError>,
    /// Why the tree's token budget ended the run.
    budget_spent: Option<String>,
    /// The run's last event (its `finish` or its error), kept for the job's end.
    last: Option<serde_json::Value>,
}

impl RunRecord {
    /// Note one stream item and return it as the JSON to store.
    fn note(&mut self, item: Result<Event, ProviderError>) -> serde_json::Value {
        match item {
            Ok(event) => {
                match &event {
                    Event::Started {
                        session_id: Some(id), ..
                    } => self.provider_session_id = Some(id.clone()),
                    Event::StepFinished { .. } => self.content = ContentBuilder::default(),
                    Event::Finish { .. } => self.finished = true,
                    _ => {}
                }
                self.content.push(&event);
                serde_json::to_value(&event).unwrap_or_default()
            }
            Err(e) => {
                let value = serde_json::json!({"type": "error", "kind": e.kind().as_str(), "message": e.to_string()});
                self.error = Some(e);
                value
            }
        }
    }

    /// How the job ended, from the run's end and the cancel signal.
    fn outcome(self, inner: &Inner, signal: &Signal, transcript: &Transcript) -> Outcome {
        if let Some(spent) = self.budget_spent {
            return Outcome::Cancelled(spent);
        }
        match self.error {
            Some(e) if e.kind() == ErrorKind::Cancelled || signal.is_cancelled() => {
                Outcome::Cancelled(cancel_reason(inner).to_owned())
            }
            Some(e) => Outcome::Failed(e.to_string()),
            None if signal.is_cancelled() => Outcome::Cancelled(cancel_reason(inner).to_owned()),
            None if !self.finished => Outcome::Failed("the run ended without finishing".to_owned()),
            None => Outcome::Completed {
                text: text_of(self.content),
                conversation: transcript.messages(),
                provider_session_id: self.provider_session_id,
            },
        }
    }
}

fn cancel_reason(inner: &Inner) -> &'static str {
    if inner.stop.is_cancelled() {
        "cancelled: the orchestrator shut down during the run"
    } else {
        "cancelled"
    }
}

fn text_of(content: ContentBuilder) -> String {
    let message = Message::new(patchbay::Role::Assistant, content.finish());
    message.text()
}

/// Stores a run's events as they come: whatever queued up while the last write was going on
/// is written in one transaction (group commit), so a fast stream costs few transactions and
/// a slow one is stored event by event, at once.
async fn write_events(
    inner: Arc<Inner>,
    session: Session,
    job_id: String,
    mut queue: tokio::sync::mpsc::Receiver<serde_json::Value>,
) {
    while let Some(first) = queue.recv().await {
        let mut batch = vec![first];
        while batch.len() < EVENT_BATCH {
            match queue.try_recv() {
                Ok(event) => batch.push(event),
                Err(_) => break,
            }
        }
        store_events(&inner, &session, &job_id, batch).await;
    }
}

async fn store_events(inner: &Inner, session: &Session, job_id: &str, events: Vec<serde_json::Value>) {
    match inner
        .store
        .append_events(&session.session_id, Some(job_id), events)
        .await
    {
        Ok(_) => inner.events.notify(&session.session_name),
        // Deleted during the run: its run is being cancelled, nothing to keep.
        Err(StoreError::SessionNotFound(_)) => {}
        Err(error) => tracing::error!(%error, session = %session.session_name, "cannot store events"),
    }
}

/// The run's request context: working directory, the session name in env and metadata, the
/// system prompt, MCP servers (this orchestrator's own, with a scoped token of the session and
/// the caller header), resumption.
fn context_for(inner: &Inner, session: &Session, blueprint: &Blueprint, resume_id: Option<String>) -> RequestContext {
    let mut context = RequestContext::new()
        .with_working_dir(&session.project_dir)
        .with_env(CALLER_ENV, &session.session_name)
        .with_metadata(CALLER_METADATA_KEY, &session.session_name);
    if let Some(system) = &blueprint.system {
        context = context.with_system(system);
    }
    for server in &blueprint.mcp_servers {
        context = context.with_mcp_server(server.clone());
    }
    if blueprint.orchestrator_tools {
        let endpoint = inner.endpoint.lock().ok().and_then(|e| e.clone());
        match endpoint {
            Some(endpoint) => {
                // The session's own scoped token, never the listener's bearer token: the run
                // reaches its own subtree only (see `crate::scope`).
                let token = endpoint.tokens.issue(session);
                let headers = BTreeMap::from([
                    ("Authorization".to_owned(), format!("Bearer {token}")),
                    (CALLER_HEADER.to_owned(), session.session_name.clone()),
                ]);
                context = context.with_mcp_server(McpServerConfig {
                    name: "orchestrator".to_owned(),
                    transport: McpTransport::Http {
                        url: endpoint.url,
                        headers,
                    },
                });
            }
            None => tracing::warn!(
                blueprint = %blueprint.name,
                "the blueprint asks for orchestrator_tools but this orchestrator serves no MCP endpoint"
            ),
        }
    }
    if let Some(id) = resume_id {
        context = context.with_session(patchbay::context::Session::Resume { id });
    }
    context
}

/// The blueprint's coding tools, rooted at the session's project folder.
fn tools_for(blueprint: &Blueprint, session: &Session, job_id: &str) -> ToolSet {
    if blueprint.tools.is_empty() {
        return ToolSet::new();
    }
    let bash = blueprint.tools.iter().any(|t| t == "bash");
    let workspace = Workspace::new(&session.project_dir)
        .with_bash(bash)
        .with_env(CALLER_ENV, &session.session_name)
        .with_env(RUN_ENV, job_id);
    let all = coding_tools(workspace);
    let mut chosen = ToolSet::new();
    for tool in all.iter() {
        if blueprint.tools.iter().any(|t| *t == tool.spec().name) {
            chosen.insert(tool.clone());
        }
    }
    chosen
}

/// Store how the run ended in one transaction: the job's end (which recomputes the session's
/// status and queues the parent's callback), the session's conversation and result, and the
/// run's last event. A worker killed before it leaves a run that never finished, failed by
/// its lease; killed after, a completed one.
async fn finish(inner: &Arc<Inner>, job: &Job, outcome: Outcome, last: Option<serde_json::Value>) {
    let end = match outcome {
        Outcome::Completed {
            text,
            conversation,
            provider_session_id,
        } => {
            let update = SessionUpdate {
                last_result: Some(text.clone()),
                provider_session_id,
                conversation: conversation.and_then(|c| serde_json::to_value(c).ok()),
                ..SessionUpdate::default()
            };
            JobEnd::completed(text).with_session(update)
        }
        Outcome::Failed(message) => JobEnd::failed(message),
        Outcome::Cancelled(message) => JobEnd::cancelled(message),
    };
    let end = end.with_events(last.into_iter().collect());
    let stores_events = !end.events.is_empty();
    match inner.store.end_job(&job.job_id, end).await {
        Ok(ended) => {
            if stores_events {
                inner.events.notify(&job.session_name);
            }
            if let Some(callback) = ended.callback {
                inner.status.notify(&callback.session_name);
                inner.queue.notify_waiters();
            }
        }
        Err(error) => tracing::warn!(%error, job = %job.job_id, "cannot end the job"),
    }
}
