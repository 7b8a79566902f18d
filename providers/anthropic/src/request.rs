//! Request mapping: messages, tools and the request context as a Messages API body.
//!
//! - The system prompt becomes a list of one text block (with `cache_control` when marked).
//! - Text, images, thinking (with its signature), redacted thinking, tool calls and tool results
//!   map one to one; `cache_control` goes where the caller put it. Blocks the API returned and
//!   patchbay keeps as `Opaque` (server tool blocks, compaction...) go back unchanged, and the
//!   `ToolUse`/`ToolResult` copies of server tool calls they cover are not sent twice.
//! - Thinking without a signature (from another provider) cannot be sent back: it is dropped
//!   with a warning, as are `Opaque` blocks of other providers.
//! - `max_tokens` defaults to the config's `default_max_tokens` (4096), raised above the
//!   thinking budget when one is set.
//! - Provider options (`context.provider_options("anthropic")`, a JSON object) are merged into the
//!   body last, so they can set anything (`metadata`, `service_tier`, `container`,
//!   `context_management`, `mcp_servers`...); `tools` in them are appended to the host tools
//!   (server tools such as web search); `betas` (a list) is sent as the `anthropic-beta` header.
//! - Context fields a stateless API cannot use (`session`, `env`) produce a warning.
//! - Structured output (`context.output_schema`), by [`StructuredOutput`]: natively as
//!   `output_config: {format: {type: "json_schema", schema}}` (generally available, no beta
//!   header; the older beta `output_format` is deprecated), or through a tool named after the schema whose input is the
//!   object ([`RequestParts::output_tool`] tells the translator to turn its input into text).
//!   The tool is forced (`tool_choice: {type: "tool"}`) when there are no host tools, and
//!   `any` when there are (the model may call them first, then answers through the tool); with
//!   thinking on, which forbids forcing a tool, the choice stays `auto` with a warning. A
//!   caller's own `tool_choice` gives way to it, with a warning.

use std::collections::HashSet;

use patchbay_core::kit::{OptionsError, read_options};
use patchbay_core::{
    CacheControl, ContentBlock, ErrorKind, ImageSource, Message, OutputSchema, ProviderError, RequestContext, Role,
    ToolSet, Warning, context::Sampling, context::Session, context::ToolChoice, tool::ToolContent,
};
use patchbay_http::Prepared;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::NAME;
use crate::translate::Translator;

/// The oldest Claude version with native structured outputs: Anthropic lists them as generally
/// available for the 4.5 models and every later one (Haiku 4.5, Sonnet 4.5 and 4.6, Opus 4.5 and
/// 4.6 when this was written).
pub const NATIVE_STRUCTURED_OUTPUT_SINCE: (u32, u32) = (4, 5);

/// The version of a Claude model name (`claude-sonnet-4-5-20250929` is 4.5, `claude-opus-4-20250514`
/// 4.0, `claude-3-7-sonnet-latest` 3.7); `None` for a name that is not a Claude model's.
pub fn claude_version(model: &str) -> Option<(u32, u32)> {
    let rest = model.strip_prefix("claude-")?;
    let numbers: Vec<u32> = rest
        .split('-')
        .skip_while(|part| part.parse::<u32>().is_err())
        .take_while(|part| part.len() <= 2)
        .map_while(|part| part.parse().ok())
        .collect();
    match numbers.as_slice() {
        [major, minor, ..] => Some((*major, *minor)),
        [major] => Some((*major, 0)),
        [] => None,
    }
}

/// How a structured-output request is sent (the `structured_output` option).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StructuredOutput {
    /// Native for Claude models of version [`NATIVE_STRUCTURED_OUTPUT_SINCE`] or later (by
    /// [`claude_version`]), a tool for any other model (older ones, or a name that says no
    /// version, as behind a gateway).
    #[default]
    Auto,
    /// Always `output_config.format` (a model without it answers `400`).
    Native,
    /// Always the forced tool (works on every model that takes tools).
    Tool,
}

impl StructuredOutput {
    /// Whether a request for `model` goes native.
    pub fn is_native(self, model: &str) -> bool {
        match self {
            Self::Auto => claude_version(model).is_some_and(|version| version >= NATIVE_STRUCTURED_OUTPUT_SINCE),
            Self::Native => true,
            Self::Tool => false,
        }
    }
}

