//! The run loop: stdout lines into the translator, control requests answered, stdin written,
//! the process stopped (or parked) at the end. [`Turn::step`] does one wait of the loop and
//! says what the stream passes on ([`Step`]); the stream only yields and ends.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use patchbay_core::context::Approval;
use patchbay_core::{ErrorKind, Event, EventStream, ProviderError, ToolResult};
use patchbay_http::record::BodySink;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::NAME;
use crate::control::{self, INIT_ID};
use crate::error::Error;
use crate::launch::Fingerprint;
use crate::pool::Pool;
use crate::process::CliProcess;
use crate::requests::{Bridge, Handled, Handler, Pending, Reply, can_use_tool, control_request};
use crate::spawn::ColdStart;
use crate::translate::Translator;
use crate::waiting::Waiting;

/// A host tool's result reported by the HTTP tool server: (tool name, input, result).
pub(crate) type Report = (String, Value, ToolResult);

/// How a run starts and ends.
pub(crate) struct Start {
    /// The CLI was kept alive from an earlier run (initialized already).
    pub(crate) reused: bool,
    /// The call's own launch when the CLI is a spare: started instead if the spare ends before
    /// its first line.
    pub(crate) cold: Option<ColdStart>,
    /// Where to park the CLI after a finished turn, under which fingerprint, for how long.
    pub(crate) park: Option<(Arc<Pool>, Fingerprint, Duration)>,
    /// Where a run paused for approval waits, and for how long. Weak: the paused run holds
    /// its `Start`, and the registry must go (and stop it) with the provider.
    pub(crate) wait: Option<(Weak<Waiting<PausedTurn>>, Duration)>,
    pub(crate) record: Option<PathBuf>,
    /// The call's transcript in the recording folder (`record_dir`), if recording.
    pub(crate) transcript: BodySink,
    pub(crate) initialize: Value,
    pub(crate) user: String,
    pub(crate) init_timeout: Duration,
}

/// A run paused for a person's approval: its turn (the CLI waiting on the unanswered
/// permissions) and what must live as long as the CLI.
pub(crate) struct PausedTurn {
    turn: Turn,
    keep: Box<dyn std::any::Any + Send>,
}

impl PausedTurn {
    /// Whether `decisions` answer any of the calls this run waits on.
    pub(crate) fn answers(&self, decisions: &std::collections::BTreeMap<String, Approval>) -> bool {
        self.turn
            .paused
            .iter()
            .any(|pending| decisions.contains_key(&pending.call.tool_use_id))
    }

    /// Stop the waiting CLI (the approval timed out): mid-turn, so `interrupt`, stdin EOF,
    /// then SIGTERM and SIGKILL after `cancel_grace` each.
    fn expire(mut self) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async move {
            let status = self.turn.process.stop().await;
            tracing::debug!(?status, "the paused CLI was stopped");
            drop(self.keep);
        })
    }
}

/// The run's event stream: the CLI's events until its `result`, an error, a cancel, or a
/// pause for a person's approval.
pub(crate) fn run(
    process: CliProcess,
    translator: Translator,
    bridge: Arc<Bridge>,
    start: Start,
    reports: mpsc::UnboundedReceiver<Report>,
    keep: Box<dyn std::any::Any + Send>,
) -> EventStream {
    let turn = Turn {
        process,
        translator,
        bridge,
        start,
        reports,
        reports_open: true,
        handlers: FuturesUnordered::new(),
        paused: Vec::new(),
        init_done: false,
        heard: false,
    };
    drive(turn, keep, false)
}

/// The rest of a paused run, in a later call that brings the decisions (`bridge` is that
/// call's): `Started`, the decided permissions answered (the others asked again), then the
/// turn as usual.
pub(crate) fn resume(paused: PausedTurn, bridge: Arc<Bridge>, marker: Option<usize>) -> EventStream {
    let PausedTurn { mut turn, keep } = paused;
    turn.bridge = bridge;
    turn.translator.resume(marker);
    drive(turn, keep, true)
}

