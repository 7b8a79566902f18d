#![allow(clippy::unwrap_used)]

use super::*;
use std::collections::BTreeMap;

use patchbay_core::{ContentBlock, ExecutedBy, ImageSource, Role, ToolSpec, context::ToolChoice, tool::ToolContent};

use crate::NAME;
use async_trait::async_trait;
use patchbay_core::context::{McpServerConfig, McpTransport, Sampling};
use patchbay_core::{CacheControl, ErrorKind, OutputSchema, Tool, ToolContext, ToolResult};

struct Stub(ToolSpec);

#[async_trait]
impl Tool for Stub {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    async fn execute(&self, _input: Value, _cx: &ToolContext) -> ToolResult {
        ToolResult::text("")
    }
}

fn toolset(specs: Vec<ToolSpec>) -> ToolSet {
    specs.into_iter().fold(ToolSet::new(), |set, spec| set.with(Stub(spec)))
}

fn weather() -> ToolSpec {
    ToolSpec::new(
        "get_weather",
        "The weather in a city.",
        json!({
            "type": "object",
            "properties": { "city": { "type": "string" } },
            "required": ["city"],
            "additionalProperties": false,
        }),
    )
}

fn try_build(messages: &[Message], tools: &ToolSet, context: Option<&RequestContext>) -> Result<Built, ProviderError> {
    build(messages, tools, "gemini-2.5-flash", context, Backend::GeminiApi)
}

fn built(messages: &[Message], context: Option<&RequestContext>) -> Built {
    try_build(messages, &ToolSet::new(), context).unwrap_or_else(|e| panic!("{e}"))
}

fn with_options(options: Value) -> RequestContext {
    RequestContext::new().with_provider_options(NAME, options)
}

fn refused(options: Value) -> ProviderError {
    match try_build(&[Message::user("hi")], &ToolSet::new(), Some(&with_options(options))) {
        Ok(_) => panic!("accepted"),
        Err(error) => error,
    }
}

fn codes(warnings: &[Warning]) -> Vec<&str> {
    warnings.iter().map(|w| w.code.as_str()).collect()
}

fn text(text: &str, signature: Option<&str>) -> ContentBlock {
    ContentBlock::Text {
        text: text.into(),
        citations: Vec::new(),
        cache_control: None,
        signature: signature.map(str::to_string),
    }
}

fn call(id: &str, name: &str, input: Value, signature: Option<&str>) -> ContentBlock {
    ContentBlock::ToolUse {
        id: id.into(),
        name: name.into(),
        input,
        executed_by: ExecutedBy::Host,
        signature: signature.map(str::to_string),
    }
}

fn provider_call(id: &str, name: &str, input: Value, signature: Option<&str>) -> ContentBlock {
    ContentBlock::ToolUse {
        id: id.into(),
        name: name.into(),
        input,
        executed_by: ExecutedBy::Provider,
        signature: signature.map(str::to_string),
    }
}

fn result(id: &str, content: Vec<ToolContent>, is_error: bool) -> ContentBlock {
    ContentBlock::ToolResult {
        tool_use_id: id.into(),
        content,
        is_error,
        cache_control: None,
    }
}

fn message(role: Role, content: Vec<ContentBlock>) -> Message {
    Message::new(role, content)
}

/// A signature as Gemini sends one: base64 of opaque bytes.
const SIG: &str = "CiQBcsjafB2xg8n+/tVKQ4bZSTZ9kS1h9RQ7H1W0pkuKxg0v0kEKXAFyyNp8Jp1tY0=";

// The tests by what they map: the conversation, and everything around it.
mod contents;
mod options;