/// `max_tokens` when the context sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// A request body and what goes with it.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestParts {
    /// The JSON body (with `stream: true`).
    pub body: Value,
    /// Beta flags asked for in the provider options.
    pub betas: Vec<String>,
    /// Things the request could not honour, for `Started`.
    pub warnings: Vec<Warning>,
    /// The tool that carries the structured output, when it goes through a tool.
    pub output_tool: Option<String>,
}

/// Build the body of a streamed Messages API call, structured output sent as
/// [`StructuredOutput::Auto`] decides.
pub fn build_request(
    messages: &[Message],
    tools: &ToolSet,
    model: &str,
    context: Option<&RequestContext>,
    default_max_tokens: u32,
) -> Result<RequestParts, ProviderError> {
    build_request_with(
        messages,
        tools,
        model,
        context,
        default_max_tokens,
        StructuredOutput::Auto,
    )
}

/// How a provider sends its calls: the POST to its endpoint with the configured headers, its
/// configured `anthropic-beta` flags, and its body defaults.
pub(crate) struct Sending<'a> {
    pub(crate) post: reqwest::RequestBuilder,
    pub(crate) betas: &'a [String],
    pub(crate) default_max_tokens: u32,
    pub(crate) structured: StructuredOutput,
}

/// Everything one call sends and reads, for the call runner: the POST with the `anthropic-beta`
/// flags (the configured ones, then the request's), the body, and the wire that reads the
/// answer (the model named, the warnings for `Started`, the structured-output tool).
pub(crate) fn prepare(
    sending: Sending<'_>,
    messages: &[Message],
    tools: &ToolSet,
    model: &str,
    context: Option<&RequestContext>,
) -> Result<Prepared<Translator>, ProviderError> {
    let parts = build_request_with(
        messages,
        tools,
        model,
        context,
        sending.default_max_tokens,
        sending.structured,
    )?;
    let betas: Vec<&str> = sending.betas.iter().chain(&parts.betas).map(String::as_str).collect();
    let mut post = sending.post;
    if !betas.is_empty() {
        post = post.header("anthropic-beta", betas.join(","));
    }
    let mut translator = Translator::new().with_model(model).with_warnings(parts.warnings);
    if let Some(tool) = parts.output_tool {
        translator = translator.with_output_tool(tool);
    }
    Prepared::json(post, &parts.body, translator)
}

/// [`build_request`] with structured output sent the way `structured` says.
pub fn build_request_with(
    messages: &[Message],
    tools: &ToolSet,
    model: &str,
    context: Option<&RequestContext>,
    default_max_tokens: u32,
    structured: StructuredOutput,
) -> Result<RequestParts, ProviderError> {
    let default_context = RequestContext::default();
    let context = context.unwrap_or(&default_context);
    let mut warnings = Vec::new();
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("stream".into(), json!(true));
    if let Some(system) = system_blocks(context) {
        body.insert("system".into(), system);
    }
    body.insert("messages".into(), wire_messages(messages, &mut warnings)?);
    insert_sampling(&mut body, &context.sampling, default_max_tokens);
    let mut wire_tools = host_tools(tools);
    if let Some(choice) = &context.tool_choice {
        body.insert("tool_choice".into(), tool_choice(choice));
    }
    warnings.extend(unsupported_context(context));
    let mut output_tool = None;
    if let Some(schema) = &context.output_schema {
        if structured.is_native(model) {
            body.insert(
                "output_config".into(),
                json!({ "format": { "type": "json_schema", "schema": schema.schema } }),
            );
        } else {
            output_tool = Some(force_output_tool(
                schema,
                tools,
                context,
                &mut body,
                &mut wire_tools,
                &mut warnings,
            )?);
        }
    }
    let betas = merge_provider_options(context, &mut body, &mut wire_tools)?;
    if !wire_tools.is_empty() {
        body.insert("tools".into(), Value::Array(wire_tools));
    }
    Ok(RequestParts {
        body: Value::Object(body),
        betas,
        warnings,
        output_tool,
    })
}

