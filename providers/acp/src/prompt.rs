//! The `session/prompt` content: the last user turn as ACP content blocks, with what the
//! session cannot know put in front of it as text (the system prompt on a new session, the
//! earlier conversation when the agent cannot load the session), each with a warning.
//!
//! | patchbay | ACP |
//! |---|---|
//! | text | `text` |
//! | image (base64) | `image` (`mimeType`, `data`) when the agent takes images, else dropped with a warning |
//! | image (URL) | `resource_link` (`uri`, `name`, `mimeType`) |
//! | an `Opaque` block from `acp` | sent as it is (a content block the agent sent) |
//! | tool results, thinking, other blocks | not sent (a warning): the agent keeps its own |

use patchbay_core::{ContentBlock, ImageSource, Message, Role, Warning};
use serde_json::{Value, json};

use crate::translate::OPAQUE_PROVIDER;

/// What the prompt is built from.
pub(crate) struct PromptInput<'a> {
    pub(crate) messages: &'a [Message],
    pub(crate) system: Option<&'a str>,
    /// The session is new (the system prompt goes in front).
    pub(crate) new_session: bool,
    /// The earlier messages must be flattened into the prompt (the agent has no record of them).
    pub(crate) flatten_history: bool,
    pub(crate) images: bool,
}

/// The content blocks, and the warnings for what changed.
pub(crate) fn prompt(input: &PromptInput<'_>, warnings: &mut Vec<Warning>) -> Vec<Value> {
    let mut blocks = Vec::new();
    let last_user = input.messages.iter().rposition(|m| m.role == Role::User);
    let mut preamble = String::new();
    if input.new_session
        && let Some(system) = input.system.filter(|s| !s.is_empty())
    {
        preamble.push_str(&format!("<system>\n{system}\n</system>\n\n"));
        warnings.push(Warning::new(
            "system_prompt_as_text",
            "ACP has no system prompt: it was sent as text before the first message",
        ));
    }
    let earlier = &input.messages[..last_user.unwrap_or(0)];
    if input.flatten_history && !earlier.is_empty() {
        preamble.push_str("<conversation_so_far>\n");
        for message in earlier {
            let who = match message.role {
                Role::User => "User",
                Role::Assistant => "Assistant",
            };
            let text = message.text();
            if !text.is_empty() {
                preamble.push_str(&format!("{who}: {text}\n"));
            }
        }
        preamble.push_str("</conversation_so_far>\n\n");
        warnings.push(Warning::new(
            "history_flattened",
            "the agent has no record of this conversation: the earlier messages were sent as text",
        ));
    }
    if !preamble.is_empty() {
        blocks.push(json!({ "type": "text", "text": preamble }));
    }
    let Some(last_user) = last_user else {
        return blocks;
    };
    let mut dropped = false;
    for block in &input.messages[last_user].content {
        match block {
            ContentBlock::Text { text, .. } => blocks.push(json!({ "type": "text", "text": text })),
            ContentBlock::Image { media_type, source, .. } => match source {
                ImageSource::Base64 { data } if input.images => {
                    blocks.push(json!({ "type": "image", "mimeType": media_type, "data": data }));
                }
                ImageSource::Base64 { .. } => {
                    warnings.push(Warning::new(
                        "image_dropped",
                        "the agent does not take images (its promptCapabilities.image is off)",
                    ));
                }
                ImageSource::Url { url } => blocks.push(json!({
                    "type": "resource_link", "uri": url, "name": url, "mimeType": media_type,
                })),
            },
            ContentBlock::Opaque { provider, data } if provider == OPAQUE_PROVIDER => blocks.push(data.clone()),
            _ => dropped = true,
        }
    }
    if dropped {
        warnings.push(Warning::new(
            "dropped_content",
            "tool results, reasoning and other providers' blocks are not sent to an ACP agent",
        ));
    }
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(messages: &[Message]) -> PromptInput<'_> {
        PromptInput {
            messages,
            system: Some("Be brief."),
            new_session: true,
            flatten_history: true,
            images: false,
        }
    }

    #[test]
    fn the_system_prompt_and_history_go_in_front_with_warnings() {
        let messages = [
            Message::user("Hi"),
            Message::assistant("Hello"),
            Message::user("Weather?"),
        ];
        let mut warnings = Vec::new();
        let blocks = prompt(&input(&messages), &mut warnings);
        assert_eq!(blocks.len(), 2);
        let preamble = blocks[0]["text"].as_str().unwrap_or_default();
        assert!(preamble.contains("<system>\nBe brief.\n</system>"), "{preamble}");
        assert!(preamble.contains("User: Hi\nAssistant: Hello\n"), "{preamble}");
        assert_eq!(blocks[1], json!({ "type": "text", "text": "Weather?" }));
        let codes: Vec<_> = warnings.iter().map(|w| w.code.as_str()).collect();
        assert_eq!(codes, ["system_prompt_as_text", "history_flattened"]);
    }

    #[test]
    fn a_loaded_session_gets_the_last_turn_alone() {
        let messages = [
            Message::user("Hi"),
            Message::assistant("Hello"),
            Message::user("Weather?"),
        ];
        let mut warnings = Vec::new();
        let blocks = prompt(
            &PromptInput {
                new_session: false,
                flatten_history: false,
                ..input(&messages)
            },
            &mut warnings,
        );
        assert_eq!(blocks, [json!({ "type": "text", "text": "Weather?" })]);
        assert!(warnings.is_empty());
    }
}