fn drive(mut turn: Turn, keep: Box<dyn std::any::Any + Send>, resumed: bool) -> EventStream {
    let init_timeout = turn.start.init_timeout;
    let stream = async_stream::stream! {
        let keep = keep;
        if resumed {
            turn.answer_pending().await;
            // `Started` first.
            for event in turn.translator_events() {
                yield Ok(event);
            }
        } else if let Err(error) = turn.begin().await {
            yield Err(error);
            return;
        }
        let deadline = tokio::time::sleep(init_timeout);
        tokio::pin!(deadline);
        loop {
            match turn.step(deadline.as_mut()).await {
                Step::Events(events) => for event in events {
                    yield Ok(event);
                },
                Step::Done(events) => {
                    for event in events {
                        yield Ok(event);
                    }
                    let status = turn.process.stop().await;
                    tracing::debug!(?status, "claude-agent run finished");
                    return;
                }
                Step::Fail(events, error) => {
                    for event in events {
                        yield Ok(event);
                    }
                    yield Err(turn.fail(error).await);
                    return;
                }
                Step::Park(events) => {
                    // Park before `Finish` reaches the caller: the next Resume finds it.
                    turn.park(keep);
                    for event in events {
                        yield Ok(event);
                    }
                    return;
                }
                Step::Pause(events) => {
                    // Kept before `Finish` reaches the caller: the resume finds it.
                    turn.wait(keep);
                    for event in events {
                        yield Ok(event);
                    }
                    return;
                }
                Step::StartOver(error) => {
                    if let Err(error) = turn.start_over(error).await {
                        yield Err(error);
                        return;
                    }
                    if let Err(error) = turn.begin().await {
                        yield Err(error);
                        return;
                    }
                    deadline.as_mut().reset(tokio::time::Instant::now() + init_timeout);
                }
                Step::Cancelled(step) => {
                    // Dropping the process stops it in the background (`interrupt`, stdin EOF,
                    // then SIGTERM and SIGKILL after `cancel_grace` each).
                    drop(turn);
                    yield Err(ProviderError::cancelled().with_provider(NAME).with_turn(step));
                    return;
                }
            }
        }
    };
    Box::pin(stream)
}

/// What one wait of the loop gives the stream.
enum Step {
    /// Events to pass on; the run goes on.
    Events(Vec<Event>),
    /// The turn ended: pass these on, then stop the CLI.
    Done(Vec<Event>),
    /// Pass these on, then stop the CLI and end with this error (exit code and stderr added).
    Fail(Vec<Event>, ProviderError),
    /// The turn ended and the CLI is kept alive: park it, then pass these on.
    Park(Vec<Event>),
    /// Permissions wait for a person: keep the run waiting, then pass these on
    /// (`ApprovalRequested`, `Finish`).
    Pause(Vec<Event>),
    /// The signal fired during this step (model message) number.
    Cancelled(u32),
    /// The spare this run took ended before its first line (the error says how): start the
    /// call's own CLI and begin again.
    StartOver(ProviderError),
}

impl Step {
    fn quiet() -> Self {
        Self::Events(Vec::new())
    }
}

/// One run's state between stream items.
struct Turn {
    process: CliProcess,
    translator: Translator,
    bridge: Arc<Bridge>,
    start: Start,
    reports: mpsc::UnboundedReceiver<Report>,
    reports_open: bool,
    handlers: FuturesUnordered<Handler>,
    /// Permissions left unanswered for a person's decision.
    paused: Vec<Pending>,
    init_done: bool,
    /// The CLI printed a line in this run.
    heard: bool,
}

impl Turn {
    /// Send `initialize` (a reused CLI was initialized by its first run: the user turn goes at
    /// once). A spare that cannot be written to is left for the call's own CLI.
    async fn begin(&mut self) -> Result<(), ProviderError> {
        loop {
            self.process.set_in_turn(true);
            self.init_done = self.start.reused;
            let first = if self.start.reused {
                self.start.user.clone()
            } else {
                control::request_line(INIT_ID, self.start.initialize.clone())
            };
            let Err(error) = self.process.write_line(&first).await else {
                return Ok(());
            };
            if !self.may_start_over() {
                return Err(self.fail(error.into()).await);
            }
            self.start_over(error.into()).await?;
        }
    }

    /// Whether the run may still leave its CLI for the call's own: a spare that printed nothing.
    fn may_start_over(&self) -> bool {
        self.start.cold.is_some() && !self.heard
    }

    /// Stop the spare that ended before its first line (it died after the check at hand-out)
    /// and start the call's own CLI in its place, once; `begin` sends it `initialize`.
    async fn start_over(&mut self, error: ProviderError) -> Result<(), ProviderError> {
        let Some(cold) = self.start.cold.take() else {
            return Err(self.fail(error).await);
        };
        let pid = self.process.pid();
        let status = self.process.stop().await;
        tracing::warn!(%error, ?pid, ?status, "the spare CLI ended before its first line; starting the call's own");
        self.process = cold.spawn()?;
        self.start.reused = false;
        Ok(())
    }

