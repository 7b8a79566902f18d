//! The `Provider` trait, what a provider says about itself, and the conveniences on top.

use std::collections::BTreeMap;
use std::pin::Pin;

use async_trait::async_trait;
use futures::{Stream, StreamExt};
use serde::{Deserialize, Serialize};

use crate::context::RequestContext;
use crate::error::ProviderError;
use crate::event::{Event, FinishReason, Metrics, Usage, Warning};
use crate::kit::ContentBuilder;
use crate::message::{ContentBlock, Message, Role};
use crate::signal::Signal;
use crate::toolset::ToolSet;

/// The stream every provider returns.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<Event, ProviderError>> + Send>>;

/// What is true of a provider. `Copy + Default`: a new capability is off everywhere until a
/// provider turns it on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Capabilities {
    /// Emits deltas as they arrive (not one block at the end).
    pub streaming: bool,
    /// Emits reasoning.
    pub reasoning: bool,
    /// Accepts images in input.
    pub images: bool,
    /// An agent runtime that executes tools itself (the agent loop forwards, never executes).
    pub runs_tools: bool,
    /// Supports sessions (resume, fork).
    pub sessions: bool,
}

impl Capabilities {
    /// Nothing on.
    pub const fn none() -> Self {
        Self {
            streaming: false,
            reasoning: false,
            images: false,
            runs_tools: false,
            sessions: false,
        }
    }

    /// With `streaming` on.
    pub const fn with_streaming(mut self) -> Self {
        self.streaming = true;
        self
    }

    /// With `reasoning` on.
    pub const fn with_reasoning(mut self) -> Self {
        self.reasoning = true;
        self
    }

    /// With `images` on.
    pub const fn with_images(mut self) -> Self {
        self.images = true;
        self
    }

    /// With `runs_tools` on.
    pub const fn with_runs_tools(mut self) -> Self {
        self.runs_tools = true;
        self
    }

    /// With `sessions` on.
    pub const fn with_sessions(mut self) -> Self {
        self.sessions = true;
        self
    }
}

/// A provider's name and capabilities.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderInfo {
    /// The registry name (`anthropic`, `scripted`...).
    pub name: String,
    /// What it can do.
    pub capabilities: Capabilities,
}

impl ProviderInfo {
    /// Info from a name and capabilities.
    pub fn new(name: impl Into<String>, capabilities: Capabilities) -> Self {
        Self {
            name: name.into(),
            capabilities,
        }
    }
}

/// A model behind one stateless call.
///
/// Configured once, shared as `Arc<dyn Provider>` by any number of tasks; keeps no per-request
/// state between calls. Whatever a call needs beyond messages, tools and model comes in the
/// [`RequestContext`].
#[async_trait]
pub trait Provider: Send + Sync {
    /// Name and capabilities.
    fn info(&self) -> &ProviderInfo;

    /// Start one response. Input is checked before any I/O (see [`check_conversation`](crate::kit::check_conversation)).
    async fn create_response(
        &self,
        messages: &[Message],
        tools: &ToolSet,
        model: &str,
        signal: &Signal,
        context: Option<&RequestContext>,
    ) -> Result<EventStream, ProviderError>;
}

#[async_trait]
impl<P: Provider + ?Sized> Provider for std::sync::Arc<P> {
    fn info(&self) -> &ProviderInfo {
        (**self).info()
    }

    async fn create_response(
        &self,
        messages: &[Message],
        tools: &ToolSet,
        model: &str,
        signal: &Signal,
        context: Option<&RequestContext>,
    ) -> Result<EventStream, ProviderError> {
        (**self).create_response(messages, tools, model, signal, context).await
    }
}

/// A whole response collected from a stream, for hosts that don't stream.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProviderResponse {
    /// The assistant content blocks, in order: text, thinking, tool calls (and, in an agent run,
    /// the content of every step).
    pub content: Vec<ContentBlock>,
    /// Why it ended.
    pub stop_reason: Option<FinishReason>,
    /// Total usage.
    pub usage: Usage,
    /// The agent-runtime session id, if any.
    pub session_id: Option<String>,
    /// The provider's response id, if any.
    pub response_id: Option<String>,
    /// Timings and counts.
    pub metrics: Metrics,
    /// Warnings from `Started`.
    pub warnings: Vec<Warning>,
    /// Tool results seen in the stream, by call id.
    pub tool_results: BTreeMap<String, crate::ToolResult>,
    /// Sources and citations, in the order they arrived.
    pub sources: Vec<crate::Source>,
}

impl ProviderResponse {
    /// Collect a stream; the first error is returned.
    pub async fn collect<S>(stream: S) -> Result<Self, ProviderError>
    where
        S: Stream<Item = Result<Event, ProviderError>>,
    {
        let mut stream = std::pin::pin!(stream);
        let mut builder = ContentBuilder::default();
        let mut response = ProviderResponse::default();
        while let Some(event) = stream.next().await {
            let event = event?;
            match &event {
                Event::Started {
                    response_id,
                    session_id,
                    warnings,
                    ..
                } => {
                    response.response_id = response_id.clone();
                    response.session_id = session_id.clone();
                    response.warnings.extend(warnings.iter().cloned());
                }
                Event::ToolResult { id, result, .. } => {
                    response.tool_results.insert(id.clone(), result.clone());
                }
                Event::Usage(usage) => response.usage = *usage,
                Event::Source(source) => response.sources.push(source.clone()),
                Event::Finish { reason, usage, metrics } => {
                    response.stop_reason = Some(reason.clone());
                    response.usage = *usage;
                    response.metrics = *metrics;
                }
                _ => {}
            }
            builder.push(&event);
        }
        response.content = builder.finish();
        Ok(response)
    }

    /// The text blocks joined.
    pub fn text(&self) -> String {
        self.content.iter().filter_map(ContentBlock::as_text).collect()
    }

    /// The assistant message holding this response's content.
    pub fn message(&self) -> Message {
        Message::new(Role::Assistant, self.content.clone())
    }
}
