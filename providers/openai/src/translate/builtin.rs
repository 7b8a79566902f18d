//! Built-in tool items (run by OpenAI, not the host) as provider-run calls: the call's name and
//! input, its result and the sources it returned; and the text annotations as sources.
//!
//! | Item `type` | Call name | Input | Result | Sources |
//! | --- | --- | --- | --- | --- |
//! | `web_search_call` | `web_search` | `action` (`{"type": "search", "query", "queries"}`, `open_page`, `find_in_page`) | the `action.sources` as JSON text, else the status | one URL source per `action.sources` entry |
//! | `file_search_call` | `file_search` | `{"queries"}` | the `results` as JSON text (with `include: ["file_search_call.results"]`), else the status | one file source per result (`cited_text` its `text`) |
//! | `code_interpreter_call` | `code_interpreter` | `{"code", "container_id"}` | the `outputs`' logs, image URLs on lines of their own | - |
//! | `image_generation_call` | `image_generation` | `{"revised_prompt"}` when given, else `{}` | the image (`result`, base64 PNG unless the tool asked otherwise) | - |
//! | `mcp_call` | the MCP tool's `name` | its `arguments` (JSON text parsed; not JSON: as a string) | `output`, or `error` as a failed result | - |
//! | `mcp_list_tools` | `mcp_list_tools` | `{"server_label"}` | the `tools` as JSON text, or `error` | - |
//!
//! Every result's `metadata` holds what the call name leaves out: `{"type", "status"}` of the
//! item, and `server_label` for MCP. A `status` of `failed` (or an `error`) is a failed result;
//! `incomplete` is aborted; anything else completed.

use patchbay_core::source::{Source, SourceTarget, Span};
use patchbay_core::tool::{ToolContent, ToolResult, ToolStatus};
use serde_json::{Map, Value, json};

use crate::NAME;

/// A built-in tool call, read from its `output_item.done` item.
#[derive(Debug)]
pub(crate) struct Builtin {
    /// The call's input.
    pub(crate) input: Value,
    /// Its result.
    pub(crate) result: ToolResult,
    /// Sources without ids (the translator numbers them).
    pub(crate) sources: Vec<Source>,
}

/// The call name of a built-in item type, `None` for a type that is not a built-in tool call.
pub(crate) fn name_of(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "web_search_call" => "web_search",
        "file_search_call" => "file_search",
        "code_interpreter_call" => "code_interpreter",
        "image_generation_call" => "image_generation",
        "mcp_call" => "mcp",
        "mcp_list_tools" => "mcp_list_tools",
        _ => return None,
    })
}

fn str_of<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

fn status_of(item: &Value) -> ToolStatus {
    let failed = !item.get("error").is_none_or(Value::is_null);
    match str_of(item, "status") {
        _ if failed => ToolStatus::Failed,
        Some("failed") => ToolStatus::Failed,
        Some("incomplete") => ToolStatus::Aborted,
        _ => ToolStatus::Completed,
    }
}

/// `{"type", "status"}` of the item (and `server_label` for MCP).
fn metadata(item: &Value) -> Value {
    let mut map = Map::new();
    for key in ["type", "status", "server_label"] {
        if let Some(value) = item.get(key).filter(|v| !v.is_null()) {
            map.insert(key.into(), value.clone());
        }
    }
    Value::Object(map)
}

/// The text of an error field: a string, or an object's `message`, or its JSON text.
fn error_text(error: &Value) -> String {
    match error {
        Value::String(text) => text.clone(),
        other => str_of(other, "message").map_or_else(|| other.to_string(), str::to_string),
    }
}

/// A JSON value's text for a result, or the item's status when it has none.
fn json_or_status(value: Option<&Value>, item: &Value) -> String {
    match value.filter(|v| !v.is_null()) {
        Some(value) => value.to_string(),
        None => str_of(item, "status").unwrap_or("completed").to_string(),
    }
}