    /// Wait for the next thing to do (a cancel, the `initialize` deadline, a finished control
    /// request, a reported host result, a stdout line) and do it.
    async fn step(&mut self, deadline: Pin<&mut tokio::time::Sleep>) -> Step {
        if !self.paused.is_empty() && self.handlers.is_empty() {
            // Every other request is answered: the run pauses on the ones a person decides.
            let calls = self.paused.iter().map(|pending| pending.call.clone()).collect();
            self.translator.pause(calls);
            return Step::Pause(self.translator_events());
        }
        let read = tokio::select! {
            biased;
            () = self.bridge.signal.cancelled() => return Step::Cancelled(self.translator.step()),
            () = deadline, if !self.init_done => {
                let error = ProviderError::new(ErrorKind::Process, "the CLI did not answer `initialize` in time");
                return Step::Fail(Vec::new(), error.with_provider(NAME));
            }
            Some(done) = self.handlers.next(), if !self.handlers.is_empty() => {
                self.handled(done).await;
                return Step::quiet();
            }
            report = self.reports.recv(), if self.reports_open => {
                match report {
                    Some((name, input, result)) => self.translator.record_host_result_for(&name, input, result),
                    None => self.reports_open = false,
                }
                return Step::quiet();
            }
            line = self.process.stdout.next_line() => read(line, self.start.record.as_deref(), &mut self.start.transcript),
        };
        if self.may_start_over() {
            match read {
                Read::End => {
                    let error =
                        ProviderError::new(ErrorKind::Process, "the spare CLI's stdout ended before its first line");
                    return Step::StartOver(error.with_provider(NAME));
                }
                Read::Failed(error) => return Step::StartOver(error.into()),
                Read::Skip | Read::Line(_) => {}
            }
        }
        if matches!(read, Read::Skip | Read::Line(_)) {
            self.heard = true;
        }
        match read {
            Read::Skip => Step::quiet(),
            Read::Line(line) => self.line(&line).await,
            Read::End => match self.translator.finish() {
                Ok(()) => Step::Done(Vec::new()),
                Err(error) => Step::Fail(Vec::new(), error),
            },
            Read::Failed(error) => Step::Fail(Vec::new(), ProviderError::from(error).with_turn(self.translator.step())),
        }
    }

    async fn line(&mut self, line: &Value) -> Step {
        match line.get("type").and_then(Value::as_str) {
            Some("control_request") => {
                let id = line.get("request_id").and_then(Value::as_str).unwrap_or("");
                let request = line.get("request").unwrap_or(&Value::Null);
                match control_request(&self.bridge, &mut self.translator, id, request) {
                    Reply::Now(reply) => self.write(&reply).await,
                    Reply::Later(handler) => self.handlers.push(handler),
                }
                Step::quiet()
            }
            Some("control_response") => self.control_response(line).await,
            Some("control_cancel_request") => {
                tracing::debug!("the CLI cancelled a control request");
                Step::quiet()
            }
            _ => self.output(line),
        }
    }

    /// The answer to `initialize`: the user turn goes now.
    async fn control_response(&mut self, line: &Value) -> Step {
        let response = line.get("response").unwrap_or(&Value::Null);
        if self.init_done || response.get("request_id").and_then(Value::as_str) != Some(INIT_ID) {
            return Step::quiet();
        }
        self.init_done = true;
        if response.get("subtype").and_then(Value::as_str) == Some("error") {
            let message = response.get("error").and_then(Value::as_str).unwrap_or("unknown error");
            let error = ProviderError::new(ErrorKind::Process, format!("the CLI refused `initialize`: {message}"));
            return Step::Fail(Vec::new(), error.with_provider(NAME));
        }
        match self.process.write_line(&self.start.user).await {
            Ok(()) => Step::quiet(),
            Err(error) => Step::Fail(Vec::new(), error.into()),
        }
    }

    /// A line for the translator.
    fn output(&mut self, line: &Value) -> Step {
        let pushed = self.translator.push_value(line);
        let done = self.translator.is_done();
        if done {
            // The turn has its `result`: stdin EOF alone ends the CLI now.
            self.process.set_in_turn(false);
        }
        let events = self.translator_events();
        match pushed {
            Err(error) => Step::Fail(events, error),
            Ok(()) if done && self.start.park.is_some() && self.translator.session_id().is_some() => Step::Park(events),
            Ok(()) if done => Step::Done(events),
            Ok(()) => Step::Events(events),
        }
    }

