//! Spare CLIs (`spares`, off by default): CLIs started ahead of demand with the launch of the
//! latest new session, initialized (`initialize` answered) and idle until the next new session
//! whose launch matches takes one; each taken spare is replaced in the background.
//!
//! The CLI makes no API call and writes no session file before its first user message (it
//! reads its settings, starts its MCP servers, answers `initialize`), so a spare holds nothing
//! that belongs to a session: the session id is the CLI's own, fixed at its first turn.
//!
//! A spare that exited, or waited longer than `spare_max_age`, is never handed out. Dropping
//! the provider stops every spare (stdin EOF, then SIGTERM and SIGKILL on a thread, each
//! reaped) and every spare still starting (its task is cancelled, which drops and so stops
//! its process).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::control::{self, INIT_ID};
use crate::launch::{Fingerprint, LaunchPlan, PlanFile};
use crate::process::{CliProcess, Grace};
use crate::spawn::{Launch, spawn_launch};

/// What must be equal for a spare to serve a call: the launch's fingerprint (the same rule as
/// the keep-alive pool), the program, and the line cap its reader was made with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Key {
    pub(crate) fingerprint: Fingerprint,
    pub(crate) program: PathBuf,
    pub(crate) max_line: usize,
}

/// How a spare is started: a new session's launch (no session flags), its files moved to the
/// spare's own directory. No `Debug`: `env` holds keys, the files may hold bearer headers.
pub(crate) struct Template {
    key: Key,
    args: Vec<String>,
    env: BTreeMap<String, String>,
    inherit_env: bool,
    cwd: Option<PathBuf>,
    /// (path relative to the run directory, text, what writing it is)
    files: Vec<(PathBuf, String, &'static str)>,
    /// The run directory the plan was made for (its prefix is replaced in `args`).
    dir: PathBuf,
    initialize: Value,
    grace: Grace,
    init_timeout: Duration,
}

impl Template {
    /// The template of `plan` (a new session's, made in `dir`).
    pub(crate) fn new(key: Key, plan: &LaunchPlan, dir: &Path, grace: Grace, init_timeout: Duration) -> Self {
        let files = plan
            .files
            .iter()
            .filter_map(|f| {
                let relative = f.path.strip_prefix(dir).ok()?.to_path_buf();
                Some((relative, f.text.clone(), f.what))
            })
            .collect();
        Self {
            key,
            args: plan.args.clone(),
            env: plan.env.clone(),
            inherit_env: plan.inherit_env,
            cwd: plan.cwd.clone(),
            files,
            dir: dir.to_path_buf(),
            initialize: plan.initialize.clone(),
            grace,
            init_timeout,
        }
    }

    /// Start a CLI of this launch and wait for its answer to `initialize`; `None` (the process
    /// stopped) if it cannot start, refuses, asks something, exits or does not answer in time.
    async fn start(&self) -> Option<(CliProcess, tempfile::TempDir)> {
        let dir = tempfile::Builder::new()
            .prefix("patchbay-claude-spare-")
            .tempdir()
            .ok()?;
        let old = self.dir.display().to_string();
        let new = dir.path().display().to_string();
        let args: Vec<String> = self
            .args
            .iter()
            .map(|arg| match arg.strip_prefix(old.as_str()) {
                Some(rest) => format!("{new}{rest}"),
                None => arg.clone(),
            })
            .collect();
        let files: Vec<PlanFile> = self
            .files
            .iter()
            .map(|(path, text, what)| PlanFile {
                path: dir.path().join(path),
                text: text.clone(),
                what,
            })
            .collect();
        let launch = Launch {
            args: &args,
            env: &self.env,
            inherit_env: self.inherit_env,
            cwd: self.cwd.as_deref(),
            files: &files,
        };
        let spawned = spawn_launch(&self.key.program, &launch, self.grace, self.key.max_line);
        let mut process = match spawned {
            Ok(process) => process,
            Err(error) => {
                tracing::debug!(%error, "a spare CLI did not start");
                return None;
            }
        };
        let request = control::request_line(INIT_ID, self.initialize.clone());
        process.write_line(&request).await.ok()?;
        let answered = tokio::time::timeout(self.init_timeout, initialized(&mut process)).await;
        if answered != Ok(true) {
            tracing::debug!(pid = process.pid(), "a spare CLI did not answer `initialize`");
            return None;
        }
        // Idle between turns: a stop is stdin EOF first.
        process.set_in_turn(false);
        Some((process, dir))
    }
}

/// Read until the answer to `initialize`: whether it succeeded. A control request before it
/// (nobody can answer it before the session) makes the CLI unfit as a spare.
async fn initialized(process: &mut CliProcess) -> bool {
    loop {
        let line = match process.stdout.next_line().await {
            Ok(Some(line)) => line,
            Ok(None) | Err(_) => return false,
        };
        let Ok(value) = serde_json::from_slice::<Value>(line.trim_ascii()) else {
            continue;
        };
        match value.get("type").and_then(Value::as_str) {
            Some("control_response") => {
                let response = &value["response"];
                if response.get("request_id").and_then(Value::as_str) == Some(INIT_ID) {
                    return response.get("subtype").and_then(Value::as_str) == Some("success");
                }
            }
            Some("control_request") => return false,
            _ => {}
        }
    }
}

/// A started, initialized CLI waiting for a new session.
pub(crate) struct Spare {
    pub(crate) process: CliProcess,
    /// Its files (system prompt, MCP config): they live as long as the process.
    pub(crate) dir: tempfile::TempDir,
    id: u64,
    born: Instant,
}

#[derive(Default)]
struct State {
    template: Option<Arc<Template>>,
    want: usize,
    max_age: Option<Duration>,
    ready: Vec<Spare>,
    /// Spares being started (of any generation).
    starting: usize,
    /// Bumped when the template changes: spares of an older one are stopped when they arrive.
    generation: u64,
    next_id: u64,
}

/// The spares of one provider. Dropping it stops them all and cancels those starting.
pub(crate) struct Spares {
    state: Mutex<State>,
    stop: CancellationToken,
}

impl Default for Spares {
    fn default() -> Self {
        Self {
            state: Mutex::new(State::default()),
            stop: CancellationToken::new(),
        }
    }
}

impl Drop for Spares {
    fn drop(&mut self) {
        // Spares still starting: their tasks drop (and so stop) their processes. Ready ones are
        // dropped with the state, each stopped and reaped on a thread.
        self.stop.cancel();
    }
}

impl std::fmt::Debug for Spares {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (ready, starting) = self.state.lock().map(|s| (s.ready.len(), s.starting)).unwrap_or((0, 0));
        write!(f, "Spares({ready} ready, {starting} starting)")
    }
}

