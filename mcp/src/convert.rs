//! Conversions between patchbay's tool types and MCP's (`Tool`, `CallToolResult`).

use std::borrow::Cow;
use std::sync::Arc;

use patchbay_core::{ToolResult, ToolSpec, tool::ToolContent, tool::ToolStatus};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, MetaObject, ResourceContents, TextContent};
use serde_json::Value;

/// `_meta` key holding a non-default [`ToolStatus`] (`denied`, `aborted`).
pub const META_STATUS: &str = "patchbay/status";
/// `_meta` key holding [`ToolResult::metadata`].
pub const META_METADATA: &str = "patchbay/metadata";
/// Request `_meta` key carrying the caller's tool-call id (`ToolContext::tool_use_id`).
pub const META_TOOL_USE_ID: &str = "patchbay/toolUseId";
/// The same, as the Claude Code CLI sends it.
pub const META_CLAUDE_TOOL_USE_ID: &str = "claudecode/toolUseId";
/// Content-block `_meta` key marking a text block that carries [`ToolContent::Json`].
pub const META_JSON: &str = "patchbay/json";

/// A patchbay [`ToolResult`] as an MCP `CallToolResult`.
///
/// The mapping, both ways:
///
/// | patchbay | MCP |
/// | --- | --- |
/// | `ToolContent::Text` | `text` block |
/// | `ToolContent::Image` | `image` block |
/// | `ToolContent::Resource` | embedded `resource` block (text or blob) |
/// | `ToolContent::Json` | `text` block holding the JSON, marked `_meta["patchbay/json"]`; a result whose only content is one JSON object also sets `structuredContent` |
/// | `ToolContent::Json` holding an MCP `audio` block ([`audio_content`]) | that `audio` block |
/// | `status: Completed` / anything else | `isError: false` / `true`; `Denied` and `Aborted` are kept in `_meta["patchbay/status"]` |
/// | `metadata` | `_meta["patchbay/metadata"]` |
///
/// From a foreign server: `structuredContent` becomes `metadata` (unless the patchbay key is
/// present), a `resource_link` becomes a `Resource` without contents, and `audio` (which
/// patchbay has no kind for) is kept as `Json` holding the MCP block, so nothing is dropped
/// (and it goes out again as `audio`).
///
/// ```
/// use patchbay_core::ToolResult;
/// let mcp = patchbay_mcp::to_call_tool_result(&ToolResult::error("no such file"));
/// assert_eq!(mcp.is_error, Some(true));
/// let back = patchbay_mcp::from_call_tool_result(mcp);
/// assert_eq!(back, ToolResult::error("no such file"));
/// ```
pub fn to_call_tool_result(result: &ToolResult) -> CallToolResult {
    let content = result.content.iter().map(content_to_mcp).collect();
    let mut out = if result.is_error() {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    if let [
        ToolContent::Json {
            value: value @ Value::Object(_),
        },
    ] = result.content.as_slice()
    {
        out.structured_content = Some(value.clone());
    }
    let mut meta = JsonObject::new();
    match result.status {
        ToolStatus::Denied => {
            meta.insert(META_STATUS.into(), Value::from("denied"));
        }
        ToolStatus::Aborted => {
            meta.insert(META_STATUS.into(), Value::from("aborted"));
        }
        ToolStatus::Completed | ToolStatus::Failed => {}
    }
    if let Some(metadata) = &result.metadata {
        meta.insert(META_METADATA.into(), metadata.clone());
    }
    if !meta.is_empty() {
        out.meta = Some(MetaObject(meta));
    }
    out
}

/// An MCP `CallToolResult` as a patchbay [`ToolResult`] (the mapping is on [`to_call_tool_result`]).
pub fn from_call_tool_result(result: CallToolResult) -> ToolResult {
    let meta = result.meta.map(|meta| meta.0).unwrap_or_default();
    let status = match meta.get(META_STATUS).and_then(Value::as_str) {
        Some("denied") => ToolStatus::Denied,
        Some("aborted") => ToolStatus::Aborted,
        _ if result.is_error == Some(true) => ToolStatus::Failed,
        _ => ToolStatus::Completed,
    };
    let content: Vec<ToolContent> = result.content.into_iter().map(content_from_mcp).collect();
    let metadata = match (meta.get(META_METADATA), result.structured_content) {
        (Some(value), _) => Some(value.clone()),
        // Structured content that only mirrors a JSON block of ours is not metadata.
        (None, Some(structured))
            if content
                .iter()
                .any(|piece| matches!(piece, ToolContent::Json { value } if *value == structured)) =>
        {
            None
        }
        (None, structured) => structured,
    };
    ToolResult {
        content,
        status,
        metadata,
    }
}

/// Audio for a tool result or a prompt message: patchbay has no content kind for it, so it
/// is the MCP `audio` block (`{"type": "audio", "data": <base64>, "mimeType": ...}`) as
/// [`ToolContent::Json`], which [`to_call_tool_result`] sends as that block (and
/// [`from_call_tool_result`] makes of a foreign server's audio).
///
/// ```
/// use patchbay_core::ToolResult;
/// let result = ToolResult { content: vec![patchbay_mcp::audio_content("audio/wav", "UklGRg==")], ..ToolResult::text("") };
/// let mcp = patchbay_mcp::to_call_tool_result(&result);
/// assert_eq!(serde_json::to_value(&mcp.content[0]).unwrap()["type"], "audio");
/// ```
pub fn audio_content(mime_type: impl Into<String>, base64: impl Into<String>) -> ToolContent {
    ToolContent::Json {
        value: serde_json::json!({"type": "audio", "data": base64.into(), "mimeType": mime_type.into()}),
    }
}

/// One piece of patchbay content as an MCP content block (the mapping is on
/// [`to_call_tool_result`]).
pub(crate) fn content_to_mcp(content: &ToolContent) -> ContentBlock {
    if let ToolContent::Json { value } = content
        && value.get("type").and_then(Value::as_str) == Some("audio")
        && let Ok(audio @ ContentBlock::Audio(_)) = serde_json::from_value::<ContentBlock>(value.clone())
    {
        return audio;
    }
    match content {
        ToolContent::Text { text } => ContentBlock::text(text.clone()),
        ToolContent::Image { media_type, data } => ContentBlock::image(data.clone(), media_type.clone()),
        ToolContent::Resource {
            uri,
            mime_type,
            text,
            blob,
        } => {
            let resource = match (text, blob) {
                (_, Some(blob)) => ResourceContents::BlobResourceContents {
                    uri: uri.clone(),
                    mime_type: mime_type.clone(),
                    blob: blob.clone(),
                    meta: None,
                },
                (text, None) => ResourceContents::TextResourceContents {
                    uri: uri.clone(),
                    mime_type: mime_type.clone(),
                    text: text.clone().unwrap_or_default(),
                    meta: None,
                },
            };
            ContentBlock::resource(resource)
        }
        ToolContent::Json { value } => {
            let mut marker = JsonObject::new();
            marker.insert(META_JSON.into(), Value::Bool(true));
            ContentBlock::Text(TextContent::new(value.to_string()).with_meta(MetaObject(marker)))
        }
    }
}

fn content_from_mcp(content: ContentBlock) -> ToolContent {
    match content {
        ContentBlock::Text(text) => {
            let marked = text
                .meta
                .as_ref()
                .and_then(|meta| meta.get(META_JSON))
                .and_then(Value::as_bool)
                .unwrap_or(false);
            if marked && let Ok(value) = serde_json::from_str::<Value>(&text.text) {
                return ToolContent::Json { value };
            }
            ToolContent::Text { text: text.text }
        }
        ContentBlock::Image(image) => ToolContent::Image {
            media_type: image.mime_type,
            data: image.data,
        },
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents {
                uri, mime_type, text, ..
            } => ToolContent::Resource {
                uri: uri.clone(),
                mime_type: mime_type.clone(),
                text: Some(text.clone()),
                blob: None,
            },
            ResourceContents::BlobResourceContents {
                uri, mime_type, blob, ..
            } => ToolContent::Resource {
                uri: uri.clone(),
                mime_type: mime_type.clone(),
                text: None,
                blob: Some(blob.clone()),
            },
            _ => ToolContent::Json {
                value: serde_json::to_value(ContentBlock::Resource(embedded)).unwrap_or(Value::Null),
            },
        },
        ContentBlock::ResourceLink(link) => ToolContent::Resource {
            uri: link.uri,
            mime_type: link.mime_type,
            text: None,
            blob: None,
        },
        other => ToolContent::Json {
            value: serde_json::to_value(&other).unwrap_or(Value::Null),
        },
    }
}