    fn translator_events(&mut self) -> Vec<Event> {
        let mut events = Vec::new();
        while let Some(event) = self.translator.next_event() {
            events.push(event);
        }
        events
    }

    async fn handled(&mut self, done: Handled) {
        if let Some(pending) = done.paused {
            self.paused.push(pending);
            return;
        }
        if let Some((id, result)) = done.record {
            self.translator.record_host_result(id, result);
        }
        self.write(&done.line).await;
    }

    /// A resumed run: answer each waiting permission the call's decisions decide, and ask
    /// about the others again (the approval handler may pause them again).
    async fn answer_pending(&mut self) {
        for pending in std::mem::take(&mut self.paused) {
            let decided = self.bridge.context.decisions.get(&pending.call.tool_use_id);
            match decided.filter(|d| **d != Approval::Pause) {
                Some(approval) => {
                    let line = pending.answer(approval);
                    self.write(&line).await;
                }
                None => match can_use_tool(&self.bridge, &self.translator, &pending.request_id, &pending.request) {
                    Reply::Later(handler) => self.handlers.push(handler),
                    Reply::Now(line) => self.write(&line).await,
                },
            }
        }
    }

    /// Keep the paused run for the call that brings the decisions (stopped after
    /// `approval_timeout`).
    fn wait(self, keep: Box<dyn std::any::Any + Send>) {
        let Some((waiting, timeout)) = self.start.wait.clone() else {
            return;
        };
        let Some(waiting) = waiting.upgrade() else {
            return;
        };
        let Some(session) = self.translator.session_id().map(str::to_string) else {
            return;
        };
        let paused = PausedTurn { turn: self, keep };
        waiting.put(session, paused, timeout, PausedTurn::expire);
    }

    /// Answer a control request (a CLI that stopped reading ends the run by its stdout).
    async fn write(&mut self, line: &str) {
        if let Err(error) = self.process.write_line(line).await {
            tracing::debug!(%error, "cannot answer a control request");
        }
    }

    /// Stop the CLI and give `error` its exit code and stderr tail.
    async fn fail(&mut self, mut error: ProviderError) -> ProviderError {
        let status = self.process.stop().await;
        let tail = self.process.stderr_tail();
        if !tail.is_empty() && error.stderr_tail().is_none() {
            error = error.with_stderr_tail(tail);
        }
        if let Some(code) = status.and_then(|s| s.code()) {
            error = error.with_exit_code(code);
        }
        error
    }

    /// Keep the CLI for its session's next `Resume`.
    fn park(self, keep: Box<dyn std::any::Any + Send>) {
        let Turn {
            process,
            translator,
            start,
            ..
        } = self;
        if let (Some((pool, fingerprint, idle)), Some(session)) = (start.park, translator.session_id()) {
            pool.park(session.to_string(), process, keep, fingerprint, idle);
        }
    }
}

/// A stdout line, read.
enum Read {
    /// Blank, or not JSON-looking (the CLI prints a few such lines): skipped.
    Skip,
    Line(Value),
    /// stdout ended.
    End,
    Failed(Error),
}

fn read(line: Result<Option<&[u8]>, Error>, record: Option<&Path>, transcript: &mut BodySink) -> Read {
    let bytes = match line {
        Ok(Some(bytes)) => bytes.trim_ascii(),
        Ok(None) => return Read::End,
        Err(error) => return Read::Failed(error),
    };
    if bytes.is_empty() {
        return Read::Skip;
    }
    if let Some(path) = record {
        record_line(path, bytes);
    }
    transcript.write(bytes);
    transcript.write(b"\n");
    if bytes.first() != Some(&b'{') {
        let head = String::from_utf8_lossy(&bytes[..bytes.len().min(200)]);
        tracing::debug!(line = %head, "skipping a non-JSON stdout line");
        return Read::Skip;
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(value) => Read::Line(value),
        Err(source) => Read::Failed(Error::BadLine {
            head: String::from_utf8_lossy(&bytes[..bytes.len().min(80)]).into_owned(),
            source,
        }),
    }
}

fn record_line(path: &Path, line: &[u8]) {
    use std::io::Write;
    let file = std::fs::OpenOptions::new().create(true).append(true).open(path);
    if let Ok(mut file) = file {
        let _ = file.write_all(line).and_then(|()| file.write_all(b"\n"));
    }
}
