//! The opt-in live check: the shared scenarios a real model can answer, against the real API,
//! every call recorded through the provider's recorder (`record_dir`) into a folder, the
//! lifecycle validator on every event stream (the live run's and each recorded body's).
//!
//! It runs only when asked: `PATCHBAY_LIVE=1` ([`LIVE_ENV`]) and the provider's key in its
//! variable (`ANTHROPIC_API_KEY`...). Without them each live trial shows as *ignored* and the
//! binary says why: CI has no keys, so this is the one check that may skip, and it never fails
//! for it. A real model does not follow a script, so the events are not compared with the
//! goldens: the run must end in `Finish` without an error, pass the validator, and leave
//! recordings that replay into valid streams.
//!
//! | Variable | Meaning |
//! |---|---|
//! | `PATCHBAY_LIVE` | `1` turns the live trials on |
//! | the provider's key variable | the key; unset or blank: skipped |
//! | `PATCHBAY_LIVE_RECORD_DIR` | where the calls are recorded (default: a new folder in the temp dir, printed at the end) |
//! | `PATCHBAY_LIVE_MODEL` | the model (default: the provider's, see [`Live::new`]) |
//! | `PATCHBAY_LIVE_BASE_URL` | another server of the same API (a proxy, a gateway, a local mock) |
//!
//! A provider crate (in-tree or third party) calls [`run_live`] from a `harness = false` test:
//!
//! ```no_run
//! use std::sync::Arc;
//! use patchbay_conformance::live::{Live, run_live};
//! use patchbay_conformance::mock::anthropic::AnthropicWire;
//! # use patchbay_core::{Provider, ProviderError};
//! # fn my_provider(key: &str, base_url: Option<&str>, record_dir: &std::path::Path)
//! #     -> Result<Arc<dyn Provider>, ProviderError> { unimplemented!() }
//! # fn my_replay(body: &[u8]) -> Vec<patchbay_conformance::Recording> { Vec::new() }
//! fn main() {
//!     let live = Live::new("anthropic", "ANTHROPIC_API_KEY", "claude-haiku-4-5", |setup| {
//!         my_provider(setup.key.expose(), setup.base_url.as_deref(), &setup.record_dir)
//!     })
//!     .with_replay(my_replay)
//!     .with_mock(AnthropicWire);
//!     run_live(live)
//! }
//! ```
//!
//! With [`Live::with_mock`], one more trial (`<name>::live_against_the_mock`) runs in every
//! build, CI included: the whole live check, through the same variables, pointed by
//! `PATCHBAY_LIVE_BASE_URL` at a loopback mock of the wire that serves the scenarios' scripted
//! turns. It proves the check works without a network or a key.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use libtest_mimic::{Arguments, Failed, Trial};
use patchbay_core::kit::Secret;
use patchbay_core::{Agent, Event, Provider, ProviderError, RequestContext, Retry, RetryPolicy, Signal};

use crate::mock::{MockServer, Serve, WireFormat};
use crate::normalize::Recording;
use crate::scenario::{Scenario, scenario, scenario_tools};

/// `1` turns the live trials on.
pub const LIVE_ENV: &str = "PATCHBAY_LIVE";
/// The folder the live calls are recorded into (default: a new one in the temp dir).
pub const LIVE_RECORD_DIR_ENV: &str = "PATCHBAY_LIVE_RECORD_DIR";
/// The model to ask (default: the one given to [`Live::new`]).
pub const LIVE_MODEL_ENV: &str = "PATCHBAY_LIVE_MODEL";
/// Another server of the same API (a proxy, a gateway, a local mock).
pub const LIVE_BASE_URL_ENV: &str = "PATCHBAY_LIVE_BASE_URL";

/// The shared scenarios a real model can answer, in the order they run: a plain answer, tool
/// calls (one, two steps, parallel, a failing tool), text in many scripts, structured output.
/// The others script what only a mock can do (errors, stalls, truncation, a megabyte line) or
/// need a server tool (`sources`).
pub const LIVE_SCENARIOS: [&str; 7] = [
    "text_only",
    "one_tool_call",
    "two_tool_steps",
    "parallel_tool_calls",
    "tool_error",
    "unicode_split",
    "structured_output",
];

