//! [`ClaudeAgentProvider`]: plans the launch ([`LaunchPlan`]), reuses a kept-alive CLI or
//! spawns one, and hands it to the run loop.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use patchbay_core::kit::{check_conversation, record_error, request_span_for};
use patchbay_core::{
    Capabilities, EventStream, Message, Provider, ProviderError, ProviderInfo, RequestContext, Signal, ToolSet,
    Warning, context::Session,
};
use patchbay_http::record::{Recorder, Tape};
use tokio::sync::mpsc;

use crate::NAME;
use crate::config::{ClaudeAgentConfig, HostTools};
use crate::discover::find_cli;
use crate::error::Error;
use crate::launch::{Call, LaunchPlan, Place};
use crate::pool::{Parked, Pool};
use crate::process::Grace;
use crate::requests::Bridge;
use crate::run::PausedTurn;
use crate::run::{Report, Start, run};
use crate::session::SessionArgs;
use crate::spares::{Key, Spares, Template};
use crate::spawn::{ColdStart, RunDir, spawn};
use crate::translate::Translator;
use crate::waiting::Waiting;

/// The Claude Code CLI as a patchbay provider (see the crate docs).
#[derive(Debug, Clone)]
pub struct ClaudeAgentProvider {
    config: ClaudeAgentConfig,
    info: ProviderInfo,
    pool: Arc<Pool>,
    spares: Arc<Spares>,
    waiting: Arc<Waiting<PausedTurn>>,
    recorder: Option<Recorder>,
}

