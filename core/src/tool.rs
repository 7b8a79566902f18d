//! Tools: what a model can call, what a call returns, and what a tool gets to work with.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cache::CacheControl;
use crate::extensions::Extensions;
use crate::signal::Signal;
pub use crate::tool_log::{LogLevel, LogMessage, ToolLog};

/// Who executed a tool call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutedBy {
    /// The host: patchbay's agent loop runs the tool through the [`ToolSet`](crate::ToolSet).
    #[default]
    Host,
    /// The provider: a server tool (web search...) or an agent runtime's own tool loop.
    Provider,
}

impl ExecutedBy {
    /// Whether this is [`ExecutedBy::Host`].
    pub fn is_host(&self) -> bool {
        matches!(self, Self::Host)
    }
}

/// What a model is told about a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Unique name within a [`ToolSet`](crate::ToolSet).
    pub name: String,
    /// What the tool does and when to use it.
    pub description: String,
    /// JSON Schema of the input object.
    pub input_schema: Value,
    /// Extra facts such as MCP annotations (`readOnlyHint`...), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// JSON Schema of the [`ToolContent::Json`] object the tool answers with, for a tool that
    /// returns structured output (MCP's `outputSchema`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Prompt-caching marker for providers that support it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

impl ToolSpec {
    /// A spec from its parts.
    pub fn new(name: impl Into<String>, description: impl Into<String>, input_schema: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            input_schema,
            annotations: None,
            output_schema: None,
            cache_control: None,
        }
    }

    /// The same spec with this output schema (see [`output_schema`](Self::output_schema)).
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// A spec whose input schema is derived from `I` with schemars.
    pub fn for_input<I: JsonSchema>(name: impl Into<String>, description: impl Into<String>) -> Self {
        let schema = schemars::schema_for!(I);
        let mut schema = serde_json::to_value(schema).unwrap_or_else(|_| serde_json::json!({"type": "object"}));
        if let Value::Object(map) = &mut schema {
            // Providers want a plain object schema; the meta-schema URI and title add nothing.
            map.remove("$schema");
            map.remove("title");
        }
        Self::new(name, description, schema)
    }
}

/// One piece of a tool's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolContent {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// MIME type such as `image/png`.
        media_type: String,
        /// Base64 data.
        data: String,
    },
    /// An embedded resource (MCP style).
    Resource {
        /// The resource URI.
        uri: String,
        /// MIME type, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Text contents.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        /// Base64 binary contents.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        blob: Option<String>,
    },
    /// Structured JSON.
    Json {
        /// The value.
        value: Value,
    },
}

impl ToolContent {
    /// A text piece.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// The tool did its job.
    #[default]
    Completed,
    /// The tool ran and failed; the content says why.
    Failed,
    /// The call was refused (approval handler, sandbox); the content says why.
    Denied,
    /// The call was cancelled before it finished.
    Aborted,
}

/// What a tool call returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// Content handed back to the model.
    pub content: Vec<ToolContent>,
    /// How the call ended.
    pub status: ToolStatus,
    /// Structured side facts for the host (documents used, an artifact created); never sent
    /// to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

impl ToolResult {
    /// A completed result with one text piece.
    pub fn text(text: impl Into<String>) -> Self {
        Self::with_status(ToolStatus::Completed, text)
    }

    /// A failed result explaining the failure.
    pub fn error(message: impl Into<String>) -> Self {
        Self::with_status(ToolStatus::Failed, message)
    }

    /// A denied result explaining the refusal.
    pub fn denied(message: impl Into<String>) -> Self {
        Self::with_status(ToolStatus::Denied, message)
    }

    /// An aborted result (the call was cancelled).
    pub fn aborted() -> Self {
        Self::with_status(ToolStatus::Aborted, "The tool call was cancelled.")
    }

    /// A result with the given status and one text piece.
    pub fn with_status(status: ToolStatus, text: impl Into<String>) -> Self {
        Self {
            content: vec![ToolContent::text(text)],
            status,
            metadata: None,
        }
    }