/// A built-in item (`kind` one [`name_of`] knows) as a provider-run call; `index` is the
/// call's block, where its sources point.
pub(crate) fn read(kind: &str, item: &Value, index: usize) -> Builtin {
    let status = status_of(item);
    let mut sources = Vec::new();
    let (input, content) = match kind {
        "web_search_call" => {
            let action = item.get("action").cloned().unwrap_or_else(|| json!({}));
            let found = action.get("sources").filter(|s| !s.is_null());
            for entry in found.and_then(Value::as_array).into_iter().flatten() {
                if let Some(url) = str_of(entry, "url").filter(|url| !url.trim().is_empty()) {
                    sources.push(source(index, SourceTarget::Url { url: url.into() }, entry));
                }
            }
            let text = json_or_status(found, item);
            (action, vec![ToolContent::text(text)])
        }
        "file_search_call" => {
            let queries = item.get("queries").cloned().unwrap_or_else(|| json!([]));
            let results = item.get("results").filter(|r| !r.is_null());
            for result in results.and_then(Value::as_array).into_iter().flatten() {
                if let Some(file_id) = str_of(result, "file_id").filter(|id| !id.trim().is_empty()) {
                    let target = SourceTarget::File {
                        file_id: file_id.into(),
                        filename: str_of(result, "filename").map(str::to_string),
                    };
                    let mut found = source(index, target, result);
                    found.cited_text = str_of(result, "text").map(str::to_string);
                    sources.push(found);
                }
            }
            let text = json_or_status(results, item);
            (json!({ "queries": queries }), vec![ToolContent::text(text)])
        }
        "code_interpreter_call" => {
            let input = json!({
                "code": item.get("code").cloned().unwrap_or(Value::Null),
                "container_id": item.get("container_id").cloned().unwrap_or(Value::Null),
            });
            let mut lines = Vec::new();
            for output in item.get("outputs").and_then(Value::as_array).into_iter().flatten() {
                if let Some(logs) = str_of(output, "logs") {
                    lines.push(logs.to_string());
                } else if let Some(url) = str_of(output, "url") {
                    lines.push(url.to_string());
                }
            }
            let text = if lines.is_empty() {
                json_or_status(None, item)
            } else {
                lines.join("\n")
            };
            (input, vec![ToolContent::text(text)])
        }
        "image_generation_call" => {
            let input = match item.get("revised_prompt").filter(|p| !p.is_null()) {
                Some(prompt) => json!({ "revised_prompt": prompt }),
                None => json!({}),
            };
            let content = match str_of(item, "result").filter(|data| !data.is_empty()) {
                Some(data) => {
                    let format = str_of(item, "output_format").unwrap_or("png");
                    vec![ToolContent::Image {
                        media_type: format!("image/{format}"),
                        data: data.to_string(),
                    }]
                }
                None => vec![ToolContent::text(json_or_status(None, item))],
            };
            (input, content)
        }
        "mcp_call" => {
            let arguments = str_of(item, "arguments").unwrap_or("{}");
            let input = serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.to_string()));
            let text = match (item.get("error").filter(|e| !e.is_null()), str_of(item, "output")) {
                (Some(error), _) => error_text(error),
                (None, Some(output)) => output.to_string(),
                (None, None) => json_or_status(None, item),
            };
            (input, vec![ToolContent::text(text)])
        }
        _ => {
            // mcp_list_tools
            let input = json!({ "server_label": item.get("server_label").cloned().unwrap_or(Value::Null) });
            let text = match item.get("error").filter(|e| !e.is_null()) {
                Some(error) => error_text(error),
                None => json_or_status(item.get("tools"), item),
            };
            (input, vec![ToolContent::text(text)])
        }
    };
    let mut result = ToolResult::with_status(status, "").with_metadata(metadata(item));
    result.content = content;
    Builtin { input, result, sources }
}

/// A source with no id yet, `data` the wire's object.
fn source(index: usize, target: SourceTarget, data: &Value) -> Source {
    Source {
        id: String::new(),
        index,
        target,
        title: str_of(data, "title").map(str::to_string),
        cited_text: None,
        supports: None,
        provider: NAME.to_string(),
        data: data.clone(),
    }
}

/// A text annotation as a source of text block `index` (no id yet), `None` for an annotation
/// that points nowhere (an empty URL or file id) or of a type not known.
///
/// | Annotation | Target | Supports |
/// | --- | --- | --- |
/// | `url_citation` | the `url`, its `title` | `start_index`..`end_index` |
/// | `file_citation` | the `file_id`, its `filename` | - |
/// | `container_file_citation` | the `file_id`, its `filename` | `start_index`..`end_index` |
/// | `file_path` | the `file_id` | - |
pub(crate) fn annotation(annotation: &Value, index: usize) -> Option<Source> {
    let target = match str_of(annotation, "type")? {
        "url_citation" => SourceTarget::Url {
            url: str_of(annotation, "url").filter(|url| !url.trim().is_empty())?.into(),
        },
        "file_citation" | "container_file_citation" | "file_path" => SourceTarget::File {
            file_id: str_of(annotation, "file_id").filter(|id| !id.trim().is_empty())?.into(),
            filename: str_of(annotation, "filename").map(str::to_string),
        },
        _ => return None,
    };
    let mut found = source(index, target, annotation);
    let start = annotation.get("start_index").and_then(Value::as_u64);
    let end = annotation.get("end_index").and_then(Value::as_u64);
    if let (Some(start), Some(end)) = (start, end) {
        found.supports = Some(Span { start, end });
    }
    Some(found)
}
