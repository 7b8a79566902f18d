//! Resources and prompts of a connected server, and how a host puts them into a conversation:
//! [`resource_blocks`] / [`resource_message`] turn read resource contents into patchbay
//! content, [`prompt_messages`] turns a prompt into patchbay messages.
//!
//! Nothing is cached: every list asks the server, so a `list_changed` notification needs no
//! refresh here ([`McpClient::resources_changed`] says whether one came).

use std::sync::atomic::Ordering;

use patchbay_core::{ContentBlock, ImageSource, Message, Role};
use rmcp::model::{
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, InputRequiredResult, JsonObject, Prompt, PromptMessage,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
};

use crate::call::MAX_INPUT_ROUNDS;
use crate::connection::McpClient;
use crate::interact::fulfil;

impl McpClient {
    /// Every resource the server lists (all pages).
    pub async fn list_resources(&self) -> Result<Vec<Resource>, String> {
        let peer = self.peer("resources/list")?;
        self.shared.resources_changed.store(false, Ordering::SeqCst);
        peer.list_all_resources()
            .await
            .map_err(|e| self.failed("resources/list", e))
    }

    /// Every resource template the server lists (all pages).
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, String> {
        let peer = self.peer("resources/templates/list")?;
        peer.list_all_resource_templates()
            .await
            .map_err(|e| self.failed("resources/templates/list", e))
    }

    /// Read the resource at `uri` (a listed one, or a template filled in). An `input_required`
    /// answer is fulfilled through the set's handlers, as for tool calls.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, String> {
        let peer = self.peer("resources/read")?;
        let mut params = ReadResourceRequestParams::new(uri);
        for _ in 0..MAX_INPUT_ROUNDS {
            match peer.read_resource_once(params.clone()).await {
                Ok(ReadResourceResponse::Complete(result)) => return Ok(result),
                Ok(ReadResourceResponse::InputRequired(asked)) => {
                    let (answers, state) = self.answer(asked).await?;
                    params.input_responses = answers;
                    params.request_state = state;
                }
                Ok(_) => {
                    return Err(format!(
                        "MCP server `{}`: unexpected answer to resources/read",
                        self.name
                    ));
                }
                Err(error) => return Err(self.failed("resources/read", error)),
            }
        }
        Err(format!("MCP server `{}` asked for input too many times", self.name))
    }

    /// Every prompt the server lists (all pages).
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, String> {
        let peer = self.peer("prompts/list")?;
        self.shared.prompts_changed.store(false, Ordering::SeqCst);
        peer.list_all_prompts()
            .await
            .map_err(|e| self.failed("prompts/list", e))
    }

    /// Get the prompt `name` with its `arguments` (strings, as MCP wants them).
    pub async fn get_prompt(&self, name: &str, arguments: JsonObject) -> Result<GetPromptResult, String> {
        let peer = self.peer("prompts/get")?;
        let mut params = GetPromptRequestParams::new(name);
        params.arguments = (!arguments.is_empty()).then_some(arguments);
        for _ in 0..MAX_INPUT_ROUNDS {
            match peer.get_prompt_once(params.clone()).await {
                Ok(GetPromptResponse::Complete(result)) => return Ok(result),
                Ok(GetPromptResponse::InputRequired(asked)) => {
                    let (answers, state) = self.answer(asked).await?;
                    params.input_responses = answers;
                    params.request_state = state;
                }
                Ok(_) => return Err(format!("MCP server `{}`: unexpected answer to prompts/get", self.name)),
                Err(error) => return Err(self.failed("prompts/get", error)),
            }
        }
        Err(format!("MCP server `{}` asked for input too many times", self.name))
    }

    /// Whether the server announced `resources/list_changed` since resources were last listed.
    pub fn resources_changed(&self) -> bool {
        self.shared.resources_changed.load(Ordering::SeqCst)
    }

    /// Whether the server announced `prompts/list_changed` since prompts were last listed.
    pub fn prompts_changed(&self) -> bool {
        self.shared.prompts_changed.load(Ordering::SeqCst)
    }

    async fn answer(
        &self,
        asked: InputRequiredResult,
    ) -> Result<(Option<rmcp::model::InputResponses>, Option<String>), String> {
        let answers = fulfil(
            &self.shared.interact,
            &self.name,
            asked.input_requests.unwrap_or_default(),
        )
        .await
        .map_err(|error| format!("MCP server `{}`: {error}", self.name))?;
        Ok(((!answers.is_empty()).then_some(answers), asked.request_state))
    }

    fn failed(&self, what: &str, error: rmcp::ServiceError) -> String {
        format!("MCP server `{}`: {what} failed: {error}", self.name)
    }
}