    /// Attach metadata.
    pub fn with_metadata(mut self, metadata: Value) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// Whether the model should see this as an error (anything but `Completed`).
    pub fn is_error(&self) -> bool {
        self.status != ToolStatus::Completed
    }

    /// All text pieces joined with newlines.
    pub fn text_content(&self) -> String {
        let mut out = String::new();
        for piece in &self.content {
            if let ToolContent::Text { text } = piece {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(text);
            }
        }
        out
    }
}

/// One progress report of a tool call: a short line of what it is doing now and, for a tool
/// that counts, how far it got.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ProgressUpdate {
    /// What the call is doing now, in a few words ("tool read: notes.txt", "writing").
    pub message: Option<String>,
    /// How much is done, for a tool that counts; increasing from report to report.
    pub progress: Option<f64>,
    /// How much there is in all, when known.
    pub total: Option<f64>,
}

impl ProgressUpdate {
    /// A report that says what the call is doing.
    pub fn message(text: impl Into<String>) -> Self {
        Self {
            message: Some(text.into()),
            ..Self::default()
        }
    }

    /// The same report with how much is done and, when known, of how much.
    pub fn with_progress(mut self, progress: f64, total: Option<f64>) -> Self {
        self.progress = Some(progress);
        self.total = total;
        self
    }
}

/// Where a tool sends [`ProgressUpdate`]s while it runs (the MCP tool server turns them into
/// `notifications/progress` for a caller that asked with a `progressToken`). Cheap to clone;
/// the default reports nowhere, so a tool can always report.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use patchbay_core::{tool::ProgressUpdate, ToolContext, tool::ToolProgress};
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = seen.clone();
/// let cx = ToolContext::new().with_progress(ToolProgress::new(move |update: ProgressUpdate| {
///     sink.lock().unwrap().push(update.message.unwrap_or_default());
/// }));
/// cx.progress.message("tool read: notes.txt");
/// ToolContext::new().progress.message("nobody listens: a no-op");
/// assert_eq!(*seen.lock().unwrap(), ["tool read: notes.txt"]);
/// ```
#[derive(Clone, Default)]
pub struct ToolProgress {
    report: Option<Arc<dyn Fn(ProgressUpdate) + Send + Sync>>,
}

impl ToolProgress {
    /// A reporter that hands each update to `report` (which must not block: queue it).
    pub fn new(report: impl Fn(ProgressUpdate) + Send + Sync + 'static) -> Self {
        Self {
            report: Some(Arc::new(report)),
        }
    }

    /// Whether anyone listens (a tool can skip work done only to report).
    pub fn is_active(&self) -> bool {
        self.report.is_some()
    }

    /// Report `update` (nothing happens when nobody listens).
    pub fn report(&self, update: ProgressUpdate) {
        if let Some(report) = &self.report {
            report(update);
        }
    }

    /// Report what the call is doing now.
    pub fn message(&self, text: impl Into<String>) {
        if self.is_active() {
            self.report(ProgressUpdate::message(text));
        }
    }
}

impl fmt::Debug for ToolProgress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolProgress")
            .field("active", &self.is_active())
            .finish()
    }
}

/// What a tool gets besides its input: cancellation, working directory, request metadata,
/// typed host extensions, a progress reporter and a log, so a tool never needs globals.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct ToolContext {
    /// Cancelled when the run is cancelled; long tools should watch it.
    pub signal: Signal,
    /// The working directory of the request, if any.
    pub working_dir: Option<PathBuf>,
    /// Request metadata (project id, thread id, parent session...).
    pub metadata: BTreeMap<String, String>,
    /// Typed host extensions (a database handle, say).
    pub extensions: Extensions,
    /// The id of the call being executed.
    pub tool_use_id: Option<String>,
    /// Where progress reports go (nowhere unless the caller listens).
    pub progress: ToolProgress,
    /// Where log messages go (nowhere unless the caller listens).
    pub log: ToolLog,
}

impl ToolContext {
    /// An empty context with a fresh signal.
    pub fn new() -> Self {
        Self::default()
    }

    /// Set the signal.
    pub fn with_signal(mut self, signal: Signal) -> Self {
        self.signal = signal;
        self
    }

