//! The three real ACP agents `.ci/peers/acp.sh` installs (Zed's Claude adapter, the Gemini CLI,
//! Zed's Codex adapter) driven by the provider's presets, offline against patchbay's own model
//! mocks (`PEERS-NOTES.md` says how each one is pointed there): an answer, a host tool over MCP
//! with the request context, a permission allowed and denied, cancel and drop, and sessions.
//!
//! Trials of the `conformance` binary named `real::<agent>::<test>`: without the agent they show
//! as ignored with the install command, and fail when CI=true. Each test has its own mock, temp
//! folder and provider; every process an agent starts carries `PATCHBAY_TEST_TAG=<the test's
//! temp folder>` in its environment, which is how the tests see that none is left.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::StreamExt;
use libtest_mimic::Trial;
use patchbay_acp::{AcpConfig, AcpProvider, Preset};
use patchbay_conformance::mock::anthropic::AnthropicWire;
use patchbay_conformance::mock::gemini::GeminiWire;
use patchbay_conformance::mock::openai_responses::ResponsesWire;
use patchbay_conformance::mock::{MockServer, Serve};
use patchbay_conformance::peers::{self, Peer};
use patchbay_core::context::{Approval, ApprovalHandler, ApprovalRequest, Session};
use patchbay_core::{
    ErrorKind, Event, EventStream, ExecutedBy, FinishReason, FnTool, Message, Provider, RequestContext, Signal,
    ToolContext, ToolResult, ToolSet, Warning,
};
use patchbay_scripted::{End, Part, Response, Turn};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::support::{Run, call_model, none_left, running_with};

/// How long one call may take, start to end (an agent starts in 2-5 s; a loaded machine is
/// slower): a hung agent fails its test instead of hanging it.
const CALL_LIMIT: Duration = Duration::from_secs(120);
/// How long a cancelled stream may take to end with `Cancelled`.
const CANCEL_LIMIT: Duration = Duration::from_secs(10);
/// The environment variable that tags every process of a test.
const TAG: &str = "PATCHBAY_TEST_TAG";
/// The project id the host tool reports from its context.
const PROJECT: &str = "p-real-42";
/// The text the stalled answers send before stalling.
const STALL_TEXT: &str = "Let me think about that";

/// One of the real agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Agent {
    Claude,
    Gemini,
    Codex,
}

