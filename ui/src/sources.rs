//! `Event::Source` as a `source-url` or `source-document` chunk.

use patchbay_core::source::{Location, Source, SourceTarget};
use serde_json::{Map, Value, json};

use crate::parts::{PROVIDER_METADATA_KEY, UiChunk};

/// The chunk for a source: `source-url` for a web page, `source-document` for anything else,
/// with the source's block index, cited passage and target under `providerMetadata.patchbay`
/// (not the wire's `data`, which the host keeps and which can be large).
pub(crate) fn source_chunk(source: &Source) -> UiChunk {
    let provider_metadata = Some(metadata(source));
    let source_id = source.id.clone();
    match &source.target {
        SourceTarget::Url { url } => UiChunk::SourceUrl {
            source_id,
            url: url.clone(),
            title: source.title.clone(),
            provider_metadata,
        },
        target => {
            let (media_type, fallback, filename) = describe(target);
            UiChunk::SourceDocument {
                source_id,
                media_type: media_type.to_owned(),
                title: source.title.clone().unwrap_or(fallback),
                filename,
                provider_metadata,
            }
        }
    }
}

fn metadata(source: &Source) -> Value {
    let mut map = Map::new();
    map.insert("index".into(), json!(source.index));
    map.insert("provider".into(), json!(source.provider));
    if let Some(cited) = &source.cited_text {
        map.insert("citedText".into(), json!(cited));
    }
    if let Some(span) = &source.supports {
        map.insert("supports".into(), json!(span));
    }
    if !matches!(source.target, SourceTarget::Url { .. }) {
        map.insert("target".into(), json!(source.target));
    }
    json!({ PROVIDER_METADATA_KEY: Value::Object(map) })
}

/// A document's media type, a title when the source has none, and its file name.
fn describe(target: &SourceTarget) -> (&'static str, String, Option<String>) {
    match target {
        SourceTarget::Document {
            document_index,
            location,
        } => {
            let media_type = match location {
                Some(Location::Pages { .. }) => "application/pdf",
                _ => "text/plain",
            };
            let title = match document_index {
                Some(n) => format!("Document {n}"),
                None => "Document".to_owned(),
            };
            (media_type, title, None)
        }
        SourceTarget::File { file_id, filename } => {
            let media_type = filename.as_deref().map_or("application/octet-stream", media_type_of);
            (
                media_type,
                filename.clone().unwrap_or_else(|| file_id.clone()),
                filename.clone(),
            )
        }
        SourceTarget::SearchResult { source, .. } => ("text/plain", source.clone(), None),
        // A URL is a `source-url`; a target core adds later reads as a generic document.
        _ => ("application/octet-stream", "Source".to_owned(), None),
    }
}

/// The media type of a file name's extension (the common document types), else
/// `application/octet-stream`.
fn media_type_of(filename: &str) -> &'static str {
    let extension = filename.rsplit_once('.').map(|(_, ext)| ext.to_ascii_lowercase());
    match extension.as_deref() {
        Some("pdf") => "application/pdf",
        Some("txt") => "text/plain",
        Some("md") => "text/markdown",
        Some("html" | "htm") => "text/html",
        Some("csv") => "text/csv",
        Some("json") => "application/json",
        Some("docx") => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        Some("xlsx") => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        _ => "application/octet-stream",
    }
}
