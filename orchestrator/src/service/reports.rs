//! Sessions and jobs as the answers show them: summaries and reports.

use std::time::Duration;

use crate::format::{SessionReport, SessionSummary};
use crate::store::{Job, JobStatus, Session, SessionStatus, TreeUsage};

/// RFC 3339 text (UTC, milliseconds) for unix milliseconds.
pub(crate) fn rfc3339(millis: i64) -> String {
    let time = std::time::UNIX_EPOCH + Duration::from_millis(u64::try_from(millis).unwrap_or_default());
    humantime::format_rfc3339_millis(time).to_string()
}

/// The summary of a session.
pub fn summary(s: &Session) -> SessionSummary {
    SessionSummary {
        session_name: s.session_name.clone(),
        session_id: s.session_id.clone(),
        agent_name: s.agent_name.clone(),
        status: s.status.as_str().to_owned(),
        project_dir: Some(s.project_dir.clone()),
        parent_session_name: s.parent_session_name.clone(),
        created_at: rfc3339(s.created_at),
        updated_at: rfc3339(s.updated_at),
        usage: s.usage,
    }
}

/// Whether every job of the reported session has ended (its current job is over).
pub(super) fn settled(report: &SessionReport) -> bool {
    report
        .job_status
        .as_deref()
        .is_none_or(|s| s.parse::<JobStatus>().is_ok_and(JobStatus::is_terminal))
}

/// The report of a session and its current job ([`Store::current_job`](crate::store::Store::current_job)): the status follows
/// the job (`running` while it is queued or runs, unless the session never ran), the result is
/// that job's own, and the error is why that job failed or was cancelled.
pub fn report(s: &Session, job: Option<&Job>) -> SessionReport {
    let mut session = summary(s);
    if let Some(job) = job {
        let status = match job.status {
            JobStatus::Pending if s.status == SessionStatus::Pending => SessionStatus::Pending,
            JobStatus::Pending | JobStatus::Claimed | JobStatus::Running => SessionStatus::Running,
            JobStatus::Completed => SessionStatus::Finished,
            JobStatus::Failed => SessionStatus::Failed,
            JobStatus::Cancelled => SessionStatus::Cancelled,
        };
        session.status = status.as_str().to_owned();
    }
    let ended = job.filter(|j| j.status.is_terminal());
    let result = ended.filter(|j| j.status == JobStatus::Completed).and_then(|j| {
        // Runs that ended before results were kept per run: the session's last result.
        j.result.clone().or_else(|| s.last_result.clone())
    });
    SessionReport {
        session,
        finished_at: ended.and_then(|j| j.finished_at).map(rfc3339),
        job_id: job.map(|j| j.job_id.clone()),
        job_status: job.map(|j| j.status.as_str().to_owned()),
        error: ended.and_then(|j| j.error.clone()),
        result,
        run_usage: job.map(|j| j.usage),
        tree_root: None,
        tree_usage: None,
    }
}

/// `report` with the usage of its session's tree.
pub(crate) fn with_tree(mut report: SessionReport, tree: TreeUsage) -> SessionReport {
    if let Some(root) = tree.root_session_name {
        report.tree_root = Some(root);
        report.tree_usage = Some(tree.usage);
    }
    report
}
