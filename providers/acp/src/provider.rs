//! [`AcpProvider`]: plans a call without I/O, then runs it on a task of its own (the agent is
//! spawned from a runtime worker, see core's `ParentDeathSignal`), handing events through a
//! channel. Dropping the stream ends the task, and with it the connection and the agent's
//! process group.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use patchbay_core::context::{McpTransport, Session};
use patchbay_core::kit::{MetricsRecorder, check_conversation, in_span, record_error, request_span_for};
use patchbay_core::{
    Capabilities, Event, EventStream, Message, Provider, ProviderError, ProviderInfo, RequestContext, Signal, ToolSet,
    Warning,
};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::NAME;
use crate::config::AcpConfig;
use crate::connection::Connection;
use crate::error::Error;
use crate::pool::{Agent, Pool};
use crate::process::{AgentProcess, Launch, home_env, temp_home};
use crate::prompt::{PromptInput, prompt};
use crate::record::TapSlot;
use crate::run::{Outcome, Prompted, Turn, drive, route};
use crate::translate::{HostRun, Translator};
use crate::transport::{Fault, lines};

/// Any Agent Client Protocol agent as a patchbay provider (an agent runtime: it runs its own
/// tools, and the host's through MCP).
pub struct AcpProvider {
    config: AcpConfig,
    info: ProviderInfo,
    pool: Arc<Pool>,
}

impl std::fmt::Debug for AcpProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpProvider")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl AcpProvider {
    /// A provider for `config` (checked now: an agent must be named, values in range).
    pub fn new(config: AcpConfig) -> Result<Self, Error> {
        config.check()?;
        let capabilities = Capabilities::none()
            .with_streaming()
            .with_reasoning()
            .with_images()
            .with_runs_tools()
            .with_sessions();
        Ok(Self {
            config,
            info: ProviderInfo::new(NAME, capabilities),
            pool: Arc::new(Pool::default()),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &AcpConfig {
        &self.config
    }

    /// How many finished agents wait for their session's next turn (see `keep_alive`).
    pub fn idle_processes(&self) -> usize {
        self.pool.len()
    }

    fn start(
        &self,
        messages: &[Message],
        tools: &ToolSet,
        model: &str,
        signal: &Signal,
        context: &RequestContext,
    ) -> Result<EventStream, ProviderError> {
        check_conversation(messages, true)?;
        let config = self.config.with_call_options(context.provider_options(NAME))?;
        let program = config.find_program()?;
        let mut warnings = Vec::new();
        let resume = match &context.session {
            Some(Session::Resume { id }) => Some(id.clone()),
            Some(Session::New { id: Some(_) }) => {
                warnings.push(unsupported(
                    "an ACP agent picks its own session ids: a new one was made",
                ));
                None
            }
            Some(Session::Fork { .. }) => {
                warnings.push(unsupported("ACP has no stable session fork: a new session was made"));
                None
            }
            _ => None,
        };
        warnings.extend(ignored_options(context));
        let (report_tx, reports) = mpsc::unbounded_channel();
        let host = host_tools(&config, context, tools, report_tx)?;
        let host_tools: Vec<String> = tools.iter().map(|tool| tool.spec().name.clone()).collect();
        let launch = plan(&config, context, model, &program);
        let turn = Turn {
            fingerprint: launch.fingerprint.clone(),
            config,
            model: model.to_owned(),
            context: context.clone(),
            signal: signal.clone(),
            resume,
            host_tools,
            warnings,
            pool: self.pool.clone(),
        };
        let messages = messages.to_vec();
        let (tx, rx) = mpsc::unbounded_channel();
        let tape = crate::record::tape(&turn.config, model);
        let watched = tape.clone();
        tokio::spawn(async move {
            let closed = tx.clone();
            tokio::select! {
                () = run_turn(turn, launch, messages, host, reports, tape, tx) => {}
                () = closed.closed() => {}
            }
        });
        let events =
            futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item, rx)) }).boxed();
        Ok(watched.watch(events))
    }
}

#[async_trait]
impl Provider for AcpProvider {
    fn info(&self) -> &ProviderInfo {
        &self.info
    }