/// The output cap of each live model call, so a run costs little.
pub const LIVE_MAX_TOKENS: u32 = 1024;

/// What a provider factory gets for a live run. `Debug` shows no key.
#[derive(Clone)]
#[non_exhaustive]
pub struct LiveSetup {
    /// The key, from the provider's variable (empty without one, see
    /// [`Live::with_optional_key`]).
    pub key: Secret,
    /// `PATCHBAY_LIVE_BASE_URL`, if set: the provider must send there instead of its default.
    pub base_url: Option<String>,
    /// The folder to record every call into (the provider's `record_dir`).
    pub record_dir: PathBuf,
    /// The model to ask.
    pub model: String,
}

impl fmt::Debug for LiveSetup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LiveSetup")
            .field("key", &self.key)
            .field(
                "base_url",
                &self.base_url.as_deref().map(patchbay_core::kit::redact_url),
            )
            .field("record_dir", &self.record_dir)
            .field("model", &self.model)
            .finish()
    }
}

type Factory = Arc<dyn Fn(&LiveSetup) -> Result<Arc<dyn Provider>, ProviderError> + Send + Sync>;
type Replay = Arc<dyn Fn(&[u8]) -> Vec<Recording> + Send + Sync>;
type StartMock =
    Arc<dyn Fn(Vec<Serve>) -> Pin<Box<dyn Future<Output = std::io::Result<MockServer>> + Send>> + Send + Sync>;

/// A provider's live check: its name, the variable holding its key, the default model, how to
/// build it for a [`LiveSetup`], and optionally how to replay a recorded body and which mock
/// stands in for the API in CI.
#[derive(Clone)]
pub struct Live {
    name: String,
    key_var: String,
    model: String,
    factory: Factory,
    replay: Option<Replay>,
    mock: Option<StartMock>,
    scenarios: Vec<&'static str>,
    key_required: bool,
}

impl fmt::Debug for Live {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Live")
            .field("name", &self.name)
            .field("key_var", &self.key_var)
            .field("model", &self.model)
            .field("scenarios", &self.scenarios)
            .finish_non_exhaustive()
    }
}

/// Why the live trials do not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped(pub String);

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What one live run found.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct LiveReport {
    /// The folder the calls were recorded into.
    pub record_dir: PathBuf,
    /// Each scenario run, with what was wrong with it (empty: passed).
    pub scenarios: Vec<(String, Vec<String>)>,
    /// The recorded bodies, below `record_dir`.
    pub recorded: Vec<PathBuf>,
}

impl LiveReport {
    /// Every problem, `scenario: problem`.
    pub fn problems(&self) -> Vec<String> {
        self.scenarios
            .iter()
            .flat_map(|(name, problems)| problems.iter().map(move |p| format!("{name}: {p}")))
            .collect()
    }
}

impl Live {
    /// The live check of provider `name`, whose key is in `key_var`, asking `model` unless
    /// `PATCHBAY_LIVE_MODEL` names another; `factory` builds the provider for a [`LiveSetup`]
    /// (key, base URL if overridden, the folder to record into).
    pub fn new<F>(name: impl Into<String>, key_var: impl Into<String>, model: impl Into<String>, factory: F) -> Self
    where
        F: Fn(&LiveSetup) -> Result<Arc<dyn Provider>, ProviderError> + Send + Sync + 'static,
    {
        Self {
            name: name.into(),
            key_var: key_var.into(),
            model: model.into(),
            factory: Arc::new(factory),
            replay: None,
            mock: None,
            scenarios: LIVE_SCENARIOS.to_vec(),
            key_required: true,
        }
    }

    /// Run with `PATCHBAY_LIVE=1` alone when the key variable is unset (the key is then empty):
    /// for a server that may need none, such as a local Ollama.
    pub fn with_optional_key(mut self) -> Self {
        self.key_required = false;
        self
    }

