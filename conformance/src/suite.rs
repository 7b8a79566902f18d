//! `run_suite`: one libtest-mimic trial per shared scenario, for any provider.

use crate::RecordingExt;
use std::any::Any;
use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use libtest_mimic::{Arguments, Failed, Trial};
use patchbay_core::{Agent, Capabilities, Event, Provider, ProviderError, RequestContext, Retry, RetryPolicy, Signal};
use serde::Deserialize;

use crate::mock::{Chunking, MockServer, RecordedRequest, WireFormat};
use crate::normalize::Recording;
use crate::scenario::{CancelAt, Needs, SCENARIO_MODEL, Scenario, scenario_tools, scenarios};

/// How long one scenario may run before it counts as hung.
pub const SCENARIO_TIMEOUT: Duration = Duration::from_secs(90);

/// A provider prepared for one scenario, with whatever must live as long as the run (a mock
/// server, a temp dir).
pub struct Fixture {
    /// The provider under test.
    pub provider: Arc<dyn Provider>,
    /// Dropped after the run.
    pub guard: Option<Box<dyn Any + Send>>,
}

impl Fixture {
    /// A fixture with nothing to keep alive.
    pub fn new(provider: Arc<dyn Provider>) -> Self {
        Self { provider, guard: None }
    }

    /// Keep `guard` alive for the run.
    pub fn with_guard(mut self, guard: impl Any + Send) -> Self {
        self.guard = Some(Box::new(guard));
        self
    }
}

/// The future a fixture factory returns.
pub type FixtureFuture = Pin<Box<dyn Future<Output = Result<Fixture, ProviderError>> + Send>>;

type Factory = Arc<dyn Fn(Case) -> FixtureFuture + Send + Sync>;

/// What a target's factory builds a [`Fixture`] for: one shared scenario, served with one
/// [`Chunking`] (meaningful for wire providers behind a [`MockServer`]; others ignore it).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Case {
    /// The scenario.
    pub scenario: Scenario,
    /// How a mock server should write the bodies.
    pub chunking: Chunking,
}

impl Case {
    /// A case of `scenario` with the default chunking (one write per frame).
    pub fn new(scenario: Scenario) -> Self {
        Self {
            scenario,
            chunking: Chunking::default(),
        }
    }

    /// A loopback mock server speaking `wire` that serves this case's script with its chunking:
    /// what most wire providers' factories start, then point the provider at [`MockServer::url`].
    pub async fn mock(&self, wire: impl WireFormat) -> Result<MockServer, ProviderError> {
        MockServer::builder(wire)
            .script(&self.scenario.script)
            .chunking(self.chunking)
            .start()
            .await
            .map_err(|e| ProviderError::config("cannot start the mock server").with_source(e))
    }
}

/// Known gaps of a provider: scenario name to reason. Loaded from `conformance-baseline.toml`.
///
/// ```toml
/// [[gap]]
/// scenario = "thinking_then_tool_call"
/// reason = "the runtime hides signatures"
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Baseline {
    gaps: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct BaselineFile {
    #[serde(default)]
    gap: Vec<Gap>,
}

#[derive(Deserialize)]
struct Gap {
    scenario: String,
    reason: String,
}

impl Baseline {
    /// Parse baseline TOML; every gap needs a reason and must name a known scenario.
    pub fn parse(text: &str) -> Result<Self, String> {
        let file: BaselineFile = toml::from_str(text).map_err(|e| format!("bad baseline: {e}"))?;
        let known: Vec<&str> = scenarios().iter().map(|s| s.name).collect();
        let mut gaps = BTreeMap::new();
        for gap in file.gap {
            if !known.contains(&gap.scenario.as_str()) {
                return Err(format!("baseline names unknown scenario `{}`", gap.scenario));
            }
            if gap.reason.trim().is_empty() {
                return Err(format!("baseline gap `{}` has no reason", gap.scenario));
            }
            gaps.insert(gap.scenario, gap.reason);
        }
        Ok(Self { gaps })
    }

    /// Load a baseline file. A missing file is an error, not an empty baseline: a wrong path
    /// must not quietly forgive nothing (write an empty file for a provider without gaps).
    pub fn load(path: impl AsRef<Path>) -> Result<Self, String> {
        match std::fs::read_to_string(path.as_ref()) {
            Ok(text) => Self::parse(&text),
            Err(e) => Err(format!("cannot read the baseline {}: {e}", path.as_ref().display())),
        }
    }

    /// The reason a scenario is a known gap, if it is one.
    pub fn reason(&self, scenario: &str) -> Option<&str> {
        self.gaps.get(scenario).map(String::as_str)
    }
}

/// A provider under test: how to build it for a [`Case`]. What it can do is read from its
/// `info()` (one fixture is built to ask), never restated.
#[derive(Clone)]
pub struct Target {
    name: String,
    chunkings: Vec<Chunking>,
    mid_stream_cancel: bool,
    step_usage: bool,
    factory: Factory,
    baseline: Baseline,
    retry: RetryPolicy,
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Target")
            .field("name", &self.name)
            .field("chunkings", &self.chunkings)
            .field("baseline", &self.baseline)
            .finish_non_exhaustive()
    }
}

