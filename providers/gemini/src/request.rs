//! The request body of one call (`generateContent`, streamed): `contents`,
//! `systemInstruction`, `tools`, `toolConfig`, `generationConfig`, `safetySettings`,
//! `cachedContent`, `labels`. Uses config, schema.
//!
//! # Messages
//!
//! Each message is one `contents` entry, role `user` or `model` (assistant); a message whose
//! blocks all drop is left out. Blocks map to parts as the translator reads them, so an answer
//! sent back is the parts Gemini sent:
//!
//! | block | part |
//! | --- | --- |
//! | `Text` | `{"text"}`, with `thoughtSignature` when it has a signature (an empty text is sent only with one); citations are not sent |
//! | `Thinking` | `{"text", "thought": true}` (+ `thoughtSignature`); empty text with a signature is `{"text": "", "thoughtSignature"}`; empty without one is left out |
//! | `RedactedThinking` | left out (Anthropic's), warning `reasoning_not_sent` |
//! | `Image` (any MIME type: PDFs and other files too) | base64: `{"inlineData": {"mimeType", "data"}}`; URL: `{"fileData": {"mimeType", "fileUri"}}` |
//! | `ToolUse` run by the host | `{"functionCall": {"name", "args"}}` (+ `thoughtSignature`); never the id: Gemini pairs calls and responses by order and name |
//! | `ToolUse` run by the provider, `code_execution` | `{"executableCode": {"language", "code"}}` (+ `thoughtSignature`) |
//! | `ToolResult` in an assistant message, of `code_execution` | `{"codeExecutionResult": {"outcome": "OUTCOME_OK"` or `"OUTCOME_FAILED"` (`is_error`)`, "output"}}` |
//! | other provider-run calls and results | left out, warning `dropped_content` |
//! | `ToolResult` in a user message | `{"functionResponse": {"name", "response"}}` (see below) |
//! | `Opaque` of `gemini` holding a part (`text`, `inlineData`, `fileData`, `functionCall`, `functionResponse`, `executableCode`, `codeExecutionResult`) | that part, verbatim |
//! | other `Opaque` of `gemini` (finish details, grounding metadata) | left out silently |
//! | `Opaque` of another provider | left out, warning `dropped_content` |
//!
//! - `args` must be an object: a `null` input is `{}`, any other non-object is sent as
//!   `{"value": input}` with an `unsupported_content` warning (Gemini's own calls always carry
//!   objects; this only happens to a history from elsewhere).
//! - A function response is named after the `ToolUse` with its id in an earlier assistant
//!   message; a result without one is an `InvalidRequest` naming the message index. Its
//!   `response` is `{"output": v}` (`v` the one JSON piece, or the one text parsed as JSON when
//!   it parses, else the texts joined with newlines) or, when `is_error`, `{"error": text}`.
//!   Resources with text are sent as their URI, a newline and the text; JSON pieces among others
//!   as their JSON text.
//! - In a user message the function responses come first, in order, then the images of those
//!   results (and resource blobs with a MIME type) as `inlineData` parts (a `functionResponse`
//!   holds no media before Gemini 3; a result that is only media says so in its `output`), then
//!   the message's other blocks in order.
//! - Prompt-caching markers (`cache_control` on blocks, tools or the system prompt): Gemini
//!   caches whole prefixes ahead of time, not marked blocks; one `unsupported_option` warning
//!   points to the `cached_content` option.
//!
//! # The rest of the body
//!
//! - `systemInstruction`: `{"parts": [{"text": system}]}` when the context has a system prompt.
//! - `tools`: the host tools as one `{"functionDeclarations": [...]}` (`name`, `description`
//!   when not empty, `parameters` the input schema converted by [`crate::schema`], left out
//!   for a tool that takes no parameters), then the server tools the options turn on, then the
//!   `tools` option's objects. A tool whose schema lost or changed keywords gives one
//!   `unsupported_option` warning naming the tool and the keywords (never a value).
//! - `toolConfig.functionCallingConfig`: the tool choice as `mode` (`auto` AUTO, `any` ANY,
//!   `none` NONE, a named tool ANY with `allowedFunctionNames: [name]`), overridden by the
//!   options below; left out when nothing sets it.
//! - `generationConfig`: `maxOutputTokens`, `temperature`, `topP`, `topK`, `stopSequences` from
//!   the sampling; `thinkingConfig` only when asked for (a budget, a level or
//!   `include_thoughts`: models that do not think refuse it), `includeThoughts` defaulting to
//!   true with a budget (other than `0`, off) or a level; structured output
//!   (`context.output_schema`) as `responseMimeType: "application/json"` and
//!   `responseJsonSchema` (the JSON Schema as given: Gemini enforces it, so `strict` needs no
//!   field). `candidateCount` is never sent: Gemini's default is one candidate, the one the
//!   translator reads. Left out when empty.
//! - Warnings: a session (other than a new one without an id: each call is new anyway), since
//!   the API is stateless; `env` (no child process runs); MCP servers nobody attached
//!   (`mcp_servers_ignored`).
//!
//! # Options
//!
//! `context.provider_options("gemini")`, a JSON object; an unknown key or a wrong value is an
//! `InvalidRequest` naming the key, before any I/O (the value is never quoted).
//!
//! | key | value | sent as |
//! | --- | --- | --- |
//! | `google_search` | `true`, or an object (its config) | a `{"googleSearch": {}}` tool (or the object); `false` sends nothing |
//! | `url_context` | `true`, or an object | a `{"urlContext": {}}` tool |
//! | `code_execution` | `true`, or an object | a `{"codeExecution": {}}` tool |
//! | `tools` | list of objects | appended to `tools` verbatim (any tool the wire has: `googleSearchRetrieval`, `fileSearch`, `googleMaps`...) |
//! | `function_calling_mode` | `"auto"`, `"any"`, `"none"`, `"validated"` | `toolConfig.functionCallingConfig.mode`, in place of the tool choice's |
//! | `allowed_function_names` | non-empty list of strings | `functionCallingConfig.allowedFunctionNames` (in place of a named tool choice's), with mode ANY unless `function_calling_mode` says otherwise (a tool choice of auto or none gives way, with a warning) |
//! | `thinking_budget` | integer: `-1` dynamic, `0` off, or tokens | `generationConfig.thinkingConfig.thinkingBudget`, in place of `sampling.thinking_budget` (Gemini 2.5) |
//! | `thinking_level` | `"minimal"`, `"low"`, `"medium"`, `"high"` | `thinkingConfig.thinkingLevel` (upper case, as the enum is written; Gemini 3). Not with `thinking_budget` (Gemini refuses both); a `sampling.thinking_budget` gives way to it, with a warning |
//! | `include_thoughts` | bool | `thinkingConfig.includeThoughts` (default: true when a budget other than `0` or a level is set) |
//! | `response_mime_type` | string | `generationConfig.responseMimeType` (in place of the `application/json` of an output schema; `text/x.enum`...) |
//! | `generation_config` | object | merged into `generationConfig` last, key by key (its keys win: `seed`, `responseModalities`, `mediaResolution`, `candidateCount`...) |
//! | `safety_settings` | list of objects | `safetySettings` verbatim |
//! | `cached_content` | non-empty string (`cachedContents/...`) | `cachedContent`; the cache holds its own system prompt and tools, which Gemini refuses to get again: send neither with it |
//! | `labels` | object of strings | `labels` on Vertex AI (billing labels); on the Gemini API not sent, with an `unsupported_option` warning |

use std::collections::{BTreeMap, HashMap};

