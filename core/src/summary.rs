//! The run summary: what a run's tools reported along the way, gathered from their results'
//! `metadata` (never from markers in their text), with tool counts, usage and cost totals.
//!
//! A tool reports the documents it used and the artifacts it created in
//! [`ToolResult::metadata`](crate::ToolResult), under two keys:
//!
//! ```json
//! { "documents": [{"id": "d1", "title": "Q3 report", "url": "https://..."}, "d2"],
//!   "artifacts": [{"id": "a1", "title": "Summary table", "kind": "table"}] }
//! ```
//!
//! (a bare string is a document or artifact with only an id; `artifact` with one object is
//! read too). [`ToolResult::with_documents`] and [`ToolResult::with_artifact`] write them. The
//! metadata reaches the `ToolResult` event unchanged on every provider (host tools over MCP
//! included), so [`RunSummary::observe`] on the run's events is all a host needs for its
//! "message complete" event: documents used (deduplicated by id, in order of first use),
//! artifacts, per-tool counts, sources the model cited, usage and cost.
//!
//! ```
//! use patchbay_core::summary::{DocumentRef, RunSummary};
//! use patchbay_core::{Event, ToolResult};
//! let result = ToolResult::text("found it").with_documents([DocumentRef::new("d1").with_title("Q3")]);
//! let mut summary = RunSummary::default();
//! summary.observe(&Event::ToolResult { id: "c1".into(), name: "search".into(), result });
//! assert_eq!(summary.documents[0].id, "d1");
//! assert_eq!(summary.tools["search"].completed, 1);
//! ```

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::event::{Event, FinishReason, Usage};
use crate::source::Source;
use crate::tool::{ToolResult, ToolStatus};

/// A document a tool used (a search hit, a file it read).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentRef {
    /// The document's id in the host's terms; documents are deduplicated by it.
    pub id: String,
    /// Its title, for a source chip.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Where it lives, when it has an address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Anything else the tool said about it, kept as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl DocumentRef {
    /// A document with only an id.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            title: None,
            url: None,
            extra: Map::new(),
        }
    }

    /// The same document with a title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// The same document with a URL.
    pub fn with_url(mut self, url: impl Into<String>) -> Self {
        self.url = Some(url.into());
        self
    }
}

/// Something a tool created for the person (a file, a table, a chart).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArtifactRef {
    /// The artifact's id in the host's terms.
    pub id: String,
    /// Its title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What kind of thing it is (`file`, `table`...), in the host's terms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Anything else the tool said about it, kept as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ArtifactRef {
    /// An artifact with only an id.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            title: None,
            kind: None,
            extra: Map::new(),
        }
    }

    /// The same artifact with a title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// The same artifact with a kind.
    pub fn with_kind(mut self, kind: impl Into<String>) -> Self {
        self.kind = Some(kind.into());
        self
    }
}

impl ToolResult {
    /// Report documents this call used (appended to `metadata.documents`).
    pub fn with_documents(mut self, documents: impl IntoIterator<Item = DocumentRef>) -> Self {
        let items = documents.into_iter().filter_map(|d| serde_json::to_value(d).ok());
        push_reported(&mut self, "documents", items);
        self
    }

    /// Report an artifact this call created (appended to `metadata.artifacts`).
    pub fn with_artifact(mut self, artifact: ArtifactRef) -> Self {
        push_reported(&mut self, "artifacts", serde_json::to_value(artifact).ok());
        self
    }

    /// The documents this result reports (see the [module docs](self)).
    pub fn documents(&self) -> Vec<DocumentRef> {
        self.reported("documents", None)
    }

    /// The artifacts this result reports (see the [module docs](self)).
    pub fn artifacts(&self) -> Vec<ArtifactRef> {
        self.reported("artifacts", Some("artifact"))
    }