/// A read resource's contents as content blocks: text as a text block headed by its URI,
/// an `image/*` blob as an image, any other blob as a text line naming it (the bytes are
/// not sent to the model).
pub fn resource_blocks(result: &ReadResourceResult) -> Vec<ContentBlock> {
    result.contents.iter().map(contents_block).collect()
}

/// A user message carrying a read resource (see [`resource_blocks`]), to attach it to a
/// conversation.
///
/// ```
/// use patchbay_mcp::rmcp::model::{ReadResourceResult, ResourceContents};
/// let read = ReadResourceResult::new(vec![ResourceContents::text("hello", "file:///a.txt")]);
/// let message = patchbay_mcp::resource_message(&read);
/// assert_eq!(message.text(), "Resource file:///a.txt:\nhello");
/// ```
pub fn resource_message(result: &ReadResourceResult) -> Message {
    Message::new(Role::User, resource_blocks(result))
}

fn contents_block(contents: &ResourceContents) -> ContentBlock {
    match contents {
        ResourceContents::TextResourceContents { uri, text, .. } => {
            ContentBlock::text(format!("Resource {uri}:\n{text}"))
        }
        ResourceContents::BlobResourceContents {
            uri, mime_type, blob, ..
        } => match mime_type.as_deref() {
            Some(mime) if mime.starts_with("image/") => ContentBlock::Image {
                media_type: mime.to_owned(),
                source: ImageSource::Base64 { data: blob.clone() },
                cache_control: None,
            },
            mime => ContentBlock::text(format!(
                "Resource {uri}: binary ({}, {} base64 characters, not shown)",
                mime.unwrap_or("unknown type"),
                blob.len()
            )),
        },
        _ => ContentBlock::text("[resource contents patchbay does not know]"),
    }
}

/// A prompt's messages as patchbay messages (consecutive messages keep their roles; an
/// embedded resource becomes content as in [`resource_blocks`], audio a line naming it).
pub fn prompt_messages(result: &GetPromptResult) -> Vec<Message> {
    result.messages.iter().map(prompt_message).collect()
}

fn prompt_message(message: &PromptMessage) -> Message {
    let role = match message.role {
        rmcp::model::Role::User => Role::User,
        rmcp::model::Role::Assistant => Role::Assistant,
    };
    Message::new(role, vec![mcp_block(&message.content)])
}

/// One MCP content block as a patchbay content block.
pub(crate) fn mcp_block(content: &rmcp::model::ContentBlock) -> ContentBlock {
    use rmcp::model::ContentBlock as Mcp;
    match content {
        Mcp::Text(text) => ContentBlock::text(text.text.clone()),
        Mcp::Image(image) => ContentBlock::Image {
            media_type: image.mime_type.clone(),
            source: ImageSource::Base64 {
                data: image.data.clone(),
            },
            cache_control: None,
        },
        Mcp::Audio(audio) => ContentBlock::text(format!("[audio: {}, not shown]", audio.mime_type)),
        Mcp::Resource(embedded) => contents_block(&embedded.resource),
        Mcp::ResourceLink(link) => ContentBlock::text(format!("Resource link: {} ({})", link.uri, link.name)),
        _ => ContentBlock::text("[content patchbay does not know]"),
    }
}