impl Spares {
    /// A live spare of the launch `key`, if one is ready. Spares that exited or are too old
    /// are stopped on the way (a cold start then, no error).
    pub(crate) fn take(&self, key: &Key) -> Option<Spare> {
        let mut discarded = Vec::new();
        let taken = {
            let mut state = self.state.lock().ok()?;
            if state.template.as_ref().is_none_or(|t| t.key != *key) {
                return None;
            }
            let max_age = state.max_age;
            let mut taken = None;
            while taken.is_none() && !state.ready.is_empty() {
                let mut spare = state.ready.remove(0);
                let stale = max_age.is_some_and(|age| spare.born.elapsed() >= age);
                if stale || spare.process.has_exited() {
                    discarded.push(spare);
                } else {
                    taken = Some(spare);
                }
            }
            taken
        };
        if !discarded.is_empty() {
            tracing::debug!(count = discarded.len(), "spare CLIs that exited or aged were stopped");
        }
        drop(discarded);
        taken
    }

    /// Keep `want` spares of `template` (the latest new session's launch): a new launch
    /// replaces the spares of the previous one; missing ones start in the background.
    pub(crate) fn learn(self: &Arc<Self>, template: Template, want: usize, max_age: Option<Duration>) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let mut replaced = Vec::new();
        if state.template.as_ref().is_none_or(|t| t.key != template.key) {
            state.template = Some(Arc::new(template));
            state.generation += 1;
            replaced = std::mem::take(&mut state.ready);
        }
        state.want = want;
        state.max_age = max_age;
        self.fill(&mut state);
        drop(state);
        drop(replaced);
    }

    /// Start the spares missing (needs a Tokio runtime; without one, none start).
    fn fill(self: &Arc<Self>, state: &mut State) {
        let Some(template) = state.template.clone() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        while state.ready.len() + state.starting < state.want {
            state.starting += 1;
            let spares = Arc::downgrade(self);
            let stop = self.stop.clone();
            let generation = state.generation;
            let template = template.clone();
            runtime.spawn(async move {
                let started = tokio::select! {
                    started = template.start() => started,
                    // The provider is gone: dropping `start` stops the process it started.
                    () = stop.cancelled() => None,
                };
                if let Some(spares) = spares.upgrade() {
                    spares.arrive(started, generation);
                }
            });
        }
    }

    /// A spare finished starting (or failed to: no new attempt until the next new session).
    fn arrive(self: &Arc<Self>, started: Option<(CliProcess, tempfile::TempDir)>, generation: u64) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        state.starting = state.starting.saturating_sub(1);
        let Some((process, dir)) = started else {
            return;
        };
        if generation != state.generation || self.stop.is_cancelled() {
            // Made for a launch that was replaced meanwhile: stop it, start one of the new.
            drop(process);
            self.fill(&mut state);
            return;
        }
        state.next_id += 1;
        let id = state.next_id;
        tracing::debug!(pid = process.pid(), "spare CLI ready");
        state.ready.push(Spare {
            process,
            dir,
            id,
            born: Instant::now(),
        });
        if let Some(age) = state.max_age {
            self.expire_after(id, age);
        }
    }

    /// Replace the spare `id` by a fresh one if it is still unused after `age`.
    fn expire_after(self: &Arc<Self>, id: u64, age: Duration) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let spares: Weak<Self> = Arc::downgrade(self);
        let stop = self.stop.clone();
        runtime.spawn(async move {
            tokio::select! {
                () = tokio::time::sleep(age) => {}
                () = stop.cancelled() => return,
            }
            let Some(spares) = spares.upgrade() else {
                return;
            };
            let Ok(mut state) = spares.state.lock() else {
                return;
            };
            let Some(index) = state.ready.iter().position(|s| s.id == id) else {
                return;
            };
            let old = state.ready.remove(index);
            tracing::debug!(pid = old.process.pid(), "an unused spare CLI aged out");
            spares.fill(&mut state);
            drop(state);
            drop(old);
        });
    }

    /// How many spares are ready.
    pub(crate) fn ready(&self) -> usize {
        self.state.lock().map(|s| s.ready.len()).unwrap_or(0)
    }
}