use patchbay_core::kit::{OptionsError, read_options};
use patchbay_core::{
    ContentBlock, ExecutedBy, ImageSource, Message, ProviderError, RequestContext, Role, ToolSet, ToolSpec, Warning,
    context::Session, context::ToolChoice, tool::ToolContent,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::NAME;
use crate::config::Backend;
use crate::schema;

/// The body of one call and the warnings `Started` carries.
#[cfg_attr(not(test), allow(dead_code, reason = "read by the provider's call"))]
pub(crate) struct Built {
    pub(crate) body: Value,
    pub(crate) warnings: Vec<Warning>,
}

/// The name of the provider-run tool whose calls are `executableCode` parts.
const CODE_EXECUTION: &str = "code_execution";

/// The keys that make a `gemini` `Opaque` block a part (sent back verbatim).
const PART_KEYS: [&str; 7] = [
    "text",
    "inlineData",
    "fileData",
    "functionCall",
    "functionResponse",
    "executableCode",
    "codeExecutionResult",
];

/// How many schema notes one warning lists before "and N more".
const MAX_NOTES: usize = 8;

/// A server tool option: on, off, or on with this config.
#[derive(Deserialize)]
#[serde(untagged)]
enum ServerTool {
    On(bool),
    Config(Map<String, Value>),
}

impl ServerTool {
    fn config(&self) -> Option<Value> {
        match self {
            Self::On(true) => Some(json!({})),
            Self::On(false) => None,
            Self::Config(config) => Some(Value::Object(config.clone())),
        }
    }
}

/// The call options (`context.provider_options("gemini")`), every key in the module's table.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CallOptions {
    google_search: Option<ServerTool>,
    url_context: Option<ServerTool>,
    code_execution: Option<ServerTool>,
    tools: Option<Vec<Map<String, Value>>>,
    function_calling_mode: Option<String>,
    allowed_function_names: Option<Vec<String>>,
    thinking_budget: Option<i64>,
    thinking_level: Option<String>,
    include_thoughts: Option<bool>,
    response_mime_type: Option<String>,
    generation_config: Option<Map<String, Value>>,
    safety_settings: Option<Vec<Map<String, Value>>>,
    cached_content: Option<String>,
    labels: Option<BTreeMap<String, String>>,
}

/// The refusal of option `key`: an `InvalidRequest` naming it, never quoting its value.
fn refuse(key: &str, message: &str) -> ProviderError {
    OptionsError {
        key: Some(key.into()),
        message: message.into(),
    }
    .into_call_error(NAME)
}

impl CallOptions {
    /// The options of this context: typed, then checked (values the types let through that
    /// Gemini refuses).
    fn read(context: &RequestContext) -> Result<Self, ProviderError> {
        let Some(options) = context.provider_options(NAME) else {
            return Ok(Self::default());
        };
        let mut options: Self = read_options(options).map_err(|e| e.into_call_error(NAME))?;
        if let Some(mode) = &mut options.function_calling_mode {
            *mode = match mode.to_ascii_lowercase().as_str() {
                "auto" => "AUTO",
                "any" => "ANY",
                "none" => "NONE",
                "validated" => "VALIDATED",
                _ => {
                    return Err(refuse(
                        "function_calling_mode",
                        "must be one of auto, any, none, validated",
                    ));
                }
            }
            .into();
        }
        if let Some(level) = &mut options.thinking_level {
            *level = match level.to_ascii_lowercase().as_str() {
                "minimal" => "MINIMAL",
                "low" => "LOW",
                "medium" => "MEDIUM",
                "high" => "HIGH",
                _ => return Err(refuse("thinking_level", "must be one of minimal, low, medium, high")),
            }
            .into();
            if options.thinking_budget.is_some() {
                return Err(refuse(
                    "thinking_level",
                    "cannot be set with `thinking_budget` (Gemini refuses both); choose one",
                ));
            }
        }
        if options.thinking_budget.is_some_and(|budget| budget < -1) {
            return Err(refuse(
                "thinking_budget",
                "must be -1 (dynamic), 0 (off) or a number of tokens",
            ));
        }
        if options.allowed_function_names.as_ref().is_some_and(Vec::is_empty) {
            return Err(refuse("allowed_function_names", "must name at least one function"));
        }
        if options
            .cached_content
            .as_ref()
            .is_some_and(|name| name.trim().is_empty())
        {
            return Err(refuse("cached_content", "must name a cached content"));
        }
        Ok(options)
    }
}

/// Build the generateContent body. `model` goes in the URL, not the body; `backend` decides
/// what only Vertex AI takes (`labels`).
#[cfg_attr(not(test), allow(dead_code, reason = "called by the provider's call"))]
pub(crate) fn build(
    messages: &[Message],
    tools: &ToolSet,
    model: &str,
    context: Option<&RequestContext>,
    backend: Backend,
) -> Result<Built, ProviderError> {
    // No decision depends on the model yet: Gemini says itself what a model does not take.
    let _ = model;
    let default_context = RequestContext::default();
    let context = context.unwrap_or(&default_context);
    let options = CallOptions::read(context)?;
    let mut warnings = Vec::new();
    let mut body = Map::new();
    body.insert("contents".into(), contents(messages, &mut warnings)?);
    if let Some(system) = context.system.as_deref().filter(|system| !system.is_empty()) {
        body.insert("systemInstruction".into(), json!({ "parts": [{ "text": system }] }));
    }
    let wire_tools = wire_tools(tools, &options, &mut warnings);
    if !wire_tools.is_empty() {
        body.insert("tools".into(), Value::Array(wire_tools));
    }
    if let Some(config) = tool_config(context.tool_choice.as_ref(), &options, &mut warnings) {
        body.insert("toolConfig".into(), config);
    }
    if let Some(config) = generation_config(context, &options, &mut warnings) {
        body.insert("generationConfig".into(), config);
    }
    if let Some(settings) = options.safety_settings {
        body.insert("safetySettings".into(), json!(settings));
    }
    if let Some(cached) = options.cached_content {
        body.insert("cachedContent".into(), json!(cached));
    }
    if let Some(labels) = options.labels {
        match backend {
            Backend::VertexAi => {
                body.insert("labels".into(), json!(labels));
            }
            Backend::GeminiApi => warnings.push(Warning::new(
                Warning::UNSUPPORTED_OPTION,
                "the `labels` option is Vertex AI's: the Gemini API takes no labels, so none were sent",
            )),
        }
    }
    warnings.extend(context_warnings(context, messages, tools));
    let mut unique: Vec<Warning> = Vec::with_capacity(warnings.len());
    for warning in warnings {
        if !unique.contains(&warning) {
            unique.push(warning);
        }
    }
    Ok(Built {
        body: Value::Object(body),
        warnings: unique,
    })
}

/// A call seen in an assistant message: its name and who ran it.
struct Call<'a> {
    name: &'a str,
    executed_by: ExecutedBy,
    /// Whether it was sent (a provider call of another tool is not, nor is its result).
    sent: bool,
}

/// The conversation as `contents`; messages whose parts all dropped are left out.
fn contents(messages: &[Message], warnings: &mut Vec<Warning>) -> Result<Value, ProviderError> {
    let mut calls: HashMap<&str, Call<'_>> = HashMap::new();
    let mut contents = Vec::with_capacity(messages.len());
    for (index, message) in messages.iter().enumerate() {
        let parts = parts(index, message, &mut calls, warnings)?;
        if parts.is_empty() {
            continue;
        }
        let role = match message.role {
            Role::User => "user",
            Role::Assistant => "model",
        };
        contents.push(json!({ "role": role, "parts": parts }));
    }
    Ok(Value::Array(contents))
}

/// `part` with `thoughtSignature` when there is one.
fn signed(mut part: Value, signature: Option<&String>) -> Value {
    if let Some(signature) = signature {
        part["thoughtSignature"] = json!(signature);
    }
    part
}

/// The `dropped_content` warning for part of message `index`.
fn dropped(index: usize, what: impl std::fmt::Display) -> Warning {
    Warning::new(Warning::DROPPED_CONTENT, format!("message {index}: {what}"))
}

