//! What a callback tells the parent: the prompt of the resume queued when a child's job ends
//! (see [`Store::end_job`](super::Store::end_job)).

use super::types::{JobEnd, JobStatus};
use crate::text::truncate_result;

/// The prompt resuming the parent of the session `child` whose job ended as `end`: its result
/// (cut as results are) or its error.
pub(crate) fn prompt(child: &str, end: &JobEnd) -> String {
    match (end.status, &end.result) {
        (JobStatus::Completed, result) => format!(
            "[callback] Agent session `{child}` finished. Its result:\n\n{}",
            truncate_result(result.as_deref().unwrap_or_default())
        ),
        (JobStatus::Cancelled, _) => format!(
            "[callback] Agent session `{child}` was {}.",
            end.error.as_deref().unwrap_or("cancelled")
        ),
        _ => format!(
            "[callback] Agent session `{child}` failed: {}.",
            end.error.as_deref().unwrap_or("no reason given")
        ),
    }
}