    async fn create_response(
        &self,
        messages: &[Message],
        tools: &ToolSet,
        model: &str,
        signal: &Signal,
        context: Option<&RequestContext>,
    ) -> Result<EventStream, ProviderError> {
        let empty = RequestContext::default();
        let context = context.unwrap_or(&empty);
        let span = request_span_for(NAME, model, messages, Some(context));
        let stream = span
            .in_scope(|| self.start(messages, tools, model, signal, context))
            .map_err(|e| record_error(&span, e))?;
        Ok(in_span(stream, span))
    }
}

/// The registry entry: [`AcpProvider::new`] of [`AcpConfig::from_options`].
pub fn factory() -> patchbay_core::ProviderFactory {
    patchbay_core::ProviderFactory::new(
        NAME,
        "any Agent Client Protocol agent (Gemini CLI, Codex, Claude) as an agent runtime; options: agent, \
         command, args, env, inherit_env, isolate_home, home_files, pass_model, file_access, unattended, \
         host_server_name, max_line_bytes, init_timeout_ms, cancel_grace_ms, stop_grace_ms, keep_alive_ms, \
         record_dir (on top of PATCHBAY_ACP_AGENT, PATCHBAY_ACP_COMMAND, PATCHBAY_RECORD_DIR)",
        build,
    )
}

fn build(options: &Value) -> Result<Arc<dyn Provider>, ProviderError> {
    Ok(Arc::new(AcpProvider::new(AcpConfig::from_options(options)?)?))
}

fn unsupported(message: &str) -> Warning {
    Warning::new(Warning::UNSUPPORTED_OPTION, message)
}

/// Warnings for what an ACP agent cannot be told.
fn ignored_options(context: &RequestContext) -> Vec<Warning> {
    let mut warnings = Vec::new();
    let sampling = &context.sampling;
    if sampling.temperature.is_some() || sampling.top_p.is_some() || sampling.top_k.is_some() {
        warnings.push(unsupported(
            "ACP has no sampling options: temperature, top_p and top_k were ignored",
        ));
    }
    if !sampling.stop_sequences.is_empty() || sampling.max_tokens.is_some() || sampling.thinking_budget.is_some() {
        warnings.push(unsupported(
            "ACP has no length options: max_tokens, the thinking budget and stop sequences were ignored",
        ));
    }
    if context.tool_choice.is_some() {
        warnings.push(unsupported("ACP has no tool choice: it was ignored"));
    }
    if context.output_schema.is_some() {
        warnings.push(unsupported("ACP has no structured output: the schema was ignored"));
    }
    if context.hooks.is_some() {
        warnings.push(unsupported(
            "ACP has no hooks: the before/after tool, prompt and stop hooks were not called (use the approval \
             handler, which every permission request reaches)",
        ));
    }
    warnings
}

/// The launch of a call: program line, environment, working directory, and the fingerprint
/// a kept-alive agent must match.
pub(crate) struct Planned {
    pub(crate) program: std::path::PathBuf,
    pub(crate) args: Vec<String>,
    pub(crate) env: BTreeMap<String, OsString>,
    pub(crate) cwd: Option<std::path::PathBuf>,
    pub(crate) fingerprint: String,
}

fn plan(config: &AcpConfig, context: &RequestContext, model: &str, program: &std::path::Path) -> Planned {
    let mut args: Vec<String> = config
        .preset
        .map(|p| p.args().iter().map(|a| (*a).to_owned()).collect())
        .unwrap_or_default();
    let mut env: BTreeMap<String, OsString> = BTreeMap::new();
    if let Some(preset) = config.preset
        && config.pass_model
        && !model.is_empty()
        && model != "default"
    {
        let (model_args, model_env) = preset.model(model);
        args.extend(model_args);
        env.extend(model_env.into_iter().map(|(k, v)| (k, v.into())));
    }
    args.extend(config.args.iter().cloned());
    if let Some(preset) = config.preset {
        for (key, value) in preset.env() {
            env.insert((*key).to_owned(), value.into());
        }
    }
    // As root with `IS_SANDBOX` set to anything but `1`, the Claude adapter offers its bypass
    // mode while its bundled CLI refuses to start (`session/new` fails): give it `1`.
    if config.preset == Some(crate::config::Preset::Claude)
        && config.inherit_env
        && std::env::var("IS_SANDBOX").is_ok_and(|value| value != "1")
    {
        env.insert("IS_SANDBOX".into(), "1".into());
    }
    for (key, value) in config.env.iter().chain(context.env.iter()) {
        env.insert(key.clone(), value.into());
    }
    let cwd = context.working_dir.clone();
    let fingerprint = format!(
        "{}|{:?}|{:?}|{:?}|{}",
        program.display(),
        args,
        env,
        cwd,
        config.isolate_home
    );
    Planned {
        program: program.to_path_buf(),
        args,
        env,
        cwd,
        fingerprint,
    }
}

