//! The pure request plan: messages, tools and the call's context into an `/api/chat` body plus
//! the warnings for what Ollama cannot take. No I/O.

use patchbay_core::{
    ContentBlock, ErrorKind, ImageSource, Message, ProviderError, RequestContext, Role, ToolSet, Warning,
    context::ToolChoice, tool::ToolContent,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::NAME;
use patchbay_core::kit::read_options;

/// The per-call options (`context.provider_options("ollama")`), read in one go.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CallOptions {
    think: Option<Value>,
    keep_alive: Option<Value>,
    format: Option<Value>,
    options: Option<Map<String, Value>>,
}

/// What is sent, and what is said about it on `Started`.
#[derive(Debug)]
pub(crate) struct Plan {
    /// The JSON body.
    pub(crate) body: Value,
    /// Options and content Ollama cannot take.
    pub(crate) warnings: Vec<Warning>,
    /// The number of this response's first tool call (`call_<n>`).
    pub(crate) first_call: u64,
}

fn unsupported(message: impl Into<String>) -> Warning {
    Warning::new("unsupported_option", message)
}

/// Plan one call. Fails (`InvalidRequest`) on per-call options it cannot read and on content
/// Ollama cannot take at all (an image by URL).
pub(crate) fn plan(
    messages: &[Message],
    tools: &ToolSet,
    model: &str,
    context: Option<&RequestContext>,
) -> Result<Plan, ProviderError> {
    let default = RequestContext::default();
    let context = context.unwrap_or(&default);
    let call: CallOptions = match context.provider_options(NAME) {
        Some(value) => read_options(value).map_err(|error| error.into_call_error(NAME))?,
        None => CallOptions::default(),
    };
    let mut warnings = Vec::new();
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert(
        "messages".into(),
        json!(conversation(messages, context, &mut warnings)?),
    );
    body.insert("stream".into(), json!(true));
    if !matches!(context.tool_choice, Some(ToolChoice::None)) && !tools.is_empty() {
        let specs: Vec<Value> = tools
            .specs()
            .map(|spec| {
                json!({"type": "function", "function": {
                    "name": spec.name, "description": spec.description, "parameters": spec.input_schema,
                }})
            })
            .collect();
        body.insert("tools".into(), json!(specs));
    }
    if let Some(think) = think(&call, context, &mut warnings)? {
        body.insert("think".into(), think);
    }
    let options = sampling_options(context, call.options);
    if !options.is_empty() {
        body.insert("options".into(), Value::Object(options));
    }
    if let Some(keep_alive) = call.keep_alive {
        body.insert("keep_alive".into(), keep_alive);
    }
    // Structured output is Ollama's `format` with the schema; a `format` call option wins.
    let schema = context.output_schema.as_ref().map(|output| output.schema.clone());
    if let Some(format) = call.format.or(schema) {
        body.insert("format".into(), format);
    }
    context_warnings(context, &mut warnings);
    let calls_so_far = messages
        .iter()
        .flat_map(|message| &message.content)
        .filter(|block| matches!(block, ContentBlock::ToolUse { .. }))
        .count();
    Ok(Plan {
        body: Value::Object(body),
        warnings,
        first_call: calls_so_far as u64 + 1,
    })
}

/// `think`: the call option as given (`true`, `false`, `"low"`, `"medium"`, `"high"`), else
/// `true` when a thinking budget is set (the budget itself has no Ollama equivalent).
fn think(
    call: &CallOptions,
    context: &RequestContext,
    warnings: &mut Vec<Warning>,
) -> Result<Option<Value>, ProviderError> {
    match &call.think {
        Some(value @ Value::Bool(_)) => Ok(Some(value.clone())),
        Some(Value::String(level)) if matches!(level.as_str(), "low" | "medium" | "high") => Ok(Some(json!(level))),
        Some(_) => Err(ProviderError::new(
            ErrorKind::InvalidRequest,
            "invalid `ollama` call options: `think` must be true, false, \"low\", \"medium\" or \"high\"",
        )),
        None if context.sampling.thinking_budget.is_some() => {
            warnings.push(unsupported(
                "Ollama's `think` has no token budget: thinking is turned on and `thinking_budget` is ignored",
            ));
            Ok(Some(json!(true)))
        }
        None => Ok(None),
    }
}

fn sampling_options(context: &RequestContext, extra: Option<Map<String, Value>>) -> Map<String, Value> {
    let sampling = &context.sampling;
    let mut options = Map::new();
    let mut set = |key: &str, value: Option<Value>| {
        if let Some(value) = value {
            options.insert(key.into(), value);
        }
    };
    set("temperature", sampling.temperature.map(|v| json!(v)));
    set("top_p", sampling.top_p.map(|v| json!(v)));
    set("top_k", sampling.top_k.map(|v| json!(v)));
    set("num_predict", sampling.max_tokens.map(|v| json!(v)));
    let stop = (!sampling.stop_sequences.is_empty()).then(|| json!(sampling.stop_sequences));
    set("stop", stop);
    options.extend(extra.unwrap_or_default());
    options
}