impl Target {
    /// A target named `name` whose fixtures `factory` builds, one per [`Case`].
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use patchbay_conformance::{Fixture, Target, run_suite};
    /// use patchbay_scripted::ScriptedProvider;
    /// let target = Target::new("scripted", |case| async move {
    ///     Ok(Fixture::new(Arc::new(ScriptedProvider::new(case.scenario.script.clone()))))
    /// })
    /// .with_baseline_file("tests/conformance-baseline.toml");
    /// run_suite(target)
    /// ```
    pub fn new<F, Fut>(name: impl Into<String>, factory: F) -> Self
    where
        F: Fn(Case) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Fixture, ProviderError>> + Send + 'static,
    {
        Self {
            name: name.into(),
            chunkings: vec![Chunking::PerFrame],
            mid_stream_cancel: true,
            step_usage: true,
            factory: Arc::new(move |case| Box::pin(factory(case))),
            baseline: Baseline::default(),
            retry: RetryPolicy::immediate(2),
        }
    }

    /// Use this baseline of known gaps.
    pub fn with_baseline(mut self, baseline: Baseline) -> Self {
        self.baseline = baseline;
        self
    }

    /// Load the baseline from a file (panics with a clear message on a missing or malformed
    /// file: a test setup error).
    pub fn with_baseline_file(self, path: impl AsRef<Path>) -> Self {
        match Baseline::load(path) {
            Ok(baseline) => self.with_baseline(baseline),
            Err(e) => panic!("{e}"),
        }
    }

    /// Declare that the target cannot be cancelled at a chosen point mid-stream.
    pub fn without_mid_stream_cancel(mut self) -> Self {
        self.mid_stream_cancel = false;
        self
    }

    /// Declare that the target reports usage once per turn, not per model call (an agent
    /// runtime over ACP): the `usage` of `StepFinished` events is left out of the comparison
    /// with the golden, on both sides. The `Finish` total is still compared.
    pub fn without_step_usage(mut self) -> Self {
        self.step_usage = false;
        self
    }

    /// The retry policy wrapped around the provider (default: two immediate retries).
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Run every scenario once per chunking (default: one write per frame). Trials are named
    /// `<name>::<scenario>` for [`Chunking::PerFrame`], `<name>-whole::...` for
    /// [`Chunking::Whole`] and `<name>-random-chunks::...` for [`Chunking::Random`].
    pub fn with_chunkings(mut self, chunkings: impl IntoIterator<Item = Chunking>) -> Self {
        self.chunkings = chunkings.into_iter().collect();
        self
    }

    /// The trial-name prefix of one chunking.
    fn variant_name(&self, chunking: Chunking) -> String {
        match chunking {
            Chunking::PerFrame => self.name.clone(),
            Chunking::Whole => format!("{}-whole", self.name),
            Chunking::Random { .. } => format!("{}-random-chunks", self.name),
        }
    }

    fn supports(&self, capabilities: &Capabilities, needs: &Needs) -> bool {
        match needs {
            Needs::Reasoning => capabilities.reasoning,
            Needs::MidStreamCancel => self.mid_stream_cancel,
        }
    }

    /// What the provider says it can do: one fixture is built (for the first scenario) and its
    /// `info()` read.
    pub async fn capabilities(&self) -> Result<Capabilities, ProviderError> {
        let scenario = scenarios()
            .into_iter()
            .next()
            .ok_or_else(|| ProviderError::config("no shared scenarios"))?;
        let fixture = (self.factory)(Case::new(scenario)).await?;
        Ok(fixture.provider.info().capabilities)
    }

    /// Run one scenario through the agent loop and record what came out.
    pub async fn record(&self, scenario: &Scenario) -> Result<Recording, ProviderError> {
        self.record_case(Case::new(scenario.clone()))
            .await
            .map(|(recording, _)| recording)
    }

