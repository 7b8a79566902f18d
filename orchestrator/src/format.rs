//! Answers of the MCP tools, in markdown (the default) or JSON, rendered from the service's
//! plain data structs (defined with the service, re-exported here).
//!
//! Markdown gives each item a `## name` heading, then one `- field: value` line per field that
//! has a value (fields without one are left out), and a session's result text last, under
//! `### result`. JSON is `serde_json` pretty-printed; lists are wrapped in an object with their
//! count (`{"total": N, "blueprints": [...]}`, `{"total": N, "sessions": [...]}`), as the design
//! the tools follow answers. Result texts over [`MAX_RESULT_CHARS`] characters are cut by
//! [`truncate_result`] in both formats, and so are blueprint descriptions over
//! [`MAX_DESCRIPTION_CHARS`] in listings (a blueprint file is the operator's, but a listing
//! lands in an agent's context window).
//!
//! ```
//! use patchbay_orchestrator::format::{BlueprintSummary, ResponseFormat, render_blueprints};
//!
//! let list = [BlueprintSummary {
//!     name: "default".into(),
//!     description: "Scripted, offline.".into(),
//!     provider: "scripted".into(),
//!     model: "scripted".into(),
//!     status: "active".into(),
//! }];
//! let format: ResponseFormat = "markdown".parse().unwrap();
//! assert_eq!(
//!     render_blueprints(&list, format),
//!     "## default\n- description: Scripted, offline.\n- provider: scripted\n- model: scripted\n- status: active\n"
//! );
//! ```

use std::fmt::Write as _;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub use crate::service::reports::{
    BlueprintSummary, JobAccepted, MAX_DESCRIPTION_CHARS, STARTED_IN_BACKGROUND, SessionReport, SessionSummary,
};
pub use crate::text::{MAX_RESULT_CHARS, truncate, truncate_result};

/// How a tool answers: `markdown` (default) or `json`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResponseFormat {
    /// Headings per item and `- field: value` lines.
    #[default]
    Markdown,
    /// Pretty-printed JSON.
    Json,
}

/// A `response_format` that is neither `markdown` nor `json`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("response_format `{given}` is not supported: use `markdown` or `json`")]
#[non_exhaustive]
pub struct ResponseFormatError {
    /// The value as given.
    pub given: String,
}

impl FromStr for ResponseFormat {
    type Err = ResponseFormatError;

    /// `markdown` or `json`, exactly (lowercase).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "markdown" => Ok(Self::Markdown),
            "json" => Ok(Self::Json),
            _ => Err(ResponseFormatError { given: s.to_owned() }),
        }
    }
}

impl ResponseFormat {
    /// Parses an optional parameter: `None` is markdown.
    pub fn parse_optional(value: Option<&str>) -> Result<Self, ResponseFormatError> {
        value.map_or(Ok(Self::Markdown), str::parse)
    }
}

/// A list of blueprints.
pub fn render_blueprints(list: &[BlueprintSummary], format: ResponseFormat) -> String {
    match format {
        ResponseFormat::Json => json(&serde_json::json!({ "total": list.len(), "blueprints": list })),
        ResponseFormat::Markdown if list.is_empty() => "No agent blueprints found.\n".to_owned(),
        ResponseFormat::Markdown => join_items(list.iter().map(|b| {
            let mut out = heading(&b.name);
            field(&mut out, "description", Some(&b.description));
            field(&mut out, "provider", Some(&b.provider));
            field(&mut out, "model", Some(&b.model));
            field(&mut out, "status", Some(&b.status));
            out
        })),
    }
}

/// A list of sessions.
pub fn render_sessions(list: &[SessionSummary], format: ResponseFormat) -> String {
    match format {
        ResponseFormat::Json => json(&serde_json::json!({ "total": list.len(), "sessions": list })),
        ResponseFormat::Markdown if list.is_empty() => "No sessions found.\n".to_owned(),
        ResponseFormat::Markdown => join_items(list.iter().map(session_markdown)),
    }
}

