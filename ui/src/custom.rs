//! A second, smaller mapping: a hand-written backend protocol of five named SSE events, for a
//! front end that is not the AI SDK's.
//!
//! | event | data | when |
//! |---|---|---|
//! | `text_delta` | `{"text"}` | every `TextDelta` |
//! | `tool_executing` | `{"tool", "status"}` | every `ToolCall` (input complete): a status line for the person |
//! | `artifact_created` | `{"artifact"}` | each artifact a `ToolResult` reports in its metadata ([`ToolResult::artifacts`]) |
//! | `message_complete` | `{"usage", "documents", "artifacts", "tools"}` | `Finish`, from the [`RunSummary`] |
//! | `error` | `{"message"}` | the error that ends the stream (its `Display`) |
//!
//! Every other event writes nothing. Each frame is `event: {name}\ndata: {json}\n\n`.
//!
//! ```
//! use patchbay_core::Event;
//! use patchbay_ui::custom::{CustomEvent, CustomStream};
//!
//! let mut stream = CustomStream::new().with_status(|tool, input| match tool {
//!     "search" => format!("Searching for {}...", input["query"].as_str().unwrap_or("it")),
//!     other => format!("Running {other}..."),
//! });
//! let call = Event::ToolCall {
//!     id: "c1".into(), name: "search".into(), input: serde_json::json!({"query": "rust"}),
//!     executed_by: Default::default(), signature: None,
//! };
//! let events = stream.push(&call);
//! assert_eq!(events, [CustomEvent::ToolExecuting { tool: "search".into(), status: "Searching for rust...".into() }]);
//! assert_eq!(&events[0].encode()[..], b"event: tool_executing\ndata: {\"tool\":\"search\",\"status\":\"Searching for rust...\"}\n\n");
//! ```

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use futures::stream::{self, Stream, StreamExt};
use patchbay_core::summary::{ArtifactRef, DocumentRef, RunSummary, ToolCounts};
use patchbay_core::{Event, EventStream, ProviderError, ToolResult, Usage};
use serde::{Deserialize, Serialize};
use serde_json::Value;

type StatusFn = Arc<dyn Fn(&str, &Value) -> String + Send + Sync>;

/// One event of the custom protocol.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", content = "data", rename_all = "snake_case")]
#[non_exhaustive]
pub enum CustomEvent {
    /// Text to append to the answer.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// A tool is about to run.
    ToolExecuting {
        /// The tool's name.
        tool: String,
        /// A status line for the person ("Running search...").
        status: String,
    },
    /// A tool created something for the person.
    ArtifactCreated {
        /// What it created.
        artifact: ArtifactRef,
    },
    /// The answer is complete.
    MessageComplete {
        /// The run's total usage.
        usage: Usage,
        /// The documents the tools used, deduplicated.
        documents: Vec<DocumentRef>,
        /// The artifacts the tools created.
        artifacts: Vec<ArtifactRef>,
        /// Per tool: calls and how they ended.
        tools: BTreeMap<String, ToolCounts>,
    },
    /// The run failed.
    Error {
        /// What the person may read.
        message: String,
    },
}

impl CustomEvent {
    /// The event's name (`text_delta`...).
    pub fn name(&self) -> &'static str {
        match self {
            Self::TextDelta { .. } => "text_delta",
            Self::ToolExecuting { .. } => "tool_executing",
            Self::ArtifactCreated { .. } => "artifact_created",
            Self::MessageComplete { .. } => "message_complete",
            Self::Error { .. } => "error",
        }
    }

    /// The event's data, without its name.
    pub fn data(&self) -> Value {
        match serde_json::to_value(self) {
            Ok(Value::Object(mut map)) => map.remove("data").unwrap_or(Value::Null),
            _ => Value::Null,
        }
    }

    /// The SSE frame: `event: {name}\ndata: {json}\n\n`.
    pub fn encode(&self) -> Bytes {
        Bytes::from(format!("event: {}\ndata: {}\n\n", self.name(), self.data()))
    }
}

/// The default status line: `Running {tool}...`.
pub fn default_status(tool: &str, _input: &Value) -> String {
    format!("Running {tool}...")
}

/// Turns a run's events into [`CustomEvent`]s.
#[derive(Clone)]
pub struct CustomStream {
    status: StatusFn,
    summary: RunSummary,
    ended: bool,
}

impl Default for CustomStream {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for CustomStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CustomStream")
            .field("summary", &self.summary)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl CustomStream {
    /// A mapper with [`default_status`].
    pub fn new() -> Self {
        Self {
            status: Arc::new(default_status),
            summary: RunSummary::default(),
            ended: false,
        }
    }

    /// Status lines from `status(tool, input)`.
    pub fn with_status(mut self, status: impl Fn(&str, &Value) -> String + Send + Sync + 'static) -> Self {
        self.status = Arc::new(status);
        self
    }

    /// The run summary observed so far.
    pub fn summary(&self) -> &RunSummary {
        &self.summary
    }

    /// The events for one patchbay event; nothing after `message_complete` or `error`.
    pub fn push(&mut self, event: &Event) -> Vec<CustomEvent> {
        self.summary.observe(event);
        if self.ended {
            return Vec::new();
        }
        match event {
            Event::TextDelta { text, .. } => vec![CustomEvent::TextDelta { text: text.clone() }],
            Event::ToolCall { name, input, .. } => vec![CustomEvent::ToolExecuting {
                tool: name.clone(),
                status: (self.status)(name, input),
            }],
            Event::ToolResult { result, .. } => artifacts(result),
            Event::Finish { .. } => {
                self.ended = true;
                vec![CustomEvent::MessageComplete {
                    usage: self.summary.usage,
                    documents: self.summary.documents.clone(),
                    artifacts: self.summary.artifacts.clone(),
                    tools: self.summary.tools.clone(),
                }]
            }
            _ => Vec::new(),
        }
    }

    /// The event for the error that ended the stream: `error` with its `Display`.
    pub fn error(&mut self, error: &ProviderError) -> Vec<CustomEvent> {
        if std::mem::replace(&mut self.ended, true) {
            return Vec::new();
        }
        vec![CustomEvent::Error {
            message: error.to_string(),
        }]
    }
}

impl CustomStream {
    /// The SSE body of a whole run: every frame [`encode`](CustomEvent::encode)d, ending with
    /// `message_complete` or `error` (what the event stream yields after either is not read).
    pub fn sse(self, events: EventStream) -> impl Stream<Item = Bytes> + Send {
        let start = (Some(events), self, VecDeque::new());
        stream::unfold(start, |(mut events, mut mapper, mut queue)| async move {
            loop {
                if let Some(event) = queue.pop_front() {
                    return Some((CustomEvent::encode(&event), (events, mapper, queue)));
                }
                let source = events.as_mut().filter(|_| !mapper.ended)?;
                let next = source.next().await;
                let produced = match &next {
                    Some(Ok(event)) => mapper.push(event),
                    Some(Err(error)) => mapper.error(error),
                    None => Vec::new(),
                };
                if mapper.ended || next.is_none() {
                    events = None;
                }
                queue.extend(produced);
            }
        })
    }
}

fn artifacts(result: &ToolResult) -> Vec<CustomEvent> {
    result
        .artifacts()
        .into_iter()
        .map(|artifact| CustomEvent::ArtifactCreated { artifact })
        .collect()
}