impl Agent {
    fn name(self) -> &'static str {
        match self {
            Self::Claude => "claude",
            Self::Gemini => "gemini",
            Self::Codex => "codex",
        }
    }

    fn peer(self) -> Peer {
        match self {
            Self::Claude => peers::acp_claude(),
            Self::Gemini => peers::acp_gemini(),
            Self::Codex => peers::acp_codex(),
        }
    }

    fn preset(self) -> Preset {
        match self {
            Self::Claude => Preset::Claude,
            Self::Gemini => Preset::Gemini,
            Self::Codex => Preset::Codex,
        }
    }

    /// The model the call pins (one the agent knows: Gemini's `auto` would add a router call,
    /// an unknown Codex model a warning message).
    fn model(self) -> &'static str {
        match self {
            Self::Claude => "claude-sonnet-4-6",
            Self::Gemini => "gemini-2.5-flash",
            Self::Codex => "gpt-5.4",
        }
    }

    /// The name the agent's model calls the host's `get_weather` by (for Codex the mock turns
    /// it into the `mcp__host` namespace and the name `get_weather`).
    fn weather_tool(self) -> &'static str {
        match self {
            Self::Claude | Self::Codex => "mcp__host__get_weather",
            Self::Gemini => "mcp_host_get_weather",
        }
    }

    /// A mock of the agent's model API serving `turns`.
    async fn mock(self, turns: Vec<Serve>) -> MockServer {
        let builder = match self {
            Self::Claude => MockServer::builder(AnthropicWire),
            Self::Gemini => MockServer::builder(GeminiWire),
            Self::Codex => MockServer::builder(ResponsesWire::new().with_tool_namespaces()),
        };
        builder
            .serve(turns)
            .start()
            .await
            .unwrap_or_else(|e| panic!("mock server: {e}"))
    }

    /// The variables that point the agent at the mock at `url`, offline.
    fn env(self, url: &str) -> Vec<(&'static str, String)> {
        let fixed =
            |pairs: &[(&'static str, &str)]| pairs.iter().map(|(k, v)| (*k, (*v).to_owned())).collect::<Vec<_>>();
        match self {
            Self::Claude => {
                let mut env = fixed(&[
                    ("ANTHROPIC_API_KEY", "dummy"),
                    ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
                    ("DISABLE_TELEMETRY", "1"),
                    ("DISABLE_AUTOUPDATER", "1"),
                    ("DISABLE_ERROR_REPORTING", "1"),
                    ("ENABLE_TOOL_SEARCH", "false"),
                    ("CLAUDE_CODE_MAX_RETRIES", "0"),
                ]);
                env.push(("ANTHROPIC_BASE_URL", url.to_owned()));
                // The adapter offers the bypass mode as root when `IS_SANDBOX` is set at all,
                // its bundled CLI accepts it only for `1` and exits otherwise ("cannot be used
                // with root/sudo privileges"): any other inherited value breaks `session/new`.
                if std::env::var_os("IS_SANDBOX").is_some_and(|value| value != "1") {
                    env.push(("IS_SANDBOX", "1".to_owned()));
                }
                env
            }
            Self::Gemini => {
                let mut env = fixed(&[("GEMINI_API_KEY", "dummy"), ("GEMINI_TELEMETRY_ENABLED", "false")]);
                env.push(("GOOGLE_GEMINI_BASE_URL", url.to_owned()));
                env
            }
            Self::Codex => fixed(&[("MOCK_API_KEY", "dummy"), ("RUST_LOG", "warn")]),
        }
    }

    /// Files the agent's home needs (paths relative to the home).
    fn home_files(self, url: &str) -> Vec<(&'static str, String)> {
        match self {
            Self::Claude => Vec::new(),
            Self::Gemini => vec![(
                ".gemini/settings.json",
                json!({
                    "security": { "auth": { "selectedType": "gemini-api-key" }, "folderTrust": { "enabled": false } },
                    "privacy": { "usageStatisticsEnabled": false },
                    "telemetry": { "enabled": false },
                    "general": { "disableAutoUpdate": true, "disableUpdateNag": true },
                    "model": { "name": self.model() },
                })
                .to_string(),
            )],
            Self::Codex => vec![(
                ".codex/config.toml",
                format!(
                    "model = \"{model}\"\nmodel_provider = \"mock\"\napproval_policy = \"on-request\"\n\
                     sandbox_mode = \"read-only\"\n\n[model_providers.mock]\nname = \"Mock\"\n\
                     base_url = \"{url}/v1\"\nwire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n\
                     request_max_retries = 0\nstream_max_retries = 0\n",
                    model = self.model(),
                ),
            )],
        }
    }

    /// The preset's own configuration variables for a home at `home` (what the provider sets
    /// in its temporary home; needed when the test keeps a home of its own).
    fn home_env(self, home: &Path) -> Vec<(&'static str, String)> {
        let at = |path: &str| home.join(path).display().to_string();
        let mut env = vec![
            ("HOME", home.display().to_string()),
            ("TMPDIR", home.display().to_string()),
            ("XDG_CONFIG_HOME", at(".config")),
            ("XDG_DATA_HOME", at(".local/share")),
            ("XDG_STATE_HOME", at(".local/state")),
            ("XDG_CACHE_HOME", at(".cache")),
        ];
        match self {
            Self::Claude => env.push(("CLAUDE_CONFIG_DIR", at(".claude"))),
            Self::Gemini => env.extend([
                ("GEMINI_CLI_HOME", home.display().to_string()),
                ("GEMINI_CLI_SYSTEM_SETTINGS_PATH", at("system-settings.json")),
                ("GEMINI_CLI_SYSTEM_DEFAULTS_PATH", at("system-defaults.json")),
            ]),
            Self::Codex => env.push(("CODEX_HOME", at(".codex"))),
        }
        env
    }
}

/// One test's world: the mock, and a temp folder whose path tags the agent's processes (its
/// `work` folder is the session's working directory, its `home` folder a home that outlives
/// one agent process when a test needs one).
struct World {
    agent: Agent,
    server: MockServer,
    dir: tempfile::TempDir,
}

impl World {
    async fn new(agent: Agent, turns: Vec<Serve>) -> Self {
        let server = agent.mock(turns).await;
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
        std::fs::create_dir_all(dir.path().join("work")).unwrap_or_else(|e| panic!("{e}"));
        Self { agent, server, dir }
    }

    /// The value of [`TAG`] in every process of this test.
    fn tag(&self) -> &Path {
        self.dir.path()
    }

    fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// The preset with the pinned agent, the mock's variables and files, and the tag; the
    /// provider makes a temporary home per agent process.
    fn config(&self) -> AcpConfig {
        let url = self.server.url();
        let mut config = AcpConfig::preset(self.agent.preset())
            .with_command(self.agent.peer().path())
            .with_env(TAG, self.tag().display().to_string());
        for (key, value) in self.agent.env(&url) {
            config = config.with_env(key, value);
        }
        for (path, contents) in self.agent.home_files(&url) {
            config = config.with_home_file(path, contents);
        }
        config
    }

    /// [`Self::config`] with a home of the test's own (`<dir>/home`, files written), shared by
    /// every agent process the test starts: what a session loaded in a new process needs.
    fn config_with_home(&self) -> AcpConfig {
        let url = self.server.url();
        let home = self.dir.path().join("home");
        for (path, contents) in self.agent.home_files(&url) {
            let file = home.join(path);
            if let Some(parent) = file.parent() {
                std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{e}"));
            }
            std::fs::write(&file, contents).unwrap_or_else(|e| panic!("{e}"));
        }
        let mut config = AcpConfig::preset(self.agent.preset())
            .with_command(self.agent.peer().path())
            .with_isolated_home(false)
            .with_env(TAG, self.tag().display().to_string());
        for (key, value) in self.agent.env(&url).into_iter().chain(self.agent.home_env(&home)) {
            config = config.with_env(key, value);
        }
        config
    }

    /// A provider on `config`, recording into `$PATCHBAY_RECORD_DIR` when it is set.
    fn provider(&self, config: AcpConfig) -> AcpProvider {
        let record = std::env::var_os("PATCHBAY_RECORD_DIR").map(PathBuf::from);
        AcpProvider::new(config.with_record_dir(record)).unwrap_or_else(|e| panic!("{e}"))
    }

    fn context(&self) -> RequestContext {
        RequestContext::new().with_working_dir(self.work())
    }

    /// One call with the agent's model, read to its end within [`CALL_LIMIT`].
    async fn call(
        &self,
        provider: &dyn Provider,
        messages: &[Message],
        tools: &ToolSet,
        context: &RequestContext,
    ) -> Run {
        let started = Instant::now();
        let run = within(
            CALL_LIMIT,
            "the call",
            call_model(provider, messages, tools, self.agent.model(), context, &Signal::new()),
        )
        .await;
        eprintln!(
            "{}: a call took {:.1} s",
            self.agent.name(),
            started.elapsed().as_secs_f64()
        );
        run
    }

    /// The bodies of the model calls the mock answered, in order.
    fn model_requests(&self) -> Vec<Value> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| r.method == "POST")
            .map(|r| r.body)
            .collect()
    }
}