/// The parts of message `index`. Calls of assistant messages are recorded in `calls`, which
/// names the function responses of later user messages.
fn parts<'a>(
    index: usize,
    message: &'a Message,
    calls: &mut HashMap<&'a str, Call<'a>>,
    warnings: &mut Vec<Warning>,
) -> Result<Vec<Value>, ProviderError> {
    let mut responses = Vec::new();
    let mut media = Vec::new();
    let mut parts = Vec::new();
    for block in &message.content {
        match block {
            ContentBlock::Text { text, signature, .. } => {
                if !text.is_empty() || signature.is_some() {
                    parts.push(signed(json!({ "text": text }), signature.as_ref()));
                }
            }
            ContentBlock::Thinking { text, signature } => {
                if !text.is_empty() {
                    parts.push(signed(json!({ "text": text, "thought": true }), signature.as_ref()));
                } else if signature.is_some() {
                    parts.push(signed(json!({ "text": "" }), signature.as_ref()));
                }
            }
            ContentBlock::RedactedThinking { .. } => warnings.push(Warning::new(
                Warning::REASONING_NOT_SENT,
                format!("message {index}: redacted thinking (Anthropic's encrypted reasoning) is not sent to Gemini"),
            )),
            ContentBlock::Image { media_type, source, .. } => parts.push(match source {
                ImageSource::Base64 { data } => json!({ "inlineData": { "mimeType": media_type, "data": data } }),
                ImageSource::Url { url } => json!({ "fileData": { "mimeType": media_type, "fileUri": url } }),
            }),
            ContentBlock::ToolUse {
                id,
                name,
                input,
                executed_by,
                signature,
            } => {
                let part = match executed_by {
                    ExecutedBy::Host => Some(function_call(index, name, input, warnings)),
                    ExecutedBy::Provider => executable_code(name, input),
                };
                if message.role == Role::Assistant {
                    calls.insert(
                        id,
                        Call {
                            name,
                            executed_by: *executed_by,
                            sent: part.is_some(),
                        },
                    );
                }
                match part {
                    Some(part) => parts.push(signed(part, signature.as_ref())),
                    None => warnings.push(dropped(
                        index,
                        format_args!("the call of provider tool `{name}` cannot be sent to Gemini and was dropped"),
                    )),
                }
            }
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
                ..
            } => {
                let call = calls.get(tool_use_id.as_str());
                if message.role == Role::Assistant {
                    match call {
                        Some(call) if call.name == CODE_EXECUTION && !call.executed_by.is_host() && call.sent => {
                            let (texts, _, _) = pieces(content);
                            let outcome = if *is_error { "OUTCOME_FAILED" } else { "OUTCOME_OK" };
                            parts.push(
                                json!({ "codeExecutionResult": { "outcome": outcome, "output": texts.join("\n") } }),
                            );
                        }
                        // Its call was dropped, with a warning.
                        Some(call) if !call.sent => {}
                        _ => warnings.push(dropped(
                            index,
                            format_args!(
                                "the result of tool call `{tool_use_id}` in an assistant message is not a code execution result \
                                 Gemini takes back, and was dropped"
                            ),
                        )),
                    }
                    continue;
                }
                let Some(call) = call else {
                    return Err(ProviderError::invalid_message(
                        index,
                        format!(
                            "the tool result `{tool_use_id}` answers no tool call of an earlier assistant message; \
                             Gemini needs the function's name"
                        ),
                    )
                    .with_provider(NAME));
                };
                responses.push(function_response(call.name, content, *is_error, &mut media));
            }
            ContentBlock::Opaque { provider, data } if provider == NAME => {
                let is_part = data
                    .as_object()
                    .is_some_and(|map| PART_KEYS.iter().any(|key| map.contains_key(*key)));
                if is_part {
                    parts.push(data.clone());
                }
            }
            ContentBlock::Opaque { provider, .. } => warnings.push(dropped(
                index,
                format_args!("a block from provider `{provider}` cannot be sent to Gemini and was dropped"),
            )),
        }
    }
    responses.append(&mut media);
    responses.append(&mut parts);
    Ok(responses)
}

/// A host call as a `functionCall` part (`args` an object: see the module docs).
fn function_call(index: usize, name: &str, input: &Value, warnings: &mut Vec<Warning>) -> Value {
    let args = match input {
        Value::Object(_) => input.clone(),
        Value::Null => json!({}),
        other => {
            warnings.push(Warning::new(
                Warning::UNSUPPORTED_CONTENT,
                format!(
                    "message {index}: the input of a `{name}` call is not a JSON object, which Gemini requires; \
                     it was sent as `{{\"value\": input}}`"
                ),
            ));
            json!({ "value": other })
        }
    };
    json!({ "functionCall": { "name": name, "args": args } })
}

/// A provider call of `code_execution` with `{"language", "code"}` as an `executableCode`
/// part; `None` for any other provider call.
fn executable_code(name: &str, input: &Value) -> Option<Value> {
    if name != CODE_EXECUTION {
        return None;
    }
    let code = input.get("code")?.as_str()?;
    let language = input.get("language").and_then(Value::as_str).unwrap_or("PYTHON");
    Some(json!({ "executableCode": { "language": language, "code": code } }))
}

/// A tool result's content: its texts, the one JSON value when it is the only non-media piece,
/// and its media as `inlineData` parts.
fn pieces(content: &[ToolContent]) -> (Vec<String>, Option<Value>, Vec<Value>) {
    let mut texts = Vec::new();
    let mut json_values = Vec::new();
    let mut media = Vec::new();
    for piece in content {
        match piece {
            ToolContent::Text { text } => texts.push(text.clone()),
            ToolContent::Json { value } => {
                json_values.push(value.clone());
                texts.push(value.to_string());
            }
            ToolContent::Image { media_type, data } => {
                media.push(json!({ "inlineData": { "mimeType": media_type, "data": data } }));
            }
            ToolContent::Resource {
                uri,
                mime_type,
                text,
                blob,
            } => match (text, blob, mime_type) {
                (Some(text), _, _) => texts.push(format!("{uri}\n{text}")),
                (None, Some(blob), Some(mime_type)) => {
                    texts.push(uri.clone());
                    media.push(json!({ "inlineData": { "mimeType": mime_type, "data": blob } }));
                }
                (None, Some(blob), None) => texts.push(format!(
                    "[binary resource {uri} of unknown type, {} base64 bytes not shown]",
                    blob.len()
                )),
                (None, None, _) => texts.push(uri.clone()),
            },
        }
    }
    let single_json = match (json_values.len(), texts.len()) {
        (1, 1) => json_values.pop(),
        _ => None,
    };
    (texts, single_json, media)
}

/// A host tool's result as a `functionResponse` part; its media go to `media`.
fn function_response(name: &str, content: &[ToolContent], is_error: bool, media: &mut Vec<Value>) -> Value {
    let (texts, single_json, mut files) = pieces(content);
    let mut text = texts.join("\n");
    if text.is_empty() && !files.is_empty() {
        text = format!(
            "(the result is the {} file(s) in the parts after the function responses)",
            files.len()
        );
    }
    media.append(&mut files);
    let response = if is_error {
        json!({ "error": text })
    } else {
        let output = match (single_json, texts.as_slice()) {
            (Some(value), _) => value,
            (None, [one]) => serde_json::from_str::<Value>(one).unwrap_or(Value::String(text)),
            (None, _) => Value::String(text),
        };
        json!({ "output": output })
    };
    json!({ "functionResponse": { "name": name, "response": response } })
}

/// The `tools` list: host functions, server tools from the options, raw tools from the options.
fn wire_tools(tools: &ToolSet, options: &CallOptions, warnings: &mut Vec<Warning>) -> Vec<Value> {
    let mut out = Vec::new();
    let declarations: Vec<Value> = tools.specs().map(|spec| declaration(spec, warnings)).collect();
    if !declarations.is_empty() {
        out.push(json!({ "functionDeclarations": declarations }));
    }
    for (option, key) in [
        (&options.google_search, "googleSearch"),
        (&options.url_context, "urlContext"),
        (&options.code_execution, "codeExecution"),
    ] {
        if let Some(config) = option.as_ref().and_then(ServerTool::config) {
            out.push(json!({ key: config }));
        }
    }
    out.extend(options.tools.iter().flatten().cloned().map(Value::Object));
    out
}

/// One function declaration; a schema that lost keywords gives one warning naming them.
fn declaration(spec: &ToolSpec, warnings: &mut Vec<Warning>) -> Value {
    let (parameters, notes) = schema::to_gemini(&spec.input_schema);
    let mut declaration = Map::new();
    declaration.insert("name".into(), json!(spec.name));
    if !spec.description.is_empty() {
        declaration.insert("description".into(), json!(spec.description));
    }
    let takes_nothing = parameters.get("type") == Some(&json!("object"))
        && parameters.get("properties").is_none()
        && parameters.get("anyOf").is_none();
    if !takes_nothing {
        declaration.insert("parameters".into(), parameters);
    }
    if !notes.is_empty() {
        let mut listed = notes[..notes.len().min(MAX_NOTES)].join("; ");
        if notes.len() > MAX_NOTES {
            listed.push_str(&format!("; and {} more", notes.len() - MAX_NOTES));
        }
        warnings.push(Warning::new(
            Warning::UNSUPPORTED_OPTION,
            format!(
                "tool `{}`: its input schema was converted to the subset Gemini takes: {listed}",
                spec.name
            ),
        ));
    }
    Value::Object(declaration)
}