impl ClaudeAgentProvider {
    /// A provider with this configuration. Checks what can be checked without starting the
    /// CLI: the values (an [`Error::Invalid`] naming the field) and an explicit `cli_path`
    /// (an executable file, else [`Error::CliNotFound`]). Without `cli_path` the CLI is searched
    /// for at each call (see [`find_cli`]).
    pub fn new(config: ClaudeAgentConfig) -> Result<Self, ProviderError> {
        config.check()?;
        if let Some(path) = &config.cli_path {
            find_cli(Some(path))?;
        }
        let capabilities = Capabilities::none()
            .with_streaming()
            .with_reasoning()
            .with_images()
            .with_runs_tools()
            .with_sessions();
        Ok(Self {
            recorder: config.record_dir.as_deref().map(|dir| recorder(dir, &config)),
            config,
            info: ProviderInfo::new(NAME, capabilities),
            pool: Arc::new(Pool::default()),
            spares: Arc::new(Spares::default()),
            waiting: Arc::new(Waiting::default()),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ClaudeAgentConfig {
        &self.config
    }

    /// How many finished CLIs wait for their session's next turn (see `keep_alive`).
    pub fn idle_processes(&self) -> usize {
        self.pool.len()
    }

    /// How many runs paused for a person's approval keep their CLI waiting for the decision
    /// (see `approval_timeout`).
    pub fn paused_processes(&self) -> usize {
        self.waiting.len()
    }

    /// How many spare CLIs are started and wait for a new session (see `spares`).
    pub fn spare_processes(&self) -> usize {
        self.spares.ready()
    }

    /// Plan the run, reuse a kept-alive CLI or spawn one, and start the run loop.
    fn start(&self, call: &Call<'_>, signal: &Signal) -> Result<EventStream, ProviderError> {
        check_conversation(call.messages, true)?;
        let config = self.config.with_call_options(call.context.provider_options(NAME))?;
        config.check()?;
        let mut warnings = Vec::new();
        if let Some(paused) = self.take_paused(call, &mut warnings) {
            let bridge = Arc::new(Bridge {
                tools: call.tools.clone(),
                context: call.context.clone(),
                signal: signal.clone(),
                server: config.host_server_name.clone(),
            });
            let marker = config.session_markers.then_some(call.messages.len() + 1);
            tracing::info!(model = call.model, session = ?call.context.session, "claude-agent run resumed");
            return Ok(crate::run::resume(paused, bridge, marker));
        }
        let program = find_cli(config.cli_path.as_deref())?;
        // Created only if this call starts a CLI: a kept-alive one reused has its own files.
        let mut dir = RunDir::new();
        let (report_tx, reports) = mpsc::unbounded_channel();
        let context_guard = http_host(&config, call, report_tx)?;
        let place = Place {
            dir: dir.path(),
            http_host: context_guard
                .as_ref()
                .map(|guard| guard.server_config(config.host_server_name.clone())),
        };
        let mut plan = LaunchPlan::new(&config, call, &place);
        plan.warnings.extend(warnings);
        let grace = Grace {
            finished: config.stop_grace,
            cancel: config.cancel_grace,
        };
        let spare_key = spare_key(&config, call, &plan, &program);
        let template_dir = dir.path().to_path_buf();
        let mut cold = None;
        // The process, whether it was started before this call, and what must live as long as it.
        let (process, reused, keep): (_, _, Box<dyn std::any::Any + Send>) = match self.reusable(&config, &plan) {
            // What the CLI was started with stays; this call adds nothing to it (the guard of
            // host tools over HTTP aside, which never parks), so turn after turn keeps one launch.
            Some(parked) => match context_guard {
                None => (parked.process, true, parked.keep),
                Some(guard) => (parked.process, true, Box::new((parked.keep, guard))),
            },
            None => {
                dir.create()?;
                match spare_key.as_ref().and_then(|key| self.spares.take(key)) {
                    Some(mut spare) => {
                        spare.process.set_grace(grace);
                        // The call's own launch, in case the spare ends before its first line.
                        cold = Some(ColdStart::new(&program, &plan, &config));
                        (spare.process, true, Box::new((spare.dir, dir, context_guard)))
                    }
                    None => (spawn(&program, &plan, &config)?, false, Box::new((dir, context_guard))),
                }
            }
        };
        if let Some(key) = spare_key {
            // This launch is the one spares are kept for now; replace the one just taken.
            let template = Template::new(key, &plan, &template_dir, grace, config.init_timeout);
            self.spares.learn(template, config.spares, config.spare_max_age);
        }
        tracing::info!(model = call.model, pid = process.pid(), session = ?plan.session, reused, "claude-agent run started");
        let translator = translator(&config, call, &mut plan);
        let bridge = Arc::new(Bridge {
            tools: call.tools.clone(),
            context: call.context.clone(),
            signal: signal.clone(),
            server: config.host_server_name.clone(),
        });
        // The recorder of this call: the provider's, or one for a folder the call's options name.
        let recorder = match (&config.record_dir, &self.recorder) {
            (Some(dir), Some(own)) if own.dir() == dir.as_path() => Some(own.clone()),
            (Some(dir), _) => Some(recorder(dir, &config)),
            (None, _) => None,
        };
        let tape = Tape::start(recorder.as_ref(), call.model);
        let start = Start {
            record: config.record_stdout.clone(),
            transcript: tape.body_sink("jsonl", "stdout lines of the Claude Code CLI (stream-json)"),
            initialize: plan.initialize,
            user: plan.user_turn,
            init_timeout: config.init_timeout,
            reused,
            cold,
            park: config
                .keep_alive
                .filter(|_| config.host_tools == HostTools::InProcess)
                .map(|idle| (self.pool.clone(), plan.fingerprint, idle)),
            wait: Some((Arc::downgrade(&self.waiting), config.approval_timeout)),
        };
        Ok(tape.watch(run(process, translator, bridge, start, reports, keep)))
    }

    /// The run of the resumed session paused for the decisions this call brings. A paused run
    /// of the session that the call does not answer is abandoned (stopped, a warning), and
    /// decisions with no run waiting on them are a warning (the session resumes without them).
    fn take_paused(&self, call: &Call<'_>, warnings: &mut Vec<Warning>) -> Option<PausedTurn> {
        let id = match &call.context.session {
            Some(Session::Resume { id }) => Some(id),
            _ => None,
        };
        let paused = id.and_then(|id| self.waiting.take(id));
        let decisions = &call.context.decisions;
        match paused {
            Some(paused) if paused.answers(decisions) => return Some(paused),
            Some(abandoned) => {
                // Dropping it stops its CLI in the background.
                drop(abandoned);
                warnings.push(Warning::new(
                    "approval_abandoned",
                    "the session's run paused for approval was stopped: this call brings no decision for it",
                ));
            }
            None => {}
        }
        if !decisions.is_empty() {
            warnings.push(Warning::new(
                "decisions_unanswered",
                format!(
                    "no paused run waits on the {} decision(s) of this call (its CLI timed out or is gone); \
                     the session resumes without them",
                    decisions.len()
                ),
            ));
        }
        None
    }

    /// The kept-alive CLI of the session this plan resumes, if it was started the same way.
    fn reusable(&self, config: &ClaudeAgentConfig, plan: &LaunchPlan) -> Option<Parked> {
        match (&plan.session, config.keep_alive) {
            (SessionArgs::Resume(id), Some(_)) => self.pool.take(id, plan.fingerprint),
            _ => None,
        }
    }
}

#[async_trait]
impl Provider for ClaudeAgentProvider {
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
        let call = Call {
            messages,
            tools,
            model,
            context: context.unwrap_or(&empty),
        };
        let span = request_span_for(NAME, model, messages, context);
        let stream = span
            .in_scope(|| self.start(&call, signal))
            .map_err(|e| record_error(&span, e))?;
        Ok(patchbay_core::kit::in_span(stream, span))
    }
}

/// Variables of this process whose values the CLI may be given and no recording may show.
const SECRET_VARIABLES: [&str; 3] = ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"];

/// The recorder of a `record_dir`: family `claude-agent`, server `claude CLI`, and as secrets
/// every value of the configured environment and, when the CLI inherits this process's
/// environment, the credentials in it ([`SECRET_VARIABLES`]).
fn recorder(dir: &Path, config: &ClaudeAgentConfig) -> Recorder {
    let mut recorder = Recorder::new(dir, NAME)
        .with_recorded_by(concat!("patchbay-claude-agent ", env!("CARGO_PKG_VERSION")))
        .with_server("claude CLI");
    for value in config.env.values() {
        recorder = recorder.with_secret(value.as_str());
    }
    if config.inherit_env {
        for value in SECRET_VARIABLES.iter().filter_map(|name| std::env::var(name).ok()) {
            recorder = recorder.with_secret(value);
        }
    }
    recorder
}

/// For host tools over HTTP: the call registered with patchbay-mcp's tool server, each tool
/// reporting its result to the run (so the `ToolResult` event carries the tool's own result).
fn http_host(
    config: &ClaudeAgentConfig,
    call: &Call<'_>,
    report_tx: mpsc::UnboundedSender<Report>,
) -> Result<Option<patchbay_mcp::ContextGuard>, Error> {
    if call.tools.is_empty() || config.host_tools != HostTools::Http {
        return Ok(None);
    }
    let server = patchbay_mcp::ToolServer::global().map_err(|source| Error::ToolServer { source })?;
    let reporting = patchbay_mcp::reporting_tools(call.tools, move |name, input, result| {
        let _ = report_tx.send((name.to_owned(), input.clone(), result.clone()));
    });
    Ok(Some(server.register_with_tools(call.context, reporting)))
}

fn translator(config: &ClaudeAgentConfig, call: &Call<'_>, plan: &mut LaunchPlan) -> Translator {
    let marker = config.session_markers.then_some(call.messages.len() + 1);
    Translator::new(call.model, config.host_server_name.clone())
        .with_warnings(std::mem::take(&mut plan.warnings))
        .with_mcp_report(!call.context.mcp_servers.is_empty())
        .with_session_marker(marker)
        .with_session_id(plan.session_id.clone())
        .with_output_tool(call.context.output_schema.is_some())
}

/// Which spares may serve this call: a new session without a fixed id, with spares wanted,
/// no host tools (an in-process server is answered by its call; an HTTP one carries the call's
/// context id) and no stdout recording (the spare's `initialize` answer would be missing).
fn spare_key(config: &ClaudeAgentConfig, call: &Call<'_>, plan: &LaunchPlan, program: &Path) -> Option<Key> {
    let eligible = config.spares > 0
        && plan.session == SessionArgs::New(None)
        && call.tools.is_empty()
        && config.record_stdout.is_none()
        && config.record_dir.is_none();
    eligible.then(|| Key {
        fingerprint: plan.fingerprint,
        program: program.to_path_buf(),
        max_line: config.max_line_bytes,
    })
}

/// The registry entry: [`ClaudeAgentProvider::new`] of [`ClaudeAgentConfig::from_options`].
pub fn factory() -> patchbay_core::ProviderFactory {
    patchbay_core::ProviderFactory::new(
        NAME,
        "the Claude Code CLI as an agent runtime; options: cli_path, env, inherit_env, max_line_bytes, \
         permission_mode, allowed_tools, disallowed_tools, tools, agents, approval_timeout_ms, system_prompt, host_tools, \
         host_server_name, max_turns, setting_sources, session_markers, stop_grace_ms, cancel_grace_ms, init_timeout_ms, \
         extra_args, keep_alive_ms, spares, spare_max_age_ms, record_dir (on top of PATCHBAY_CLAUDE_CLI, \
         PATCHBAY_RECORD_DIR)",
        build,
    )
}

fn build(
    options: &serde_json::Value,
) -> Result<std::sync::Arc<dyn patchbay_core::Provider>, patchbay_core::ProviderError> {
    Ok(std::sync::Arc::new(ClaudeAgentProvider::new(
        ClaudeAgentConfig::from_options(options)?,
    )?))
}
