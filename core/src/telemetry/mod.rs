//! The spans of a model call, a tool execution and an agent run, named and attributed after the
//! [OpenTelemetry GenAI semantic conventions], as plain `tracing` spans.
//!
//! Every provider opens [`chat_span`] around one model call (through
//! [`kit::request_span_for`](crate::kit::request_span_for)); [`run_tool`](crate::kit::run_tool)
//! opens [`tool_span`] around every tool execution, whoever runs it (the agent loop, the MCP
//! tool server, an agent runtime's in-process host tools); a model call's [`SpanRecorder`]
//! opens one for each tool the provider runs itself (an agent runtime's own tools, a server
//! tool), from its `ToolCall` to its `ToolResult`; the [`Agent`](crate::Agent) opens
//! [`agent_span`] around a whole run, so model calls and tool executions are its children.
//! A [`SpanRecorder`] fills in what the response tells (response id and model, finish reasons,
//! token usage, time to first chunk, `error.type` and the error status) from the events as they
//! pass.
//!
//! | span | `otel.name` | attributes |
//! | --- | --- | --- |
//! | `chat` (client) | `chat {model}` | `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model` and the sampling parameters that were set, `gen_ai.conversation.id`, `gen_ai.response.{id, model, finish_reasons, time_to_first_chunk}`, `gen_ai.usage.{input_tokens, output_tokens, cache_read.input_tokens, cache_creation.input_tokens, reasoning.output_tokens}`, `error.type` |
//! | `execute_tool` (internal) | `execute_tool {name}` | `gen_ai.operation.name`, `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.type` (`function`; `extension` for a tool the provider runs), `gen_ai.tool.description`, `patchbay.tool.status`, `error.type` |
//! | `invoke_agent` (internal) | `invoke_agent {name}` (or `invoke_agent`) | `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.agent.name`, the run's summed usage and last finish reason, `error.type` |
//!
//! The span names themselves are the operation (`chat`, `execute_tool`, `invoke_agent`), as
//! `tracing` needs static names; `otel.name`, `otel.kind` and `otel.status_code` are the fields
//! `tracing-opentelemetry` reads to name the exported span, set its kind and its status.
//!
//! Decisions:
//! - `gen_ai.provider.name` is the patchbay provider's name (`anthropic`, `openrouter`,
//!   `claude-agent`, ...): the OpenAI-compatible provider may talk to vLLM or Ollama, so naming
//!   it `openai` would be wrong. A provider whose server is exactly one of the conventions'
//!   well-known systems names that one instead (`patchbay_http::Call::with_system`): the Gemini
//!   provider records `gcp.gemini` or `gcp.vertex_ai`.
//! - `gen_ai.usage.input_tokens` counts every input token, cache reads and writes included (as
//!   the conventions ask); patchbay's [`Usage::input`](crate::Usage) leaves them out.
//! - `gen_ai.response.finish_reasons` and `gen_ai.request.stop_sequences` are string arrays in
//!   the conventions; `tracing` fields cannot hold arrays, so they are recorded as JSON text
//!   (`["stop"]`) and exported as such (`tracing-opentelemetry` builds the attributes; its
//!   span data is not open to another layer). Token counts are recorded as `i64`, so they are
//!   integer attributes (a `u64` field would be exported as text).
//! - Message content (`gen_ai.input.messages`, `gen_ai.system_instructions`,
//!   `gen_ai.output.messages`, `gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`) is
//!   recorded only after [`set_capture_content(true)`](set_capture_content), in the
//!   conventions' JSON shapes; image bytes never are. API keys never reach a span: nothing here
//!   reads a provider's configuration.
//!
//! [OpenTelemetry GenAI semantic conventions]: https://opentelemetry.io/docs/specs/semconv/gen-ai/

mod capture;
mod content;
mod record;
mod tools;

use tracing::field::Empty;

use crate::context::{RequestContext, Session};
use crate::message::Message;

pub use capture::{captures_content, set_capture_content};
pub use record::SpanRecorder;
pub use tools::{record_tool_arguments, record_tool_result, tool_span};