/// Offer the structured-output tool (named after the schema) and make the model use it.
fn force_output_tool(
    schema: &OutputSchema,
    tools: &ToolSet,
    context: &RequestContext,
    body: &mut Map<String, Value>,
    wire_tools: &mut Vec<Value>,
    warnings: &mut Vec<Warning>,
) -> Result<String, ProviderError> {
    if tools.specs().any(|spec| spec.name == schema.name) {
        return Err(ProviderError::new(
            ErrorKind::InvalidRequest,
            format!(
                "the output schema `{}` would be offered as a tool of the same name as a host tool; rename it",
                schema.name
            ),
        )
        .with_provider(NAME));
    }
    let description = schema
        .description
        .clone()
        .unwrap_or_else(|| "Give the final answer as this object.".into());
    wire_tools.push(json!({
        "name": schema.name,
        "description": format!("{description} Call this tool once, with the answer, to respond."),
        "input_schema": schema.schema,
    }));
    if context.tool_choice.is_some() {
        warnings.push(Warning::new(
            Warning::UNSUPPORTED_OPTION,
            "the tool choice gives way to the structured-output tool",
        ));
    }
    let choice = if context.sampling.thinking_budget.is_some() {
        warnings.push(Warning::new(
            Warning::UNSUPPORTED_OPTION,
            "thinking forbids forcing a tool: the model is offered the structured-output tool, not forced to use it",
        ));
        json!({ "type": "auto" })
    } else if tools.is_empty() {
        json!({ "type": "tool", "name": schema.name })
    } else {
        json!({ "type": "any" })
    };
    body.insert("tool_choice".into(), choice);
    Ok(schema.name.clone())
}

/// The system prompt as a list of one text block, if there is one.
fn system_blocks(context: &RequestContext) -> Option<Value> {
    let system = context.system.as_deref().filter(|s| !s.is_empty())?;
    let block = with_cache(
        json!({ "type": "text", "text": system }),
        context.system_cache_control.as_ref(),
    );
    Some(json!([block]))
}

/// The conversation as wire messages; a message left with no content is an error.
fn wire_messages(messages: &[Message], warnings: &mut Vec<Warning>) -> Result<Value, ProviderError> {
    let mut wire_messages = Vec::with_capacity(messages.len());
    for (index, message) in messages.iter().enumerate() {
        let content = map_content(index, message, warnings)?;
        if content.is_empty() {
            return Err(
                ProviderError::invalid_message(index, "the message has no content the Messages API accepts")
                    .with_provider(NAME),
            );
        }
        let role = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        wire_messages.push(json!({ "role": role, "content": content }));
    }
    Ok(Value::Array(wire_messages))
}

/// `max_tokens` (raised above a thinking budget when unset), sampling and `thinking`.
fn insert_sampling(body: &mut Map<String, Value>, sampling: &Sampling, default_max_tokens: u32) {
    let max_tokens = match (sampling.max_tokens, sampling.thinking_budget) {
        (Some(max), _) => max,
        (None, Some(budget)) if budget >= default_max_tokens => budget.saturating_add(default_max_tokens),
        (None, _) => default_max_tokens,
    };
    body.insert("max_tokens".into(), json!(max_tokens));
    if let Some(t) = sampling.temperature {
        body.insert("temperature".into(), decimal(t));
    }
    if let Some(p) = sampling.top_p {
        body.insert("top_p".into(), decimal(p));
    }
    if let Some(k) = sampling.top_k {
        body.insert("top_k".into(), json!(k));
    }
    if !sampling.stop_sequences.is_empty() {
        body.insert("stop_sequences".into(), json!(sampling.stop_sequences));
    }
    if let Some(budget) = sampling.thinking_budget {
        body.insert("thinking".into(), json!({ "type": "enabled", "budget_tokens": budget }));
    }
}

/// The host tools as wire tool definitions.
fn host_tools(tools: &ToolSet) -> Vec<Value> {
    tools
        .specs()
        .map(|spec| {
            let tool = json!({
                "name": spec.name,
                "description": spec.description,
                "input_schema": spec.input_schema,
            });
            with_cache(tool, spec.cache_control.as_ref())
        })
        .collect()
}

/// A tool choice as the wire's `tool_choice`.
fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!({ "type": "auto" }),
        ToolChoice::Any => json!({ "type": "any" }),
        ToolChoice::None => json!({ "type": "none" }),
        ToolChoice::Tool(name) => json!({ "type": "tool", "name": name }),
    }
}

/// Warnings for the context fields a stateless API cannot use.
fn unsupported_context(context: &RequestContext) -> Vec<Warning> {
    let mut warnings = Vec::new();
    match &context.session {
        None | Some(Session::New { id: None }) => {}
        Some(session) => warnings.push(Warning::new(
            "unsupported_option",
            format!("the Messages API is stateless: session {session:?} is ignored; send the history instead"),
        )),
    }
    warnings.extend(context.unattached_mcp_servers());
    if !context.env.is_empty() {
        warnings.push(Warning::new(
            "unsupported_option",
            "the Messages API runs no child process: `env` is ignored",
        ));
    }
    warnings
}