/// A page of sessions: JSON `{"total", "sessions", "next_after"}`; markdown ends with a line
/// naming the next page's cursor when there is one.
pub fn render_session_page(
    list: &[SessionSummary],
    total: u64,
    next_after: Option<&str>,
    format: ResponseFormat,
) -> String {
    match format {
        ResponseFormat::Json => {
            json(&serde_json::json!({ "total": total, "sessions": list, "next_after": next_after }))
        }
        ResponseFormat::Markdown => {
            let mut out = render_sessions(list, format);
            if let Some(next) = next_after {
                let _ = write!(
                    out,
                    "\n[{total} sessions in all: ask again with after = {next} for more]\n"
                );
            }
            out
        }
    }
}

/// One session's status and result; the result text is truncated.
pub fn render_session(report: &SessionReport, format: ResponseFormat) -> String {
    let result = report.result.as_deref().map(truncate_result);
    match format {
        ResponseFormat::Json => json(&SessionReport {
            result,
            ..report.clone()
        }),
        ResponseFormat::Markdown => {
            let mut out = session_markdown(&report.session);
            field(&mut out, "finished_at", report.finished_at.as_deref());
            field(&mut out, "job_id", report.job_id.as_deref());
            field(&mut out, "job_status", report.job_status.as_deref());
            field(&mut out, "error", report.error.as_deref());
            let run_usage = report.run_usage.filter(|u| !u.is_empty()).map(|u| u.to_string());
            field(&mut out, "run_usage", run_usage.as_deref());
            if let (Some(root), Some(usage)) = (&report.tree_root, report.tree_usage) {
                field(&mut out, "tree_usage", Some(&format!("{usage} (the tree of `{root}`)")));
            }
            if let Some(result) = result {
                let _ = write!(out, "\n### result\n\n{result}\n");
            }
            out
        }
    }
}

/// A start or resume that returned before the run ended.
pub fn render_job_accepted(accepted: &JobAccepted, format: ResponseFormat) -> String {
    match format {
        ResponseFormat::Json => json(accepted),
        ResponseFormat::Markdown => {
            let mut out = heading(&accepted.session_name);
            field(&mut out, "status", Some(&accepted.status));
            field(&mut out, "job_id", Some(&accepted.job_id));
            field(&mut out, "job_status", Some(&accepted.job_status));
            field(&mut out, "callback_to", accepted.callback_to.as_deref());
            let _ = write!(out, "\n{}\n", accepted.message);
            out
        }
    }
}

fn session_markdown(s: &SessionSummary) -> String {
    let mut out = heading(&s.session_name);
    field(&mut out, "session_id", Some(&s.session_id));
    field(&mut out, "agent_name", Some(&s.agent_name));
    field(&mut out, "status", Some(&s.status));
    field(&mut out, "project_dir", s.project_dir.as_deref());
    field(&mut out, "parent_session_name", s.parent_session_name.as_deref());
    field(&mut out, "created_at", Some(&s.created_at));
    field(&mut out, "updated_at", Some(&s.updated_at));
    let usage = (!s.usage.is_empty()).then(|| s.usage.to_string());
    field(&mut out, "usage", usage.as_deref());
    out
}

fn heading(name: &str) -> String {
    format!("## {}\n", one_line(name))
}

/// Appends `- name: value` when there is a value; line breaks in it become spaces so the list
/// stays one line per field.
fn field(out: &mut String, name: &str, value: Option<&str>) {
    if let Some(value) = value {
        let _ = writeln!(out, "- {name}: {}", one_line(value));
    }
}

fn one_line(value: &str) -> String {
    value.replace("\r\n", " ").replace(['\n', '\r'], " ")
}

/// Items separated by a blank line.
fn join_items(items: impl Iterator<Item = String>) -> String {
    items.collect::<Vec<_>>().join("\n")
}

fn json<T: Serialize + ?Sized>(value: &T) -> String {
    match serde_json::to_string_pretty(value) {
        Ok(text) => text,
        // Only strings, options and lists: serializing cannot fail.
        Err(e) => serde_json::json!({ "error": format!("cannot render the answer: {e}") }).to_string(),
    }
}