    /// Replay each recorded body into its responses (the crate's translator), so every recorded
    /// stream passes the validator too. Without it only the live events are validated.
    pub fn with_replay(mut self, replay: impl Fn(&[u8]) -> Vec<Recording> + Send + Sync + 'static) -> Self {
        self.replay = Some(Arc::new(replay));
        self
    }

    /// Add the `live_against_the_mock` trial: the whole check against a loopback `wire` mock
    /// serving the scenarios' scripted turns, through `PATCHBAY_LIVE_BASE_URL`, in every run.
    pub fn with_mock(mut self, wire: impl WireFormat + Clone) -> Self {
        self.mock = Some(Arc::new(move |items: Vec<Serve>| {
            let builder = MockServer::builder(wire.clone()).serve(items);
            Box::pin(builder.start())
        }));
        self
    }

    /// Run these shared scenarios instead of [`LIVE_SCENARIOS`] (names the corpus does not have
    /// are reported as failures).
    pub fn with_scenarios(mut self, names: impl IntoIterator<Item = &'static str>) -> Self {
        self.scenarios = names.into_iter().collect();
        self
    }

    /// The setup the variables ask for (read through `var`: unset and blank are the same), or
    /// why the live check is skipped. Without `PATCHBAY_LIVE_RECORD_DIR` the calls go into a new
    /// folder in the temp dir.
    pub fn setup(&self, var: impl Fn(&str) -> Option<String>) -> Result<LiveSetup, Skipped> {
        let var = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        if var(LIVE_ENV).as_deref() != Some("1") {
            return Err(Skipped(format!(
                "live check of `{}` skipped: set {LIVE_ENV}=1 and {} to run it against the real API",
                self.name, self.key_var
            )));
        }
        let key = match var(&self.key_var) {
            Some(key) => key,
            None if !self.key_required => String::new(),
            None => {
                return Err(Skipped(format!(
                    "live check of `{}` skipped: {LIVE_ENV}=1 but {} is not set",
                    self.name, self.key_var
                )));
            }
        };
        let record_dir = match var(LIVE_RECORD_DIR_ENV) {
            Some(dir) => PathBuf::from(dir),
            None => {
                let stamp = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_millis();
                std::env::temp_dir().join(format!("patchbay-live-{}-{}-{stamp}", self.name, std::process::id()))
            }
        };
        Ok(LiveSetup {
            key: Secret::new(key),
            base_url: var(LIVE_BASE_URL_ENV),
            record_dir,
            model: var(LIVE_MODEL_ENV).unwrap_or_else(|| self.model.clone()),
        })
    }

    /// Run every scenario in order against the provider `setup` builds, and check the streams
    /// and the recordings.
    pub async fn run(&self, setup: &LiveSetup) -> LiveReport {
        let mut report = LiveReport {
            record_dir: setup.record_dir.clone(),
            ..LiveReport::default()
        };
        for name in &self.scenarios {
            let problems = self.run_scenario(name, setup, &mut report.recorded).await;
            report.scenarios.push((name.to_string(), problems));
        }
        report
    }

    /// One scenario: the live run through the agent loop, then the recordings it added.
    async fn run_scenario(&self, name: &str, setup: &LiveSetup, recorded: &mut Vec<PathBuf>) -> Vec<String> {
        let Some(scenario) = scenario(name) else {
            return vec![format!("no shared scenario `{name}`")];
        };
        if let Err(error) = std::fs::create_dir_all(&setup.record_dir) {
            return vec![format!("cannot create {}: {error}", setup.record_dir.display())];
        }
        let before = recorded_bodies(&setup.record_dir);
        let provider = match (self.factory)(setup) {
            Ok(provider) => provider,
            Err(error) => return vec![format!("the provider cannot be built: {error}")],
        };
        let mut problems = check_live_run(&run_agent(provider, &scenario, &setup.model).await);
        let new: Vec<(PathBuf, String)> = recorded_bodies(&setup.record_dir)
            .into_iter()
            .filter(|(path, _)| !before.contains_key(path))
            .collect();
        if new.is_empty() {
            problems.push(format!("nothing was recorded into {}", setup.record_dir.display()));
        }
        for (path, _) in new {
            problems.extend(self.check_recorded(&setup.record_dir.join(&path)));
            recorded.push(setup.record_dir.join(path));
        }
        problems
    }

