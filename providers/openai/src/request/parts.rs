//! Content parts: images and files as `input_image` / `input_file`, and a tool result's
//! `function_call_output`.

use patchbay_core::ImageSource;
use patchbay_core::tool::ToolContent;
use serde_json::{Value, json};

/// File name extensions of the MIME types files usually have (else the subtype, when short).
const EXTENSIONS: [(&str, &str); 14] = [
    ("application/pdf", "pdf"),
    ("text/plain", "txt"),
    ("text/markdown", "md"),
    ("text/csv", "csv"),
    ("text/html", "html"),
    ("application/json", "json"),
    ("application/xml", "xml"),
    ("text/xml", "xml"),
    ("application/msword", "doc"),
    (
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "docx",
    ),
    (
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "xlsx",
    ),
    (
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "pptx",
    ),
    ("application/vnd.ms-excel", "xls"),
    ("application/vnd.ms-powerpoint", "ppt"),
];

/// A base64 payload as a data URL (the media type without whitespace: `text/plain;
/// charset=utf-8` as `text/plain;charset=utf-8`).
pub(super) fn data_url(media_type: &str, data: &str) -> String {
    let media_type: String = media_type.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    format!("data:{media_type};base64,{data}")
}

/// Whether a MIME type is an image's.
pub(super) fn is_image(media_type: &str) -> bool {
    media_type
        .get(..6)
        .is_some_and(|prefix| prefix.eq_ignore_ascii_case("image/"))
}

/// The extension of a file of this MIME type: from the table, else the subtype when it is a
/// short run of letters and digits, else `bin`.
pub(super) fn extension(media_type: &str) -> String {
    let essence = media_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    if let Some((_, extension)) = EXTENSIONS.iter().find(|(mime, _)| *mime == essence) {
        return (*extension).to_string();
    }
    match essence.split_once('/') {
        Some((_, subtype))
            if (1..=8).contains(&subtype.len()) && subtype.bytes().all(|b| b.is_ascii_alphanumeric()) =>
        {
            subtype.to_string()
        }
        _ => "bin".into(),
    }
}

/// A user `Image` block: an `input_image` for an image type (`detail` from the option), an
/// `input_file` for any other (PDFs and other files).
pub(super) fn media(media_type: &str, source: &ImageSource, detail: &str) -> Value {
    match (is_image(media_type), source) {
        (true, ImageSource::Base64 { data }) => {
            json!({ "type": "input_image", "image_url": data_url(media_type, data), "detail": detail })
        }
        (true, ImageSource::Url { url }) => json!({ "type": "input_image", "image_url": url, "detail": detail }),
        (false, ImageSource::Base64 { data }) => json!({
            "type": "input_file",
            "filename": format!("file.{}", extension(media_type)),
            "file_data": data_url(media_type, data),
        }),
        (false, ImageSource::Url { url }) => json!({ "type": "input_file", "file_url": url }),
    }
}

/// The file name of a resource: the last segment of its URI when it has an extension, else
/// `file.<ext>`.
fn resource_name(uri: &str, media_type: &str) -> String {
    let path = uri.split(['?', '#']).next().unwrap_or_default();
    match path.rsplit('/').next() {
        Some(last) if last.contains('.') && !last.starts_with('.') && !last.ends_with('.') => last.to_string(),
        _ => format!("file.{}", extension(media_type)),
    }
}

/// One piece of a tool result: text, or a media part.
enum Piece {
    Text(String),
    Media(Value),
}

/// A tool result's content as pieces, in order (a resource with a blob is its URI, then the
/// blob as media).
fn pieces(content: &[ToolContent]) -> Vec<Piece> {
    let mut pieces = Vec::with_capacity(content.len());
    for piece in content {
        match piece {
            ToolContent::Text { text } => pieces.push(Piece::Text(text.clone())),
            ToolContent::Json { value } => pieces.push(Piece::Text(value.to_string())),
            ToolContent::Image { media_type, data } => pieces.push(Piece::Media(
                json!({ "type": "input_image", "image_url": data_url(media_type, data) }),
            )),
            ToolContent::Resource {
                uri,
                mime_type,
                text,
                blob,
            } => match (text, blob, mime_type) {
                (Some(text), _, _) => pieces.push(Piece::Text(format!("{uri}\n{text}"))),
                (None, Some(blob), Some(mime_type)) => {
                    pieces.push(Piece::Text(uri.clone()));
                    pieces.push(Piece::Media(if is_image(mime_type) {
                        json!({ "type": "input_image", "image_url": data_url(mime_type, blob) })
                    } else {
                        json!({
                            "type": "input_file",
                            "filename": resource_name(uri, mime_type),
                            "file_data": data_url(mime_type, blob),
                        })
                    }));
                }
                (None, Some(blob), None) => pieces.push(Piece::Text(format!(
                    "{uri}\n[binary resource of unknown type, {} base64 bytes not shown]",
                    blob.len()
                ))),
                (None, None, _) => pieces.push(Piece::Text(uri.clone())),
            },
        }
    }
    pieces
}

/// A tool result's `output`: a string (the texts joined with newlines) when it has no media,
/// else a list of `input_text`, `input_image` and `input_file` parts in order.
pub(super) fn output(content: &[ToolContent]) -> Value {
    let pieces = pieces(content);
    if pieces.iter().all(|piece| matches!(piece, Piece::Text(_))) {
        let texts: Vec<String> = pieces
            .into_iter()
            .filter_map(|piece| match piece {
                Piece::Text(text) => Some(text),
                Piece::Media(_) => None,
            })
            .collect();
        return Value::String(texts.join("\n"));
    }
    let parts: Vec<Value> = pieces
        .into_iter()
        .map(|piece| match piece {
            Piece::Text(text) => json!({ "type": "input_text", "text": text }),
            Piece::Media(part) => part,
        })
        .collect();
    Value::Array(parts)
}

/// A `function_call_output` item for the call `call_id`.
pub(super) fn function_call_output(call_id: &str, content: &[ToolContent]) -> Value {
    json!({ "type": "function_call_output", "call_id": call_id, "output": output(content) })
}