/// An MCP tool definition as a [`ToolSpec`] named `name` (the listed name, or a prefixed one).
/// The description, input and output schemas and annotations are kept; the title goes into
/// the annotations when they carry none.
pub fn spec_from_mcp(tool: &rmcp::model::Tool, name: impl Into<String>) -> ToolSpec {
    let mut spec = ToolSpec::new(
        name,
        tool.description.as_deref().unwrap_or_default(),
        Value::Object((*tool.input_schema).clone()),
    );
    let mut annotations = tool
        .annotations
        .as_ref()
        .and_then(|annotations| serde_json::to_value(annotations).ok())
        .unwrap_or_else(|| Value::Object(JsonObject::new()));
    if let (Some(title), Value::Object(map)) = (&tool.title, &mut annotations) {
        map.entry("title").or_insert_with(|| Value::from(title.clone()));
    }
    if annotations.as_object().is_some_and(|map| !map.is_empty()) {
        spec.annotations = Some(annotations);
    }
    spec.output_schema = tool
        .output_schema
        .as_ref()
        .map(|schema| Value::Object((**schema).clone()));
    spec
}

/// A [`ToolSpec`] as an MCP tool definition. An input schema that is not an object is replaced
/// by `{"type": "object"}`; an output schema is kept when it is an object; annotations that
/// parse as MCP annotations are kept (their `title` also as the tool's title).
pub fn spec_to_mcp(spec: &ToolSpec) -> rmcp::model::Tool {
    let schema = match &spec.input_schema {
        Value::Object(map) => map.clone(),
        _ => {
            let mut map = JsonObject::new();
            map.insert("type".into(), Value::from("object"));
            map
        }
    };
    let description: Option<Cow<'static, str>> =
        (!spec.description.is_empty()).then(|| Cow::Owned(spec.description.clone()));
    let mut tool = rmcp::model::Tool::new_with_raw(spec.name.clone(), description, Arc::new(schema));
    tool.annotations = spec
        .annotations
        .as_ref()
        .and_then(|value| serde_json::from_value(value.clone()).ok());
    tool.title = spec
        .annotations
        .as_ref()
        .and_then(|value| value.get("title"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    if let Some(Value::Object(schema)) = &spec.output_schema {
        tool.output_schema = Some(Arc::new(schema.clone()));
    }
    tool
}
