//! [`ClaudeAgentProvider`]: builds the command line, spawns the CLI, and drives the run.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use patchbay_core::kit::check_conversation;
use patchbay_core::{
    Capabilities, ErrorKind, EventStream, McpServerConfig, McpTransport, Message, Provider, ProviderError,
    ProviderInfo, RequestContext, Signal, Tool, ToolContext, ToolResult, ToolSet, ToolSpec, Warning,
};
use serde_json::{Value, json};
use tokio::process::Command;
use tokio::sync::mpsc;

use crate::config::{ClaudeAgentConfig, HostTools, Options, SystemPrompt, find_cli};
use crate::control;
use crate::error::{Error, PROVIDER};
use crate::pool::Pool;
use crate::process::{CliProcess, Grace};
use crate::run::{Bridge, Start, run};
use crate::session::{SessionArgs, plan};
use crate::translate::Translator;

/// The Claude Code CLI as a patchbay provider (see the crate docs).
#[derive(Debug, Clone)]
pub struct ClaudeAgentProvider {
    config: ClaudeAgentConfig,
    info: ProviderInfo,
    pool: Arc<Pool>,
}

impl Default for ClaudeAgentProvider {
    fn default() -> Self {
        Self::new(ClaudeAgentConfig::default())
    }
}

/// The registry constructor: options as JSON (see [`Options`]); `null` is the defaults.
pub fn build(options: &Value) -> Result<Arc<dyn Provider>, ProviderError> {
    Ok(Arc::new(ClaudeAgentProvider::from_json(options)?))
}

impl ClaudeAgentProvider {
    /// A provider with this configuration.
    pub fn new(config: ClaudeAgentConfig) -> Self {
        let capabilities = Capabilities::none()
            .with_streaming()
            .with_reasoning()
            .with_images()
            .with_runs_tools()
            .with_sessions();
        Self {
            config,
            info: ProviderInfo::new(PROVIDER, capabilities),
            pool: Arc::new(Pool::default()),
        }
    }

    /// A provider from JSON options (see [`Options`]).
    pub fn from_json(options: &Value) -> Result<Self, ProviderError> {
        Ok(Self::new(ClaudeAgentConfig::from_json(options)?))
    }

    /// The configuration.
    pub fn config(&self) -> &ClaudeAgentConfig {
        &self.config
    }

    /// How many finished CLIs wait for their session's next turn (see `keep_alive`).
    pub fn idle_processes(&self) -> usize {
        self.pool.len()
    }
}

/// What one run was started with. No `Debug`: `env` holds keys, and the MCP config file named
/// in `args` may hold bearer headers.
struct Launch {
    program: PathBuf,
    args: Vec<String>,
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    inherit_env: bool,
}

fn unsupported(context: &RequestContext, warnings: &mut Vec<Warning>) {
    let s = &context.sampling;
    let mut ignored = Vec::new();
    if s.temperature.is_some() {
        ignored.push("temperature");
    }
    if s.top_p.is_some() {
        ignored.push("top_p");
    }
    if s.top_k.is_some() {
        ignored.push("top_k");
    }
    if !s.stop_sequences.is_empty() {
        ignored.push("stop_sequences");
    }
    if context.tool_choice.is_some() {
        ignored.push("tool_choice");
    }
    if context.system_cache_control.is_some() {
        ignored.push("system_cache_control");
    }
    for option in ignored {
        warnings.push(Warning::new(
            "unsupported_option",
            format!("the Claude Code CLI does not take `{option}`; it was ignored"),
        ));
    }
}

fn mcp_entry(server: &McpServerConfig) -> Value {
    match &server.transport {
        McpTransport::Http { url, headers } => json!({ "type": "http", "url": url, "headers": headers }),
        McpTransport::Stdio { command, args, env } => {
            json!({ "type": "stdio", "command": command, "args": args, "env": env })
        }
    }
}

/// A host tool served over HTTP that also reports its result to the run, so the `ToolResult`
/// event carries the tool's own result (metadata included).
struct Reporting {
    inner: Arc<dyn Tool>,
    tx: mpsc::UnboundedSender<(String, Value, ToolResult)>,
}

#[async_trait]
impl Tool for Reporting {
    fn spec(&self) -> &ToolSpec {
        self.inner.spec()
    }

    async fn execute(&self, input: Value, cx: &ToolContext) -> ToolResult {
        let result = self.inner.execute(input.clone(), cx).await;
        let _ = self.tx.send((self.inner.spec().name.clone(), input, result.clone()));
        result
    }
}