/// Start the agent and `initialize` it.
async fn spawn_agent(
    config: &AcpConfig,
    launch: &Planned,
    sink: Option<patchbay_http::record::BodySink>,
) -> Result<Agent, Error> {
    let mut env = launch.env.clone();
    let home = if config.isolate_home {
        let mut files = config.home_files.clone();
        if let Some(preset) = config.preset {
            for (path, contents) in preset.home_files() {
                files
                    .entry((*path).to_owned())
                    .or_insert_with(|| (*contents).to_owned());
            }
        }
        let home = temp_home(&files)?;
        for (key, value) in home_env(home.path()) {
            env.entry(key).or_insert(value);
        }
        if let Some(preset) = config.preset {
            for (key, value) in preset.home_env(home.path()) {
                env.entry(key).or_insert(value);
            }
        }
        Some(home)
    } else {
        None
    };
    let (mut process, stdin, stdout) = AgentProcess::spawn(Launch {
        program: &launch.program,
        args: launch.args.clone(),
        env,
        inherit_env: config.inherit_env,
        cwd: launch.cwd.as_deref(),
        grace: config.stop_grace,
        home,
    })?;
    let fault = Fault::default();
    let tap = TapSlot::default();
    tap.set(sink);
    let transport = lines(stdout, stdin, config.max_line_bytes, Some(tap.tap()), fault.clone());
    match Connection::open(transport, fault, config.file_access(), config.init_timeout).await {
        Ok(connection) => Ok(Agent {
            connection,
            process,
            sessions: Vec::new(),
            tap,
        }),
        Err(error) => {
            let error = process.explain(error).await;
            process.stop().await;
            Err(error)
        }
    }
}

/// The call's host tools, registered with patchbay-mcp's tool server (each run reported to
/// the turn, so the `ToolResult` is the tool's own).
fn host_tools(
    config: &AcpConfig,
    context: &RequestContext,
    tools: &ToolSet,
    report_tx: mpsc::UnboundedSender<HostRun>,
) -> Result<Option<(patchbay_mcp::ContextGuard, Value)>, ProviderError> {
    if tools.is_empty() {
        return Ok(None);
    }
    let server = patchbay_mcp::ToolServer::global().map_err(|source| Error::ToolServer { source })?;
    let reporting = patchbay_mcp::reporting_tools(tools, move |name, input, result| {
        let _ = report_tx.send(HostRun {
            name: name.to_owned(),
            input: input.clone(),
            result: result.clone(),
        });
    });
    let guard = server.register_with_tools(context, reporting);
    let entry = mcp_entry(
        &guard.server_config(config.host_server_name.clone()).transport,
        &config.host_server_name,
    );
    Ok(Some((guard, entry)))
}

/// An MCP server as ACP's `mcpServers` entry.
fn mcp_entry(transport: &McpTransport, name: &str) -> Value {
    match transport {
        McpTransport::Http { url, headers } => json!({
            "type": "http",
            "name": name,
            "url": url,
            "headers": headers.iter().map(|(k, v)| json!({ "name": k, "value": v })).collect::<Vec<_>>(),
        }),
        McpTransport::Stdio { command, args, env } => json!({
            "name": name,
            "command": command,
            "args": args,
            "env": env.iter().map(|(k, v)| json!({ "name": k, "value": v })).collect::<Vec<_>>(),
        }),
    }
}

type Sender = mpsc::UnboundedSender<Result<Event, ProviderError>>;

