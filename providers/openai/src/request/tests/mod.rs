#![allow(clippy::unwrap_used)]
//! The request body: helpers shared by the tests, which are grouped by what they map.

use async_trait::async_trait;
use patchbay_core::tool::ToolContent;
use patchbay_core::{
    ContentBlock, ExecutedBy, ImageSource, Message, ProviderError, RequestContext, Role, Tool, ToolContext, ToolResult,
    ToolSet, ToolSpec, Warning,
};
use serde_json::{Value, json};

use super::{Built, build};
use crate::NAME;

// The conversation; tools and strict mode; options and the rest of the body.
mod input;
mod options;
mod strict;
mod tools;

/// The model most tests use: a reasoning model.
const MODEL: &str = "gpt-5-mini";

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

/// A tool whose schema qualifies for strict mode.
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

fn try_build(
    messages: &[Message],
    tools: &ToolSet,
    model: &str,
    context: Option<&RequestContext>,
) -> Result<Built, ProviderError> {
    build(messages, tools, model, context)
}

fn built(messages: &[Message], context: Option<&RequestContext>) -> Built {
    try_build(messages, &ToolSet::new(), MODEL, context).unwrap_or_else(|e| panic!("{e}"))
}

fn built_for(model: &str, context: &RequestContext) -> Built {
    try_build(&[Message::user("Hi")], &ToolSet::new(), model, Some(context)).unwrap_or_else(|e| panic!("{e}"))
}

fn with_options(options: Value) -> RequestContext {
    RequestContext::new().with_provider_options(NAME, options)
}

fn refused(options: Value) -> ProviderError {
    match try_build(
        &[Message::user("hi")],
        &ToolSet::new(),
        MODEL,
        Some(&with_options(options)),
    ) {
        Ok(_) => panic!("accepted"),
        Err(error) => error,
    }
}

fn codes(warnings: &[Warning]) -> Vec<&str> {
    warnings.iter().map(|w| w.code.as_str()).collect()
}

fn input(built: &Built) -> Vec<Value> {
    built.body["input"].as_array().cloned().unwrap_or_default()
}

fn text(text: &str) -> ContentBlock {
    ContentBlock::text(text)
}

fn thinking(text: &str, signature: Option<&str>) -> ContentBlock {
    ContentBlock::Thinking {
        text: text.into(),
        signature: signature.map(str::to_string),
    }
}

fn call(id: &str, name: &str, input: Value) -> ContentBlock {
    ContentBlock::tool_use(id, name, input)
}

fn provider_call(id: &str, name: &str, input: Value) -> ContentBlock {
    ContentBlock::ToolUse {
        id: id.into(),
        name: name.into(),
        input,
        executed_by: ExecutedBy::Provider,
        signature: None,
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

fn image(media_type: &str, source: ImageSource) -> ContentBlock {
    ContentBlock::Image {
        media_type: media_type.into(),
        source,
        cache_control: None,
    }
}

fn base64(data: &str) -> ImageSource {
    ImageSource::Base64 { data: data.into() }
}

fn url(url: &str) -> ImageSource {
    ImageSource::Url { url: url.into() }
}

fn opaque(provider: &str, data: Value) -> ContentBlock {
    ContentBlock::Opaque {
        provider: provider.into(),
        data,
    }
}

fn message(role: Role, content: Vec<ContentBlock>) -> Message {
    Message::new(role, content)
}

/// An encrypted reasoning item's content as OpenAI sends them: 2,000 characters of base64
/// (with `+`, `/`, `-`, `_`) ending in `=`.
fn signature() -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_";
    let mut state: u32 = 0x9e37_79b9;
    let mut out = String::from("gAAAAABo");
    while out.len() < 1999 {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        out.push(char::from(ALPHABET[(state >> 24) as usize % ALPHABET.len()]));
    }
    out.push('=');
    out
}