/// `toolConfig` from the tool choice and the options; `None` when nothing sets it.
fn tool_config(choice: Option<&ToolChoice>, options: &CallOptions, warnings: &mut Vec<Warning>) -> Option<Value> {
    let (mut mode, mut names) = match choice {
        None => (None, None),
        Some(ToolChoice::Auto) => (Some("AUTO"), None),
        Some(ToolChoice::Any) => (Some("ANY"), None),
        Some(ToolChoice::None) => (Some("NONE"), None),
        Some(ToolChoice::Tool(name)) => (Some("ANY"), Some(vec![name.clone()])),
    };
    if let Some(allowed) = &options.allowed_function_names {
        if matches!(choice, Some(ToolChoice::Auto | ToolChoice::None)) && options.function_calling_mode.is_none() {
            warnings.push(Warning::new(
                Warning::UNSUPPORTED_OPTION,
                "the tool choice gives way to the `allowed_function_names` option (mode ANY)",
            ));
        }
        names = Some(allowed.clone());
        mode = Some("ANY");
    }
    if let Some(explicit) = &options.function_calling_mode {
        mode = Some(explicit.as_str());
    }
    let mode = mode?;
    let mut config = Map::new();
    config.insert("mode".into(), json!(mode));
    if let Some(names) = names {
        config.insert("allowedFunctionNames".into(), json!(names));
    }
    Some(json!({ "functionCallingConfig": config }))
}

/// An `f32` as the decimal it was written as (`0.9`, not `0.8999999761581421`).
fn decimal(value: f32) -> Value {
    value.to_string().parse::<f64>().map_or(Value::Null, |v| json!(v))
}

/// `generationConfig`: sampling, thinking, structured output, then the option's keys; `None`
/// when empty.
fn generation_config(context: &RequestContext, options: &CallOptions, warnings: &mut Vec<Warning>) -> Option<Value> {
    let sampling = &context.sampling;
    let mut config = Map::new();
    if let Some(max) = sampling.max_tokens {
        config.insert("maxOutputTokens".into(), json!(max));
    }
    if let Some(temperature) = sampling.temperature {
        config.insert("temperature".into(), decimal(temperature));
    }
    if let Some(top_p) = sampling.top_p {
        config.insert("topP".into(), decimal(top_p));
    }
    if let Some(top_k) = sampling.top_k {
        config.insert("topK".into(), json!(top_k));
    }
    if !sampling.stop_sequences.is_empty() {
        config.insert("stopSequences".into(), json!(sampling.stop_sequences));
    }

    let level = options.thinking_level.as_deref();
    let budget = match (options.thinking_budget, sampling.thinking_budget, level) {
        (Some(budget), _, _) => Some(budget),
        (None, Some(_), Some(_)) => {
            warnings.push(Warning::new(
                Warning::UNSUPPORTED_OPTION,
                "the sampling's thinking budget gives way to the `thinking_level` option (Gemini takes one of them)",
            ));
            None
        }
        (None, budget, _) => budget.map(i64::from),
    };
    let include = options.include_thoughts.or(match (budget, level) {
        (Some(0), None) | (None, None) => None,
        _ => Some(true),
    });
    let mut thinking = Map::new();
    if let Some(budget) = budget {
        thinking.insert("thinkingBudget".into(), json!(budget));
    }
    if let Some(level) = level {
        thinking.insert("thinkingLevel".into(), json!(level));
    }
    if let Some(include) = include {
        thinking.insert("includeThoughts".into(), json!(include));
    }
    if !thinking.is_empty() {
        config.insert("thinkingConfig".into(), Value::Object(thinking));
    }

    if let Some(schema) = &context.output_schema {
        config.insert("responseMimeType".into(), json!("application/json"));
        config.insert("responseJsonSchema".into(), schema.schema.clone());
    }
    if let Some(mime_type) = &options.response_mime_type {
        config.insert("responseMimeType".into(), json!(mime_type));
    }
    for (key, value) in options.generation_config.iter().flatten() {
        config.insert(key.clone(), value.clone());
    }
    (!config.is_empty()).then_some(Value::Object(config))
}

/// Whether any block, tool or the system prompt carries a prompt-caching marker.
fn has_cache_markers(context: &RequestContext, messages: &[Message], tools: &ToolSet) -> bool {
    context.system_cache_control.is_some()
        || tools.specs().any(|spec| spec.cache_control.is_some())
        || messages.iter().flat_map(|m| &m.content).any(|block| match block {
            ContentBlock::Text { cache_control, .. }
            | ContentBlock::Image { cache_control, .. }
            | ContentBlock::ToolResult { cache_control, .. } => cache_control.is_some(),
            _ => false,
        })
}