    /// A recorded body: it exists, and (with a replay) each response in it passes the validator.
    fn check_recorded(&self, path: &Path) -> Vec<String> {
        let body = match std::fs::read(path) {
            Ok(body) => body,
            Err(error) => return vec![format!("the recorded body {} cannot be read: {error}", path.display())],
        };
        let Some(replay) = &self.replay else {
            return Vec::new();
        };
        let responses = replay(&body);
        if responses.is_empty() {
            return vec![format!("{} replays into no response", path.display())];
        }
        responses
            .iter()
            .filter_map(|recording| {
                let violations = recording.validate().err().map(|v| {
                    let list: Vec<String> = v.iter().map(ToString::to_string).collect();
                    format!("{} breaks the lifecycle: {}", path.display(), list.join("; "))
                });
                let error = recording
                    .error
                    .as_ref()
                    .map(|e| format!("{} replays into an error: {e}", path.display()));
                violations.or(error)
            })
            .collect()
    }

    /// The trials of this check: one per scenario (ignored unless the variables ask for a live
    /// run), and `live_against_the_mock` when a mock is set. `var` reads the variables.
    pub fn trials(&self, var: impl Fn(&str) -> Option<String>) -> (Vec<Trial>, Option<Skipped>) {
        let setup = self.setup(&var);
        let skipped = setup.as_ref().err().cloned();
        let mut trials = Vec::new();
        for name in self.scenarios.clone() {
            let live = self.clone();
            let setup = setup.clone().ok();
            let ignored = setup.is_none();
            let trial = Trial::test(format!("{}::live::{name}", self.name), move || {
                let Some(setup) = setup else {
                    return Ok(());
                };
                let live = live.with_scenarios([name]);
                let report = block_on(live.run(&setup))?;
                eprintln!("{name}: recorded into {}", report.record_dir.display());
                verdict(&report)
            });
            trials.push(trial.with_ignored_flag(ignored));
        }
        if self.mock.is_some() {
            let live = self.clone();
            trials.push(Trial::test(
                format!("{}::live_against_the_mock", self.name),
                move || {
                    let report = block_on(live.check_against_the_mock())??;
                    verdict(&report)
                },
            ));
        }
        (trials, skipped)
    }

    /// The whole check against the mock of [`with_mock`](Self::with_mock), through the same
    /// variables a user sets (`PATCHBAY_LIVE=1`, a dummy key, `PATCHBAY_LIVE_BASE_URL` at the
    /// mock, `PATCHBAY_LIVE_RECORD_DIR` a new temp folder): every scenario passes, and each
    /// model call left one recorded body that replays into a valid stream.
    pub async fn check_against_the_mock(&self) -> Result<LiveReport, String> {
        let start = self.mock.as_ref().ok_or("no mock: see Live::with_mock")?;
        let mut turns = Vec::new();
        for name in &self.scenarios {
            let scenario = scenario(name).ok_or_else(|| format!("no shared scenario `{name}`"))?;
            turns.extend(scenario.script.turns.iter().cloned().map(Serve::Turn));
        }
        let calls = turns.len();
        let server = start(turns)
            .await
            .map_err(|e| format!("the mock does not start: {e}"))?;
        let dir = std::env::temp_dir().join(format!(
            "patchbay-live-mock-{}-{}-{}",
            self.name,
            std::process::id(),
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos()
        ));
        let vars: BTreeMap<&str, String> = [
            (LIVE_ENV, "1".to_string()),
            (self.key_var.as_str(), "live-mock-key".to_string()),
            (LIVE_BASE_URL_ENV, server.url()),
            (LIVE_RECORD_DIR_ENV, dir.display().to_string()),
        ]
        .into_iter()
        .collect();
        let setup = self
            .setup(|name| vars.get(name).cloned())
            .map_err(|skipped| skipped.to_string())?;
        let mut report = self.run(&setup).await;
        if report.recorded.len() != calls {
            report.scenarios.push((
                "recordings".into(),
                vec![format!(
                    "{calls} model calls, {} recorded bodies: {:?}",
                    report.recorded.len(),
                    report.recorded
                )],
            ));
        }
        if report.problems().is_empty() {
            let _ = std::fs::remove_dir_all(&dir);
        }
        Ok(report)
    }
}