    fn reported<T: serde::de::DeserializeOwned>(&self, key: &str, single: Option<&str>) -> Vec<T> {
        let Some(metadata) = self.metadata.as_ref() else {
            return Vec::new();
        };
        let many = metadata.get(key).and_then(Value::as_array).into_iter().flatten();
        let one = single.and_then(|k| metadata.get(k)).into_iter();
        many.chain(one)
            .filter_map(|item| match item {
                Value::String(id) => serde_json::from_value(serde_json::json!({ "id": id })).ok(),
                Value::Object(_) => serde_json::from_value(item.clone()).ok(),
                _ => None,
            })
            .collect()
    }
}

/// Append `items` to the array under `key` of the result's metadata object (made if missing;
/// a tool's own non-object metadata is kept under `value`).
fn push_reported(result: &mut ToolResult, key: &str, items: impl IntoIterator<Item = Value>) {
    let mut map = match result.metadata.take() {
        Some(Value::Object(map)) => map,
        None | Some(Value::Null) => Map::new(),
        Some(other) => Map::from_iter([("value".to_string(), other)]),
    };
    let mut list = match map.remove(key) {
        Some(Value::Array(list)) => list,
        None | Some(Value::Null) => Vec::new(),
        Some(other) => vec![other],
    };
    list.extend(items);
    map.insert(key.to_string(), Value::Array(list));
    result.metadata = Some(Value::Object(map));
}

/// How the calls of one tool ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCounts {
    /// Calls made (`ToolCall` events).
    pub calls: u32,
    /// Results with status `Completed`.
    pub completed: u32,
    /// Results with status `Failed`.
    pub failed: u32,
    /// Results with status `Denied`.
    pub denied: u32,
    /// Results with status `Aborted`.
    pub aborted: u32,
}

/// What a run's tools reported, with counts and totals; see the [module docs](self).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// Documents the tools used, deduplicated by id, in order of first use.
    pub documents: Vec<DocumentRef>,
    /// Artifacts the tools created, in order.
    pub artifacts: Vec<ArtifactRef>,
    /// Per tool name: calls and how they ended.
    pub tools: BTreeMap<String, ToolCounts>,
    /// Sources the model cited (web pages, documents), as the events carried them.
    pub sources: Vec<Source>,
    /// Usage and cost so far (the run's total once `Finish` was seen).
    pub usage: Usage,
    /// Model calls (steps) that ended.
    pub steps: u32,
    /// Why the run ended, once it did.
    pub finish: Option<FinishReason>,
    /// Calls the run paused for (`ApprovalRequested`), by id.
    pub awaiting_approval: Vec<String>,
    #[serde(skip)]
    seen_documents: HashSet<String>,
}

impl RunSummary {
    /// A summary of these events.
    pub fn of<'a>(events: impl IntoIterator<Item = &'a Event>) -> Self {
        let mut summary = Self::default();
        for event in events {
            summary.observe(event);
        }
        summary
    }

    /// Fold one event in.
    pub fn observe(&mut self, event: &Event) {
        match event {
            Event::ToolCall { name, .. } => self.tools.entry(name.clone()).or_default().calls += 1,
            Event::ToolResult { name, result, .. } => {
                let counts = self.tools.entry(name.clone()).or_default();
                match result.status {
                    ToolStatus::Completed => counts.completed += 1,
                    ToolStatus::Failed => counts.failed += 1,
                    ToolStatus::Denied => counts.denied += 1,
                    ToolStatus::Aborted => counts.aborted += 1,
                }
                for document in result.documents() {
                    if self.seen_documents.insert(document.id.clone()) {
                        self.documents.push(document);
                    }
                }
                self.artifacts.extend(result.artifacts());
            }
            Event::Source(source) => self.sources.push(source.clone()),
            Event::Usage(usage) => self.usage = *usage,
            Event::StepFinished { .. } => self.steps += 1,
            Event::ApprovalRequested { calls } => {
                self.awaiting_approval
                    .extend(calls.iter().map(|call| call.tool_use_id.clone()));
            }
            Event::Finish { reason, usage, .. } => {
                self.usage = *usage;
                self.steps += 1;
                self.finish = Some(reason.clone());
            }
            _ => {}
        }
    }
}