    /// Run one case through the agent loop: what came out, and the requests the fixture's mock
    /// server received (empty when its guard is no [`MockServer`]).
    pub async fn record_case(&self, case: Case) -> Result<(Recording, Vec<RecordedRequest>), ProviderError> {
        let scenario = case.scenario.clone();
        let scenario = &scenario;
        let fixture = (self.factory)(case).await?;
        let provider: Arc<dyn Provider> = Arc::new(Retry::new(fixture.provider.clone(), self.retry.clone()));
        let mut agent = Agent::new(provider, SCENARIO_MODEL).with_tools(scenario_tools());
        if let Some(schema) = &scenario.output_schema {
            agent = agent.with_context(RequestContext::new().with_output_schema(schema.clone()));
        }
        let signal = Signal::new();
        let mut stream = agent.stream(scenario.messages.clone(), signal.clone());
        let mut recording = Recording::default();
        let mut text = String::new();
        let run = async {
            while let Some(item) = stream.next().await {
                match item {
                    Ok(event) => {
                        if let Event::TextDelta { text: delta, .. } = &event {
                            text.push_str(delta);
                            if let Some(CancelAt::AfterText(target)) = scenario.cancel
                                && text == target
                            {
                                signal.cancel();
                            }
                        }
                        recording.events.push(event);
                    }
                    Err(error) => {
                        recording.error = Some(error);
                        break;
                    }
                }
            }
            // Anything after the error is a violation the validator must see.
            while let Some(item) = stream.next().await {
                if let Ok(event) = item {
                    recording.events.push(event);
                }
            }
        };
        if tokio::time::timeout(SCENARIO_TIMEOUT, run).await.is_err() {
            return Err(ProviderError::new(
                patchbay_core::ErrorKind::Transport,
                format!(
                    "scenario `{}` did not finish within {SCENARIO_TIMEOUT:?}",
                    scenario.name
                ),
            ));
        }
        let requests = fixture
            .guard
            .as_ref()
            .and_then(|guard| guard.downcast_ref::<MockServer>())
            .map(MockServer::requests)
            .unwrap_or_default();
        drop(fixture);
        Ok((recording, requests))
    }
}

/// Why a trial failed. A known gap of the baseline forgives only [`TrialFailure::Golden`]: a
/// lifecycle violation, or a run that never produced a stream, fails a listed scenario too.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TrialFailure {
    /// The run failed outside the stream (the fixture could not be built, or it hung).
    Run(String),
    /// The events broke the lifecycle rules (the validator's findings).
    Lifecycle(String),
    /// The `Finish` metrics disagree with the events ([`crate::metrics::check_metrics`]).
    Metrics(String),
    /// The normalized outcome differs from the shared golden.
    Golden(String),
}

impl fmt::Display for TrialFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Run(message) => write!(f, "the run failed outside the stream: {message}"),
            Self::Lifecycle(message) | Self::Golden(message) => f.write_str(message),
            Self::Metrics(message) => write!(f, "the `Finish` metrics disagree with the events: {message}"),
        }
    }
}

/// Check one recording against the validator, the metrics rules and the shared golden snapshot.
pub fn check(scenario: &Scenario, recording: &Recording) -> Result<(), TrialFailure> {
    check_with(scenario, recording, true)
}

/// [`check`], leaving `StepFinished` usage out of the golden comparison unless `step_usage`.
fn check_with(scenario: &Scenario, recording: &Recording, step_usage: bool) -> Result<(), TrialFailure> {
    if let Err(violations) = recording.validate() {
        let list: Vec<String> = violations.iter().map(ToString::to_string).collect();
        return Err(TrialFailure::Lifecycle(format!(
            "lifecycle violations:\n  {}",
            list.join("\n  ")
        )));
    }
    crate::metrics::check_metrics(&recording.events).map_err(TrialFailure::Metrics)?;
    let outcome = recording.outcome();
    if std::env::var_os(RECORD_GOLDENS).is_some_and(|v| v == "1") {
        return record_golden(scenario, &outcome);
    }
    compare_golden(scenario.name, &outcome, step_usage).map_err(TrialFailure::Golden)
}

/// Set to `1` to (re)write a shared golden through insta (`INSTA_UPDATE` applies), for a new
/// scenario recorded from the reference provider. Otherwise goldens are only read: a run
/// never writes into the conformance crate (which may sit in `~/.cargo` for a third party).
pub const RECORD_GOLDENS: &str = "PATCHBAY_RECORD_GOLDENS";