/// A test that fails midway (a timeout, an assertion before its own check) leaves nothing
/// running either: whatever still carries its tag is killed.
impl Drop for World {
    fn drop(&mut self) {
        kill_tagged(self.tag());
    }
}

/// SIGKILL every process with `tag` in its environment (all started by this test's agent).
fn kill_tagged(tag: &Path) -> Vec<u32> {
    let found = running_with(tag);
    for pid in &found {
        if let Ok(pid) = i32::try_from(*pid) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
    }
    found
}

/// `future`, or a panic naming `what` after `limit`.
async fn within<F: Future>(limit: Duration, what: &str, future: F) -> F::Output {
    tokio::time::timeout(limit, future)
        .await
        .unwrap_or_else(|_| panic!("{what} did not end within {limit:?}"))
}

fn text(text: &str) -> Serve {
    Serve::Turn(Turn::Respond(Response::new(vec![Part::text(text)]).with_usage(12, 5)))
}

/// A model turn calling the agent's name of `get_weather` for Paris.
fn weather_call(agent: Agent) -> Serve {
    Serve::Turn(Turn::Respond(
        Response::new(vec![Part::tool_call(
            "call_1",
            agent.weather_tool(),
            json!({ "city": "Paris" }),
        )])
        .with_end(End::Finish {
            reason: FinishReason::ToolUse,
        })
        .with_usage(12, 5),
    ))
}

