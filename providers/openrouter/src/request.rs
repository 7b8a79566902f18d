//! Building the chat-completions request body from patchbay messages, tools and context.

use patchbay_core::kit::read_options;
use patchbay_core::{
    ContentBlock, ImageSource, Message, OutputSchema, ProviderError, RequestContext, Role, ToolSet, Warning,
    context::ToolChoice, tool::ToolContent,
};
use serde_json::{Map, Value, json};

use crate::config::{Dialect, ResponseFormat};

/// The body and the warnings for `Started`.
pub(crate) struct Built {
    pub(crate) body: Value,
    pub(crate) warnings: Vec<Warning>,
}

fn image_url(media_type: &str, source: &ImageSource) -> Value {
    let url = match source {
        ImageSource::Base64 { data } => format!("data:{media_type};base64,{data}"),
        ImageSource::Url { url } => url.clone(),
    };
    json!({ "type": "image_url", "image_url": { "url": url } })
}

fn text_part(text: &str, cache: bool) -> Value {
    if cache {
        json!({ "type": "text", "text": text, "cache_control": { "type": "ephemeral" } })
    } else {
        json!({ "type": "text", "text": text })
    }
}

/// The text a tool message carries for one result, and the images that must travel as user
/// content (OpenAI tool messages hold text only).
fn tool_result_text(content: &[ToolContent], is_error: bool, images: &mut Vec<Value>) -> String {
    let mut pieces: Vec<String> = Vec::new();
    for piece in content {
        match piece {
            ToolContent::Text { text } => pieces.push(text.clone()),
            ToolContent::Json { value } => pieces.push(value.to_string()),
            ToolContent::Image { media_type, data } => {
                images.push(image_url(media_type, &ImageSource::Base64 { data: data.clone() }));
                pieces.push(format!("[image {media_type}: sent in the next user message]"));
            }
            ToolContent::Resource {
                uri,
                mime_type,
                text,
                blob,
            } => match (text, blob) {
                (Some(text), _) => pieces.push(format!("[resource {uri}]\n{text}")),
                (None, Some(blob)) if mime_type.as_deref().is_some_and(|m| m.starts_with("image/")) => {
                    let media_type = mime_type.clone().unwrap_or_default();
                    images.push(image_url(&media_type, &ImageSource::Base64 { data: blob.clone() }));
                    pieces.push(format!("[resource {uri}: image sent in the next user message]"));
                }
                _ => pieces.push(format!(
                    "[resource {uri} ({}), binary content not shown]",
                    mime_type.as_deref().unwrap_or("unknown type")
                )),
            },
        }
    }
    let text = pieces.join("\n");
    if is_error { format!("Error: {text}") } else { text }
}

fn reasoning_detail(block: &ContentBlock, index: usize) -> Option<Value> {
    match block {
        ContentBlock::Thinking { text, signature } => {
            let mut detail = json!({ "type": "reasoning.text", "text": text, "index": index });
            if let Some(signature) = signature {
                detail["signature"] = Value::String(signature.clone());
            }
            Some(detail)
        }
        ContentBlock::RedactedThinking { data } => {
            // Our own redacted reasoning is the whole detail object; anything else is wrapped.
            match serde_json::from_str::<Value>(data) {
                Ok(Value::Object(map)) if map.get("type").and_then(Value::as_str) == Some("reasoning.encrypted") => {
                    Some(Value::Object(map))
                }
                _ => Some(json!({ "type": "reasoning.encrypted", "data": data, "index": index })),
            }
        }
        _ => None,
    }
}

fn assistant(message: &Message, index: usize, dialect: Dialect, out: &mut Vec<Value>, warnings: &mut Vec<Warning>) {
    let mut text = String::new();
    let mut calls = Vec::new();
    let mut details = Vec::new();
    let mut dropped_reasoning = false;
    let mut results = Vec::new();
    for block in &message.content {
        match block {
            ContentBlock::Text { text: t, .. } => text.push_str(t),
            ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. } => {
                if dialect == Dialect::OpenRouter {
                    details.extend(reasoning_detail(block, details.len()));
                } else {
                    dropped_reasoning = true;
                }
            }
            ContentBlock::ToolUse { id, name, input, .. } => calls.push(json!({
                "id": id,
                "type": "function",
                "function": { "name": name, "arguments": input.to_string() },
            })),
            ContentBlock::ToolResult { .. } => results.push(block),
            ContentBlock::Image { .. } => warnings.push(Warning::new(
                "unsupported_content",
                format!("message {index}: images in assistant messages are not sent (chat completions has no place for them)"),
            )),
            ContentBlock::Opaque { .. } => {}
        }
    }
    if dropped_reasoning {
        warnings.push(Warning::new(
            "reasoning_not_sent",
            format!("message {index}: reasoning blocks are sent back only to OpenRouter (reasoning_details)"),
        ));
    }
    let mut value = Map::new();
    value.insert("role".into(), json!("assistant"));
    value.insert(
        "content".into(),
        if text.is_empty() && !calls.is_empty() {
            Value::Null
        } else {
            Value::String(text)
        },
    );
    if !calls.is_empty() {
        value.insert("tool_calls".into(), Value::Array(calls));
    }
    if !details.is_empty() {
        value.insert("reasoning_details".into(), Value::Array(details));
    }
    out.push(Value::Object(value));
    // Results of provider-executed calls live beside their call: send them as tool messages.
    tool_messages(&results, out);
}