/// The span of one model call: `chat` (exported as `chat {model}`), with the request's
/// parameters, and empty fields that a [`SpanRecorder`] fills from the response.
///
/// ```
/// use patchbay_core::{Message, RequestContext};
/// let context = RequestContext::default().with_max_tokens(256);
/// let span = patchbay_core::telemetry::chat_span("anthropic", "claude-sonnet-4-5", &[Message::user("hi")], Some(&context));
/// let _entered = span.enter();
/// ```
pub fn chat_span(provider: &str, model: &str, messages: &[Message], context: Option<&RequestContext>) -> tracing::Span {
    let span = tracing::info_span!(
        "chat",
        otel.name = %format_args!("chat {model}"),
        otel.kind = "client",
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = %provider,
        gen_ai.request.model = %model,
        gen_ai.request.max_tokens = Empty,
        gen_ai.request.temperature = Empty,
        gen_ai.request.top_p = Empty,
        gen_ai.request.top_k = Empty,
        gen_ai.request.stop_sequences = Empty,
        gen_ai.request.stream = true,
        gen_ai.conversation.id = Empty,
        gen_ai.response.id = Empty,
        gen_ai.response.model = Empty,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.response.time_to_first_chunk = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.usage.cache_creation.input_tokens = Empty,
        gen_ai.usage.reasoning.output_tokens = Empty,
        patchbay.cost_usd = Empty,
        error.type = Empty,
        gen_ai.system_instructions = Empty,
        gen_ai.input.messages = Empty,
        gen_ai.output.messages = Empty,
    );
    if span.is_disabled() {
        return span;
    }
    if let Some(context) = context {
        record_request(&span, context);
    }
    if captures_content() {
        span.record("gen_ai.input.messages", content::input_messages(messages).as_str());
        if let Some(system) = context.and_then(|c| c.system.as_deref()) {
            span.record(
                "gen_ai.system_instructions",
                content::system_instructions(system).as_str(),
            );
        }
    }
    span
}

/// The request's parameters that were set, and the conversation id a session names.
fn record_request(span: &tracing::Span, context: &RequestContext) {
    let sampling = &context.sampling;
    if let Some(max) = sampling.max_tokens {
        span.record("gen_ai.request.max_tokens", i64::from(max));
    }
    if let Some(temperature) = sampling.temperature {
        span.record("gen_ai.request.temperature", f64::from(temperature));
    }
    if let Some(top_p) = sampling.top_p {
        span.record("gen_ai.request.top_p", f64::from(top_p));
    }
    if let Some(top_k) = sampling.top_k {
        span.record("gen_ai.request.top_k", f64::from(top_k));
    }
    if !sampling.stop_sequences.is_empty() {
        let text = serde_json::to_string(&sampling.stop_sequences).unwrap_or_default();
        span.record("gen_ai.request.stop_sequences", text.as_str());
    }
    let conversation = match &context.session {
        Some(Session::Resume { id }) | Some(Session::New { id: Some(id) }) => Some(id.as_str()),
        _ => None,
    };
    if let Some(id) = conversation {
        span.record("gen_ai.conversation.id", id);
    }
}

/// The span of an agent run: `invoke_agent` (exported as `invoke_agent {name}`, or
/// `invoke_agent` without a name), parent of its model calls and tool executions.
pub fn agent_span(provider: &str, model: &str, agent_name: Option<&str>) -> tracing::Span {
    let otel_name = match agent_name {
        Some(name) => format!("invoke_agent {name}"),
        None => "invoke_agent".to_string(),
    };
    let span = tracing::info_span!(
        "invoke_agent",
        otel.name = %otel_name,
        otel.kind = "internal",
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = "invoke_agent",
        gen_ai.provider.name = %provider,
        gen_ai.request.model = %model,
        gen_ai.agent.name = Empty,
        gen_ai.conversation.id = Empty,
        gen_ai.response.id = Empty,
        gen_ai.response.model = Empty,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.usage.cache_creation.input_tokens = Empty,
        gen_ai.usage.reasoning.output_tokens = Empty,
        patchbay.cost_usd = Empty,
        error.type = Empty,
        gen_ai.output.messages = Empty,
    );
    if let Some(name) = agent_name {
        span.record("gen_ai.agent.name", name);
    }
    span
}
