//! [`ToolLog`]: where a running tool sends log messages (the MCP tool server turns them into
//! `notifications/message` for its client), beside [`ToolProgress`](crate::tool::ToolProgress).

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How severe a log message is: the syslog levels MCP uses, least severe first (so levels
/// compare: `LogLevel::Debug < LogLevel::Error`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogLevel {
    /// Detail for debugging.
    Debug,
    /// What the tool is doing.
    #[default]
    Info,
    /// Normal but significant.
    Notice,
    /// Something may be wrong.
    Warning,
    /// Something failed.
    Error,
    /// A critical condition.
    Critical,
    /// Action must be taken at once.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    /// The level's name as MCP sends it (`debug`, `info`, ... `emergency`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }
}

/// One log message of a running tool.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LogMessage {
    /// How severe it is.
    pub level: LogLevel,
    /// The logger's name, when the tool gives one.
    pub logger: Option<String>,
    /// The message: any JSON value (most often a string).
    pub data: Value,
}

impl LogMessage {
    /// A message at `level`.
    pub fn new(level: LogLevel, data: impl Into<Value>) -> Self {
        Self {
            level,
            logger: None,
            data: data.into(),
        }
    }

    /// The same message under this logger name.
    pub fn with_logger(mut self, logger: impl Into<String>) -> Self {
        self.logger = Some(logger.into());
        self
    }
}

/// Where a tool sends [`LogMessage`]s while it runs (the MCP tool server sends them to its
/// client as `notifications/message`, filtered by the client's `logging/setLevel`). Cheap to
/// clone; the default logs nowhere, so a tool can always log.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use patchbay_core::{ToolContext, tool::{LogLevel, LogMessage, ToolLog}};
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = seen.clone();
/// let cx = ToolContext::new().with_log(ToolLog::new(move |message: LogMessage| {
///     sink.lock().unwrap().push((message.level, message.data));
/// }));
/// cx.log.info("reading notes.txt");
/// ToolContext::new().log.warning("nobody listens: a no-op");
/// assert_eq!(*seen.lock().unwrap(), [(LogLevel::Info, "reading notes.txt".into())]);
/// ```
#[derive(Clone, Default)]
pub struct ToolLog {
    sink: Option<Arc<dyn Fn(LogMessage) + Send + Sync>>,
}

impl ToolLog {
    /// A log that hands each message to `sink` (which must not block: queue it).
    pub fn new(sink: impl Fn(LogMessage) + Send + Sync + 'static) -> Self {
        Self {
            sink: Some(Arc::new(sink)),
        }
    }

    /// Whether anyone listens (a tool can skip work done only to log).
    pub fn is_active(&self) -> bool {
        self.sink.is_some()
    }

    /// Send `message` (nothing happens when nobody listens).
    pub fn log(&self, message: LogMessage) {
        if let Some(sink) = &self.sink {
            sink(message);
        }
    }

    /// Log `data` at `level`.
    pub fn at(&self, level: LogLevel, data: impl Into<Value>) {
        if self.is_active() {
            self.log(LogMessage::new(level, data));
        }
    }

    /// Log `data` at [`LogLevel::Debug`].
    pub fn debug(&self, data: impl Into<Value>) {
        self.at(LogLevel::Debug, data);
    }

    /// Log `data` at [`LogLevel::Info`].
    pub fn info(&self, data: impl Into<Value>) {
        self.at(LogLevel::Info, data);
    }

    /// Log `data` at [`LogLevel::Warning`].
    pub fn warning(&self, data: impl Into<Value>) {
        self.at(LogLevel::Warning, data);
    }

    /// Log `data` at [`LogLevel::Error`].
    pub fn error(&self, data: impl Into<Value>) {
        self.at(LogLevel::Error, data);
    }
}

impl fmt::Debug for ToolLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolLog").field("active", &self.is_active()).finish()
    }
}
