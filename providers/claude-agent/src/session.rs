//! Which session a call runs in, and what the CLI is sent as the user turn.

use patchbay_core::{ContentBlock, ImageSource, Message, Role, Warning, context::Session, tool::ToolContent};
use serde_json::{Value, json};

use crate::NAME;

/// The session flags of one CLI run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionArgs {
    /// A new session, optionally with a fixed id (`--session-id`).
    New(Option<String>),
    /// `--resume=ID`.
    Resume(String),
    /// `--resume=ID --fork-session`.
    Fork(String),
}

impl SessionArgs {
    /// The command-line flags.
    pub fn args(&self) -> Vec<String> {
        match self {
            Self::New(None) => Vec::new(),
            Self::New(Some(id)) => vec![format!("--session-id={id}")],
            Self::Resume(id) => vec![format!("--resume={id}")],
            Self::Fork(id) => vec![format!("--resume={id}"), "--fork-session".into()],
        }
    }
}

/// The session marker of an assistant message, if it has one: `(session id, messages)`.
pub fn marker(message: &Message) -> Option<(String, usize)> {
    message.content.iter().find_map(|block| match block {
        ContentBlock::Opaque { provider, data }
            if provider == NAME && data.get("type").and_then(Value::as_str) == Some("session") =>
        {
            let id = data.get("session_id").and_then(Value::as_str)?;
            let count = data.get("messages").and_then(Value::as_u64)?;
            Some((id.to_string(), usize::try_from(count).ok()?))
        }
        _ => None,
    })
}

/// Decide the session and the user turn for a call (the rule is in the crate docs):
/// - `Resume` / `Fork` send the user messages after the last assistant message;
/// - no session and one message: a new session;
/// - no session and a history whose last assistant message carries a session marker that
///   matches its position: fork that session (forking never changes it, so replays, retries and
///   branches from an older answer stay correct) and send only the new user messages;
/// - otherwise (a history the CLI never saw): a new session, the history flattened into the
///   first user turn as a transcript, with a `history_flattened` warning.
pub fn plan(messages: &[Message], session: Option<&Session>) -> (SessionArgs, Value, Vec<Warning>) {
    let last_assistant = messages.iter().rposition(|m| m.role == Role::Assistant);
    let tail = &messages[last_assistant.map_or(0, |i| i + 1)..];
    match session {
        Some(Session::Resume { id }) => (SessionArgs::Resume(id.clone()), user_content(tail), Vec::new()),
        Some(Session::Fork { from }) => (SessionArgs::Fork(from.clone()), user_content(tail), Vec::new()),
        Some(Session::New { id }) => {
            let (content, warnings) = fresh(messages);
            (SessionArgs::New(id.clone()), content, warnings)
        }
        None => {
            if let Some(i) = last_assistant
                && let Some((id, count)) = marker(&messages[i])
                && count == i + 1
            {
                return (SessionArgs::Fork(id), user_content(tail), Vec::new());
            }
            let (content, warnings) = fresh(messages);
            (SessionArgs::New(None), content, warnings)
        }
    }
}

fn fresh(messages: &[Message]) -> (Value, Vec<Warning>) {
    if messages.len() <= 1 {
        return (user_content(messages), Vec::new());
    }
    let last_assistant = messages.iter().rposition(|m| m.role == Role::Assistant).unwrap_or(0);
    let (history, tail) = messages.split_at(last_assistant + 1);
    let mut transcript = String::from("The conversation so far:\n\n");
    for message in history {
        let who = if message.role == Role::User {
            "User"
        } else {
            "Assistant"
        };
        transcript.push_str(&format!("{who}: {}\n\n", render_text(message)));
    }
    transcript.push_str("Continue the conversation: answer the user's new message below.");
    let mut content = vec![json!({ "type": "text", "text": transcript })];
    if let Value::Array(blocks) = user_content(tail) {
        content.extend(blocks);
    }
    let warning = Warning::new(
        "history_flattened",
        format!(
            "{} earlier messages were sent as a transcript in a new session (no session to resume)",
            history.len()
        ),
    );
    (Value::Array(content), vec![warning])
}

fn render_text(message: &Message) -> String {
    let mut parts = Vec::new();
    for block in &message.content {
        match block {
            ContentBlock::Text { text, .. } => parts.push(text.clone()),
            ContentBlock::ToolUse { name, input, .. } => parts.push(format!("[called tool {name} with {input}]")),
            ContentBlock::ToolResult { content, is_error, .. } => {
                let text: Vec<String> = content
                    .iter()
                    .map(|c| match c {
                        ToolContent::Text { text } => text.clone(),
                        other => serde_json::to_string(other).unwrap_or_default(),
                    })
                    .collect();
                let label = if *is_error { "tool error" } else { "tool result" };
                parts.push(format!("[{label}: {}]", text.join(" ")));
            }
            ContentBlock::Image { .. } => parts.push("[image]".into()),
            _ => {}
        }
    }
    parts.join(" ")
}

/// The CLI user-turn content of these (user) messages: Anthropic content blocks.
pub fn user_content(messages: &[Message]) -> Value {
    let mut blocks = Vec::new();
    for message in messages {
        for block in &message.content {
            match block {
                ContentBlock::Text { text, .. } => blocks.push(json!({ "type": "text", "text": text })),
                ContentBlock::Image { media_type, source, .. } => blocks.push(match source {
                    ImageSource::Base64 { data } => {
                        json!({ "type": "image", "source": { "type": "base64", "media_type": media_type, "data": data } })
                    }
                    ImageSource::Url { url } => json!({ "type": "image", "source": { "type": "url", "url": url } }),
                }),
                other => {
                    let text = render_text(&Message::new(Role::User, vec![other.clone()]));
                    if !text.is_empty() {
                        blocks.push(json!({ "type": "text", "text": text }));
                    }
                }
            }
        }
    }
    Value::Array(blocks)
}
