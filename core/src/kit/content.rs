//! Events back into content blocks ([`ContentBuilder`]): what a response said, as the message
//! that goes back into the conversation.

use serde_json::Value;

use crate::event::Event;
use crate::message::ContentBlock;
use crate::tool::ExecutedBy;

/// Builds assistant content blocks from events: consecutive deltas of one block are joined,
/// signatures attach to their thinking block (or to the open text block of their index: Gemini
/// signs text parts), complete tool calls become `ToolUse` blocks with their signature,
/// and a `Source` citing a text block joins that block's `citations` (its wire object, so the
/// answer goes back to its API unchanged; a source of a server tool's result block is already
/// inside that block).
#[derive(Debug, Default)]
pub struct ContentBuilder {
    blocks: Vec<ContentBlock>,
    open: Option<(BlockKind, usize)>,
    /// Citations that arrived before any text of their block (Anthropic sends them first).
    pending: Vec<(usize, Value)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    Text,
    Thinking,
}

impl ContentBuilder {
    /// Feed one event.
    pub fn push(&mut self, event: &Event) {
        match event {
            Event::TextDelta { index, text } => {
                if self.open != Some((BlockKind::Text, *index)) {
                    let (early, rest) = std::mem::take(&mut self.pending)
                        .into_iter()
                        .partition(|(at, _)| at == index);
                    self.pending = rest;
                    self.blocks.push(ContentBlock::Text {
                        text: String::new(),
                        citations: early.into_iter().map(|(_, data)| data).collect(),
                        cache_control: None,
                        signature: None,
                    });
                    self.open = Some((BlockKind::Text, *index));
                }
                if let Some(ContentBlock::Text { text: acc, .. }) = self.blocks.last_mut() {
                    acc.push_str(text);
                }
            }
            Event::ReasoningDelta { index, text } => {
                self.open_thinking(*index);
                if let Some(ContentBlock::Thinking { text: acc, .. }) = self.blocks.last_mut() {
                    acc.push_str(text);
                }
            }
            Event::ReasoningSignature { index, signature } if self.open == Some((BlockKind::Text, *index)) => {
                if let Some(ContentBlock::Text { signature: sig, .. }) = self.blocks.last_mut() {
                    *sig = Some(signature.clone());
                }
            }
            Event::ReasoningSignature { index, signature } => {
                self.open_thinking(*index);
                if let Some(ContentBlock::Thinking { signature: sig, .. }) = self.blocks.last_mut() {
                    *sig = Some(signature.clone());
                }
            }
            Event::RedactedReasoning { data, .. } => {
                self.open = None;
                self.blocks.push(ContentBlock::RedactedThinking { data: data.clone() });
            }
            Event::ToolCall {
                id,
                name,
                input,
                executed_by,
                signature,
            } => {
                self.open = None;
                self.blocks.push(ContentBlock::ToolUse {
                    id: id.clone(),
                    name: name.clone(),
                    input: input.clone(),
                    executed_by: *executed_by,
                    signature: signature.clone(),
                });
            }
            Event::ToolResult { id, result, .. } => {
                // Results of provider-executed calls belong to the assistant content; host
                // results go into the next user message (the agent loop does that).
                let provider_call = self.blocks.iter().any(|block| {
                    matches!(block, ContentBlock::ToolUse { id: call, executed_by: ExecutedBy::Provider, .. } if call == id)
                });
                if provider_call {
                    self.open = None;
                    self.blocks.push(ContentBlock::ToolResult {
                        tool_use_id: id.clone(),
                        content: result.content.clone(),
                        is_error: result.is_error(),
                        cache_control: None,
                    });
                }
            }
            Event::Opaque { provider, data, .. } => {
                self.open = None;
                self.blocks.push(ContentBlock::Opaque {
                    provider: provider.clone(),
                    data: data.clone(),
                });
            }
            Event::Source(source) if !source.data.is_null() => {
                let open_text = self.open == Some((BlockKind::Text, source.index));
                match self.blocks.last_mut() {
                    Some(ContentBlock::Text { citations, .. }) if open_text => citations.push(source.data.clone()),
                    _ => self.pending.push((source.index, source.data.clone())),
                }
            }
            Event::StepFinished { .. } => {
                self.open = None;
                self.pending.clear();
            }
            _ => {}
        }
    }

    fn open_thinking(&mut self, index: usize) {
        if self.open != Some((BlockKind::Thinking, index)) {
            self.blocks.push(ContentBlock::Thinking {
                text: String::new(),
                signature: None,
            });
            self.open = Some((BlockKind::Thinking, index));
        }
    }

    /// The text of the blocks built so far, joined.
    pub fn text(&self) -> String {
        self.blocks.iter().filter_map(ContentBlock::as_text).collect()
    }

    /// The blocks built so far, leaving the builder empty.
    pub fn take(&mut self) -> Vec<ContentBlock> {
        self.open = None;
        self.pending.clear();
        std::mem::take(&mut self.blocks)
    }

    /// The blocks.
    pub fn finish(mut self) -> Vec<ContentBlock> {
        self.take()
    }
}