/// Merge the provider options into the body: `betas` are returned (for the header), `tools`
/// appended to the host tools, anything else set on the body. Options that are not an object,
/// or a `betas` or `tools` that is not a list (of strings, for `betas`), are an
/// `InvalidRequest` naming the key ([`OptionsError::into_call_error`]), never quoting a value.
fn merge_provider_options(
    context: &RequestContext,
    body: &mut Map<String, Value>,
    wire_tools: &mut Vec<Value>,
) -> Result<Vec<String>, ProviderError> {
    let mut betas = Vec::new();
    let Some(options) = context.provider_options(NAME) else {
        return Ok(betas);
    };
    let options: Map<String, Value> = read_options(options).map_err(|e| e.into_call_error(NAME))?;
    let refuse = |key: &str, message: &str| {
        OptionsError {
            key: Some(key.into()),
            message: message.into(),
        }
        .into_call_error(NAME)
    };
    for (key, value) in options {
        match (key.as_str(), value) {
            ("betas", Value::Array(list)) => {
                for beta in list {
                    let Value::String(beta) = beta else {
                        return Err(refuse("betas", "must be a list of strings"));
                    };
                    betas.push(beta);
                }
            }
            ("betas", _) => return Err(refuse("betas", "must be a list of strings")),
            ("tools", Value::Array(extra)) => wire_tools.extend(extra),
            ("tools", _) => return Err(refuse("tools", "must be a list of tool objects")),
            (_, value) => {
                body.insert(key, value);
            }
        }
    }
    Ok(betas)
}

/// `value` with `cache_control` set when the caller marked it.
fn with_cache(mut value: Value, cache: Option<&CacheControl>) -> Value {
    if let Some(cache) = cache {
        value["cache_control"] = json!(cache);
    }
    value
}

/// An `f32` as the decimal it was written as (`0.9`, not `0.8999999761581421`).
fn decimal(value: f32) -> Value {
    value.to_string().parse::<f64>().map_or(Value::Null, |v| json!(v))
}

/// Ids of server tool calls and results an `Opaque` block of this message carries verbatim.
fn opaque_ids(message: &Message) -> HashSet<&str> {
    message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Opaque { provider, data } if provider == NAME => data
                .get("id")
                .or_else(|| data.get("tool_use_id"))
                .and_then(Value::as_str),
            _ => None,
        })
        .collect()
}

/// The blocks of message `index` as wire content; what cannot be sent is dropped with a warning.
fn map_content(index: usize, message: &Message, warnings: &mut Vec<Warning>) -> Result<Vec<Value>, ProviderError> {
    let covered = opaque_ids(message);
    let mut out: Vec<Value> = Vec::with_capacity(message.content.len());
    for block in &message.content {
        match block {
            ContentBlock::Text {
                text,
                citations,
                cache_control,
                ..
            } => out.extend(text_block(text, citations, cache_control.as_ref())),
            ContentBlock::Image {
                media_type,
                source,
                cache_control,
            } => out.push(with_cache(image(media_type, source), cache_control.as_ref())),
            ContentBlock::Thinking { text, signature } => match signature {
                Some(signature) => out.push(json!({ "type": "thinking", "thinking": text, "signature": signature })),
                None => warnings.push(dropped(
                    index,
                    "a thinking block without a signature cannot be sent back and was dropped",
                )),
            },
            ContentBlock::RedactedThinking { data } => out.push(json!({ "type": "redacted_thinking", "data": data })),
            ContentBlock::ToolUse {
                id,
                name,
                input,
                executed_by,
                ..
            } => {
                if executed_by.is_host() {
                    out.push(json!({ "type": "tool_use", "id": id, "name": name, "input": input }));
                } else if !covered.contains(id.as_str()) {
                    out.push(json!({ "type": "server_tool_use", "id": id, "name": name, "input": input }));
                }
            }
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
                cache_control,
            } => {
                if message.role != Role::Assistant {
                    let value = tool_result_block(tool_use_id, content, *is_error);
                    out.push(with_cache(value, cache_control.as_ref()));
                } else if !covered.contains(tool_use_id.as_str()) {
                    warnings.push(dropped(
                        index,
                        &format!("the result of server tool call `{tool_use_id}` has no raw block to send back and was dropped"),
                    ));
                }
            }
            ContentBlock::Opaque { provider, data } if provider == NAME => push_opaque(&mut out, data),
            ContentBlock::Opaque { provider, .. } => warnings.push(dropped(
                index,
                &format!("a block from provider `{provider}` cannot be sent to Anthropic and was dropped"),
            )),
        }
    }
    Ok(out)
}

