//! UI messages back into patchbay's conversation ([`ChatRequest::to_messages`]).

use std::collections::HashSet;

use patchbay_core::tool::ToolContent;
use patchbay_core::{ContentBlock, ExecutedBy, ImageSource, Message, Role, ToolResult};
use serde_json::{Map, Value};

use crate::parts::PROVIDER_METADATA_KEY;
use crate::request::{ChatRequest, DEFAULT_DENIAL, DataPart, ToolPart, ToolState, UiMessage, UiPart, UiRole};

impl ChatRequest {
    /// The conversation as patchbay messages; see the crate docs ("The request") for what
    /// each part becomes. System messages are left out (see [`system`](Self::system)).
    pub fn to_messages(&self) -> Vec<Message> {
        to_messages(&self.messages)
    }
}

/// Every message in order, consecutive messages of one role merged, and calls without a
/// result dropped unless they end the conversation (the calls a paused run waits on).
pub(crate) fn to_messages(messages: &[UiMessage]) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::new();
    for message in messages {
        match message.role {
            UiRole::System => {}
            UiRole::User => push(&mut out, Role::User, user_blocks(&message.parts)),
            UiRole::Assistant => {
                for step in message.parts.split(|part| matches!(part, UiPart::StepStart)) {
                    let (said, results) = assistant_step(step);
                    push(&mut out, Role::Assistant, said);
                    push(&mut out, Role::User, results);
                }
            }
        }
    }
    drop_unanswered_calls(&mut out);
    out
}

/// Append `blocks` as a message of `role`, joining the last message when it has that role.
fn push(out: &mut Vec<Message>, role: Role, blocks: Vec<ContentBlock>) {
    if blocks.is_empty() {
        return;
    }
    match out.last_mut() {
        Some(last) if last.role == role => last.content.extend(blocks),
        _ => out.push(Message::new(role, blocks)),
    }
}

fn user_blocks(parts: &[UiPart]) -> Vec<ContentBlock> {
    parts
        .iter()
        .filter_map(|part| match part {
            UiPart::Text { text, .. } if !text.is_empty() => Some(ContentBlock::text(text)),
            UiPart::File { media_type, url, .. } if media_type.starts_with("image/") => Some(image(media_type, url)),
            _ => None,
        })
        .collect()
}

/// An image from a `data:` URL (its base64 bytes) or an address the provider fetches.
fn image(media_type: &str, url: &str) -> ContentBlock {
    let base64 = url
        .strip_prefix("data:")
        .and_then(|rest| rest.split_once(";base64,"))
        .map(|(_, data)| data.to_owned());
    let source = match base64 {
        Some(data) => ImageSource::Base64 { data },
        None => ImageSource::Url { url: url.to_owned() },
    };
    ContentBlock::Image {
        media_type: media_type.to_owned(),
        source,
        cache_control: None,
    }
}

/// One step of an assistant message: what the model said (with provider-run results), and
/// the results of the host's calls (the next user message).
fn assistant_step(parts: &[UiPart]) -> (Vec<ContentBlock>, Vec<ContentBlock>) {
    let mut said = Vec::new();
    let mut results = Vec::new();
    for part in parts {
        match part {
            UiPart::Text {
                text,
                provider_metadata,
            } => {
                let signature = ours(provider_metadata.as_ref(), "signature");
                if !text.is_empty() || signature.is_some() {
                    said.push(ContentBlock::Text {
                        text: text.clone(),
                        citations: Vec::new(),
                        cache_control: None,
                        signature,
                    });
                }
            }
            UiPart::Reasoning {
                text,
                provider_metadata,
            } => {
                let metadata = provider_metadata.as_ref();
                said.push(match ours(metadata, "redactedData") {
                    Some(data) => ContentBlock::RedactedThinking { data },
                    None => ContentBlock::Thinking {
                        text: text.clone(),
                        signature: ours(metadata, "signature"),
                    },
                });
            }
            UiPart::Tool(tool) => {
                let provider = tool.provider_executed == Some(true);
                said.push(tool_use(tool, provider));
                if let Some(result) = tool_result(tool) {
                    if provider {
                        said.push(result)
                    } else {
                        results.push(result)
                    }
                }
            }
            UiPart::Data(DataPart { name, data, .. }) if name == "opaque" => {
                if let Some(block) = opaque(data) {
                    said.push(block);
                }
            }
            _ => {}
        }
    }
    (said, results)
}