/// Compares `outcome` with `snapshots/scenarios/<name>.snap`; the error shows a line diff.
fn compare_golden(name: &str, outcome: &crate::normalize::Outcome, step_usage: bool) -> Result<(), String> {
    let path = crate::snapshot::snapshot_root()
        .join("scenarios")
        .join(format!("{name}.snap"));
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read the golden {}: {e}", path.display()))?;
    // An insta file: a `---` header, then the JSON.
    let body = text.splitn(3, "---\n").nth(2).unwrap_or(&text);
    let mut golden: serde_json::Value =
        serde_json::from_str(body).map_err(|e| format!("the golden {} is not JSON: {e}", path.display()))?;
    let mut actual = serde_json::to_value(outcome).map_err(|e| format!("cannot show the outcome: {e}"))?;
    if !step_usage {
        for side in [&mut golden, &mut actual] {
            strip_step_usage(side);
        }
    }
    if golden == actual {
        return Ok(());
    }
    let expected = serde_json::to_string_pretty(&golden).unwrap_or_default();
    let actual = serde_json::to_string_pretty(&actual).unwrap_or_default();
    let diff = similar::TextDiff::from_lines(&expected, &actual);
    let shown = diff
        .unified_diff()
        .context_radius(3)
        .header("golden", "this run")
        .to_string();
    Err(format!("the outcome differs from the shared golden `{name}`:\n{shown}"))
}

/// Remove the `usage` of every `step_finished` event of an outcome.
fn strip_step_usage(outcome: &mut serde_json::Value) {
    let Some(events) = outcome.get_mut("events").and_then(serde_json::Value::as_array_mut) else {
        return;
    };
    for event in events {
        if event.get("type").and_then(serde_json::Value::as_str) == Some("step_finished")
            && let Some(object) = event.as_object_mut()
        {
            object.remove("usage");
        }
    }
}

/// Writes or checks the golden through insta, for recording a new scenario.
fn record_golden(scenario: &Scenario, outcome: &crate::normalize::Outcome) -> Result<(), TrialFailure> {
    let compared = std::panic::catch_unwind(AssertUnwindSafe(|| {
        crate::snapshot::scenario_settings().bind(|| {
            insta::assert_json_snapshot!(scenario.name, outcome);
        });
    }));
    compared.map_err(|_| TrialFailure::Golden(format!("the golden `{}` was not written", scenario.name)))
}

/// The verdict on one trial's result, given the baseline's reason if the scenario is a known gap.
fn verdict(scenario: &str, result: Result<(), TrialFailure>, gap: Option<&str>) -> Result<(), Failed> {
    match (result, gap) {
        (Ok(()), None) => Ok(()),
        (Err(TrialFailure::Golden(message)), Some(reason)) => {
            eprintln!("known gap `{scenario}` ({reason}):\n{message}");
            Ok(())
        }
        (Err(failure), None) => Err(failure.to_string().into()),
        (Err(failure), Some(reason)) => Err(format!(
            "`{scenario}` is a known gap ({reason}), which forgives only a difference from the golden; \
             this is not one:\n{failure}"
        )
        .into()),
        (Ok(()), Some(reason)) => Err(format!(
            "`{scenario}` is listed as a known gap ({reason}) but passes: remove it from the baseline"
        )
        .into()),
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot build a runtime: {e}"))
}

fn run_trial(target: &Target, case: Case) -> Result<(), Failed> {
    let runtime = runtime().map_err(Failed::from)?;
    let scenario = case.scenario.clone();
    let result = runtime
        .block_on(target.record_case(case))
        .map_err(|e| TrialFailure::Run(e.to_string()))
        .and_then(|(recording, _)| check_with(&scenario, &recording, target.step_usage));
    runtime.shutdown_timeout(Duration::from_secs(5));
    verdict(scenario.name, result, target.baseline.reason(scenario.name))
}

/// One trial per shared scenario and chunking for `target`; scenarios needing a capability the
/// provider's `info()` does not claim are ignored (listed, never silently passed). When no
/// fixture can be built to read the capabilities, every trial fails with the reason.
pub fn trials(target: &Target) -> Vec<Trial> {
    let capabilities = runtime().and_then(|runtime| {
        let capabilities = runtime.block_on(target.capabilities()).map_err(|e| e.to_string());
        runtime.shutdown_timeout(Duration::from_secs(5));
        capabilities
    });
    let mut trials = Vec::new();
    for &chunking in &target.chunkings {
        let prefix = target.variant_name(chunking);
        for scenario in scenarios() {
            let name = format!("{prefix}::{}", scenario.name);
            let trial = match &capabilities {
                Ok(capabilities) => {
                    let ignored = !scenario.needs.iter().all(|needs| target.supports(capabilities, needs));
                    let target = target.clone();
                    let case = Case { scenario, chunking };
                    Trial::test(name, move || run_trial(&target, case)).with_ignored_flag(ignored)
                }
                Err(error) => {
                    let message = format!("cannot build a fixture to read the provider's capabilities: {error}");
                    Trial::test(name, move || Err(message.into()))
                }
            };
            trials.push(trial);
        }
    }
    trials
}

/// Run the shared scenarios against `target` as a `harness = false` test binary, and exit.
pub fn run_suite(target: Target) -> ! {
    let args = Arguments::from_args();
    libtest_mimic::run(&args, trials(&target)).exit()
}