fn tool_messages(results: &[&ContentBlock], out: &mut Vec<Value>) {
    let mut images = Vec::new();
    for block in results {
        if let ContentBlock::ToolResult {
            tool_use_id,
            content,
            is_error,
            ..
        } = block
        {
            let text = tool_result_text(content, *is_error, &mut images);
            out.push(json!({ "role": "tool", "tool_call_id": tool_use_id, "content": text }));
        }
    }
    if !images.is_empty() {
        let mut parts = vec![text_part("Images returned by the tool calls above:", false)];
        parts.extend(images);
        out.push(json!({ "role": "user", "content": parts }));
    }
}

fn user(message: &Message, dialect: Dialect, out: &mut Vec<Value>) {
    let results: Vec<&ContentBlock> = message
        .content
        .iter()
        .filter(|b| matches!(b, ContentBlock::ToolResult { .. }))
        .collect();
    // Tool messages must directly follow the assistant message that made the calls.
    tool_messages(&results, out);
    let mut parts = Vec::new();
    let mut plain = true;
    for block in &message.content {
        match block {
            ContentBlock::Text {
                text, cache_control, ..
            } => {
                let cache = cache_control.is_some() && dialect == Dialect::OpenRouter;
                plain &= !cache;
                parts.push(text_part(text, cache));
            }
            ContentBlock::Image { media_type, source, .. } => {
                plain = false;
                parts.push(image_url(media_type, source));
            }
            _ => {}
        }
    }
    match parts.len() {
        0 => {}
        1 if plain => {
            let text = parts[0]["text"].clone();
            out.push(json!({ "role": "user", "content": text }));
        }
        _ => out.push(json!({ "role": "user", "content": parts })),
    }
}

/// Build the request body.
pub(crate) fn build(
    messages: &[Message],
    tools: &ToolSet,
    model: &str,
    context: Option<&RequestContext>,
    dialect: Dialect,
    include_usage: bool,
    format: ResponseFormat,
) -> Built {
    let mut warnings = Vec::new();
    let mut wire = wire_messages(messages, context, dialect, &mut warnings);
    let schema = context.and_then(|c| c.output_schema.as_ref());
    let response_format = schema.map(|schema| response_format(schema, dialect, format, &mut wire, &mut warnings));
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(wire));
    body.insert("stream".into(), json!(true));
    if include_usage {
        body.insert("stream_options".into(), json!({ "include_usage": true }));
    }
    if dialect == Dialect::OpenRouter {
        body.insert("usage".into(), json!({ "include": true }));
    }
    if !tools.is_empty() {
        body.insert("tools".into(), function_tools(tools));
    }
    if let Some(context) = context {
        sampling(context, dialect, &mut body, &mut warnings);
        if let Some(choice) = &context.tool_choice {
            body.insert("tool_choice".into(), tool_choice(choice));
        }
        warnings.extend(unsupported_context(context, dialect));
        if let Some(format) = response_format {
            body.insert("response_format".into(), format);
        }
        merge_provider_options(context, &mut body);
    }
    Built {
        body: Value::Object(body),
        warnings,
    }
}

/// The `response_format` of a structured-output request. In `json_object` mode the schema goes
/// to the model in a system message after the system prompt (the only way it learns the shape).
fn response_format(
    schema: &OutputSchema,
    dialect: Dialect,
    format: ResponseFormat,
    wire: &mut Vec<Value>,
    warnings: &mut Vec<Warning>,
) -> Value {
    if format == ResponseFormat::JsonObject {
        let at = wire.iter().take_while(|m| m["role"] == "system").count();
        let description = schema
            .description
            .as_deref()
            .map(|d| format!(" ({d})"))
            .unwrap_or_default();
        let instruction = format!(
            "Answer with one JSON object `{}`{description} that matches this JSON Schema, and nothing else:\n{}",
            schema.name, schema.schema
        );
        wire.insert(at, json!({ "role": "system", "content": instruction }));
        warnings.push(Warning::new(
            Warning::UNSUPPORTED_OPTION,
            "this server takes `json_object` only: the output schema is asked for in a system message, not enforced",
        ));
        return json!({ "type": "json_object" });
    }
    let mut json_schema = Map::new();
    json_schema.insert("name".into(), json!(schema.name));
    if let Some(description) = &schema.description {
        json_schema.insert("description".into(), json!(description));
    }
    json_schema.insert("schema".into(), schema.schema.clone());
    match dialect {
        Dialect::OpenAi | Dialect::OpenRouter => {
            json_schema.insert("strict".into(), json!(schema.strict));
        }
        Dialect::Generic if schema.strict => warnings.push(Warning::new(
            Warning::UNSUPPORTED_OPTION,
            "strict schema mode is sent only to OpenAI and OpenRouter; this server gets the schema without `strict`",
        )),
        Dialect::Generic => {}
    }
    json!({ "type": "json_schema", "json_schema": json_schema })
}