/// Everything a run keeps alive until it ends.
struct Keep {
    _dir: tempfile::TempDir,
    _context: Option<patchbay_mcp::ContextGuard>,
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
        check_conversation(messages, true)?;
        let empty = RequestContext::default();
        let context = context.unwrap_or(&empty);
        let mut config = self.config.clone();
        if let Some(options) = context.provider_options(PROVIDER) {
            config.apply(Options::from_json(options)?);
        }
        let mut warnings = Vec::new();
        unsupported(context, &mut warnings);
        let (session, content, session_warnings) = plan(messages, context.session.as_ref());
        warnings.extend(session_warnings);
        let program = find_cli(config.cli_path.as_deref())?;
        let dir = tempfile::Builder::new()
            .prefix("patchbay-claude-")
            .tempdir()
            .map_err(|source| Error::Io {
                what: "creating a temp dir",
                source,
            })?;

        let mut args: Vec<String> = [
            "--output-format",
            "stream-json",
            "--verbose",
            "--input-format",
            "stream-json",
            "--include-partial-messages",
        ]
        .map(String::from)
        .to_vec();
        match (&config.system_prompt, &context.system) {
            (SystemPrompt::Custom, Some(system)) if !system.is_empty() => {
                let path = dir.path().join("system-prompt.txt");
                std::fs::write(&path, system).map_err(|source| Error::Io {
                    what: "writing the system prompt file",
                    source,
                })?;
                args.push("--system-prompt-file".into());
                args.push(path.display().to_string());
            }
            (SystemPrompt::Custom, _) => {
                args.push("--system-prompt".into());
                args.push(String::new());
            }
            (SystemPrompt::Preset { append }, system) => {
                if let Some(text) = append.as_ref().or(system.as_ref()).filter(|t| !t.is_empty()) {
                    args.push("--append-system-prompt".into());
                    args.push(text.clone());
                }
            }
        }
        if !model.is_empty() {
            args.push("--model".into());
            args.push(model.to_string());
        }
        if context.approval.is_some() {
            args.push("--permission-prompt-tool".into());
            args.push("stdio".into());
        }
        if let Some(mode) = &config.permission_mode {
            args.push("--permission-mode".into());
            args.push(mode.clone());
        }
        let mut allowed = config.allowed_tools.clone();
        if context.approval.is_none() {
            // No approval handler: host tools run without asking, as in patchbay's agent loop.
            allowed.extend(
                tools
                    .specs()
                    .map(|s| format!("mcp__{}__{}", config.host_server_name, s.name)),
            );
        }
        if !allowed.is_empty() {
            args.push("--allowedTools".into());
            args.push(allowed.join(","));
        }
        if !config.disallowed_tools.is_empty() {
            args.push("--disallowedTools".into());
            args.push(config.disallowed_tools.join(","));
        }
        if let Some(list) = &config.tools {
            args.push("--tools".into());
            args.push(list.join(","));
        }
        if let Some(turns) = config.max_turns {
            args.push("--max-turns".into());
            args.push(turns.to_string());
        }

        // MCP servers: the caller's, then the host tools.
        let mut servers = serde_json::Map::new();
        for server in &context.mcp_servers {
            servers.insert(server.name.clone(), mcp_entry(server));
        }
        let (report_tx, report_rx) = mpsc::unbounded_channel();
        let mut context_guard = None;
        if !tools.is_empty() {
            match config.host_tools {
                HostTools::InProcess => {
                    let name = &config.host_server_name;
                    servers.insert(name.clone(), json!({ "type": "sdk", "name": name }));
                }
                HostTools::Http => {
                    let server = patchbay_mcp::ToolServer::global().map_err(|e| {
                        ProviderError::new(ErrorKind::Config, format!("the MCP tool server did not start: {e}"))
                            .with_provider(PROVIDER)
                    })?;
                    let mut reporting = ToolSet::new();
                    for tool in tools.iter() {
                        let _ = reporting.insert(Arc::new(Reporting {
                            inner: tool.clone(),
                            tx: report_tx.clone(),
                        }));
                    }
                    let guard = server.register_with_tools(context, reporting);
                    let config_entry = guard.server_config(config.host_server_name.clone());
                    servers.insert(config.host_server_name.clone(), mcp_entry(&config_entry));
                    context_guard = Some(guard);
                }
            }
        }
        drop(report_tx);
        if !servers.is_empty() {
            let path = dir.path().join("mcp-config.json");
            let text = json!({ "mcpServers": servers }).to_string();
            std::fs::write(&path, text).map_err(|source| Error::Io {
                what: "writing the MCP config file",
                source,
            })?;
            args.push("--mcp-config".into());
            args.push(path.display().to_string());
        }
        args.extend(session.args());
        args.extend(config.extra_args.iter().cloned());

