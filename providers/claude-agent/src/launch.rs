//! The launch plan: everything one CLI run is started with (command line, environment, files,
//! the `initialize` request, the first user turn, the keep-alive fingerprint), computed from the
//! configuration and the call without any I/O, so it is tested without a process.
//!
//! The I/O layer (`provider.rs`) prepares what the plan cannot (a temp dir for its files; for
//! host tools over HTTP, the call registered with patchbay-mcp's tool server), then writes the
//! plan's files and reuses a kept-alive CLI or spawns one.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

use patchbay_core::{Message, RequestContext, ToolSet, Warning, context::McpServerConfig, context::McpTransport};
use serde_json::{Map, Value, json};

use crate::config::{ClaudeAgentConfig, HostTools, SystemPrompt};
use crate::control;
use crate::session::{self, SessionArgs};

/// The flags of every run: stream-json both ways, partial messages.
const STREAM_FLAGS: [&str; 6] = [
    "--output-format",
    "stream-json",
    "--verbose",
    "--input-format",
    "stream-json",
    "--include-partial-messages",
];
/// The file name of the system prompt in the run's directory.
const SYSTEM_PROMPT_FILE: &str = "system-prompt.txt";
/// The file name of the MCP configuration in the run's directory.
const MCP_CONFIG_FILE: &str = "mcp-config.json";

/// One call as `create_response` received it.
pub(crate) struct Call<'a> {
    pub(crate) messages: &'a [Message],
    pub(crate) tools: &'a ToolSet,
    pub(crate) model: &'a str,
    pub(crate) context: &'a RequestContext,
}

/// What the I/O layer prepared for the plan.
pub(crate) struct Place<'a> {
    /// The run's directory: the plan's files go there (their paths are in `args`).
    pub(crate) dir: &'a Path,
    /// The MCP entry of patchbay-mcp's HTTP tool server for this call (host tools over HTTP).
    pub(crate) http_host: Option<McpServerConfig>,
}

/// What must match for a kept-alive CLI to serve a call: a hash of everything the CLI was
/// started with but the session flags and the run directory (the files' contents are in).
/// A hash, so the pool keeps no key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fingerprint(u64);

/// A file the plan needs written before the CLI starts.
#[derive(Clone)]
pub(crate) struct PlanFile {
    pub(crate) path: PathBuf,
    pub(crate) text: String,
    /// What writing it is (for an I/O error).
    pub(crate) what: &'static str,
}

/// Everything one run is started with. No `Debug`: `env` holds keys, and the MCP config may
/// hold bearer headers.
pub(crate) struct LaunchPlan {
    /// The arguments (the program is found at call time, see [`crate::find_cli`]).
    pub(crate) args: Vec<String>,
    /// The environment set over the inherited (or cleared) one.
    pub(crate) env: BTreeMap<String, String>,
    pub(crate) inherit_env: bool,
    pub(crate) cwd: Option<PathBuf>,
    /// The system prompt file (a custom prompt) and the MCP config (`{"mcpServers": ...}`).
    pub(crate) files: Vec<PlanFile>,
    pub(crate) session: SessionArgs,
    /// The session id known before the CLI says it (a fixed new id or a resumed one).
    pub(crate) session_id: Option<String>,
    /// The `initialize` control request (with the sub-agents).
    pub(crate) initialize: Value,
    /// The first user turn line (the new user messages, or a flattened history).
    pub(crate) user_turn: String,
    /// Warnings for `Started`: ignored options, a flattened history.
    pub(crate) warnings: Vec<Warning>,
    pub(crate) fingerprint: Fingerprint,
}