/// The system prompt (if any) followed by the conversation, as chat messages.
fn wire_messages(
    messages: &[Message],
    context: Option<&RequestContext>,
    dialect: Dialect,
    warnings: &mut Vec<Warning>,
) -> Vec<Value> {
    let mut wire = Vec::with_capacity(messages.len() + 1);
    if let Some(system) = context.and_then(|c| c.system.as_deref()) {
        let cache = context.is_some_and(|c| c.system_cache_control.is_some());
        if cache && dialect == Dialect::OpenRouter {
            wire.push(json!({ "role": "system", "content": [text_part(system, true)] }));
        } else {
            wire.push(json!({ "role": "system", "content": system }));
        }
    }
    for (index, message) in messages.iter().enumerate() {
        match message.role {
            Role::Assistant => assistant(message, index, dialect, &mut wire, warnings),
            Role::User => user(message, dialect, &mut wire),
        }
    }
    wire
}

/// The host tools as `function` tool definitions.
fn function_tools(tools: &ToolSet) -> Value {
    let specs: Vec<Value> = tools
        .specs()
        .map(|spec| {
            json!({
                "type": "function",
                "function": {
                    "name": spec.name,
                    "description": spec.description,
                    "parameters": spec.input_schema,
                },
            })
        })
        .collect();
    Value::Array(specs)
}

/// A tool choice as the wire's `tool_choice`.
fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::Any => json!("required"),
        ToolChoice::None => json!("none"),
        ToolChoice::Tool(name) => json!({ "type": "function", "function": { "name": name } }),
    }
}

/// Warnings for context fields chat completions cannot use (or this dialect ignores).
fn unsupported_context(context: &RequestContext, dialect: Dialect) -> Vec<Warning> {
    let mut warnings: Vec<Warning> = context.unattached_mcp_servers().into_iter().collect();
    if context.session.is_some() {
        warnings.push(Warning::new(
            "unsupported_option",
            "sessions are not supported by chat completions; the session was ignored",
        ));
    }
    if context.system_cache_control.is_some() && dialect != Dialect::OpenRouter {
        warnings.push(Warning::new(
            "unsupported_option",
            "prompt-caching markers are sent only to OpenRouter; ignored",
        ));
    }
    warnings
}

/// Provider options pass through onto the body: routing (`provider`), `reasoning`, `models`,
/// `transforms`, `reasoning_effort`, anything the server understands. Options that are not an
/// object never get here: [`check_call_options`] refuses them before the request is built.
fn merge_provider_options(context: &RequestContext, body: &mut Map<String, Value>) {
    if let Some(Value::Object(options)) = context.provider_options(crate::NAME) {
        for (key, value) in options {
            body.insert(key.clone(), value.clone());
        }
    }
}

/// A call's `provider_options("openrouter")` must be a JSON object (or `null`): anything else
/// is an `InvalidRequest` before any I/O ([`OptionsError::into_call_error`](patchbay_core::kit::OptionsError::into_call_error)), as in every
/// provider crate, never quoting the value.
pub(crate) fn check_call_options(context: Option<&RequestContext>) -> Result<(), ProviderError> {
    match context.and_then(|c| c.provider_options(crate::NAME)) {
        Some(options) => read_options::<Map<String, Value>>(options)
            .map(drop)
            .map_err(|e| e.into_call_error(crate::NAME)),
        None => Ok(()),
    }
}

fn sampling(context: &RequestContext, dialect: Dialect, body: &mut Map<String, Value>, warnings: &mut Vec<Warning>) {
    let sampling = &context.sampling;
    if let Some(max) = sampling.max_tokens {
        let key = if dialect == Dialect::OpenAi {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body.insert(key.into(), json!(max));
    }
    if let Some(t) = sampling.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(p) = sampling.top_p {
        body.insert("top_p".into(), json!(p));
    }
    if let Some(k) = sampling.top_k {
        if dialect == Dialect::OpenAi {
            warnings.push(Warning::new(
                "unsupported_option",
                "OpenAI does not accept top_k; ignored",
            ));
        } else {
            body.insert("top_k".into(), json!(k));
        }
    }
    if !sampling.stop_sequences.is_empty() {
        body.insert("stop".into(), json!(sampling.stop_sequences));
    }
    if let Some(budget) = sampling.thinking_budget {
        if dialect == Dialect::OpenRouter {
            body.insert("reasoning".into(), json!({ "max_tokens": budget }));
        } else {
            warnings.push(Warning::new(
                "unsupported_option",
                "a reasoning budget in tokens is understood only by OpenRouter; use provider options (`reasoning_effort`) instead",
            ));
        }
    }
}