/// A turn that sends some text and then nothing, holding the stream open.
fn stall() -> Serve {
    Serve::Turn(Turn::Respond(
        Response::new(vec![Part::text(STALL_TEXT)])
            .with_end(End::Stall)
            .with_usage(10, 5),
    ))
}

#[derive(Deserialize, schemars::JsonSchema)]
struct CityInput {
    /// The city.
    city: String,
}

/// `get_weather`, answering with the `project_id` of the call's context and counting its runs.
fn weather(runs: Arc<AtomicUsize>) -> ToolSet {
    ToolSet::new().with(FnTool::new(
        "get_weather",
        "Current weather for a city.",
        move |input: CityInput, cx: ToolContext| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                let project = cx.metadata.get("project_id").cloned().unwrap_or_default();
                ToolResult::text(format!("Sunny in {} (project {project}).", input.city))
            }
        },
    ))
}

/// An approval handler that records what it was asked.
struct Recorded {
    asked: Mutex<Vec<ApprovalRequest>>,
    allow: bool,
}

impl Recorded {
    fn new(allow: bool) -> Arc<Self> {
        Arc::new(Self {
            asked: Mutex::default(),
            allow,
        })
    }

    fn asked(&self) -> Vec<ApprovalRequest> {
        self.asked.lock().map(|a| a.clone()).unwrap_or_default()
    }
}

#[async_trait]
impl ApprovalHandler for Recorded {
    async fn approve(&self, request: &ApprovalRequest, _cx: &ToolContext) -> Approval {
        if let Ok(mut asked) = self.asked.lock() {
            asked.push(request.clone());
        }
        if self.allow {
            Approval::Allow
        } else {
            Approval::Deny {
                message: "not today".into(),
            }
        }
    }
}

fn validate(run: &Run) {
    let items = run.events.iter().map(Ok).chain(run.error.iter().map(Err));
    patchbay_core::validate::validate(items).unwrap_or_else(|v| panic!("{v:?}\n{:#?}", run.events));
}