fn context_warnings(context: &RequestContext, warnings: &mut Vec<Warning>) {
    if matches!(context.tool_choice, Some(ToolChoice::Any | ToolChoice::Tool(_))) {
        warnings.push(unsupported("Ollama cannot force a tool call: `tool_choice` is ignored"));
    }
    if context.session.is_some() {
        warnings.push(unsupported("Ollama's chat API has no sessions: `session` is ignored"));
    }
    if context.system_cache_control.is_some() {
        warnings.push(unsupported(
            "Ollama has no prompt-caching markers (it reuses a loaded prompt prefix by itself): `cache_control` is ignored",
        ));
    }
    warnings.extend(context.unattached_mcp_servers());
}

/// The `messages` array: the system prompt, then each message; tool results become `tool`
/// messages (named by the call they answer) before the rest of their user message.
fn conversation(
    messages: &[Message],
    context: &RequestContext,
    warnings: &mut Vec<Warning>,
) -> Result<Vec<Value>, ProviderError> {
    let mut out = Vec::new();
    if let Some(system) = &context.system {
        out.push(json!({"role": "system", "content": system}));
    }
    let mut dropped = false;
    for (index, message) in messages.iter().enumerate() {
        match message.role {
            Role::User => user(index, messages, &mut out)?,
            Role::Assistant => out.push(assistant(message, &mut dropped)),
        }
    }
    if dropped {
        warnings.push(Warning::new(
            "unsupported_content",
            "redacted reasoning and other providers' opaque blocks in the history are not sent: Ollama has no field for them",
        ));
    }
    Ok(out)
}

fn user(index: usize, messages: &[Message], out: &mut Vec<Value>) -> Result<(), ProviderError> {
    let message = &messages[index];
    let mut text = Vec::new();
    let mut images = Vec::new();
    for block in &message.content {
        match block {
            ContentBlock::Text { text: t, .. } => text.push(t.as_str()),
            ContentBlock::Image { source, .. } => images.push(image(index, source)?),
            ContentBlock::ToolResult {
                tool_use_id, content, ..
            } => out.push(tool_message(tool_name(&messages[..index], tool_use_id), content)),
            _ => {}
        }
    }
    if !text.is_empty() || !images.is_empty() {
        let mut value = json!({"role": "user", "content": text.join("\n")});
        if !images.is_empty() {
            value["images"] = json!(images);
        }
        out.push(value);
    }
    Ok(())
}

fn image(index: usize, source: &ImageSource) -> Result<String, ProviderError> {
    match source {
        ImageSource::Base64 { data } => Ok(data.clone()),
        ImageSource::Url { .. } => Err(ProviderError::invalid_message(
            index,
            "Ollama takes images as base64 data only, not by URL: fetch the image and send its bytes",
        )),
    }
}

/// The name of the tool whose call `id` answers (the nearest earlier call with that id).
fn tool_name<'a>(before: &'a [Message], id: &str) -> &'a str {
    before
        .iter()
        .rev()
        .flat_map(|message| &message.content)
        .find_map(|block| match block {
            ContentBlock::ToolUse { id: call, name, .. } if call == id => Some(name.as_str()),
            _ => None,
        })
        .unwrap_or_default()
}

fn tool_message(name: &str, content: &[ToolContent]) -> Value {
    let mut text = Vec::new();
    let mut images = Vec::new();
    for piece in content {
        match piece {
            ToolContent::Text { text: t } => text.push(t.clone()),
            ToolContent::Json { value } => text.push(value.to_string()),
            ToolContent::Resource { text: Some(t), .. } => text.push(t.clone()),
            ToolContent::Resource { uri, .. } => text.push(format!("[resource {uri}]")),
            ToolContent::Image { data, .. } => images.push(data.clone()),
        }
    }
    let mut value = json!({"role": "tool", "tool_name": name, "content": text.join("\n")});
    if !images.is_empty() {
        value["images"] = json!(images);
    }
    value
}

fn assistant(message: &Message, dropped: &mut bool) -> Value {
    let mut text = Vec::new();
    let mut thinking = Vec::new();
    let mut calls = Vec::new();
    for block in &message.content {
        match block {
            ContentBlock::Text { text: t, .. } => text.push(t.as_str()),
            ContentBlock::Thinking { text: t, .. } => thinking.push(t.as_str()),
            ContentBlock::ToolUse { name, input, .. } => {
                calls.push(json!({"function": {"name": name, "arguments": input}}));
            }
            ContentBlock::RedactedThinking { .. } | ContentBlock::Opaque { .. } => *dropped = true,
            ContentBlock::Image { .. } | ContentBlock::ToolResult { .. } => {}
        }
    }
    let mut value = json!({"role": "assistant", "content": text.join("\n")});
    if !thinking.is_empty() {
        value["thinking"] = json!(thinking.join("\n"));
    }
    if !calls.is_empty() {
        value["tool_calls"] = json!(calls);
    }
    value
}