impl LaunchPlan {
    /// The plan of `call` under `config`, its files in `place.dir`.
    pub(crate) fn new(config: &ClaudeAgentConfig, call: &Call<'_>, place: &Place<'_>) -> Self {
        let context = call.context;
        let mut warnings = unsupported(context);
        let (session, content, session_warnings) = session::plan(call.messages, context.session.as_ref());
        warnings.extend(session_warnings);
        let mut args: Vec<String> = STREAM_FLAGS.map(String::from).to_vec();
        let mut files = Vec::new();
        if let Some(text) = system_prompt_args(config, context, place.dir, &mut args) {
            let path = place.dir.join(SYSTEM_PROMPT_FILE);
            files.push(PlanFile {
                path,
                text,
                what: "writing the system prompt file",
            });
        }
        flag_args(config, call, &mut args);
        let servers = mcp_servers(config, call, place.http_host.as_ref());
        if !servers.is_empty() {
            let path = place.dir.join(MCP_CONFIG_FILE);
            args.push("--mcp-config".into());
            args.push(path.display().to_string());
            // Only these servers: none from the user's or the project's configuration.
            args.push("--strict-mcp-config".into());
            let text = json!({ "mcpServers": servers }).to_string();
            files.push(PlanFile {
                path,
                text,
                what: "writing the MCP config file",
            });
        }
        let env = env(config, context);
        let initialize = initialize_request(config, context);
        let fingerprint = Launched {
            call,
            config,
            dir: place.dir,
            args: &args,
            env: &env,
            files: &files,
            initialize: &initialize,
        }
        .fingerprint();
        args.extend(session.args());
        args.extend(config.extra_args.iter().cloned());
        let session_id = match &session {
            SessionArgs::New(Some(id)) | SessionArgs::Resume(id) => Some(id.clone()),
            SessionArgs::New(None) | SessionArgs::Fork(_) => None,
        };
        let user_turn = control::user_line(content, session_id.as_deref().unwrap_or(""));
        Self {
            args,
            env,
            inherit_env: config.inherit_env,
            cwd: context.working_dir.clone(),
            files,
            session,
            session_id,
            initialize,
            user_turn,
            warnings,
            fingerprint,
        }
    }
}

/// The system prompt flags; the text to write to the prompt file when there is one.
fn system_prompt_args(
    config: &ClaudeAgentConfig,
    context: &RequestContext,
    dir: &Path,
    args: &mut Vec<String>,
) -> Option<String> {
    match (&config.system_prompt, &context.system) {
        (SystemPrompt::Custom, Some(system)) if !system.is_empty() => {
            args.push("--system-prompt-file".into());
            args.push(dir.join(SYSTEM_PROMPT_FILE).display().to_string());
            Some(system.clone())
        }
        (SystemPrompt::Custom, _) => {
            args.push("--system-prompt".into());
            args.push(String::new());
            None
        }
        (SystemPrompt::Preset { append }, system) => {
            if let Some(text) = append.as_ref().or(system.as_ref()).filter(|t| !t.is_empty()) {
                args.push("--append-system-prompt".into());
                args.push(text.clone());
            }
            None
        }
    }
}

/// Model, permissions, tool lists and turns.
fn flag_args(config: &ClaudeAgentConfig, call: &Call<'_>, args: &mut Vec<String>) {
    let mut push = |flag: &str, value: String| {
        args.push(flag.into());
        args.push(value);
    };
    if !call.model.is_empty() {
        push("--model", call.model.to_string());
    }
    let approval = call.context.approval.is_some();
    if approval {
        push("--permission-prompt-tool", "stdio".into());
    }
    if let Some(mode) = &config.permission_mode {
        push("--permission-mode", mode.clone());
    }
    let mut allowed = config.allowed_tools.clone();
    if !approval {
        // No approval handler: host tools run without asking, as in patchbay's agent loop.
        let server = &config.host_server_name;
        allowed.extend(call.tools.specs().map(|s| format!("mcp__{server}__{}", s.name)));
    }
    if !allowed.is_empty() {
        push("--allowedTools", allowed.join(","));
    }
    if !config.disallowed_tools.is_empty() {
        push("--disallowedTools", config.disallowed_tools.join(","));
    }
    if let Some(list) = &config.tools {
        push("--tools", list.join(","));
    }
    if let Some(turns) = config.max_turns {
        push("--max-turns", turns.to_string());
    }
    // Structured output: the CLI offers the model its `StructuredOutput` tool with this schema.
    if let Some(schema) = &call.context.output_schema {
        push("--json-schema", schema.schema.to_string());
    }
    // Always given, empty by default: no settings, hooks or CLAUDE.md from the machine.
    let sources: Vec<&str> = config.setting_sources.iter().map(|s| s.as_str()).collect();
    push("--setting-sources", sources.join(","));
}