    /// Set the working directory.
    pub fn with_working_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.working_dir = Some(dir.into());
        self
    }

    /// Set the request metadata.
    pub fn with_metadata(mut self, metadata: BTreeMap<String, String>) -> Self {
        self.metadata = metadata;
        self
    }

    /// Set the typed extensions.
    pub fn with_extensions(mut self, extensions: Extensions) -> Self {
        self.extensions = extensions;
        self
    }

    /// Set the id of the call being executed.
    pub fn with_tool_use_id(mut self, id: impl Into<String>) -> Self {
        self.tool_use_id = Some(id.into());
        self
    }

    /// Set where progress reports go.
    pub fn with_progress(mut self, progress: ToolProgress) -> Self {
        self.progress = progress;
        self
    }

    /// Set where log messages go.
    pub fn with_log(mut self, log: ToolLog) -> Self {
        self.log = log;
        self
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("cancelled", &self.signal.is_cancelled())
            .field("working_dir", &self.working_dir)
            .field("metadata", &self.metadata)
            .field("extensions", &self.extensions)
            .field("tool_use_id", &self.tool_use_id)
            .field("progress", &self.progress.is_active())
            .field("log", &self.log.is_active())
            .finish()
    }
}

/// A tool the model can call.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Name, description and input schema.
    fn spec(&self) -> &ToolSpec;

    /// Run the tool. Failures are results with a non-`Completed` status, not panics.
    async fn execute(&self, input: Value, cx: &ToolContext) -> ToolResult;
}

/// A tool made from an async function taking a typed input; the schema comes from schemars.
///
/// ```
/// use patchbay_core::{FnTool, Tool, ToolContext, ToolResult};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Add { a: i64, b: i64 }
///
/// let tool = FnTool::new("add", "Add two integers.", |input: Add, _cx: ToolContext| async move {
///     ToolResult::text((input.a + input.b).to_string())
/// });
/// assert_eq!(tool.spec().name, "add");
/// assert_eq!(tool.spec().input_schema["required"], serde_json::json!(["a", "b"]));
/// ```
pub struct FnTool<I, F> {
    spec: ToolSpec,
    func: F,
    _input: PhantomData<fn(I)>,
}

impl<I, F, Fut> FnTool<I, F>
where
    I: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(I, ToolContext) -> Fut + Send + Sync,
    Fut: Future<Output = ToolResult> + Send,
{
    /// A tool named `name` that deserializes its input into `I` and calls `func`.
    pub fn new(name: impl Into<String>, description: impl Into<String>, func: F) -> Self {
        Self {
            spec: ToolSpec::for_input::<I>(name, description),
            func,
            _input: PhantomData,
        }
    }

    /// The same tool with these MCP annotations (`{"readOnlyHint": true}`, say) in its spec.
    pub fn with_annotations(mut self, annotations: Value) -> Self {
        self.spec.annotations = Some(annotations);
        self
    }

    /// The same tool with this output schema in its spec (see [`ToolSpec::output_schema`]).
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.spec.output_schema = Some(schema);
        self
    }
}

#[async_trait]
impl<I, F, Fut> Tool for FnTool<I, F>
where
    I: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(I, ToolContext) -> Fut + Send + Sync,
    Fut: Future<Output = ToolResult> + Send,
{
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn execute(&self, input: Value, cx: &ToolContext) -> ToolResult {
        match serde_json::from_value::<I>(input) {
            Ok(input) => (self.func)(input, cx.clone()).await,
            Err(err) => ToolResult::error(format!("invalid input for tool `{}`: {err}", self.spec.name)),
        }
    }
}

impl<I, F> fmt::Debug for FnTool<I, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnTool")
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}

/// Parse a typed input out of a JSON value, as [`FnTool`] does, for hand-written tools.
pub fn parse_input<I: DeserializeOwned>(tool: &str, input: Value) -> Result<I, ToolResult> {
    serde_json::from_value(input).map_err(|err| ToolResult::error(format!("invalid input for tool `{tool}`: {err}")))
}
