//! The conversation as `contents`: each block as the part the translator reads back.

use std::collections::HashMap;

use patchbay_core::{ContentBlock, ExecutedBy, ImageSource, Message, ProviderError, Role, Warning, tool::ToolContent};
use serde_json::{Value, json};

use crate::NAME;

/// The name of the provider-run tool whose calls are `executableCode` parts.
pub(super) const CODE_EXECUTION: &str = "code_execution";

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

/// A call seen in an assistant message: its name and who ran it.
pub(super) struct Call<'a> {
    name: &'a str,
    executed_by: ExecutedBy,
    /// Whether it was sent (a provider call of another tool is not, nor is its result).
    sent: bool,
}

/// The conversation as `contents`; messages whose parts all dropped are left out.
pub(super) fn contents(messages: &[Message], warnings: &mut Vec<Warning>) -> Result<Value, ProviderError> {
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
pub(super) fn signed(mut part: Value, signature: Option<&String>) -> Value {
    if let Some(signature) = signature {
        part["thoughtSignature"] = json!(signature);
    }
    part
}

/// The `dropped_content` warning for part of message `index`.
pub(super) fn dropped(index: usize, what: impl std::fmt::Display) -> Warning {
    Warning::new(Warning::DROPPED_CONTENT, format!("message {index}: {what}"))
}

/// The parts of message `index`. Calls of assistant messages are recorded in `calls`, which
/// names the function responses of later user messages.
pub(super) fn parts<'a>(
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
pub(super) fn function_call(index: usize, name: &str, input: &Value, warnings: &mut Vec<Warning>) -> Value {
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
pub(super) fn executable_code(name: &str, input: &Value) -> Option<Value> {
    if name != CODE_EXECUTION {
        return None;
    }
    let code = input.get("code")?.as_str()?;
    let language = input.get("language").and_then(Value::as_str).unwrap_or("PYTHON");
    Some(json!({ "executableCode": { "language": language, "code": code } }))
}

/// A tool result's content: its texts, the one JSON value when it is the only non-media piece,
/// and its media as `inlineData` parts.
pub(super) fn pieces(content: &[ToolContent]) -> (Vec<String>, Option<Value>, Vec<Value>) {
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
pub(super) fn function_response(name: &str, content: &[ToolContent], is_error: bool, media: &mut Vec<Value>) -> Value {
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
