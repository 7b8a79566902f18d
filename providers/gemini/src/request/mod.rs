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
//!   when not empty, `parameters` the input schema converted to the Schema subset Gemini takes, left out
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

use patchbay_core::kit::{has_cache_markers, unique_warnings};
use patchbay_core::{Message, ProviderError, RequestContext, ToolSet, Warning, context::Session};
use serde_json::{Map, Value, json};

use crate::config::Backend;

// The body's parts, each a module: options (read first), contents, tools, generation.
mod contents;
mod generation;
mod options;
mod tools;

use self::contents::contents;
use self::generation::generation_config;
use self::options::CallOptions;
use self::tools::{tool_config, wire_tools};

/// The body of one call and the warnings `Started` carries.
pub(crate) struct Built {
    pub(crate) body: Value,
    pub(crate) warnings: Vec<Warning>,
}

/// Build the generateContent body. `model` goes in the URL, not the body; `backend` decides
/// what only Vertex AI takes (`labels`).
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
    Ok(Built {
        body: Value::Object(body),
        warnings: unique_warnings(warnings),
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
mod tests;