/// The recorded bodies below `dir` (by their manifest lines: path below `dir` to scenario).
fn recorded_bodies(dir: &Path) -> BTreeMap<PathBuf, String> {
    crate::fixtures::manifest_in(dir)
        .map(|entries| {
            entries
                .into_iter()
                .map(|entry| (PathBuf::from(entry.local_path), entry.scenario))
                .collect()
        })
        .unwrap_or_default()
}

/// The agent loop over `provider` with the scenario's messages, tools and output schema, the
/// output capped at [`LIVE_MAX_TOKENS`]; overloads and rate limits retried (a live API has both).
async fn run_agent(provider: Arc<dyn Provider>, scenario: &Scenario, model: &str) -> Recording {
    let provider: Arc<dyn Provider> = Arc::new(Retry::new(provider, RetryPolicy::default()));
    let mut context = RequestContext::new().with_max_tokens(LIVE_MAX_TOKENS);
    if let Some(schema) = &scenario.output_schema {
        context = context.with_output_schema(schema.clone());
    }
    let agent = Agent::new(provider, model)
        .with_tools(scenario_tools())
        .with_context(context);
    let mut stream = agent.stream(scenario.messages.clone(), Signal::new());
    let mut recording = Recording::default();
    let run = async {
        while let Some(item) = stream.next().await {
            match item {
                Ok(event) => recording.events.push(event),
                Err(error) => {
                    recording.error = Some(error);
                    break;
                }
            }
        }
        while let Some(Ok(event)) = stream.next().await {
            recording.events.push(event);
        }
    };
    if tokio::time::timeout(LIVE_TIMEOUT, run).await.is_err() {
        recording.error = Some(ProviderError::new(
            patchbay_core::ErrorKind::Transport,
            format!("the live run did not finish within {LIVE_TIMEOUT:?}"),
        ));
    }
    recording
}

/// How long one live scenario may take.
const LIVE_TIMEOUT: Duration = Duration::from_secs(300);

/// The live run ended in `Finish`, without an error, within the lifecycle rules.
fn check_live_run(recording: &Recording) -> Vec<String> {
    let mut problems = Vec::new();
    if let Err(violations) = recording.validate() {
        let list: Vec<String> = violations.iter().map(ToString::to_string).collect();
        problems.push(format!("lifecycle violations: {}", list.join("; ")));
    }
    if let Some(error) = &recording.error {
        problems.push(format!("the run failed: {error} ({:?})", error.kind()));
    } else if !matches!(recording.events.last(), Some(Event::Finish { .. })) {
        problems.push("the run did not end in Finish".into());
    }
    problems
}

fn verdict(report: &LiveReport) -> Result<(), Failed> {
    let problems = report.problems();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{} problems:\n  {}", problems.len(), problems.join("\n  ")).into())
    }
}

fn block_on<T>(future: impl Future<Output = T>) -> Result<T, Failed> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot build a runtime: {e}"))?;
    let out = runtime.block_on(future);
    runtime.shutdown_timeout(Duration::from_secs(5));
    Ok(out)
}

/// Run the live check of `live` as a `harness = false` test binary, and exit: the scenarios
/// one at a time (a real API's rate limits), each ignored with the reason printed when
/// `PATCHBAY_LIVE=1` or the key is missing (never a failure: CI has no keys), and
/// `live_against_the_mock` when a mock is set. The folder the calls went into is printed.
pub fn run_live(live: Live) -> ! {
    let mut args = Arguments::from_args();
    args.test_threads = Some(1);
    let (trials, skipped) = live.trials(|name| std::env::var(name).ok());
    if let Some(skipped) = &skipped {
        println!("{skipped}");
    }
    libtest_mimic::run(&args, trials).exit()
}
