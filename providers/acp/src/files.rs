//! The agent's file requests, served confined to the session's working directory through
//! patchbay-tools' confinement (`..`, absolute paths outside it and symlinks out are refused).
//! `fs/read_text_file` honours `line` (1-based) and `limit` (lines). A refusal is a JSON-RPC
//! error the agent shows its model: invalid params (-32602) for a path outside the root,
//! resource not found (-32002) for a missing file, internal error (-32603) otherwise.

use std::path::{Path, PathBuf};

use agent_client_protocol::Error as RpcError;
use patchbay_tools::confined::{ConfinedError, read_text, write_text};
use serde_json::Value;

/// `fs/read_text_file`.
pub(crate) async fn read(root: Option<&Path>, params: &Value) -> Result<String, RpcError> {
    let (root, path) = target(root, params)?;
    let line = number(params, "line");
    let limit = number(params, "limit");
    let text = blocking(move || read_text(&root, &path)).await?;
    Ok(slice(&text, line, limit))
}

/// `fs/write_text_file`.
pub(crate) async fn write(root: Option<&Path>, params: &Value) -> Result<(), RpcError> {
    let (root, path) = target(root, params)?;
    let content = params
        .get("content")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params().data(serde_json::json!({ "reason": "no `content`" })))?
        .to_owned();
    blocking(move || write_text(&root, &path, &content)).await
}

fn target(root: Option<&Path>, params: &Value) -> Result<(PathBuf, String), RpcError> {
    let root =
        root.ok_or_else(|| RpcError::new(-32603, "this session has no working directory to serve files from"))?;
    let path = params
        .get("path")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params().data(serde_json::json!({ "reason": "no `path`" })))?;
    Ok((root.to_path_buf(), path.to_owned()))
}

fn number(params: &Value, key: &str) -> Option<usize> {
    params
        .get(key)
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ConfinedError> + Send + 'static,
) -> Result<T, RpcError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(rpc_error(&error)),
        Err(_) => Err(RpcError::new(-32603, "the file request did not finish")),
    }
}

fn rpc_error(error: &ConfinedError) -> RpcError {
    let code = if error.denied {
        -32602
    } else if error.message.contains("not found") || error.message.contains("does not exist") {
        -32002
    } else {
        -32603
    };
    RpcError::new(code, error.message.clone())
}

/// Lines `line..line + limit` (1-based) of `text`, with their line ends.
fn slice(text: &str, line: Option<usize>, limit: Option<usize>) -> String {
    if line.is_none() && limit.is_none() {
        return text.to_owned();
    }
    let skip = line.unwrap_or(1).saturating_sub(1);
    let take = limit.unwrap_or(usize::MAX);
    text.split_inclusive('\n').skip(skip).take(take).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_limit_pick_lines() {
        let text = "a\nb\nc\n";
        assert_eq!(slice(text, None, None), text);
        assert_eq!(slice(text, Some(2), None), "b\nc\n");
        assert_eq!(slice(text, Some(2), Some(1)), "b\n");
        assert_eq!(slice(text, None, Some(1)), "a\n");
        assert_eq!(slice(text, Some(9), None), "");
    }
}