        let mut env = config.env.clone();
        env.extend(context.env.clone());
        if let Some(max) = context.sampling.max_tokens {
            env.entry("CLAUDE_CODE_MAX_OUTPUT_TOKENS".into())
                .or_insert(max.to_string());
        }
        if let Some(budget) = context.sampling.thinking_budget {
            env.entry("MAX_THINKING_TOKENS".into()).or_insert(budget.to_string());
        }
        env.entry("CLAUDE_CODE_ENTRYPOINT".into()).or_insert("sdk-rust".into());
        let launch = Launch {
            program,
            args,
            env,
            cwd: context.working_dir.clone(),
            inherit_env: config.inherit_env,
        };
        // What must match for a kept-alive CLI to serve this call: everything but the session
        // flags and the temp file paths (their contents are in).
        let fingerprint = format!(
            "{model}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{}|{}",
            launch
                .args
                .iter()
                .filter(|a| !a.starts_with("--resume")
                    && !a.starts_with("--session-id")
                    && !a.starts_with(&dir.path().display().to_string()))
                .collect::<Vec<_>>(),
            launch.env,
            launch.cwd,
            context.system,
            tools.specs().map(|s| &s.name).collect::<Vec<_>>(),
            context.mcp_servers,
            context.approval.is_some(),
            config.host_tools == HostTools::InProcess,
        );
        let reused = match (&session, config.keep_alive) {
            (SessionArgs::Resume(id), Some(_)) => self.pool.take(id, &fingerprint),
            _ => None,
        };
        let (process, reused_keep) = match reused {
            Some(parked) => (parked.process, Some(parked.keep)),
            None => (spawn(&launch, &config)?, None),
        };
        tracing::info!(provider = PROVIDER, model, pid = process.pid(), session = ?session, reused = reused_keep.is_some(), "claude-agent run started");

        let marker = config.session_markers.then_some(messages.len() + 1);
        let translator = Translator::new(model, config.host_server_name.clone())
            .with_warnings(warnings)
            .with_mcp_report(!context.mcp_servers.is_empty())
            .with_session_marker(marker);
        let session_id = match &session {
            SessionArgs::New(Some(id)) | SessionArgs::Resume(id) => id.clone(),
            _ => String::new(),
        };
        let translator = translator.with_session_id((!session_id.is_empty()).then(|| session_id.clone()));
        let bridge = Arc::new(Bridge {
            tools: tools.clone(),
            context: context.clone(),
            signal: signal.clone(),
            server: config.host_server_name.clone(),
        });
        let start = Start {
            record: config.record_stdout.clone(),
            initialize: initialize_request(&config),
            user: control::user_line(content, &session_id),
            init_timeout: config.init_timeout,
            reused: reused_keep.is_some(),
            park: config
                .keep_alive
                .filter(|_| config.host_tools == HostTools::InProcess)
                .map(|idle| (self.pool.clone(), fingerprint, idle)),
        };
        let keep: Box<dyn std::any::Any + Send> = match reused_keep {
            // A reused CLI keeps the files it was started with.
            Some(old) => Box::new((old, dir, context_guard)),
            None => Box::new(Keep {
                _dir: dir,
                _context: context_guard,
            }),
        };
        Ok(run(process, translator, bridge, start, report_rx, keep))
    }
}

fn initialize_request(config: &ClaudeAgentConfig) -> Value {
    let mut request = json!({ "subtype": "initialize", "hooks": null });
    if let Some(agents) = &config.agents {
        request["agents"] = agents.clone();
    }
    request
}

fn spawn(launch: &Launch, config: &ClaudeAgentConfig) -> Result<CliProcess, ProviderError> {
    let mut command = Command::new(&launch.program);
    command.args(&launch.args);
    if !launch.inherit_env {
        command.env_clear();
        for key in ["PATH", "HOME", "TMPDIR", "LANG"] {
            if let Some(value) = std::env::var_os(key) {
                command.env(key, value);
            }
        }
    }
    command.env_remove("CLAUDECODE");
    for (key, value) in &launch.env {
        if key != "CLAUDECODE" {
            command.env(key, value);
        }
    }
    if let Some(dir) = &launch.cwd {
        command.current_dir(dir);
    }
    let program = launch.program.display().to_string();
    Ok(CliProcess::spawn(
        command,
        &program,
        config.max_line_bytes,
        Grace {
            finished: config.stop_grace,
            cancel: config.cancel_grace,
        },
    )?)
}