fn warnings(run: &Run) -> Vec<Warning> {
    run.events
        .iter()
        .find_map(|e| match e {
            Event::Started { warnings, .. } => Some(warnings.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

fn finish_reason(run: &Run) -> Option<FinishReason> {
    run.events.iter().rev().find_map(|e| match e {
        Event::Finish { reason, .. } => Some(reason.clone()),
        _ => None,
    })
}

async fn answers_a_prompt(agent: Agent) {
    let world = World::new(agent, vec![text("Hello from the mock.")]).await;
    let provider = world.provider(world.config());
    let run = world
        .call(
            &provider,
            &[Message::user("Say hello.")],
            &ToolSet::new(),
            &world.context(),
        )
        .await;
    assert!(run.error.is_none(), "{:?}\n{:#?}", run.error, run.events);
    validate(&run);
    assert_eq!(run.text(), "Hello from the mock.");
    assert!(
        run.session().is_some_and(|id| !id.is_empty()),
        "Started has the session id: {:?}",
        run.events.first()
    );
    assert_eq!(finish_reason(&run), Some(FinishReason::Stop));
    let requests = world.model_requests();
    assert_eq!(requests.len(), 1, "one model call: {requests:#?}");
    assert!(requests[0].to_string().contains("Say hello."));
    assert!(none_left(world.tag()).await.is_empty(), "the agent outlived its turn");
}

/// The weather turn with an approval handler that allows or denies; the run, the handler,
/// the tool's run count and the world.
async fn weather_run(agent: Agent, allow: bool, answer: &str) -> (Run, Arc<Recorded>, usize, World) {
    let world = World::new(agent, vec![weather_call(agent), text(answer)]).await;
    let provider = world.provider(world.config());
    let runs = Arc::new(AtomicUsize::new(0));
    let handler = Recorded::new(allow);
    let context = world
        .context()
        .with_metadata("project_id", PROJECT)
        .with_approval(handler.clone());
    let run = world
        .call(
            &provider,
            &[Message::user("What is the weather in Paris?")],
            &weather(runs.clone()),
            &context,
        )
        .await;
    let runs = runs.load(Ordering::SeqCst);
    (run, handler, runs, world)
}

async fn runs_a_host_tool_over_mcp_with_the_request_context(agent: Agent) {
    let (run, handler, runs, world) = weather_run(agent, true, "It is sunny in Paris.").await;
    assert!(run.error.is_none(), "{:?}\n{:#?}", run.error, run.events);
    validate(&run);
    let call = run.events.iter().find_map(|e| match e {
        Event::ToolCall {
            name,
            input,
            executed_by,
            ..
        } => Some((name.clone(), input.clone(), *executed_by)),
        _ => None,
    });
    assert_eq!(
        call,
        Some(("get_weather".into(), json!({ "city": "Paris" }), ExecutedBy::Host)),
        "{:#?}",
        run.events
    );
    let result = run.events.iter().find_map(|e| match e {
        Event::ToolResult { result, .. } => Some(result.clone()),
        _ => None,
    });
    let result = result.unwrap_or_else(|| panic!("no ToolResult: {:#?}", run.events));
    assert!(
        result.text_content().contains(PROJECT),
        "the tool saw the request context: {result:?}"
    );
    assert_eq!(runs, 1, "the tool ran once");
    assert_eq!(handler.asked().len(), 1, "asked once: {:?}", handler.asked());
    assert_eq!(run.text(), "It is sunny in Paris.");
    assert_eq!(finish_reason(&run), Some(FinishReason::Stop));
    let requests = world.model_requests();
    assert_eq!(requests.len(), 2, "two model calls: {requests:#?}");
    assert!(
        requests[1]
            .to_string()
            .contains(&format!("Sunny in Paris (project {PROJECT}).")),
        "the tool's result went back to the model: {}",
        requests[1]
    );
    assert!(none_left(world.tag()).await.is_empty(), "the agent outlived its turn");
}

async fn asks_permission_once_and_a_denial_stops_the_tool(agent: Agent) {
    let (run, handler, runs, world) = weather_run(agent, false, "Then I cannot tell.").await;
    let asked = handler.asked();
    assert_eq!(asked.len(), 1, "asked once: {asked:?}\n{:#?}", run.events);
    assert_eq!(
        (asked[0].tool_name.as_str(), &asked[0].input),
        ("get_weather", &json!({ "city": "Paris" })),
        "{asked:?}"
    );
    assert_eq!(runs, 0, "a denied tool did not run");
    assert!(run.error.is_none(), "{:?}\n{:#?}", run.error, run.events);
    validate(&run);
    assert!(none_left(world.tag()).await.is_empty(), "the agent outlived its turn");
}

/// What is still running with `tag` and whether it goes within 5 s more (for the failure
/// message); what is left then is killed, so a failed test leaves nothing behind either.
async fn left_behind(tag: &Path, since: Instant) -> String {
    let describe = |pid: u32| {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        format!("{pid} ({})", cmdline.trim())
    };
    let left: Vec<String> = running_with(tag).into_iter().map(describe).collect();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !running_with(tag).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let still = running_with(tag);
    let after = if still.is_empty() {
        format!("gone {:.1} s after", since.elapsed().as_secs_f64())
    } else {
        format!(
            "{still:?} still there {:.1} s after, killed",
            since.elapsed().as_secs_f64()
        )
    };
    kill_tagged(tag);
    format!("{left:?} ({after})")
}

/// A run stalled mid-answer: the stream after its first text, with the agent running.
async fn stalled(world: &World, provider: &AcpProvider, signal: &Signal) -> EventStream {
    let mut stream = within(
        CALL_LIMIT,
        "create_response",
        provider.create_response(
            &[Message::user("Think for a long time.")],
            &ToolSet::new(),
            world.agent.model(),
            signal,
            Some(&world.context()),
        ),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let deadline = Instant::now() + CALL_LIMIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match within(left, "the first text", stream.next()).await {
            Some(Ok(Event::TextDelta { text, .. })) if !text.is_empty() => break,
            Some(Ok(_)) => {}
            other => panic!("the turn ended before its text: {other:?}"),
        }
    }
    assert!(
        !running_with(world.tag()).is_empty(),
        "the agent runs, found by its tag"
    );
    stream
}

async fn cancel_mid_run_leaves_nothing_running(agent: Agent) {
    let world = World::new(agent, vec![stall()]).await;
    let provider = world.provider(world.config());
    let signal = Signal::new();
    let mut stream = stalled(&world, &provider, &signal).await;
    let cancelled = Instant::now();
    signal.cancel();
    let error = loop {
        match within(CANCEL_LIMIT, "the cancelled stream", stream.next()).await {
            Some(Ok(_)) => {}
            Some(Err(error)) => break error,
            None => panic!("the cancelled stream ended without an error"),
        }
    };
    assert_eq!(error.kind(), ErrorKind::Cancelled, "{error}");
    eprintln!(
        "{}: the cancelled stream ended after {:.2} s",
        agent.name(),
        cancelled.elapsed().as_secs_f64()
    );
    drop(stream);
    let left = none_left(world.tag()).await;
    assert!(
        left.is_empty(),
        "{} outlived the cancel",
        left_behind(world.tag(), cancelled).await
    );
    eprintln!(
        "{}: nothing left {:.2} s after the cancel",
        agent.name(),
        cancelled.elapsed().as_secs_f64()
    );
}

async fn dropping_the_stream_mid_run_leaves_nothing_running(agent: Agent) {
    let world = World::new(agent, vec![stall()]).await;
    let provider = world.provider(world.config());
    let stream = stalled(&world, &provider, &Signal::new()).await;
    let dropped = Instant::now();
    drop(stream);
    let left = none_left(world.tag()).await;
    assert!(
        left.is_empty(),
        "{} outlived the dropped stream",
        left_behind(world.tag(), dropped).await
    );
    eprintln!(
        "{}: nothing left {:.2} s after the drop",
        agent.name(),
        dropped.elapsed().as_secs_f64()
    );
}

/// The first turn of a session in one agent process (stopped after it); the world and the
/// session id.
async fn first_turn_then_stop(agent: Agent) -> (World, AcpConfig, String) {
    let world = World::new(agent, vec![text("First answer."), text("Second answer.")]).await;
    let config = world.config_with_home();
    let first = world.provider(config.clone());
    let run = world
        .call(
            &first,
            &[Message::user("first question")],
            &ToolSet::new(),
            &world.context(),
        )
        .await;
    assert!(run.error.is_none(), "{:?}\n{:#?}", run.error, run.events);
    let session = run.session().unwrap_or_else(|| panic!("no session id"));
    drop(first);
    assert!(
        none_left(world.tag()).await.is_empty(),
        "the first agent outlived its turn"
    );
    (world, config, session)
}

fn history() -> Vec<Message> {
    vec![
        Message::user("first question"),
        Message::assistant("First answer."),
        Message::user("second question"),
    ]
}

async fn loads_a_session_in_a_new_process(agent: Agent) {
    let (world, config, session) = first_turn_then_stop(agent).await;
    let second = world.provider(config);
    let context = world.context().with_session(Session::Resume { id: session.clone() });
    let run = world.call(&second, &history(), &ToolSet::new(), &context).await;
    assert!(run.error.is_none(), "{:?}\n{:#?}", run.error, run.events);
    validate(&run);
    assert_eq!(run.session(), Some(session), "the session was loaded");
    assert!(
        warnings(&run).is_empty(),
        "a loaded session needs no flattening: {:?}",
        warnings(&run)
    );
    assert_eq!(run.text(), "Second answer.", "the replayed history is not the answer");
    let requests = world.model_requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    let second = requests[1].to_string();
    assert!(
        second.contains("first question") && second.contains("First answer.") && second.contains("second question"),
        "the agent sent its own history: {second}"
    );
    assert!(
        !second.contains("conversation_so_far"),
        "the history was not flattened: {second}"
    );
    assert!(none_left(world.tag()).await.is_empty());
}

/// Gemini CLI 0.61 answers every `session/load` with `-32603 "No previous sessions found for
/// this project."`: the provider makes a new session and sends the history as text.
async fn a_session_it_cannot_load_becomes_a_new_one_with_the_history(agent: Agent) {
    let (world, config, session) = first_turn_then_stop(agent).await;
    let second = world.provider(config);
    let context = world.context().with_session(Session::Resume { id: session.clone() });
    let run = world.call(&second, &history(), &ToolSet::new(), &context).await;
    assert!(run.error.is_none(), "{:?}\n{:#?}", run.error, run.events);
    validate(&run);
    let new = run.session().unwrap_or_default();
    assert!(!new.is_empty() && new != session, "a new session: {new}");
    let warnings = warnings(&run);
    assert!(
        warnings
            .iter()
            .any(|w| w.code == Warning::UNSUPPORTED_OPTION && w.message.contains("could not load")),
        "{warnings:?}"
    );
    assert!(warnings.iter().any(|w| w.code == "history_flattened"), "{warnings:?}");
    assert_eq!(run.text(), "Second answer.");
    let requests = world.model_requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    let second = requests[1].to_string();
    assert!(
        second.contains("User: first question")
            && second.contains("Assistant: First answer.")
            && second.contains("second question"),
        "the history went as text: {second}"
    );
    assert!(none_left(world.tag()).await.is_empty());
}

/// With `keep_alive` the agent that answered a session's turn serves its next one: the same
/// process, the same session, its own history.
async fn a_kept_alive_agent_serves_the_next_turn(agent: Agent) {
    let world = World::new(agent, vec![text("One."), text("Two.")]).await;
    let provider = world.provider(world.config().with_keep_alive(Some(Duration::from_secs(60))));
    let run = world
        .call(&provider, &[Message::user("first")], &ToolSet::new(), &world.context())
        .await;
    assert!(run.error.is_none(), "{:?}\n{:#?}", run.error, run.events);
    let session = run.session().unwrap_or_else(|| panic!("no session id"));
    assert_eq!(provider.idle_processes(), 1, "the agent was kept");
    let pids = running_with(world.tag());
    assert!(!pids.is_empty());
    let context = world.context().with_session(Session::Resume { id: session.clone() });
    let messages = [
        Message::user("first"),
        Message::assistant("One."),
        Message::user("second"),
    ];
    let run = world.call(&provider, &messages, &ToolSet::new(), &context).await;
    assert!(run.error.is_none(), "{:?}\n{:#?}", run.error, run.events);
    validate(&run);
    assert_eq!(run.session(), Some(session));
    assert_eq!(run.text(), "Two.");
    assert!(warnings(&run).is_empty(), "{:?}", warnings(&run));
    assert_eq!(running_with(world.tag()), pids, "the same processes served both turns");
    let requests = world.model_requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    let second = requests[1].to_string();
    assert!(
        second.contains("first") && second.contains("One.") && !second.contains("conversation_so_far"),
        "the agent's own history: {second}"
    );
    drop(provider);
    let left = none_left(world.tag()).await;
    assert!(left.is_empty(), "{left:?} outlived the provider");
}

/// The trial `real::<agent>::<test>`, needing the agent.
fn agent_trial<F, Fut>(agent: Agent, test: &'static str, body: F) -> Trial
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = ()>,
{
    let peer = agent.peer();
    peers::async_trial(format!("real::{}::{test}", agent.name()), &[&peer], body)
}

/// One trial per test of one agent.
macro_rules! agent_trials {
    ($agent:expr => $($test:ident),+ $(,)?) => {{
        let agent: Agent = $agent;
        vec![$(agent_trial(agent, stringify!($test), move || $test(agent))),+]
    }};
}

/// Every real agent's trials.
pub(crate) fn trials() -> Vec<Trial> {
    let mut trials = Vec::new();
    for agent in [Agent::Claude, Agent::Gemini, Agent::Codex] {
        trials.extend(agent_trials![agent =>
            answers_a_prompt,
            runs_a_host_tool_over_mcp_with_the_request_context,
            asks_permission_once_and_a_denial_stops_the_tool,
            cancel_mid_run_leaves_nothing_running,
            dropping_the_stream_mid_run_leaves_nothing_running,
        ]);
    }
    trials.extend(agent_trials![Agent::Claude =>
        a_kept_alive_agent_serves_the_next_turn,
        loads_a_session_in_a_new_process,
    ]);
    trials.extend(agent_trials![Agent::Codex => loads_a_session_in_a_new_process]);
    trials.extend(agent_trials![Agent::Gemini => a_session_it_cannot_load_becomes_a_new_one_with_the_history]);
    trials
}
