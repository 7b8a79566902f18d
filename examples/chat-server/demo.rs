//! The offline demo: a scripted model that searches, asks to publish a note (a call that waits
//! for the person's approval), then answers with a cited source; and the two tools it calls.

use std::sync::Arc;

use patchbay::scripted::{Citation, Part, Response, Script, ScriptedProvider, Turn};
use patchbay::summary::{ArtifactRef, DocumentRef};
use patchbay::{
    ContentBlock, EventStream, FnTool, Message, Provider, ProviderError, ProviderInfo, RequestContext, Role, Signal,
    ToolContext, ToolResult, ToolSet, async_trait,
};
use serde::Deserialize;
use serde_json::json;

/// The tool whose calls wait for a person's approval.
pub(crate) const NEEDS_APPROVAL: &str = "publish_note";

#[derive(Deserialize, schemars::JsonSchema)]
struct Search {
    /// What to look for.
    query: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Note {
    /// The note's title.
    title: String,
    /// The note's text.
    body: String,
}

/// `search_docs` (reports the documents it used) and `publish_note` (reports the artifact it
/// created).
pub(crate) fn tools() -> ToolSet {
    let search = FnTool::new(
        "search_docs",
        "Search the team's documents.",
        |input: Search, _cx: ToolContext| async move {
            ToolResult::text(format!(
                "2 documents match `{}`: the Q3 planning notes and the release checklist.",
                input.query
            ))
            .with_documents([
                DocumentRef::new("doc-q3")
                    .with_title("Q3 planning notes")
                    .with_url("https://example.com/docs/q3"),
                DocumentRef::new("doc-release")
                    .with_title("Release checklist")
                    .with_url("https://example.com/docs/release"),
            ])
        },
    );
    let publish = FnTool::new(
        NEEDS_APPROVAL,
        "Publish a note to the team's wiki.",
        |input: Note, _cx: ToolContext| async move {
            ToolResult::text(format!(
                "Published `{}` ({} characters).",
                input.title,
                input.body.len()
            ))
            .with_artifact(
                ArtifactRef::new("note-1")
                    .with_title(input.title)
                    .with_kind("wiki-note"),
            )
        },
    );
    ToolSet::new().with(search).with(publish)
}

/// A scripted model that picks its turn from where the conversation stands, so any number of
/// chats can run at once.
pub(crate) struct DemoModel {
    info: ProviderInfo,
}

impl DemoModel {
    /// The demo model.
    pub(crate) fn new() -> Arc<Self> {
        let info = ScriptedProvider::new(Script::new(vec![])).info().clone();
        Arc::new(Self { info })
    }
}

/// The last tool result of the conversation: its call's tool name and whether it failed.
fn last_result(messages: &[Message]) -> Option<(String, bool)> {
    let last = messages.last().filter(|m| m.role == Role::User)?;
    let (id, is_error) = last.content.iter().find_map(|block| match block {
        ContentBlock::ToolResult {
            tool_use_id, is_error, ..
        } => Some((tool_use_id.clone(), *is_error)),
        _ => None,
    })?;
    let name = messages.iter().flat_map(|m| &m.content).find_map(|block| match block {
        ContentBlock::ToolUse { id: call, name, .. } if *call == id => Some(name.clone()),
        _ => None,
    })?;
    Some((name, is_error))
}

/// The demo model's next turn.
fn next_turn(messages: &[Message]) -> Response {
    let n = messages.len();
    match last_result(messages) {
        None => Response::new(vec![
            Part::text("Let me look through the team's documents."),
            Part::tool_call(
                format!("call_search_{n}"),
                "search_docs",
                json!({ "query": "release plan" }),
            ),
        ])
        .with_usage(212, 31),
        Some((name, _)) if name == "search_docs" => Response::new(vec![
            Part::text("I found the plan. I'd like to publish a short summary note for the team."),
            Part::tool_call(
                format!("call_publish_{n}"),
                NEEDS_APPROVAL,
                json!({ "title": "Release plan summary", "body": "Ship on the 14th after the checklist is green." }),
            ),
        ])
        .with_usage(388, 45),
        Some((_, denied)) => {
            let text = if denied {
                "Understood, I did not publish the note. The release ships on the 14th once the checklist is green."
            } else {
                "Done: the summary note is published. The release ships on the 14th once the checklist is green."
            };
            Response::new(vec![Part::cited(
                text,
                vec![Citation::new(
                    "https://example.com/docs/release",
                    "Release checklist",
                    "Ship once every item is green.",
                )],
            )])
            .with_usage(502, 38)
        }
    }
}

#[async_trait]
impl Provider for DemoModel {
    fn info(&self) -> &ProviderInfo {
        &self.info
    }

    async fn create_response(
        &self,
        messages: &[Message],
        tools: &ToolSet,
        model: &str,
        signal: &Signal,
        context: Option<&RequestContext>,
    ) -> Result<EventStream, ProviderError> {
        let turn = Turn::Respond(next_turn(messages));
        let scripted = ScriptedProvider::new(Script::new(vec![turn]));
        scripted.create_response(messages, tools, model, signal, context).await
    }
}
