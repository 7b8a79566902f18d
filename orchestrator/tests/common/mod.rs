//! Shared by the service integration tests: an orchestrator on a temporary SQLite store, the
//! blueprints the tests run on, an `echo` provider that answers with the conversation it was
//! given (optionally held at a named gate until the test releases it), and waits that can
//! never hang.

#![allow(dead_code)]

pub(crate) mod backend;

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use patchbay::{
    Capabilities, Event, EventStream, FinishReason, Message, Metrics, Provider, ProviderError, ProviderFactory,
    ProviderInfo, Registry, RequestContext, Role, Signal, ToolContext, ToolResult, ToolSet, Usage, async_trait,
    context::McpTransport,
};
use patchbay_orchestrator::blueprint::{Blueprint, Blueprints};
use patchbay_orchestrator::format::{JobAccepted, SessionReport};
use patchbay_orchestrator::{CALLER_METADATA_KEY, Orchestrator, OrchestratorBuilder, RunAnswer};
use serde_json::{Value, json};
use tokio::sync::{Semaphore, watch};

pub(crate) type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;
pub(crate) type Fallible<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// The bound on every single wait: generous, it only matters when something hangs.
pub(crate) const LIMIT: Duration = Duration::from_secs(60);

/// `future`, or an error naming `what` after [`LIMIT`].
pub(crate) async fn within<T>(what: &str, future: impl Future<Output = T>) -> Fallible<T> {
    within_for(LIMIT, what, future).await
}

/// `future`, or an error naming `what` after `limit`.
pub(crate) async fn within_for<T>(limit: Duration, what: &str, future: impl Future<Output = T>) -> Fallible<T> {
    tokio::time::timeout(limit, future)
        .await
        .map_err(|_| format!("timed out after {limit:?}: {what}").into())
}