/// The citation kinds the Messages API takes back on a text block.
const CITATION_KINDS: [&str; 5] = [
    "char_location",
    "page_location",
    "content_block_location",
    "search_result_location",
    "web_search_result_location",
];

/// A text block with its citations and cache marker; empty text is not sent. Citations of
/// other wires (an OpenAI `url_citation`, a Perplexity URL) are left out: the API refuses them.
fn text_block(text: &str, citations: &[Value], cache: Option<&CacheControl>) -> Option<Value> {
    if text.is_empty() {
        return None;
    }
    let mut value = json!({ "type": "text", "text": text });
    let ours: Vec<&Value> = citations
        .iter()
        .filter(|c| {
            c.get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| CITATION_KINDS.contains(&t))
        })
        .collect();
    if !ours.is_empty() {
        value["citations"] = json!(ours);
    }
    Some(with_cache(value, cache))
}

/// An Anthropic `Opaque` block goes back verbatim, except citations (set on the text block
/// before it) and bookkeeping blocks (not sent).
fn push_opaque(out: &mut Vec<Value>, data: &Value) {
    match data.get("type").and_then(Value::as_str) {
        Some("text_citations") => {
            let citations = data.get("citations").cloned().unwrap_or(Value::Null);
            if let Some(last) = out.last_mut().filter(|b| b["type"] == "text") {
                last["citations"] = citations;
            }
        }
        Some("server_tool_usage" | "stop_details" | "unknown_event") => {}
        _ => out.push(data.clone()),
    }
}

/// The `dropped_content` warning for part of message `index`.
fn dropped(index: usize, what: &str) -> Warning {
    Warning::new("dropped_content", format!("message {index}: {what}"))
}

fn image(media_type: &str, source: &ImageSource) -> Value {
    match source {
        ImageSource::Base64 { data } => json!({
            "type": "image",
            "source": { "type": "base64", "media_type": media_type, "data": data },
        }),
        ImageSource::Url { url } => json!({ "type": "image", "source": { "type": "url", "url": url } }),
    }
}

/// A host tool's result as an Anthropic `tool_result` block.
///
/// Text stays text; images become base64 image blocks; resources become text (with their URI),
/// PDF blobs `document` blocks and image blobs image blocks; other blobs a short text note; JSON
/// is sent as its text. `is_error` is set only when true.
pub fn tool_result_block(tool_use_id: &str, content: &[ToolContent], is_error: bool) -> Value {
    let blocks: Vec<Value> = content.iter().map(tool_content).collect();
    let mut value = json!({ "type": "tool_result", "tool_use_id": tool_use_id, "content": blocks });
    if is_error {
        value["is_error"] = json!(true);
    }
    value
}

fn tool_content(content: &ToolContent) -> Value {
    match content {
        ToolContent::Text { text } => json!({ "type": "text", "text": text }),
        ToolContent::Image { media_type, data } => json!({
            "type": "image",
            "source": { "type": "base64", "media_type": media_type, "data": data },
        }),
        ToolContent::Resource {
            uri,
            mime_type,
            text,
            blob,
        } => match (text, blob, mime_type.as_deref()) {
            (Some(text), _, _) => json!({ "type": "text", "text": format!("{uri}\n{text}") }),
            (None, Some(blob), Some(mime)) if mime.starts_with("image/") => json!({
                "type": "image",
                "source": { "type": "base64", "media_type": mime, "data": blob },
            }),
            (None, Some(blob), Some("application/pdf")) => json!({
                "type": "document",
                "source": { "type": "base64", "media_type": "application/pdf", "data": blob },
                "title": uri,
            }),
            (None, Some(blob), mime) => json!({
                "type": "text",
                "text": format!("[binary resource {uri} ({}), {} base64 bytes not shown]", mime.unwrap_or("unknown type"), blob.len()),
            }),
            (None, None, _) => json!({ "type": "text", "text": uri }),
        },
        ToolContent::Json { value } => json!({ "type": "text", "text": value.to_string() }),
    }
}
