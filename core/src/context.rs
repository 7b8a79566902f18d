//! Per-call options: [`RequestContext`] and what it carries.

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::approval::{Approval, ApprovalHandler, ApprovalRequest, PauseFor};
use crate::cache::CacheControl;
pub use crate::extensions::Extensions;
use crate::hooks::Hooks;
use crate::schema::OutputSchema;
use crate::tool::ToolContext;

/// Sampling and length options. `None` means the provider's default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Sampling {
    /// Maximum output tokens.
    pub max_tokens: Option<u32>,
    /// Temperature.
    pub temperature: Option<f32>,
    /// Nucleus sampling.
    pub top_p: Option<f32>,
    /// Top-k sampling.
    pub top_k: Option<u32>,
    /// Stop sequences.
    #[serde(default)]
    pub stop_sequences: Vec<String>,
    /// Reasoning budget in tokens (Anthropic `thinking.budget_tokens`); `None` leaves thinking off.
    pub thinking_budget: Option<u32>,
}

/// How the model may choose tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// The model must call some tool.
    Any,
    /// The model must not call tools.
    None,
    /// The model must call this tool.
    Tool(String),
}

/// Which agent-runtime session a call belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Session {
    /// Start a new session, optionally with a fixed id.
    New {
        /// The id to give it.
        id: Option<String>,
    },
    /// Continue an existing session.
    Resume {
        /// The session id.
        id: String,
    },
    /// Start a new session from a copy of an existing one.
    Fork {
        /// The session to copy.
        from: String,
    },
}

/// Where an MCP server lives.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum McpTransport {
    /// Streamable HTTP.
    Http {
        /// The endpoint URL (credentials in it are never logged).
        url: String,
        /// Extra headers sent with every request (values are never logged).
        #[serde(default)]
        headers: BTreeMap<String, String>,
    },
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        #[serde(default)]
        args: Vec<String>,
        /// Extra environment (values are never logged).
        #[serde(default)]
        env: BTreeMap<String, String>,
    },
}

impl fmt::Debug for McpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", &crate::kit::redact_url(url))
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .finish(),
            Self::Stdio { command, args, env } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

/// An MCP server to attach to a call or an agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerConfig {
    /// A short unique name (`host`, `github`...).
    pub name: String,
    /// How to reach it.
    pub transport: McpTransport,
}

/// Everything optional a call can carry beyond messages, tools and model.
///
/// A provider ignores what it cannot use and says so in a [`Warning`](crate::Warning) on
/// `Started`, never by failing. `Debug` prints environment keys, never their values.
///
/// ```
/// use patchbay_core::{RequestContext, context::Session};
/// let cx = RequestContext::new()
///     .with_system("You are terse.")
///     .with_max_tokens(512)
///     .with_metadata("project_id", "p1")
///     .with_session(Session::Resume { id: "abc".into() });
/// assert_eq!(cx.sampling.max_tokens, Some(512));
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct RequestContext {
    /// The system prompt.
    pub system: Option<String>,
    /// Prompt-caching marker for the system prompt.
    pub system_cache_control: Option<CacheControl>,
    /// Sampling and length options.
    pub sampling: Sampling,
    /// How the model may choose tools.
    pub tool_choice: Option<ToolChoice>,
    /// Working directory for tools and child processes.
    pub working_dir: Option<PathBuf>,
    /// Environment for child processes (values never logged).
    pub env: BTreeMap<String, String>,
    /// String pairs (project id, thread id, parent session...) forwarded to MCP servers as
    /// headers and to tools in [`ToolContext`].
    pub metadata: BTreeMap<String, String>,
    /// Agent-runtime session.
    pub session: Option<Session>,
    /// Asked before each host tool runs.
    pub approval: Option<Arc<dyn ApprovalHandler>>,
    /// Decisions a person made on the calls a paused run asked about, by call id: they answer
    /// those calls without asking the approval handler again (see [`Approval::Pause`]).
    pub decisions: BTreeMap<String, Approval>,
    /// Hooks called around tools, on the prompt and at the stop, on every provider that
    /// supports them (see [`crate::hooks`]).
    pub hooks: Option<Arc<dyn Hooks>>,
    /// MCP servers to attach for this call. An agent runtime connects them itself; for a
    /// direct API they need a tool source on the [`crate::Agent`] (patchbay-mcp's
    /// `McpClientSet`), and a provider that gets them unattached says so with a
    /// [`RequestContext::unattached_mcp_servers`] warning.
    pub mcp_servers: Vec<McpServerConfig>,
    /// Typed extensions handed to tools.
    pub extensions: Extensions,
    /// Provider-specific options, keyed by provider name (`"anthropic": {...}`).
    pub provider_options: BTreeMap<String, Value>,
    /// The JSON object the answer should be: delivered as JSON text in the response's final
    /// text block (see [`crate::object`] for the contract every provider keeps).
    pub output_schema: Option<OutputSchema>,
}

