//! The input checks every provider makes before any I/O.

use crate::error::{ErrorKind, ProviderError};
use crate::message::{ContentBlock, Message, Role};

/// Check a conversation before any I/O: not empty, the last message from the user (when
/// `need_user_last`), and every tool result answering a tool call of the message before it.
/// The error names the offending message index.
pub fn check_conversation(messages: &[Message], need_user_last: bool) -> Result<(), ProviderError> {
    let Some(last) = messages.last() else {
        return Err(ProviderError::new(
            ErrorKind::InvalidRequest,
            "the conversation is empty",
        ));
    };
    if need_user_last && last.role != Role::User {
        return Err(ProviderError::invalid_message(
            messages.len() - 1,
            "the last message must come from the user",
        ));
    }
    for (index, message) in messages.iter().enumerate() {
        for block in &message.content {
            let ContentBlock::ToolResult { tool_use_id, .. } = block else {
                continue;
            };
            if message.role == Role::Assistant {
                // Provider-executed results live in the assistant message beside their call.
                if !calls_in(message).any(|id| id == tool_use_id) {
                    return Err(ProviderError::invalid_message(
                        index,
                        format!("tool result `{tool_use_id}` has no matching tool call in the same message"),
                    ));
                }
                continue;
            }
            let answered = index
                .checked_sub(1)
                .map(|prev| &messages[prev])
                .is_some_and(|prev| prev.role == Role::Assistant && calls_in(prev).any(|id| id == tool_use_id));
            if !answered {
                return Err(ProviderError::invalid_message(
                    index,
                    format!(
                        "tool result `{tool_use_id}` does not answer a tool call of the previous assistant message"
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn calls_in(message: &Message) -> impl Iterator<Item = &str> {
    message.content.iter().filter_map(|block| match block {
        ContentBlock::ToolUse { id, .. } => Some(id.as_str()),
        _ => None,
    })
}