fn tool_use(tool: &ToolPart, provider: bool) -> ContentBlock {
    let input = match &tool.input {
        Some(Value::Null) | None => Value::Object(Map::new()),
        Some(input) => input.clone(),
    };
    ContentBlock::ToolUse {
        id: tool.tool_call_id.clone(),
        name: tool.tool_name.clone(),
        input,
        executed_by: if provider {
            ExecutedBy::Provider
        } else {
            ExecutedBy::Host
        },
        signature: ours(tool.call_provider_metadata.as_ref(), "signature"),
    }
}

/// The result block of a call that ended (output, error or denial); `None` while it waits.
fn tool_result(tool: &ToolPart) -> Option<ContentBlock> {
    let (content, is_error) = match tool.state {
        ToolState::OutputAvailable => output_content(tool.output.as_ref().unwrap_or(&Value::Null)),
        ToolState::OutputError => {
            let text = tool.error_text.clone().unwrap_or_default();
            (vec![ToolContent::text(text)], true)
        }
        ToolState::OutputDenied => {
            let reason = tool.approval.as_ref().and_then(|approval| approval.reason.clone());
            (
                vec![ToolContent::text(reason.unwrap_or_else(|| DEFAULT_DENIAL.to_owned()))],
                true,
            )
        }
        _ => return None,
    };
    Some(ContentBlock::ToolResult {
        tool_use_id: tool.tool_call_id.clone(),
        content,
        is_error,
        cache_control: None,
    })
}

/// An output this crate wrote is a whole `ToolResult`; a client tool's output is a string
/// (text) or any other JSON (a `Json` piece).
fn output_content(output: &Value) -> (Vec<ToolContent>, bool) {
    if let Ok(result) = serde_json::from_value::<ToolResult>(output.clone()) {
        let is_error = result.is_error();
        return (result.content, is_error);
    }
    match output {
        Value::String(text) => (vec![ToolContent::text(text)], false),
        value => (vec![ToolContent::Json { value: value.clone() }], false),
    }
}

/// A `data-opaque` part (`{index, provider, data}`) as the block it came from.
fn opaque(data: &Value) -> Option<ContentBlock> {
    let provider = data.get("provider")?.as_str()?.to_owned();
    let data = data.get("data")?.clone();
    Some(ContentBlock::Opaque { provider, data })
}

/// A string this crate wrote under `providerMetadata.patchbay.{key}`.
fn ours(metadata: Option<&Value>, key: &str) -> Option<String> {
    metadata?
        .get(PROVIDER_METADATA_KEY)?
        .get(key)?
        .as_str()
        .map(str::to_owned)
}

/// Remove the calls that have no result, but those of the last message (a paused run's
/// calls); a message left empty goes too.
fn drop_unanswered_calls(messages: &mut Vec<Message>) {
    let answered: HashSet<String> = messages
        .iter()
        .flat_map(|message| &message.content)
        .filter_map(|block| match block {
            ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.clone()),
            _ => None,
        })
        .collect();
    let last = messages.len().saturating_sub(1);
    for message in &mut messages[..last] {
        message
            .content
            .retain(|block| !matches!(block, ContentBlock::ToolUse { id, .. } if !answered.contains(id)));
    }
    // What is left, with the messages that now meet joined.
    for message in std::mem::take(messages) {
        push(messages, message.role, message.content);
    }
}
