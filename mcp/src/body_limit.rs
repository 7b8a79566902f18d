//! The tool server's limit on a request's size, answered as a JSON-RPC error.
//!
//! rmcp's own limit answers an oversized POST with `413` before reading it, and a client still
//! sending a large body then sees its connection reset, not an answer. Here the body is read up
//! to the limit, the rest is drained (up to [`DRAIN_CAP`] bytes or [`DRAIN_TIME`]), and the
//! answer is an HTTP `200` carrying a JSON-RPC error (code `-32600`, invalid request) that
//! states the limit, with the request's `id` when it comes before the limit (clients match
//! answers by id), so the caller learns why, over MCP.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;

/// The most bytes of an oversized body read (and dropped) before answering; past it the
/// connection is closed without an answer.
pub(crate) const DRAIN_CAP: usize = 256 * 1024 * 1024;
/// The longest an oversized body is drained.
pub(crate) const DRAIN_TIME: Duration = Duration::from_secs(30);

/// The default limit, as rmcp's: 4 MiB.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 4 * 1024 * 1024;

/// The middleware: passes a request of at most `limit` bytes on (its body read whole), answers
/// a larger one with the JSON-RPC error.
pub(crate) async fn limit_body(State(limit): State<usize>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let declared = parts
        .headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let mut stream = body.into_data_stream();
    let mut kept = Vec::new();
    let mut total: usize = 0;
    let over = declared.is_some_and(|n| n > limit as u64);
    if !over {
        loop {
            match stream.next().await {
                None => {
                    return next
                        .run(Request::from_parts(parts, Body::from(Bytes::from(kept))))
                        .await;
                }
                Some(Err(_)) => return (http::StatusCode::BAD_REQUEST, "the request body broke off").into_response(),
                Some(Ok(chunk)) => {
                    total = total.saturating_add(chunk.len());
                    if total > limit {
                        let room = limit.saturating_sub(kept.len());
                        kept.extend_from_slice(&chunk[..room.min(chunk.len())]);
                        break;
                    }
                    kept.extend_from_slice(&chunk);
                }
            }
        }
    } else {
        // Keep a prefix: the id is near the start.
        while kept.len() < 4096 {
            match stream.next().await {
                Some(Ok(chunk)) => {
                    total = total.saturating_add(chunk.len());
                    kept.extend_from_slice(&chunk);
                }
                _ => break,
            }
        }
    }
    let drained = tokio::time::timeout(DRAIN_TIME, async {
        while total <= DRAIN_CAP {
            match stream.next().await {
                Some(Ok(chunk)) => total = total.saturating_add(chunk.len()),
                _ => return true,
            }
        }
        false
    })
    .await
    .unwrap_or(false);
    let size = declared.map_or_else(|| format!("more than {limit}"), |n| n.to_string());
    tracing::debug!(limit, size = %size, "MCP tool server: request over the size limit refused");
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": leading_id(&kept),
        "error": {
            "code": -32600,
            "message": format!(
                "the request has {size} bytes, more than this server's limit of {limit} bytes: send less (a \
                 shorter prompt, or the content as a file)"
            ),
            "data": {"limit_bytes": limit},
        },
    });
    let mut response = axum::Json(body).into_response();
    if !drained {
        // The rest was not read: the connection cannot carry another request.
        response
            .headers_mut()
            .insert(http::header::CONNECTION, http::HeaderValue::from_static("close"));
    }
    response
}

/// The `id` of a JSON-RPC request whose top-level `id` member comes within `prefix` (a number
/// or a string), else `null`. Reads only the members before it and never fails.
pub(crate) fn leading_id(prefix: &[u8]) -> serde_json::Value {
    let mut at = skip_space(prefix, 0);
    if prefix.get(at) != Some(&b'{') {
        return serde_json::Value::Null;
    }
    at += 1;
    loop {
        at = skip_space(prefix, at);
        let Some(key_end) = string_end(prefix, at) else {
            return serde_json::Value::Null;
        };
        let key = &prefix[at..key_end];
        at = skip_space(prefix, key_end);
        if prefix.get(at) != Some(&b':') {
            return serde_json::Value::Null;
        }
        at = skip_space(prefix, at + 1);
        let Some(value_end) = value_end(prefix, at) else {
            return serde_json::Value::Null;
        };
        if key == b"\"id\"" {
            return serde_json::from_slice(&prefix[at..value_end])
                .ok()
                .filter(|v: &serde_json::Value| v.is_number() || v.is_string())
                .unwrap_or(serde_json::Value::Null);
        }
        at = skip_space(prefix, value_end);
        match prefix.get(at) {
            Some(b',') => at += 1,
            _ => return serde_json::Value::Null,
        }
    }
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
        at += 1;
    }
    at
}

/// The index after the JSON string starting at `at`, if it ends within `bytes`.
fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let mut i = at + 1;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The index after the JSON value starting at `at`, if it ends within `bytes`.
fn value_end(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => string_end(bytes, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            while let Some(&b) = bytes.get(i) {
                match b {
                    b'"' => {
                        i = string_end(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            // A number, true, false or null: up to the next delimiter.
            let mut i = at;
            while let Some(&b) = bytes.get(i) {
                if matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace() {
                    return Some(i);
                }
                i += 1;
            }
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::leading_id;
    use serde_json::json;

    #[test]
    fn the_id_is_found_before_the_params() {
        assert_eq!(
            leading_id(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"#),
            json!(7)
        );
        assert_eq!(leading_id(br#" { "id" : "a\"b" , "x": 1"#), json!("a\"b"));
        assert_eq!(
            leading_id(br#"{"jsonrpc":"2.0","method":"m","params":{"a":[1,{"id":3}],"s":"}"},"id":9}"#),
            json!(9)
        );
    }

    #[test]
    fn no_id_within_the_prefix_is_null() {
        assert_eq!(leading_id(br#"{"jsonrpc":"2.0","params":{"prompt":"aaaa"#), json!(null));
        assert_eq!(leading_id(b""), json!(null));
        assert_eq!(leading_id(b"[1,2]"), json!(null));
        assert_eq!(leading_id(br#"{"id":{"x":1}}"#), json!(null));
        assert_eq!(leading_id(br#"{"id""#), json!(null));
        assert_eq!(leading_id(b"{\"\\"), json!(null));
    }
}