/// Warnings for what the context asks that a stateless API cannot do.
fn context_warnings(context: &RequestContext, messages: &[Message], tools: &ToolSet) -> Vec<Warning> {
    let mut warnings = Vec::new();
    match &context.session {
        None | Some(Session::New { id: None }) => {}
        Some(_) => warnings.push(Warning::new(
            Warning::UNSUPPORTED_OPTION,
            "the Gemini API is stateless: the session was ignored; send the history instead",
        )),
    }
    warnings.extend(context.unattached_mcp_servers());
    if !context.env.is_empty() {
        warnings.push(Warning::new(
            Warning::UNSUPPORTED_OPTION,
            "the Gemini API runs no child process: `env` is ignored",
        ));
    }
    if has_cache_markers(context, messages, tools) {
        warnings.push(Warning::new(
            Warning::UNSUPPORTED_OPTION,
            "Gemini has no per-block prompt caching: the cache markers were ignored; \
             cache a prefix ahead of time and name it with the `cached_content` option",
        ));
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use patchbay_core::context::{McpServerConfig, McpTransport, Sampling};
    use patchbay_core::{CacheControl, ErrorKind, OutputSchema, Tool, ToolContext, ToolResult};

    struct Stub(ToolSpec);

    #[async_trait]
    impl Tool for Stub {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }

        async fn execute(&self, _input: Value, _cx: &ToolContext) -> ToolResult {
            ToolResult::text("")
        }
    }

    fn toolset(specs: Vec<ToolSpec>) -> ToolSet {
        specs.into_iter().fold(ToolSet::new(), |set, spec| set.with(Stub(spec)))
    }

    fn weather() -> ToolSpec {
        ToolSpec::new(
            "get_weather",
            "The weather in a city.",
            json!({
                "type": "object",
                "properties": { "city": { "type": "string" } },
                "required": ["city"],
                "additionalProperties": false,
            }),
        )
    }

    fn try_build(
        messages: &[Message],
        tools: &ToolSet,
        context: Option<&RequestContext>,
    ) -> Result<Built, ProviderError> {
        build(messages, tools, "gemini-2.5-flash", context, Backend::GeminiApi)
    }

    fn built(messages: &[Message], context: Option<&RequestContext>) -> Built {
        try_build(messages, &ToolSet::new(), context).unwrap_or_else(|e| panic!("{e}"))
    }

    fn with_options(options: Value) -> RequestContext {
        RequestContext::new().with_provider_options(NAME, options)
    }

    fn refused(options: Value) -> ProviderError {
        match try_build(&[Message::user("hi")], &ToolSet::new(), Some(&with_options(options))) {
            Ok(_) => panic!("accepted"),
            Err(error) => error,
        }
    }

    fn codes(warnings: &[Warning]) -> Vec<&str> {
        warnings.iter().map(|w| w.code.as_str()).collect()
    }

    fn text(text: &str, signature: Option<&str>) -> ContentBlock {
        ContentBlock::Text {
            text: text.into(),
            citations: Vec::new(),
            cache_control: None,
            signature: signature.map(str::to_string),
        }
    }

    fn call(id: &str, name: &str, input: Value, signature: Option<&str>) -> ContentBlock {
        ContentBlock::ToolUse {
            id: id.into(),
            name: name.into(),
            input,
            executed_by: ExecutedBy::Host,
            signature: signature.map(str::to_string),
        }
    }

    fn provider_call(id: &str, name: &str, input: Value, signature: Option<&str>) -> ContentBlock {
        ContentBlock::ToolUse {
            id: id.into(),
            name: name.into(),
            input,
            executed_by: ExecutedBy::Provider,
            signature: signature.map(str::to_string),
        }
    }

    fn result(id: &str, content: Vec<ToolContent>, is_error: bool) -> ContentBlock {
        ContentBlock::ToolResult {
            tool_use_id: id.into(),
            content,
            is_error,
            cache_control: None,
        }
    }

    fn message(role: Role, content: Vec<ContentBlock>) -> Message {
        Message::new(role, content)
    }

    /// A signature as Gemini sends one: base64 of opaque bytes.
    const SIG: &str = "CiQBcsjafB2xg8n+/tVKQ4bZSTZ9kS1h9RQ7H1W0pkuKxg0v0kEKXAFyyNp8Jp1tY0=";

    #[test]
    fn text_thinking_and_their_signatures() {
        let messages = [
            Message::user("Hello"),
            message(
                Role::Assistant,
                vec![
                    ContentBlock::Thinking {
                        text: "Let me think.".into(),
                        signature: None,
                    },
                    ContentBlock::Thinking {
                        text: "Signed thought.".into(),
                        signature: Some(SIG.into()),
                    },
                    ContentBlock::Thinking {
                        text: String::new(),
                        signature: Some("sig-on-empty-thought".into()),
                    },
                    ContentBlock::Thinking {
                        text: String::new(),
                        signature: None,
                    },
                    ContentBlock::Text {
                        text: "Hi.".into(),
                        citations: vec![json!({ "uri": "https://example.com" })],
                        cache_control: None,
                        signature: Some("sig-text".into()),
                    },
                    text("", None),
                ],
            ),
        ];
        let built = built(&messages, None);
        assert_eq!(
            built.body["contents"],
            json!([
                { "role": "user", "parts": [{ "text": "Hello" }] },
                { "role": "model", "parts": [
                    { "text": "Let me think.", "thought": true },
                    { "text": "Signed thought.", "thought": true, "thoughtSignature": SIG },
                    { "text": "", "thoughtSignature": "sig-on-empty-thought" },
                    { "text": "Hi.", "thoughtSignature": "sig-text" },
                ] },
            ])
        );
        assert!(built.warnings.is_empty(), "{:?}", built.warnings);
        assert_eq!(
            built.body.as_object().map(Map::len),
            Some(1),
            "only contents: {}",
            built.body
        );
    }

    #[test]
    fn a_signature_on_an_empty_text_part_round_trips() {
        let messages = [
            Message::user("Hi"),
            message(Role::Assistant, vec![text("Hello!", None), text("", Some(SIG))]),
            Message::user("Again"),
        ];
        let built = built(&messages, None);
        assert_eq!(
            built.body["contents"][1],
            json!({ "role": "model", "parts": [{ "text": "Hello!" }, { "text": "", "thoughtSignature": SIG }] })
        );
    }

    #[test]
    fn a_two_turn_tool_conversation_keeps_the_signature_on_the_call() {
        let messages = [
            Message::user("Weather in Paris?"),
            message(
                Role::Assistant,
                vec![call("call_1", "get_weather", json!({ "city": "Paris" }), Some(SIG))],
            ),
            message(
                Role::User,
                vec![result("call_1", vec![ToolContent::text(r#"{"celsius": 21}"#)], false)],
            ),
            message(Role::Assistant, vec![text("21 °C.", None)]),
            Message::user("Thanks"),
        ];
        let built = try_build(&messages, &toolset(vec![weather()]), None).unwrap_or_else(|e| panic!("{e}"));
        let contents = &built.body["contents"];
        assert_eq!(
            contents[1],
            json!({ "role": "model", "parts": [
                { "functionCall": { "name": "get_weather", "args": { "city": "Paris" } }, "thoughtSignature": SIG },
            ] })
        );
        assert_eq!(
            contents[1]["parts"][0]["thoughtSignature"].as_str(),
            Some(SIG),
            "byte for byte"
        );
        assert_eq!(
            contents[2],
            json!({ "role": "user", "parts": [
                { "functionResponse": { "name": "get_weather", "response": { "output": { "celsius": 21 } } } },
            ] })
        );
        assert!(!contents.to_string().contains("call_1"), "no ids on the wire");
        assert_eq!(contents.as_array().map(Vec::len), Some(5));
    }

    #[test]
    fn parallel_calls_and_their_results_keep_their_order() {
        let messages = [
            Message::user("Paris and Rome?"),
            message(
                Role::Assistant,
                vec![
                    call("a", "get_weather", json!({ "city": "Paris" }), Some(SIG)),
                    call("b", "get_weather", json!({ "city": "Rome" }), None),
                ],
            ),
            message(
                Role::User,
                vec![
                    result("a", vec![ToolContent::text("sunny")], false),
                    result("b", vec![ToolContent::text("rain")], false),
                ],
            ),
        ];
        let built = built(&messages, None);
        assert_eq!(
            built.body["contents"][1],
            json!({ "role": "model", "parts": [
                { "functionCall": { "name": "get_weather", "args": { "city": "Paris" } }, "thoughtSignature": SIG },
                { "functionCall": { "name": "get_weather", "args": { "city": "Rome" } } },
            ] })
        );
        assert_eq!(
            built.body["contents"][2],
            json!({ "role": "user", "parts": [
                { "functionResponse": { "name": "get_weather", "response": { "output": "sunny" } } },
                { "functionResponse": { "name": "get_weather", "response": { "output": "rain" } } },
            ] })
        );
    }

    #[test]
    fn code_execution_round_trips() {
        let messages = [
            Message::user("What is 2+2? Run code."),
            message(
                Role::Assistant,
                vec![
                    provider_call(
                        "exec_0",
                        "code_execution",
                        json!({ "language": "PYTHON", "code": "print(2+2)" }),
                        Some(SIG),
                    ),
                    result("exec_0", vec![ToolContent::text("4\n")], false),
                    provider_call(
                        "exec_1",
                        "code_execution",
                        json!({ "language": "PYTHON", "code": "1/0" }),
                        None,
                    ),
                    result("exec_1", vec![ToolContent::text("ZeroDivisionError")], true),
                    text("It is 4.", None),
                ],
            ),
            Message::user("Thanks"),
        ];
        let built = built(&messages, None);
        assert_eq!(
            built.body["contents"][1]["parts"],
            json!([
                { "executableCode": { "language": "PYTHON", "code": "print(2+2)" }, "thoughtSignature": SIG },
                { "codeExecutionResult": { "outcome": "OUTCOME_OK", "output": "4\n" } },
                { "executableCode": { "language": "PYTHON", "code": "1/0" } },
                { "codeExecutionResult": { "outcome": "OUTCOME_FAILED", "output": "ZeroDivisionError" } },
                { "text": "It is 4." },
            ])
        );
        assert!(built.warnings.is_empty(), "{:?}", built.warnings);
    }

    #[test]
    fn other_provider_tools_are_dropped_with_a_warning() {
        let messages = [
            Message::user("Search"),
            message(
                Role::Assistant,
                vec![
                    provider_call("srv_1", "web_search", json!({ "query": "x" }), None),
                    result("srv_1", vec![ToolContent::text("results")], false),
                    result("unknown", vec![ToolContent::text("orphan")], false),
                    text("Found it.", None),
                ],
            ),
        ];
        let built = built(&messages, None);
        assert_eq!(built.body["contents"][1]["parts"], json!([{ "text": "Found it." }]));
        assert_eq!(
            codes(&built.warnings),
            [Warning::DROPPED_CONTENT, Warning::DROPPED_CONTENT]
        );
        assert!(
            built.warnings[0].message.contains("`web_search`"),
            "{:?}",
            built.warnings
        );
        assert!(built.warnings[1].message.contains("`unknown`"), "{:?}", built.warnings);
        assert!(!built.warnings.iter().any(|w| w.message.contains("results")));
    }

    #[test]
    fn images_and_files_are_inline_data_or_file_data() {
        let messages = [message(
            Role::User,
            vec![
                text("Look", None),
                ContentBlock::Image {
                    media_type: "image/png".into(),
                    source: ImageSource::Base64 { data: "iVBOR".into() },
                    cache_control: None,
                },
                ContentBlock::Image {
                    media_type: "application/pdf".into(),
                    source: ImageSource::Base64 { data: "JVBER".into() },
                    cache_control: None,
                },
                ContentBlock::Image {
                    media_type: "video/mp4".into(),
                    source: ImageSource::Url {
                        url: "https://generativelanguage.googleapis.com/v1beta/files/abc".into(),
                    },
                    cache_control: None,
                },
            ],
        )];
        let built = built(&messages, None);
        assert_eq!(
            built.body["contents"][0]["parts"],
            json!([
                { "text": "Look" },
                { "inlineData": { "mimeType": "image/png", "data": "iVBOR" } },
                { "inlineData": { "mimeType": "application/pdf", "data": "JVBER" } },
                { "fileData": { "mimeType": "video/mp4", "fileUri": "https://generativelanguage.googleapis.com/v1beta/files/abc" } },
            ])
        );
    }

    #[test]
    fn redacted_thinking_is_not_sent() {
        let messages = [
            Message::user("Hi"),
            message(
                Role::Assistant,
                vec![
                    ContentBlock::RedactedThinking { data: "enc1".into() },
                    ContentBlock::RedactedThinking { data: "enc2".into() },
                    text("Hello", None),
                ],
            ),
        ];
        let built = built(&messages, None);
        assert_eq!(built.body["contents"][1]["parts"], json!([{ "text": "Hello" }]));
        assert_eq!(codes(&built.warnings), [Warning::REASONING_NOT_SENT], "one per message");
        assert!(built.warnings[0].message.starts_with("message 1:"));
    }

    #[test]
    fn opaque_blocks() {
        let messages = [
            Message::user("Hi"),
            message(
                Role::Assistant,
                vec![
                    ContentBlock::Opaque {
                        provider: NAME.into(),
                        data: json!({ "fileData": { "mimeType": "image/png", "fileUri": "gs://b/o.png" }, "thoughtSignature": "s" }),
                    },
                    ContentBlock::Opaque {
                        provider: NAME.into(),
                        data: json!({ "finishReason": "STOP", "finishMessage": "done" }),
                    },
                    ContentBlock::Opaque {
                        provider: NAME.into(),
                        data: json!({ "groundingMetadata": { "webSearchQueries": ["x"] } }),
                    },
                    ContentBlock::Opaque {
                        provider: "anthropic".into(),
                        data: json!({ "type": "server_tool_use" }),
                    },
                    text("Done", None),
                ],
            ),
        ];
        let built = built(&messages, None);
        assert_eq!(
            built.body["contents"][1]["parts"],
            json!([
                { "fileData": { "mimeType": "image/png", "fileUri": "gs://b/o.png" }, "thoughtSignature": "s" },
                { "text": "Done" },
            ])
        );
        assert_eq!(codes(&built.warnings), [Warning::DROPPED_CONTENT]);
        assert!(built.warnings[0].message.contains("`anthropic`"));
    }

    #[test]
    fn tool_results_map_to_function_responses() {
        let messages = [
            Message::user("Go"),
            message(
                Role::Assistant,
                vec![
                    call("j", "json_tool", json!({}), None),
                    call("t", "text_tool", json!({}), None),
                    call("e", "failing", json!({}), None),
                    call("i", "screenshot", json!({}), None),
                    call("r", "read", json!({}), None),
                    call("v", "value_tool", json!({}), None),
                ],
            ),
            message(
                Role::User,
                vec![
                    result("j", vec![ToolContent::Json { value: json!([1, 2]) }], false),
                    result(
                        "t",
                        vec![
                            ToolContent::text("line one"),
                            ToolContent::text("{\"not\": \"parsed\"}"),
                        ],
                        false,
                    ),
                    result("e", vec![ToolContent::text("boom")], true),
                    result(
                        "i",
                        vec![ToolContent::Image {
                            media_type: "image/png".into(),
                            data: "PNGDATA".into(),
                        }],
                        false,
                    ),
                    result(
                        "r",
                        vec![
                            ToolContent::Resource {
                                uri: "file:///notes.txt".into(),
                                mime_type: Some("text/plain".into()),
                                text: Some("the notes".into()),
                                blob: None,
                            },
                            ToolContent::Resource {
                                uri: "file:///doc.pdf".into(),
                                mime_type: Some("application/pdf".into()),
                                text: None,
                                blob: Some("PDFDATA".into()),
                            },
                        ],
                        false,
                    ),
                    result("v", vec![ToolContent::text("42")], false),
                    text("And more.", None),
                ],
            ),
        ];
        let built = built(&messages, None);
        assert_eq!(
            built.body["contents"][2]["parts"],
            json!([
                { "functionResponse": { "name": "json_tool", "response": { "output": [1, 2] } } },
                { "functionResponse": { "name": "text_tool", "response": { "output": "line one\n{\"not\": \"parsed\"}" } } },
                { "functionResponse": { "name": "failing", "response": { "error": "boom" } } },
                { "functionResponse": { "name": "screenshot", "response": {
                    "output": "(the result is the 1 file(s) in the parts after the function responses)",
                } } },
                { "functionResponse": { "name": "read", "response": {
                    "output": "file:///notes.txt\nthe notes\nfile:///doc.pdf",
                } } },
                { "functionResponse": { "name": "value_tool", "response": { "output": 42 } } },
                { "inlineData": { "mimeType": "image/png", "data": "PNGDATA" } },
                { "inlineData": { "mimeType": "application/pdf", "data": "PDFDATA" } },
                { "text": "And more." },
            ])
        );
        assert!(built.warnings.is_empty(), "{:?}", built.warnings);
    }

    #[test]
    fn a_result_without_its_call_is_an_invalid_request_naming_the_message() {
        let messages = [
            Message::user("Go"),
            message(Role::Assistant, vec![text("ok", None)]),
            message(Role::User, vec![result("missing", vec![ToolContent::text("x")], false)]),
        ];
        let error = match try_build(&messages, &ToolSet::new(), None) {
            Ok(_) => panic!("accepted"),
            Err(error) => error,
        };
        assert_eq!(error.kind(), ErrorKind::InvalidRequest);
        assert_eq!(error.facts().message_index, Some(2));
        assert!(error.to_string().contains("`missing`"), "{error}");
        // A call made later does not name an earlier result.
        let messages = [
            message(Role::User, vec![result("late", vec![ToolContent::text("x")], false)]),
            message(Role::Assistant, vec![call("late", "f", json!({}), None)]),
        ];
        assert!(try_build(&messages, &ToolSet::new(), None).is_err());
    }

    #[test]
    fn call_inputs_are_objects() {
        let messages = [
            Message::user("Go"),
            message(
                Role::Assistant,
                vec![call("a", "f", Value::Null, None), call("b", "g", json!([1, 2]), None)],
            ),
        ];
        let built = built(&messages, None);
        assert_eq!(
            built.body["contents"][1]["parts"],
            json!([
                { "functionCall": { "name": "f", "args": {} } },
                { "functionCall": { "name": "g", "args": { "value": [1, 2] } } },
            ])
        );
        assert_eq!(codes(&built.warnings), [Warning::UNSUPPORTED_CONTENT]);
        assert!(built.warnings[0].message.contains("`g`"));
    }

    #[test]
    fn empty_messages_are_left_out() {
        let messages = [
            Message::user("Hi"),
            message(Role::Assistant, vec![]),
            message(
                Role::Assistant,
                vec![
                    ContentBlock::Thinking {
                        text: String::new(),
                        signature: None,
                    },
                    text("", None),
                ],
            ),
            Message::user("Still there?"),
        ];
        let built = built(&messages, None);
        assert_eq!(
            built.body["contents"],
            json!([
                { "role": "user", "parts": [{ "text": "Hi" }] },
                { "role": "user", "parts": [{ "text": "Still there?" }] },
            ])
        );
    }

    #[test]
    fn cache_markers_give_one_warning() {
        let mut marked = weather();
        marked.cache_control = Some(CacheControl::ephemeral());
        let messages = [message(
            Role::User,
            vec![
                ContentBlock::Text {
                    text: "a".into(),
                    citations: Vec::new(),
                    cache_control: Some(CacheControl::ephemeral()),
                    signature: None,
                },
                ContentBlock::Text {
                    text: "b".into(),
                    citations: Vec::new(),
                    cache_control: Some(CacheControl::ephemeral()),
                    signature: None,
                },
            ],
        )];
        let mut context = RequestContext::new().with_system("Be brief.");
        context.system_cache_control = Some(CacheControl::ephemeral());
        let built = try_build(&messages, &toolset(vec![marked]), Some(&context)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(codes(&built.warnings), [Warning::UNSUPPORTED_OPTION]);
        assert!(built.warnings[0].message.contains("`cached_content`"));
        assert!(!built.body.to_string().contains("cache_control"));
        assert_eq!(
            built.body["systemInstruction"],
            json!({ "parts": [{ "text": "Be brief." }] })
        );
    }

    #[test]
    fn tools_are_declarations_then_server_tools_then_raw_tools() {
        let tools = toolset(vec![
            weather(),
            ToolSpec::new("now", "", json!({ "type": "object", "properties": {} })),
            ToolSpec::new(
                "lookup",
                "Find a thing.",
                json!({
                    "type": "object",
                    "properties": {
                        "id": { "oneOf": [{ "type": "string" }, { "type": "integer" }] },
                        "at": { "type": "string", "format": "date" },
                    },
                }),
            ),
        ]);
        let context = with_options(json!({
            "google_search": true,
            "url_context": { "note": "config object" },
            "code_execution": false,
            "tools": [{ "googleMaps": {} }],
        }));
        let built = try_build(&[Message::user("Hi")], &tools, Some(&context)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            built.body["tools"],
            json!([
                { "functionDeclarations": [
                    {
                        "name": "get_weather",
                        "description": "The weather in a city.",
                        "parameters": { "type": "object", "properties": { "city": { "type": "string" } }, "required": ["city"] },
                    },
                    { "name": "now" },
                    {
                        "name": "lookup",
                        "description": "Find a thing.",
                        "parameters": { "type": "object", "properties": {
                            "id": { "anyOf": [{ "type": "string" }, { "type": "integer" }] },
                            "at": { "type": "string" },
                        } },
                    },
                ] },
                { "googleSearch": {} },
                { "urlContext": { "note": "config object" } },
                { "googleMaps": {} },
            ])
        );
        assert_eq!(codes(&built.warnings), [Warning::UNSUPPORTED_OPTION]);
        let message = &built.warnings[0].message;
        assert!(message.starts_with("tool `lookup`:"), "{message}");
        assert!(
            message.contains("`oneOf` sent as `anyOf` at #/properties/id") && message.contains("`format` dropped"),
            "{message}"
        );
        assert!(!message.contains("date"), "no values: {message}");
        // No tools, no `tools`.
        let bare = try_build(&[Message::user("Hi")], &ToolSet::new(), None).unwrap_or_else(|e| panic!("{e}"));
        assert!(built_has_no("tools", &bare));
    }

    fn built_has_no(key: &str, built: &Built) -> bool {
        built.body.get(key).is_none()
    }

    #[test]
    fn a_long_list_of_schema_notes_is_cut() {
        let properties: Map<String, Value> = (0..12)
            .map(|i| (format!("p{i}"), json!({ "type": "number", "multipleOf": 2 })))
            .collect();
        let tools = toolset(vec![ToolSpec::new(
            "many",
            "d",
            json!({ "type": "object", "properties": properties }),
        )]);
        let built = try_build(&[Message::user("Hi")], &tools, None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(built.warnings.len(), 1);
        assert!(
            built.warnings[0].message.ends_with("; and 4 more"),
            "{:?}",
            built.warnings
        );
    }

    #[test]
    fn tool_choice_and_function_calling_options() {
        let config = |choice: Option<ToolChoice>, options: Value| {
            let mut context = with_options(options);
            context.tool_choice = choice;
            let built = built(&[Message::user("Hi")], Some(&context));
            (built.body.get("toolConfig").cloned(), codes(&built.warnings).join(","))
        };
        assert_eq!(config(None, json!({})), (None, String::new()));
        let mode = |mode: &str| Some(json!({ "functionCallingConfig": { "mode": mode } }));
        assert_eq!(config(Some(ToolChoice::Auto), json!({})).0, mode("AUTO"));
        assert_eq!(config(Some(ToolChoice::Any), json!({})).0, mode("ANY"));
        assert_eq!(config(Some(ToolChoice::None), json!({})).0, mode("NONE"));
        assert_eq!(
            config(Some(ToolChoice::Tool("get_weather".into())), json!({})).0,
            Some(json!({ "functionCallingConfig": { "mode": "ANY", "allowedFunctionNames": ["get_weather"] } }))
        );
        assert_eq!(
            config(None, json!({ "allowed_function_names": ["a", "b"] })),
            (
                Some(json!({ "functionCallingConfig": { "mode": "ANY", "allowedFunctionNames": ["a", "b"] } })),
                String::new()
            )
        );
        assert_eq!(
            config(
                Some(ToolChoice::Tool("x".into())),
                json!({ "allowed_function_names": ["a"], "function_calling_mode": "validated" })
            )
            .0,
            Some(json!({ "functionCallingConfig": { "mode": "VALIDATED", "allowedFunctionNames": ["a"] } }))
        );
        assert_eq!(
            config(Some(ToolChoice::Auto), json!({ "allowed_function_names": ["a"] })),
            (
                Some(json!({ "functionCallingConfig": { "mode": "ANY", "allowedFunctionNames": ["a"] } })),
                Warning::UNSUPPORTED_OPTION.to_string()
            )
        );
        assert_eq!(
            config(Some(ToolChoice::Any), json!({ "function_calling_mode": "NONE" })).0,
            mode("NONE")
        );
    }

    fn generation(context: &RequestContext) -> (Option<Value>, Vec<Warning>) {
        let built = built(&[Message::user("Hi")], Some(context));
        (built.body.get("generationConfig").cloned(), built.warnings)
    }

    #[test]
    fn sampling_maps_to_generation_config() {
        let mut sampling = Sampling::default();
        sampling.max_tokens = Some(1024);
        sampling.temperature = Some(0.7);
        sampling.top_p = Some(0.9);
        sampling.top_k = Some(40);
        sampling.stop_sequences = vec!["END".into()];
        let (config, warnings) = generation(&RequestContext::new().with_sampling(sampling));
        assert_eq!(
            config,
            Some(json!({
                "maxOutputTokens": 1024,
                "temperature": 0.7,
                "topP": 0.9,
                "topK": 40,
                "stopSequences": ["END"],
            }))
        );
        assert!(warnings.is_empty());
        assert_eq!(
            generation(&RequestContext::new()).0,
            None,
            "nothing asked, nothing sent"
        );
    }

    #[test]
    fn thinking_config_only_when_asked() {
        let thinking = |context: RequestContext| {
            let (config, warnings) = generation(&context);
            (
                config.and_then(|c| c.get("thinkingConfig").cloned()),
                codes(&warnings).len(),
            )
        };
        let mut sampling = Sampling::default();
        sampling.thinking_budget = Some(2048);
        assert_eq!(
            thinking(RequestContext::new().with_sampling(sampling.clone())),
            (Some(json!({ "thinkingBudget": 2048, "includeThoughts": true })), 0)
        );
        assert_eq!(
            thinking(with_options(json!({ "thinking_budget": -1 }))),
            (Some(json!({ "thinkingBudget": -1, "includeThoughts": true })), 0)
        );
        assert_eq!(
            thinking(with_options(json!({ "thinking_budget": 0 }))),
            (Some(json!({ "thinkingBudget": 0 })), 0)
        );
        assert_eq!(
            thinking(with_options(json!({ "thinking_budget": 512 })).with_sampling(sampling.clone())),
            (Some(json!({ "thinkingBudget": 512, "includeThoughts": true })), 0),
            "the option wins over the sampling"
        );
        assert_eq!(
            thinking(with_options(json!({ "thinking_level": "Low" }))),
            (Some(json!({ "thinkingLevel": "LOW", "includeThoughts": true })), 0)
        );
        assert_eq!(
            thinking(
                with_options(json!({ "thinking_level": "high", "include_thoughts": false })).with_sampling(sampling)
            ),
            (Some(json!({ "thinkingLevel": "HIGH", "includeThoughts": false })), 1),
            "the sampling budget gives way to the level, with a warning"
        );
        assert_eq!(
            thinking(with_options(json!({ "include_thoughts": true }))),
            (Some(json!({ "includeThoughts": true })), 0)
        );
        assert_eq!(thinking(with_options(json!({}))), (None, 0));
    }

    #[test]
    fn structured_output_and_generation_config_option() {
        let schema = json!({
            "type": "object",
            "properties": { "city": { "type": "string", "format": "email" } },
            "additionalProperties": false,
        });
        let context = RequestContext::new().with_output_schema(OutputSchema::new("City", schema.clone()));
        let (config, warnings) = generation(&context);
        assert_eq!(
            config,
            Some(json!({ "responseMimeType": "application/json", "responseJsonSchema": schema }))
        );
        assert!(warnings.is_empty());
        let mut strict = OutputSchema::new("City", schema.clone());
        strict.strict = true;
        let context = with_options(json!({
            "response_mime_type": "text/x.enum",
            "generation_config": { "seed": 7, "responseMimeType": "application/json", "temperature": 0.1 },
        }))
        .with_output_schema(strict)
        .with_sampling({
            let mut sampling = Sampling::default();
            sampling.temperature = Some(1.0);
            sampling
        });
        let (config, warnings) = generation(&context);
        assert_eq!(
            config,
            Some(json!({
                "temperature": 0.1,
                "seed": 7,
                "responseMimeType": "application/json",
                "responseJsonSchema": schema,
            })),
            "generation_config keys win"
        );
        assert!(warnings.is_empty(), "strict needs no warning: {warnings:?}");
        assert_eq!(
            generation(&with_options(json!({ "response_mime_type": "text/x.enum" }))).0,
            Some(json!({ "responseMimeType": "text/x.enum" }))
        );
    }

    #[test]
    fn safety_cache_and_labels() {
        let context = with_options(json!({
            "safety_settings": [{ "category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE" }],
            "cached_content": "cachedContents/abc",
            "labels": { "team": "search" },
        }));
        let gemini = built(&[Message::user("Hi")], Some(&context));
        assert_eq!(
            gemini.body["safetySettings"],
            json!([{ "category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE" }])
        );
        assert_eq!(gemini.body["cachedContent"], json!("cachedContents/abc"));
        assert!(built_has_no("labels", &gemini));
        assert_eq!(codes(&gemini.warnings), [Warning::UNSUPPORTED_OPTION]);
        assert!(gemini.warnings[0].message.contains("`labels`"));
        assert!(!gemini.warnings[0].message.contains("search"), "no values");
        let vertex = build(
            &[Message::user("Hi")],
            &ToolSet::new(),
            "gemini-2.5-pro",
            Some(&context),
            Backend::VertexAi,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(vertex.body["labels"], json!({ "team": "search" }));
        assert!(vertex.warnings.is_empty(), "{:?}", vertex.warnings);
    }

    #[test]
    fn context_warnings_for_session_env_and_mcp() {
        let context = RequestContext::new()
            .with_session(Session::Resume { id: "s1".into() })
            .with_env("TOKEN", "secret")
            .with_mcp_server(McpServerConfig {
                name: "github".into(),
                transport: McpTransport::Http {
                    url: "https://mcp.example.com".into(),
                    headers: BTreeMap::new(),
                },
            });
        let (_, warnings) = generation(&context);
        assert_eq!(
            codes(&warnings),
            [
                Warning::UNSUPPORTED_OPTION,
                Warning::MCP_SERVERS_IGNORED,
                Warning::UNSUPPORTED_OPTION
            ]
        );
        assert!(
            !warnings
                .iter()
                .any(|w| w.message.contains("secret") || w.message.contains("s1"))
        );
        let fresh = RequestContext::new().with_session(Session::New { id: None });
        assert!(generation(&fresh).1.is_empty(), "a new session is what every call is");
    }

    #[test]
    fn bad_options_are_invalid_requests_naming_the_key_not_the_value() {
        for (options, key) in [
            (json!({ "googel_search": true }), "googel_search"),
            (json!({ "thinking_budget": "sk-secret-1" }), "thinking_budget"),
            (json!({ "thinking_budget": -5 }), "thinking_budget"),
            (json!({ "thinking_level": "sk-secret-2" }), "thinking_level"),
            (
                json!({ "thinking_level": "low", "thinking_budget": 100 }),
                "thinking_level",
            ),
            (
                json!({ "function_calling_mode": "sk-secret-3" }),
                "function_calling_mode",
            ),
            (json!({ "allowed_function_names": [] }), "allowed_function_names"),
            (
                json!({ "allowed_function_names": "sk-secret-4" }),
                "allowed_function_names",
            ),
            (json!({ "tools": ["sk-secret-5"] }), "tools"),
            (json!({ "google_search": "sk-secret-6" }), "google_search"),
            (json!({ "labels": { "team": 5 } }), "labels"),
            (json!({ "generation_config": "sk-secret-7" }), "generation_config"),
            (json!({ "safety_settings": { "sk-secret-8": 1 } }), "safety_settings"),
            (json!({ "cached_content": " " }), "cached_content"),
        ] {
            let error = refused(options.clone());
            let shown = error.to_string();
            assert_eq!(error.kind(), ErrorKind::InvalidRequest, "{options}");
            assert!(shown.contains(&format!("`{key}`")), "{options}: {shown}");
            assert!(!shown.contains("sk-secret"), "{options}: {shown}");
        }
        let error = refused(json!("sk-secret-9"));
        assert_eq!(error.kind(), ErrorKind::InvalidRequest);
        assert!(!error.to_string().contains("sk-secret"));
        // Null is no options.
        assert!(
            try_build(
                &[Message::user("Hi")],
                &ToolSet::new(),
                Some(&with_options(Value::Null))
            )
            .is_ok()
        );
    }

    #[test]
    fn snapshot_a_tool_conversation() {
        let messages = [
            Message::user("What's the weather in Paris and Rome, and what is 2**10?"),
            message(
                Role::Assistant,
                vec![
                    ContentBlock::Thinking {
                        text: "I should call the tool twice and run code.".into(),
                        signature: None,
                    },
                    provider_call(
                        "exec_0",
                        "code_execution",
                        json!({ "language": "PYTHON", "code": "print(2**10)" }),
                        Some("c2lnLWNvZGU="),
                    ),
                    result("exec_0", vec![ToolContent::text("1024\n")], false),
                    call("c1", "get_weather", json!({ "city": "Paris" }), Some(SIG)),
                    call("c2", "get_weather", json!({ "city": "Rome" }), None),
                ],
            ),
            message(
                Role::User,
                vec![
                    result(
                        "c1",
                        vec![ToolContent::text(r#"{"celsius": 21, "sky": "clear"}"#)],
                        false,
                    ),
                    result("c2", vec![ToolContent::text("service unavailable")], true),
                ],
            ),
            message(
                Role::Assistant,
                vec![
                    text("Paris: 21 °C and clear; Rome: unknown. 2**10 is 1024.", None),
                    text("", Some("c2lnLWVuZA==")),
                ],
            ),
            Message::user("Thanks!"),
        ];
        let mut sampling = Sampling::default();
        sampling.max_tokens = Some(2048);
        sampling.temperature = Some(0.2);
        sampling.thinking_budget = Some(1024);
        let context = RequestContext::new()
            .with_system("You are a weather assistant.")
            .with_sampling(sampling)
            .with_tool_choice(ToolChoice::Auto)
            .with_provider_options(NAME, json!({ "code_execution": true }));
        let built = try_build(&messages, &toolset(vec![weather()]), Some(&context)).unwrap_or_else(|e| panic!("{e}"));
        assert!(built.warnings.is_empty(), "{:?}", built.warnings);
        insta::assert_json_snapshot!("tool_conversation", built.body);
    }

    #[test]
    fn snapshot_options_on_vertex() {
        let context = RequestContext::new()
            .with_output_schema(OutputSchema::new(
                "Answer",
                json!({ "type": "object", "properties": { "answer": { "type": "string" } }, "required": ["answer"] }),
            ))
            .with_provider_options(
                NAME,
                json!({
                    "google_search": { "timeRangeFilter": { "startTime": "2025-01-01T00:00:00Z" } },
                    "url_context": true,
                    "thinking_level": "medium",
                    "safety_settings": [{ "category": "HARM_CATEGORY_DANGEROUS_CONTENT", "threshold": "BLOCK_ONLY_HIGH" }],
                    "labels": { "env": "test" },
                    "generation_config": { "seed": 42 },
                }),
            );
        let built = build(
            &[Message::user("Summarise https://example.com")],
            &ToolSet::new(),
            "gemini-3-pro-preview",
            Some(&context),
            Backend::VertexAi,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(built.warnings.is_empty(), "{:?}", built.warnings);
        insta::assert_json_snapshot!("options_on_vertex", built.body);
    }
}
