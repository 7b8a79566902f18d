//! How a tool call ends when it does not complete.

use patchbay_core::{ToolResult, tool::ToolStatus};

/// Why a call did not complete; converted into a [`ToolResult`] with the matching status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ToolError {
    /// Refused: the path leads outside the root, or the tool is disabled.
    #[error("{0}")]
    Denied(String),
    /// The tool ran and failed (missing file, bad pattern, no match...).
    #[error("{0}")]
    Failed(String),
    /// The call was cancelled.
    #[error("the tool call was cancelled")]
    Aborted,
}

impl ToolError {
    pub(crate) fn failed(message: impl Into<String>) -> Self {
        Self::Failed(message.into())
    }

    pub(crate) fn denied(message: impl Into<String>) -> Self {
        Self::Denied(message.into())
    }
}

impl From<ToolError> for ToolResult {
    fn from(error: ToolError) -> Self {
        match error {
            ToolError::Denied(message) => {
                // Inside the agent loop's per-tool-call span; the message names paths, never contents.
                tracing::info!(reason = %message, "tool call denied");
                ToolResult::with_status(ToolStatus::Denied, message)
            }
            ToolError::Failed(message) => ToolResult::with_status(ToolStatus::Failed, message),
            ToolError::Aborted => ToolResult::aborted(),
        }
    }
}

/// Run blocking file work off the async runtime and flatten the outcome into a result.
pub(crate) async fn blocking<F>(work: F) -> ToolResult
where
    F: FnOnce() -> Result<ToolResult, ToolError> + Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(result)) => result,
        Ok(Err(error)) => error.into(),
        Err(join) => ToolResult::error(format!("the tool stopped unexpectedly: {join}")),
    }
}