/// The whole turn, on its own task.
async fn run_turn(
    mut turn: Turn,
    launch: Planned,
    messages: Vec<Message>,
    host: Option<(patchbay_mcp::ContextGuard, Value)>,
    reports: mpsc::UnboundedReceiver<HostRun>,
    tape: patchbay_http::record::Tape,
    tx: Sender,
) {
    let mut emit = |item: Result<Event, ProviderError>| {
        let _ = tx.send(item);
    };
    let mut recorder = MetricsRecorder::start();
    let sink = crate::record::sink(&tape);
    let kept = turn
        .resume
        .as_ref()
        .and_then(|id| turn.pool.take(id, &turn.fingerprint));
    let mut agent = match kept {
        Some(agent) => {
            agent.tap.set(sink);
            agent
        }
        None => match spawn_agent(&turn.config, &launch, sink).await {
            Ok(agent) => agent,
            Err(error) => return emit(Err(error.into())),
        },
    };
    tracing::info!(model = %turn.model, pid = agent.process.pid(), "acp turn started");
    let capabilities = agent
        .connection
        .agent
        .get("agentCapabilities")
        .cloned()
        .unwrap_or_default();
    let http = capabilities
        .pointer("/mcpCapabilities/http")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut servers = Vec::new();
    if let Some((_, entry)) = &host {
        if http {
            servers.push(entry.clone());
        } else {
            turn.warnings.push(Warning::new(
                Warning::UNSUPPORTED_OPTION,
                "the agent takes no MCP servers over HTTP (mcpCapabilities.http): the host's tools were not offered",
            ));
        }
    }
    for server in &turn.context.mcp_servers {
        if matches!(server.transport, McpTransport::Http { .. }) && !http {
            turn.warnings.push(unsupported(
                "the agent takes no MCP servers over HTTP: one was left out",
            ));
            continue;
        }
        servers.push(mcp_entry(&server.transport, &server.name));
    }
    let cwd = turn
        .context
        .working_dir
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| "/".into());
    let timeout = turn.config.init_timeout;
    let loads = capabilities
        .get("loadSession")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let session_params = json!({ "cwd": cwd, "mcpServers": servers });
    let mut loaded = None;
    match turn.resume.clone() {
        Some(id) if agent.sessions.contains(&id) => loaded = Some(id),
        Some(id) if loads => {
            // What the agent replays of the session's history is not this turn's answer.
            let (_replay, _discard) = route(&agent.connection, &id, &turn);
            let mut params = session_params.clone();
            params["sessionId"] = json!(id);
            match agent.connection.request_within("session/load", params, timeout).await {
                Ok(_) => loaded = Some(id),
                // The agent keeps no such session (the Gemini CLI 0.61 cannot load any): a new
                // one gets the history as text.
                Err(Error::Refused { .. }) => turn
                    .warnings
                    .push(unsupported("the agent could not load the session: a new one was made")),
                Err(error) => return emit(Err(agent.explain(error).await.into())),
            }
        }
        Some(_) => turn
            .warnings
            .push(unsupported("the agent cannot load sessions: a new one was made")),
        None => {}
    }
    let (session, new_session) = match loaded {
        Some(id) => (id, false),
        None => match agent
            .connection
            .request_within("session/new", session_params, timeout)
            .await
        {
            Ok(answer) => match answer.get("sessionId").and_then(Value::as_str) {
                Some(id) => (id.to_owned(), true),
                None => {
                    return emit(Err(Error::Protocol {
                        message: "`session/new` was answered without a `sessionId`".into(),
                    }
                    .into()));
                }
            },
            Err(error) => return emit(Err(agent.explain(error).await.into())),
        },
    };
    agent.sessions.push(session.clone());
    let images = capabilities
        .pointer("/promptCapabilities/image")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut warnings = std::mem::take(&mut turn.warnings);
    let blocks = prompt(
        &PromptInput {
            messages: &messages,
            system: turn.context.system.as_deref(),
            new_session,
            flatten_history: new_session,
            images,
        },
        &mut warnings,
    );
    let started = Event::Started {
        response_id: None,
        model: turn.model.clone(),
        session_id: Some(session.clone()),
        warnings,
    };
    recorder.observe(&started);
    emit(Ok(started));
    let (route_guard, inbound) = route(&agent.connection, &session, &turn);
    let translator = Translator::new(turn.config.host_server_name.clone(), turn.host_tools.clone());
    let prompted = Prompted {
        session: session.clone(),
        prompt: blocks,
        inbound,
        reports,
        translator,
    };
    let outcome = drive(&turn, &mut agent, prompted, &mut recorder, &mut emit).await;
    drop(route_guard);
    drop(host);
    agent.tap.set(None);
    match (outcome, turn.config.keep_alive) {
        (Outcome::Keep, Some(idle)) if turn.host_tools.is_empty() => {
            turn.pool.park(session, turn.fingerprint.clone(), agent, idle);
        }
        _ => agent.stop().await,
    }
}
