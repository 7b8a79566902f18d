//! A ready [`SamplingHandler`]: answer a server's `sampling/createMessage` with any patchbay
//! [`Provider`].

// Sampling is deprecated by SEP-2577 in rmcp's model; MCP 2025-11-25 still has it.
#![allow(deprecated)]

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use patchbay_core::{
    ContentBlock, FinishReason, ImageSource, Message, Provider, ProviderResponse, RequestContext, Role, Signal, ToolSet,
};
use rmcp::ErrorData;
use rmcp::model::{CreateMessageRequestParams, CreateMessageResult, SamplingMessage, SamplingMessageContentBlock};
use tracing::Instrument;

use crate::interact::SamplingHandler;

/// The output cap when the server's `maxTokens` is 0.
const FALLBACK_MAX_TOKENS: u32 = 1024;

/// Answers sampling requests with a patchbay provider and model.
///
/// The request's messages become patchbay messages (text and images; audio, tool uses and
/// tool results as a line of text naming them), its `systemPrompt` the system prompt, and
/// `maxTokens`, `temperature` and `stopSequences` the sampling options. No tools are offered.
/// The answer is the response's text, with `endTurn` or `maxTokens` as its
/// stop reason. Model preferences are ignored: the configured model answers.
///
/// ```no_run
/// # fn demo(provider: std::sync::Arc<dyn patchbay_core::Provider>) {
/// use patchbay_mcp::{McpClientSet, ProviderSampling};
/// let set = McpClientSet::new().with_sampling(ProviderSampling::new(provider, "claude-haiku-4-5"));
/// # }
/// ```
#[derive(Clone)]
pub struct ProviderSampling {
    provider: Arc<dyn Provider>,
    model: String,
}

impl fmt::Debug for ProviderSampling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderSampling")
            .field("provider", &self.provider.info().name)
            .field("model", &self.model)
            .finish()
    }
}

impl ProviderSampling {
    /// Answer with `model` on `provider`.
    pub fn new(provider: Arc<dyn Provider>, model: impl Into<String>) -> Self {
        Self {
            provider,
            model: model.into(),
        }
    }
}

#[async_trait]
impl SamplingHandler for ProviderSampling {
    async fn create_message(
        &self,
        server: &str,
        request: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        let messages: Vec<Message> = request.messages.iter().map(to_message).collect();
        let mut context = RequestContext::new();
        context.system = request.system_prompt.clone();
        context.sampling.max_tokens = Some(if request.max_tokens == 0 {
            FALLBACK_MAX_TOKENS
        } else {
            request.max_tokens
        });
        context.sampling.temperature = request.temperature;
        context.sampling.stop_sequences = request.stop_sequences.clone().unwrap_or_default();
        let span = tracing::info_span!("patchbay.mcp.sampling", server = %server, model = %self.model);
        let failed = |error: patchbay_core::ProviderError| {
            ErrorData::internal_error(format!("the sampling model failed: {error}"), None)
        };
        let response = async {
            let stream = self
                .provider
                .create_response(&messages, &ToolSet::new(), &self.model, &Signal::new(), Some(&context))
                .await?;
            ProviderResponse::collect(stream).await
        }
        .instrument(span)
        .await
        .map_err(failed)?;
        let stop = match response.stop_reason {
            Some(FinishReason::Length) => CreateMessageResult::STOP_REASON_END_MAX_TOKEN,
            _ => CreateMessageResult::STOP_REASON_END_TURN,
        };
        let mut result = CreateMessageResult::new(SamplingMessage::assistant_text(response.text()), self.model.clone());
        result.stop_reason = Some(stop.to_owned());
        Ok(result)
    }
}

/// One sampling message as a patchbay message.
pub(crate) fn to_message(message: &SamplingMessage) -> Message {
    let role = match message.role {
        rmcp::model::Role::User => Role::User,
        rmcp::model::Role::Assistant => Role::Assistant,
    };
    let content = message.content.clone().into_vec().iter().map(to_block).collect();
    Message::new(role, content)
}

fn to_block(content: &SamplingMessageContentBlock) -> ContentBlock {
    match content {
        SamplingMessageContentBlock::Text(text) => ContentBlock::text(text.text.clone()),
        SamplingMessageContentBlock::Image(image) => ContentBlock::Image {
            media_type: image.mime_type.clone(),
            source: ImageSource::Base64 {
                data: image.data.clone(),
            },
            cache_control: None,
        },
        SamplingMessageContentBlock::Audio(audio) => {
            ContentBlock::text(format!("[audio: {}, not shown]", audio.mime_type))
        }
        SamplingMessageContentBlock::ToolUse(call) => ContentBlock::text(format!(
            "[tool call {} `{}`: {}]",
            call.id,
            call.name,
            serde_json::Value::Object(call.input.clone())
        )),
        SamplingMessageContentBlock::ToolResult(result) => {
            ContentBlock::text(format!("[tool result for {}]", result.tool_use_id))
        }
        _ => ContentBlock::text("[content patchbay does not know]"),
    }
}