impl RequestContext {
    /// An empty context.
    pub fn new() -> Self {
        Self::default()
    }

    /// Set the system prompt.
    pub fn with_system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// Set the maximum output tokens.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.sampling.max_tokens = Some(max_tokens);
        self
    }

    /// Set the sampling options.
    pub fn with_sampling(mut self, sampling: Sampling) -> Self {
        self.sampling = sampling;
        self
    }

    /// Set the tool choice.
    pub fn with_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// Set the working directory.
    pub fn with_working_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.working_dir = Some(dir.into());
        self
    }

    /// Add an environment variable for child processes.
    pub fn with_env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Add a metadata pair.
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Set the session.
    pub fn with_session(mut self, session: Session) -> Self {
        self.session = Some(session);
        self
    }

    /// Set the approval handler.
    pub fn with_approval(mut self, handler: Arc<dyn ApprovalHandler>) -> Self {
        self.approval = Some(handler);
        self
    }

    /// Answer call `tool_use_id` of a paused run with `approval` (see [`Approval::Pause`]).
    pub fn with_decision(mut self, tool_use_id: impl Into<String>, approval: Approval) -> Self {
        self.decisions.insert(tool_use_id.into(), approval);
        self
    }

    /// Set the hooks.
    pub fn with_hooks(mut self, hooks: Arc<dyn Hooks>) -> Self {
        self.hooks = Some(hooks);
        self
    }

    /// Attach an MCP server.
    pub fn with_mcp_server(mut self, server: McpServerConfig) -> Self {
        self.mcp_servers.push(server);
        self
    }

    /// Add a typed extension.
    pub fn with_extension<T: Any + Send + Sync>(mut self, value: T) -> Self {
        self.extensions.insert(value);
        self
    }

    /// Ask for a JSON object of this schema (see [`crate::object`]).
    pub fn with_output_schema(mut self, schema: OutputSchema) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Set the options of one provider.
    pub fn with_provider_options(mut self, provider: impl Into<String>, options: Value) -> Self {
        self.provider_options.insert(provider.into(), options);
        self
    }

    /// The warning (code `mcp_servers_ignored`) that a provider which cannot connect MCP
    /// servers itself gives when `mcp_servers` reached it: nothing attached them, so their tools
    /// are not offered to the model. `None` when there are none.
    pub fn unattached_mcp_servers(&self) -> Option<crate::Warning> {
        if self.mcp_servers.is_empty() {
            return None;
        }
        let names: Vec<&str> = self.mcp_servers.iter().map(|server| server.name.as_str()).collect();
        Some(crate::Warning::new(
            "mcp_servers_ignored",
            format!(
                "this provider does not connect MCP servers itself, so the tools of {} ({}) are not offered; \
                 attach patchbay-mcp's `McpClientSet` to the `Agent` (`with_tool_source`) to use them",
                if names.len() == 1 {
                    "the MCP server"
                } else {
                    "the MCP servers"
                },
                names.join(", ")
            ),
        ))
    }

    /// The options of one provider, if any.
    pub fn provider_options(&self, provider: &str) -> Option<&Value> {
        self.provider_options.get(provider)
    }

    /// The [`ToolContext`] a tool of this request gets.
    pub fn tool_context(&self, signal: &crate::Signal) -> ToolContext {
        ToolContext {
            signal: signal.clone(),
            working_dir: self.working_dir.clone(),
            metadata: self.metadata.clone(),
            extensions: self.extensions.clone(),
            tool_use_id: None,
            progress: crate::tool::ToolProgress::default(),
            log: crate::tool::ToolLog::default(),
        }
    }
}

impl fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestContext")
            .field(
                "system",
                &self.system.as_ref().map(|s| format!("<{} chars>", s.chars().count())),
            )
            .field("sampling", &self.sampling)
            .field("tool_choice", &self.tool_choice)
            .field("working_dir", &self.working_dir)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("metadata", &self.metadata)
            .field("session", &self.session)
            .field("approval", &self.approval.is_some())
            .field("decisions", &self.decisions)
            .field("hooks", &self.hooks.is_some())
            .field("mcp_servers", &self.mcp_servers)
            .field("extensions", &self.extensions)
            .field("provider_options", &self.provider_options.keys().collect::<Vec<_>>())
            .field("output_schema", &self.output_schema.as_ref().map(|schema| &schema.name))
            .finish()
    }
}
