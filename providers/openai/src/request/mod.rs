//! The request body of one call (`POST {base_url}/responses`, `stream: true`): `model`,
//! `store`, `include`, `instructions`, `input`, `tools`, `tool_choice`, sampling, `reasoning`,
//! `text` and the pass-through options. Uses nothing but core.
//!
//! # Messages
//!
//! Each message becomes one or more `input` items, in order. No item carries an `id`: with
//! `store: false` an item id makes the server look the item up and fail ("Item with id ... not
//! found"), and OpenAI's own Codex client sends its stateless reasoning, message and call items
//! without them.
//!
//! A user message is its `ToolResult`s first, then one message item with its other blocks:
//!
//! | block in a user message | sent as |
//! | --- | --- |
//! | `ToolResult` | a `{"type": "function_call_output", "call_id": tool_use_id, "output"}` item, before the message item (see below) |
//! | `Text` | `{"type": "input_text", "text"}` in `{"type": "message", "role": "user", "content": [...]}` (an empty text is left out; no blocks left, no message item) |
//! | `Image` with an `image/*` type | `{"type": "input_image", "image_url", "detail"}`: the URL, or the base64 bytes as `data:{type};base64,{data}`; `detail` the `image_detail` option, default `auto` |
//! | `Image` with another type (PDFs, files) | base64: `{"type": "input_file", "filename": "file.<ext>", "file_data": data URL}` (the extension from the type: `pdf`, `txt`, `docx`..., else the subtype when short, else `bin`); URL: `{"type": "input_file", "file_url"}` |
//! | `Opaque` of `openai` holding an object whose `type` starts with `input_` | that content part, verbatim |
//! | other `Opaque` of `openai` with a string `type` | that item, verbatim, where it stands: the message item is split around it (an `mcp_approval_response` the host writes) |
//! | `Opaque` of `openai` without a `type` | left out silently |
//! | `Opaque` of another provider | left out, warning `dropped_content` |
//! | `Thinking`, `RedactedThinking`, `ToolUse` | left out, warning `unsupported_content` |
//!
//! - A function call output's `output` is a string when the result has no media: the texts
//!   joined with `"\n"`, a JSON piece as its JSON text, a resource with text as its URI, a
//!   newline and the text, a resource with neither text nor blob as its URI, a blob without a
//!   MIME type as its URI and a note of its size. A result with media (an image, a resource
//!   blob with a MIME type) is a list of parts in order: `{"type": "input_text", "text"}`,
//!   `{"type": "input_image", "image_url": data URL}` for images, and
//!   `{"type": "input_file", "filename", "file_data": data URL}` for other blobs (the name the
//!   last segment of the URI when it has an extension, else `file.<ext>`); a resource blob
//!   comes after its URI as text.
//! - `is_error` has no field on this wire (a function call output has no error flag): the
//!   output is sent as it is, so a failing tool should say so in its content (the agent loop's
//!   error results do).
//!
//! An assistant message is sent block by block, each block an item in order, consecutive texts
//! sharing one message item:
//!
//! | block in an assistant message | sent as |
//! | --- | --- |
//! | `Text` (not empty) | `{"type": "output_text", "text"}` in `{"type": "message", "role": "assistant", "content": [...]}`: no id, no annotations, as Codex sends it; citations and signatures are not sent |
//! | `Thinking` with a signature | `{"type": "reasoning", "summary": [{"type": "summary_text", "text"}], "encrypted_content": signature}`: the signature byte for byte, `summary` `[]` when the text is empty, no `id` |
//! | `Thinking` without a signature, `RedactedThinking` | left out, one warning `reasoning_not_sent` |
//! | `ToolUse` run by the host | `{"type": "function_call", "call_id": id, "name", "arguments"}`: the input's JSON text (`null` as `{}`), no item id |
//! | `ToolUse` run by the provider (`web_search`, `file_search`, `code_interpreter`, `mcp`, `image_generation`...), `ToolResult` | `store: true`: `{"type": "item_reference", "id"}` (the id is the built-in item's), once per id; `store: false`: left out, one warning `dropped_content` (the server kept nothing to refer to) |
//! | `Image` | left out, warning `unsupported_content` |
//! | `Opaque` of `openai` holding an object with a string `type` | that item, verbatim (`mcp_approval_request`, `mcp_list_tools`, an item the translator kept) |
//! | `Opaque` of `openai` without a `type` (finish details) | left out silently |
//! | `Opaque` of another provider | left out, warning `dropped_content` |
//!
//! - With the `previous_response_id` option the server has the conversation up to that
//!   response: `input` holds only the messages after the last assistant message.
//! - Prompt-caching markers (`cache_control` on blocks, tools or the system prompt): OpenAI
//!   caches prefixes on its own; one `unsupported_option` warning points to `prompt_cache_key`.
//! - Warnings are sent once per code and message, and never quote content.
//!
//! # The rest of the body
//!
//! | key | from |
//! | --- | --- |
//! | `model`, `stream` | the model asked for; `true` |
//! | `store` | the `store` option, default `false` (stateless) |
//! | `include` | on a stateless (`store: false`) reasoning call `"reasoning.encrypted_content"` (each reasoning item comes back encrypted, to be sent back), then the `include` option's entries, without repeats, in order; left out when empty |
//! | `previous_response_id` | the option |
//! | `instructions` | `context.system`, when set and not empty |
//! | `tools` | the host tools (below), then the `tools` option's objects verbatim |
//! | `tool_choice` | the `tool_choice` option as given, else the context's: auto `"auto"`, any `"required"`, none `"none"`, a named tool `{"type": "function", "name"}`; left out when neither sets it |
//! | `max_output_tokens` | `sampling.max_tokens` |
//! | `temperature`, `top_p` | the sampling's; on a reasoning call left out, with one `unsupported_option` warning (reasoning models refuse them) |
//! | `top_k`, `stop_sequences` | no such field: an `unsupported_option` warning each |
//! | `reasoning` | the `reasoning` option's object as given, with `effort` from `sampling.thinking_budget` when it has none (an effort of its own wins, with an `unsupported_option` warning); else, with a thinking budget, `{"effort"}`: `0` `minimal`, up to 2048 `low`, up to 8192 `medium`, above `high`. Never a `summary` unless asked (organisations that are not verified are refused summaries) |
//! | `text` | `verbosity` from the option; structured output (`context.output_schema`) as `format: {"type": "json_schema", "name", "description" (when set), "schema", "strict"}`, `strict` the schema's own flag |
//! | the pass-through options | under their own key (table below) |
//!
//! A **reasoning call** is one with the `reasoning` option, a `sampling.thinking_budget`, or a
//! model whose name (after the last `/`, any case) starts with `o1`, `o3`, `o4`, `gpt-5` (but
//! not `gpt-5-chat`), `codex` or `gpt-oss`. The `encrypted_reasoning` option decides in place of
//! that guess, either way: models that do not reason refuse the include ("Encrypted content is
//! not supported with this model"), and a deployment's name (Azure) may not tell.
//!
//! Other context fields: a session (other than a new one without an id) gets an
//! `unsupported_option` warning pointing to `previous_response_id`; so does `env` (no child
//! process runs); MCP servers nobody attached get `mcp_servers_ignored`.
//!
//! # Host tools and strict mode
//!
//! Each host tool is `{"type": "function", "name", "description" (when not empty),
//! "parameters", "strict"}`. `parameters` is the input schema as given; a tool whose schema is
//! `null` or `{}` (takes anything, says nothing) gets `{"type": "object", "properties": {},
//! "required": [], "additionalProperties": false}`: the API's `parameters` is nullable, but
//! servers of the same API (Azure's older versions, vLLM, gateways) want an object schema, and
//! this one qualifies for strict mode. `strict` is always sent (the Responses API treats an
//! absent `strict` as "strict when the schema can be made so", rewriting optional properties
//! into required ones): `true` when the schema already qualifies, `false` otherwise; the
//! `strict_tools` option forces it either way (forced `true` on a schema that does not qualify
//! gives an `unsupported_option` warning naming the tool and the first rule it breaks, and is
//! still sent as asked).
//!
//! A schema qualifies when, checked recursively (`$defs` included) and never rewritten:
//! - the root is `"type": "object"` (not `anyOf`, not a `$ref`);
//! - every subschema is an object with a `type` (one of `string`, `number`, `integer`,
//!   `boolean`, `object`, `array`, `null`, or a list of them), or `anyOf` (a non-empty list of
//!   qualifying schemas, beside only `description`, `title`, `$defs`), or a lone `$ref` inside
//!   the document (`#`, `#/$defs/...`: recursion is allowed);
//! - every object schema has `properties`, `"additionalProperties": false` and a `required`
//!   list naming exactly the keys of `properties`;
//! - every array schema has `items` (one schema, no tuple);
//! - it uses no keyword but `type`, `properties`, `required`, `additionalProperties`, `items`,
//!   `enum`, `const`, `anyOf`, `$ref`, `$defs`, `description`, `title`, `pattern`, `format`
//!   (`date-time`, `time`, `date`, `duration`, `email`, `hostname`, `ipv4`, `ipv6`, `uuid`),
//!   `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`, `minItems`,
//!   `maxItems`. This is an allowlist: OpenAI's structured-outputs guide names as refused
//!   `allOf`, `not`, `if`/`then`/`else`, `dependentRequired`, `dependentSchemas`,
//!   `patternProperties`, `unevaluatedProperties`, `propertyNames`, `minProperties`,
//!   `maxProperties`, `unevaluatedItems`, `contains`, `minContains`, `maxContains`,
//!   `uniqueItems`, and `minLength`/`maxLength` among others; `oneOf`, `default`, `examples`,
//!   `$schema`, `definitions` and any keyword the guide does not list also disqualify, since a
//!   strict schema the server refuses fails the call while a non-strict one only loses the
//!   guarantee;
//! - at most 10 levels of nested objects, 5000 properties and 1000 enum values in all.
//!
//! # Options
//!
//! `context.provider_options("openai")`, a JSON object; an unknown key or a wrong value is an
//! `InvalidRequest` naming the key, before any I/O (the value is never quoted).
//!
//! | key | value | sent as |
//! | --- | --- | --- |
//! | `store` | bool | `store` (default `false`) |
//! | `include` | list of strings | appended to `include` (`file_search_call.results`, `message.output_text.logprobs`...) |
//! | `encrypted_reasoning` | bool | whether this is a reasoning call (the include of encrypted reasoning, the sampling left out), in place of the guess |
//! | `previous_response_id` | non-empty string | `previous_response_id`; `input` holds only the messages after the last assistant message. That response must have been stored (`store: true` on its call); set `store: true` on this call too to chain the next one to it |
//! | `reasoning` | object (`effort`: `none`, `minimal`, `low`, `medium`, `high`, `xhigh`; `summary`: `auto`, `concise`, `detailed`), `effort` and `summary` strings when present | `reasoning`, as given |
//! | `verbosity` | `"low"`, `"medium"`, `"high"` | `text.verbosity` |
//! | `tools` | list of objects, each with a string `type` | appended to `tools` verbatim: `{"type": "web_search"}`, `{"type": "file_search", "vector_store_ids": [...]}`, `{"type": "code_interpreter", "container": {"type": "auto"}}`, `{"type": "mcp", "server_label", "server_url", "require_approval"}`, `{"type": "image_generation"}`... |
//! | `strict_tools` | bool | every host tool's `strict`, in place of the check |
//! | `tool_choice` | any JSON value | `tool_choice` as given, in place of the context's (`{"type": "allowed_tools", ...}`, `{"type": "web_search"}`...) |
//! | `parallel_tool_calls` | bool | `parallel_tool_calls` |
//! | `image_detail` | `"auto"`, `"low"`, `"high"`, `"original"` | the `detail` of user images (default `auto`) |
//! | `service_tier` | string (`auto`, `default`, `flex`, `priority`...) | `service_tier` |
//! | `prompt_cache_key` | string | `prompt_cache_key` |
//! | `prompt_cache_retention` | string (`in-memory`, `24h`) | `prompt_cache_retention` |
//! | `metadata` | object of strings: at most 16 keys, keys up to 64 characters, values up to 512 | `metadata` |
//! | `user` | string | `user` |
//! | `safety_identifier` | string | `safety_identifier` |
//! | `truncation` | `"auto"`, `"disabled"` | `truncation` |
//! | `max_tool_calls` | non-negative integer | `max_tool_calls` |
//! | `top_logprobs` | integer, 0 to 20 | `top_logprobs` |
//!
//! `background` is refused: this provider streams every response.

