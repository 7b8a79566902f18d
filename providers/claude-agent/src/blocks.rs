//! Conversions of CLI content (usage, tool results, error texts) into patchbay values.

use patchbay_core::{ErrorKind, ToolResult, Usage, tool::ToolContent, tool::ToolStatus};
use serde_json::Value;

/// The error kind of a CLI error text without an HTTP status (connection failures).
pub(crate) fn kind_from_text(text: &str) -> ErrorKind {
    let lower = text.to_ascii_lowercase();
    if lower.contains("overloaded") {
        ErrorKind::Overloaded
    } else if lower.contains("connection") || lower.contains("timed out") || lower.contains("timeout") {
        ErrorKind::Transport
    } else if lower.contains("api error") {
        ErrorKind::Server
    } else {
        ErrorKind::Process
    }
}

pub(crate) fn usage_of(value: &Value) -> Usage {
    let num = |key: &str| value.get(key).and_then(Value::as_u64);
    Usage {
        input: num("input_tokens"),
        output: num("output_tokens"),
        cache_read: num("cache_read_input_tokens").filter(|n| *n > 0),
        cache_write: num("cache_creation_input_tokens").filter(|n| *n > 0),
        ..Usage::default()
    }
}

/// A tool result as the CLI rendered it (for tools the CLI ran).
pub(crate) fn result_of(block: &Value) -> ToolResult {
    let is_error = block.get("is_error").and_then(Value::as_bool).unwrap_or(false);
    let mut content = Vec::new();
    match block.get("content") {
        Some(Value::String(text)) => content.push(ToolContent::text(text.clone())),
        Some(Value::Array(items)) => {
            for item in items {
                match item.get("type").and_then(Value::as_str) {
                    Some("text") => content.push(ToolContent::text(
                        item.get("text").and_then(Value::as_str).unwrap_or(""),
                    )),
                    Some("image") => content.push(ToolContent::Image {
                        media_type: item
                            .pointer("/source/media_type")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        data: item
                            .pointer("/source/data")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                    }),
                    _ => content.push(ToolContent::Json { value: item.clone() }),
                }
            }
        }
        _ => {}
    }
    ToolResult {
        content,
        status: if is_error {
            ToolStatus::Failed
        } else {
            ToolStatus::Completed
        },
        metadata: None,
    }
}