/// The MCP servers: the caller's, then the host tools' (in-process, or the HTTP entry).
fn mcp_servers(config: &ClaudeAgentConfig, call: &Call<'_>, http_host: Option<&McpServerConfig>) -> Map<String, Value> {
    let mut servers = Map::new();
    for server in &call.context.mcp_servers {
        servers.insert(server.name.clone(), mcp_entry(server));
    }
    if !call.tools.is_empty() {
        let name = &config.host_server_name;
        let entry = match (config.host_tools, http_host) {
            (HostTools::Http, Some(server)) => mcp_entry(server),
            _ => json!({ "type": "sdk", "name": name }),
        };
        servers.insert(name.clone(), entry);
    }
    servers
}

fn mcp_entry(server: &McpServerConfig) -> Value {
    match &server.transport {
        McpTransport::Http { url, headers } => json!({ "type": "http", "url": url, "headers": headers }),
        McpTransport::Stdio { command, args, env } => {
            json!({ "type": "stdio", "command": command, "args": args, "env": env })
        }
    }
}

/// The configuration's environment, the call's over it, and the sampling limits the CLI reads
/// from its environment.
fn env(config: &ClaudeAgentConfig, context: &RequestContext) -> BTreeMap<String, String> {
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
    env
}

/// The `initialize` request: the hooks (when the call has them) and the sub-agents. Part of
/// the fingerprint, so a CLI initialized with hooks never serves a call without them (or the
/// other way round).
fn initialize_request(config: &ClaudeAgentConfig, context: &RequestContext) -> Value {
    let hooks = crate::hooks::registration(context.hooks.is_some());
    let mut request = json!({ "subtype": "initialize", "hooks": hooks });
    if !config.agents.is_empty() {
        request["agents"] = serde_json::to_value(&config.agents).unwrap_or(Value::Null);
    }
    request
}

/// Options the CLI does not take: a warning each.
fn unsupported(context: &RequestContext) -> Vec<Warning> {
    let s = &context.sampling;
    let ignored = [
        ("temperature", s.temperature.is_some()),
        ("top_p", s.top_p.is_some()),
        ("top_k", s.top_k.is_some()),
        ("stop_sequences", !s.stop_sequences.is_empty()),
        ("tool_choice", context.tool_choice.is_some()),
        ("system_cache_control", context.system_cache_control.is_some()),
    ];
    ignored
        .into_iter()
        .filter(|(_, set)| *set)
        .map(|(option, _)| {
            Warning::new(
                "unsupported_option",
                format!("the Claude Code CLI does not take `{option}`; it was ignored"),
            )
        })
        .collect()
}

/// What a fingerprint is made of.
struct Launched<'a> {
    call: &'a Call<'a>,
    config: &'a ClaudeAgentConfig,
    dir: &'a Path,
    /// The arguments before the session flags.
    args: &'a [String],
    env: &'a BTreeMap<String, String>,
    files: &'a [PlanFile],
    initialize: &'a Value,
}

impl Launched<'_> {
    fn fingerprint(&self) -> Fingerprint {
        let mut hasher = DefaultHasher::new();
        let dir = self.dir.display().to_string();
        self.call.model.hash(&mut hasher);
        // The program: a call naming another CLI must not be served by this one.
        self.config.cli_path.hash(&mut hasher);
        for arg in self.args.iter().chain(&self.config.extra_args) {
            // The run directory differs per call; the files' contents are hashed below.
            arg.strip_prefix(dir.as_str()).unwrap_or(arg).hash(&mut hasher);
        }
        self.env.hash(&mut hasher);
        self.config.inherit_env.hash(&mut hasher);
        self.call.context.working_dir.hash(&mut hasher);
        for file in self.files {
            file.text.hash(&mut hasher);
        }
        self.initialize.to_string().hash(&mut hasher);
        for spec in self.call.tools.specs() {
            // The CLI lists the host tools once, at its start.
            (&spec.name, &spec.description, spec.input_schema.to_string()).hash(&mut hasher);
        }
        self.call.context.approval.is_some().hash(&mut hasher);
        (self.config.host_tools == HostTools::InProcess).hash(&mut hasher);
        Fingerprint(hasher.finish())
    }
}

#[cfg(test)]
mod tests;