use patchbay_core::kit::{has_cache_markers, unique_warnings};
use patchbay_core::{Message, ProviderError, RequestContext, ToolSet, Warning, context::Session};
use serde_json::{Map, Value, json};

// The body's parts, each a module: options (read first), strict (the schema check), parts
// (content parts), input (the conversation), tools, generation.
mod generation;
mod input;
mod options;
mod parts;
mod strict;
mod tools;

use self::generation::{include, reasoning, reasoning_call, sampling, text};
use self::input::{Style, after_last_answer, items};
use self::options::CallOptions;
use self::tools::{tool_choice, wire_tools};

/// A request body and the warnings `Started` carries.
#[derive(Debug)]
pub(crate) struct Built {
    /// The JSON body.
    pub(crate) body: Value,
    /// What the request left out or changed.
    pub(crate) warnings: Vec<Warning>,
}

/// The body of one call; bad call options are an `InvalidRequest` before any I/O.
pub(crate) fn build(
    messages: &[Message],
    tools: &ToolSet,
    model: &str,
    context: Option<&RequestContext>,
) -> Result<Built, ProviderError> {
    let default_context = RequestContext::default();
    let context = context.unwrap_or(&default_context);
    let options = CallOptions::read(context)?;
    let store = options.store();
    let reasoning_call = reasoning_call(model, context, &options);
    let mut warnings = Vec::new();
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("stream".into(), json!(true));
    body.insert("store".into(), json!(store));
    if let Some(include) = include(store, reasoning_call, &options) {
        body.insert("include".into(), include);
    }
    let mut from = 0;
    if let Some(previous) = &options.previous_response_id {
        body.insert("previous_response_id".into(), json!(previous));
        from = after_last_answer(messages);
    }
    if let Some(system) = context.system.as_deref().filter(|system| !system.is_empty()) {
        body.insert("instructions".into(), json!(system));
    }
    let style = Style {
        store,
        image_detail: options.image_detail(),
    };
    body.insert("input".into(), items(messages, from, &style, &mut warnings));
    let wire_tools = wire_tools(tools, &options, &mut warnings);
    if !wire_tools.is_empty() {
        body.insert("tools".into(), Value::Array(wire_tools));
    }
    if let Some(choice) = tool_choice(context.tool_choice.as_ref(), &options) {
        body.insert("tool_choice".into(), choice);
    }
    sampling(context, reasoning_call, &mut body, &mut warnings);
    if let Some(reasoning) = reasoning(context, &options, &mut warnings) {
        body.insert("reasoning".into(), reasoning);
    }
    if let Some(text) = text(context, &options) {
        body.insert("text".into(), text);
    }
    for (key, value) in options.pass_through() {
        body.insert(key.into(), value);
    }
    warnings.extend(context_warnings(context, messages, tools));
    Ok(Built {
        body: Value::Object(body),
        warnings: unique_warnings(warnings),
    })
}

/// Warnings for what the context asks that this wire does another way or not at all.
fn context_warnings(context: &RequestContext, messages: &[Message], tools: &ToolSet) -> Vec<Warning> {
    let mut warnings = Vec::new();
    match &context.session {
        None | Some(Session::New { id: None }) => {}
        Some(_) => warnings.push(Warning::new(
            Warning::UNSUPPORTED_OPTION,
            "the Responses API has no sessions: the session was ignored; send the history, or continue a stored \
             response with the `previous_response_id` option",
        )),
    }
    warnings.extend(context.unattached_mcp_servers());
    if !context.env.is_empty() {
        warnings.push(Warning::new(
            Warning::UNSUPPORTED_OPTION,
            "the Responses API runs no child process: `env` is ignored",
        ));
    }
    if has_cache_markers(context, messages, tools) {
        warnings.push(Warning::new(
            Warning::UNSUPPORTED_OPTION,
            "OpenAI caches prompt prefixes on its own, without markers: the cache markers were ignored; \
             the `prompt_cache_key` option improves cache hits for prompts that share a prefix",
        ));
    }
    warnings
}

#[cfg(test)]
mod tests;