/// Ask `check` every 20 ms until it gives a value (for changes nobody is notified of, such
/// as a callback's resume being queued right after the child's job ended); bounded by [`LIMIT`].
pub(crate) async fn eventually<T, F, Fut>(what: &str, mut check: F) -> Fallible<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Fallible<Option<T>>>,
{
    within(what, async {
        loop {
            if let Some(value) = check().await? {
                return Ok(value);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await?
}

/// An orchestrator on a fresh temporary store and project folder.
pub(crate) struct Harness {
    pub(crate) orchestrator: Orchestrator,
    pub(crate) project: PathBuf,
    _store: backend::TestStore,
}

impl Harness {
    /// `workers` workers over `blueprints` (plus the built-in `default`), with the compiled
    /// providers and `echo`, on SQLite.
    pub(crate) async fn start(blueprints: Vec<Blueprint>, workers: usize) -> Fallible<Self> {
        Self::start_with(blueprints, workers, |builder| builder).await
    }

    /// As [`Harness::start`], with more settings made by `configure`.
    pub(crate) async fn start_with(
        blueprints: Vec<Blueprint>,
        workers: usize,
        configure: impl FnOnce(OrchestratorBuilder) -> OrchestratorBuilder,
    ) -> Fallible<Self> {
        Self::start_on_with(backend::Backend::Sqlite, blueprints, workers, configure)
            .await?
            .ok_or_else(|| "SQLite is always there".into())
    }

    /// As [`Harness::start`] on `backend`; `None` when it is missing outside CI (skip).
    pub(crate) async fn start_on(
        backend: backend::Backend,
        blueprints: Vec<Blueprint>,
        workers: usize,
    ) -> Fallible<Option<Self>> {
        Self::start_on_with(backend, blueprints, workers, |builder| builder).await
    }

    /// As [`Harness::start_with`] on `backend`; `None` when it is missing outside CI (skip).
    pub(crate) async fn start_on_with(
        backend: backend::Backend,
        blueprints: Vec<Blueprint>,
        workers: usize,
        configure: impl FnOnce(OrchestratorBuilder) -> OrchestratorBuilder,
    ) -> Fallible<Option<Self>> {
        let Some(store) = backend::TestStore::open(backend).await? else {
            return Ok(None);
        };
        let project = store.dir.path().join("project");
        std::fs::create_dir_all(&project)?;
        let mut all = Blueprints::new();
        for blueprint in blueprints {
            all.add(blueprint, Path::new("tests.toml"))?;
        }
        let builder = Orchestrator::builder(store.store.clone(), all)
            .registry(registry())
            .workers(workers)
            .project_dir(&project);
        let orchestrator = configure(builder).start().await?;
        Ok(Some(Self {
            orchestrator,
            project,
            _store: store,
        }))
    }

    /// Shut the orchestrator down (bounded).
    pub(crate) async fn stop(self) -> TestResult {
        within("shutdown", self.orchestrator.shutdown()).await?;
        Ok(())
    }
}

/// The compiled providers plus `echo`.
pub(crate) fn registry() -> Registry {
    let mut registry = Registry::compiled();
    registry.register(ProviderFactory::new(
        "echo",
        "answers with the conversation it got, as JSON [[role, text], ...]; option gate: hold each call until released",
        build_echo,
    ));
    registry
}

/// A blueprint on the scripted provider with these options, no tools.
pub(crate) fn scripted(name: &str, options: Value) -> Blueprint {
    Blueprint {
        name: name.to_owned(),
        description: format!("test blueprint {name}"),
        provider: "scripted".to_owned(),
        model: "scripted".to_owned(),
        provider_options: options,
        ..Blueprints::builtin_default()
    }
}

/// A scripted blueprint answering `text`.
pub(crate) fn answering(name: &str, text: &str) -> Blueprint {
    scripted(name, json!({ "text": text }))
}

/// A scripted blueprint whose every call stalls until the run is cancelled.
pub(crate) fn stalling(name: &str) -> Blueprint {
    scripted(
        name,
        json!({ "script": { "turns": [ { "type": "respond", "parts": [], "end": { "type": "stall" } } ], "repeat_last": true } }),
    )
}

/// A blueprint on `echo`; with a gate, each call waits there for a permit.
pub(crate) fn echo(name: &str, gate: Option<&str>) -> Blueprint {
    let options = match gate {
        Some(gate) => json!({ "gate": gate }),
        None => json!({}),
    };
    Blueprint {
        provider: "echo".to_owned(),
        model: "echo".to_owned(),
        ..scripted(name, options)
    }
}

/// A blueprint on `echo` answering with what the run was given instead of the conversation:
/// `{"env": {...}, "metadata": {...}, "working_dir": ..., "system": ..., "mcp_servers": {name:
/// {"url": ..., "headers": {...}}}, "debug": "<the context's Debug output>"}`.
pub(crate) fn whoami(name: &str) -> Blueprint {
    Blueprint {
        provider_options: json!({ "whoami": true }),
        ..echo(name, None)
    }
}

/// What `echo` answers for `messages`: `[[role, text], ...]` as JSON.
pub(crate) fn echo_answer(messages: &[(&str, &str)]) -> String {
    serde_json::to_string(&messages).unwrap_or_default()
}

/// The conversation an `echo` answer lists.
pub(crate) fn heard(answer: &str) -> Fallible<Vec<(String, String)>> {
    Ok(serde_json::from_str(answer)?)
}

/// A place where `echo` calls of blueprints naming it wait until the test lets them go.
#[derive(Debug)]
pub(crate) struct Gate {
    permits: Semaphore,
    entered: watch::Sender<usize>,
    inside: AtomicUsize,
    most_inside: AtomicUsize,
}

static GATES: LazyLock<Mutex<HashMap<String, Arc<Gate>>>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// The gate called `name` (one per test: tests share the process).
pub(crate) fn gate(name: &str) -> Arc<Gate> {
    let mut gates = GATES.lock().unwrap_or_else(|p| p.into_inner());
    gates
        .entry(name.to_owned())
        .or_insert_with(|| {
            Arc::new(Gate {
                permits: Semaphore::new(0),
                entered: watch::Sender::new(0),
                inside: AtomicUsize::new(0),
                most_inside: AtomicUsize::new(0),
            })
        })
        .clone()
}

impl Gate {
    /// Let `n` more calls through.
    pub(crate) fn release(&self, n: usize) {
        self.permits.add_permits(n);
    }

    /// Wait until `n` calls in all have arrived at the gate (bounded by [`LIMIT`]).
    pub(crate) async fn arrived(&self, n: usize) -> TestResult {
        let mut entered = self.entered.subscribe();
        within(&format!("{n} calls at the gate"), entered.wait_for(|k| *k >= n)).await??;
        Ok(())
    }

    /// How many calls arrived so far.
    pub(crate) fn arrivals(&self) -> usize {
        *self.entered.borrow()
    }

    /// The most calls ever waiting at once.
    pub(crate) fn most_waiting_at_once(&self) -> usize {
        self.most_inside.load(Ordering::SeqCst)
    }

    async fn pass(&self, signal: &Signal) -> Result<(), ProviderError> {
        let now = self.inside.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_inside.fetch_max(now, Ordering::SeqCst);
        self.entered.send_modify(|k| *k += 1);
        let outcome = tokio::select! {
            permit = self.permits.acquire() => match permit {
                Ok(permit) => {
                    permit.forget();
                    Ok(())
                }
                Err(_) => Err(ProviderError::cancelled()),
            },
            () = signal.cancelled() => Err(ProviderError::cancelled()),
        };
        self.inside.fetch_sub(1, Ordering::SeqCst);
        outcome
    }
}

/// A provider answering with the conversation it received (roles and texts, as JSON).
struct Echo {
    info: ProviderInfo,
    gate: Option<Arc<Gate>>,
    whoami: bool,
}

fn build_echo(options: &Value) -> Result<Arc<dyn Provider>, ProviderError> {
    let whoami = options.get("whoami").and_then(Value::as_bool).unwrap_or(false);
    let mut capabilities = Capabilities::none().with_streaming();
    if whoami {
        // As an agent runtime (claude-agent): it gets the MCP servers to connect itself, so it
        // can report them.
        capabilities = capabilities.with_runs_tools();
    }
    Ok(Arc::new(Echo {
        info: ProviderInfo::new("echo", capabilities),
        gate: options.get("gate").and_then(Value::as_str).map(gate),
        whoami,
    }))
}

#[async_trait]
impl Provider for Echo {
    fn info(&self) -> &ProviderInfo {
        &self.info
    }

    async fn create_response(
        &self,
        messages: &[Message],
        _tools: &ToolSet,
        model: &str,
        signal: &Signal,
        context: Option<&RequestContext>,
    ) -> Result<EventStream, ProviderError> {
        if let Some(gate) = &self.gate {
            gate.pass(signal).await?;
        }
        let heard: Vec<(&str, String)> = messages
            .iter()
            .map(|m| {
                let role = match m.role {
                    Role::User => "user",
                    Role::Assistant => "assistant",
                };
                (role, m.text())
            })
            .collect();
        let answer = if self.whoami {
            let context = context.cloned().unwrap_or_default();
            let servers: serde_json::Map<String, Value> = context
                .mcp_servers
                .iter()
                .map(|server| {
                    let value = match &server.transport {
                        McpTransport::Http { url, headers } => json!({ "url": url, "headers": headers }),
                        McpTransport::Stdio { command, .. } => json!({ "command": command }),
                    };
                    (server.name.clone(), value)
                })
                .collect();
            serde_json::to_string(&json!({
                "env": context.env,
                "metadata": context.metadata,
                "working_dir": context.working_dir,
                "system": context.system,
                "mcp_servers": servers,
                "debug": format!("{context:?}"),
            }))
        } else {
            serde_json::to_string(&heard)
        };
        let answer = answer.map_err(|e| ProviderError::protocol(e.to_string()))?;
        let events = vec![
            Ok(Event::Started {
                response_id: None,
                model: model.to_owned(),
                session_id: None,
                warnings: Vec::new(),
            }),
            Ok(Event::TextDelta { index: 0, text: answer }),
            Ok(Event::Finish {
                reason: FinishReason::Stop,
                usage: Usage::default(),
                metrics: Metrics::default(),
            }),
        ];
        Ok(Box::pin(futures::stream::iter(events)))
    }
}

/// The report of a run that ended, or an error saying what came instead.
pub(crate) fn ended(answer: RunAnswer) -> Fallible<SessionReport> {
    match answer {
        RunAnswer::Ended(report) => Ok(*report),
        RunAnswer::Accepted(accepted) => Err(format!("expected an ended run, got {accepted:?}").into()),
    }
}

/// The accepted job of a call that did not wait, or an error saying what came instead.
pub(crate) fn accepted(answer: RunAnswer) -> Fallible<JobAccepted> {
    match answer {
        RunAnswer::Accepted(accepted) => Ok(accepted),
        RunAnswer::Ended(report) => Err(format!("expected an accepted job, got {report:?}").into()),
    }
}

/// Wait until the session's status is `running` (woken by status changes, bounded).
pub(crate) async fn running(orchestrator: &Orchestrator, session_name: &str) -> TestResult {
    within(&format!("session {session_name} running"), async {
        loop {
            let report = orchestrator.status(session_name, Some(Duration::from_secs(5))).await?;
            if report.session.status == "running" {
                return Ok::<(), Box<dyn std::error::Error + Send + Sync>>(());
            }
            if report
                .job_status
                .as_deref()
                .is_some_and(|s| s != "pending" && s != "claimed" && s != "running")
            {
                return Err(format!("session {session_name} ended before running: {report:?}").into());
            }
        }
    })
    .await?
}

/// A tool context whose caller is the session `caller`.
pub(crate) fn called_by(caller: Option<&str>) -> ToolContext {
    let mut metadata = BTreeMap::new();
    if let Some(caller) = caller {
        metadata.insert(CALLER_METADATA_KEY.to_owned(), caller.to_owned());
    }
    ToolContext::new().with_metadata(metadata)
}

/// Call the tool `name` of `tools` as an MCP server would; bounded.
pub(crate) async fn call(tools: &ToolSet, name: &str, input: Value, cx: &ToolContext) -> Fallible<ToolResult> {
    let tool = tools.get(name).ok_or_else(|| format!("no tool {name}"))?;
    within(
        &format!("tool {name}"),
        patchbay::kit::run_tool(tool.as_ref(), input, cx),
    )
    .await
}

/// The text of a completed tool result, or an error with what it said instead.
pub(crate) fn ok_text(result: &ToolResult) -> Fallible<String> {
    if result.is_error() {
        return Err(format!("the tool failed: {}", result.text_content()).into());
    }
    Ok(result.text_content())
}

/// Create the session `name` with no job (a caller to name: callers must be sessions here).
pub(crate) async fn add_caller(orchestrator: &Orchestrator, name: &str) -> TestResult {
    let new = patchbay_orchestrator::store::NewSession {
        session_name: name.to_owned(),
        agent_name: "default".to_owned(),
        project_dir: ".".to_owned(),
        parent_session_name: None,
    };
    orchestrator.store().create_session(new).await?;
    Ok(())
}
