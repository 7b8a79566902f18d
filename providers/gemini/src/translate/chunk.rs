//! Typed views of one streamed `GenerateContentResponse` (the JSON of a `data:` line). Text is
//! borrowed where it has no escapes; what patchbay keeps verbatim (grounding, ratings, parts it
//! has no event for) stays a `Value`, boxed: a text chunk, the common one, then builds and moves
//! small structs (a `Part` of 120 bytes, not 376).

use std::borrow::Cow;

use patchbay_core::kit::token_count;
use serde::Deserialize;
use serde_json::Value;

/// One chunk of the stream.
#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Chunk<'a> {
    #[serde(default, borrow)]
    pub(crate) candidates: Vec<Candidate<'a>>,
    pub(crate) prompt_feedback: Option<Box<Value>>,
    pub(crate) usage_metadata: Option<UsageMetadata>,
    #[serde(borrow)]
    pub(crate) model_version: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(crate) response_id: Option<Cow<'a, str>>,
    /// An error after the stream started (`{"error": {"code", "message", "status"}}`).
    pub(crate) error: Option<Box<Value>>,
}

/// One candidate (patchbay asks for one; others are not translated).
#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Candidate<'a> {
    #[serde(borrow)]
    pub(crate) content: Option<Content<'a>>,
    #[serde(borrow)]
    pub(crate) finish_reason: Option<Cow<'a, str>>,
    pub(crate) finish_message: Option<String>,
    pub(crate) safety_ratings: Option<Box<Value>>,
    pub(crate) citation_metadata: Option<Box<Value>>,
    pub(crate) grounding_metadata: Option<Box<Value>>,
    pub(crate) url_context_metadata: Option<Box<Value>>,
    #[serde(default)]
    pub(crate) index: u32,
}

/// A candidate's content.
#[derive(Debug, Default, PartialEq, Deserialize)]
pub(crate) struct Content<'a> {
    #[serde(default, borrow)]
    pub(crate) parts: Vec<Part<'a>>,
}

/// One part: exactly one of its data fields is set, plus the thought flag and signature.
#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Part<'a> {
    #[serde(borrow)]
    pub(crate) text: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(crate) thought: bool,
    #[serde(borrow)]
    pub(crate) thought_signature: Option<Cow<'a, str>>,
    pub(crate) function_call: Option<Box<FunctionCall>>,
    pub(crate) executable_code: Option<Box<Value>>,
    pub(crate) code_execution_result: Option<Box<CodeExecutionResult>>,
    pub(crate) inline_data: Option<Box<Value>>,
    pub(crate) file_data: Option<Box<Value>>,
    pub(crate) function_response: Option<Box<Value>>,
    pub(crate) video_metadata: Option<Box<Value>>,
    pub(crate) part_metadata: Option<Box<Value>>,
}

/// A function call: whole, or (Vertex AI's `streamFunctionCallArguments`) a start with
/// `willContinue`, pieces of its arguments by JSON path, and an empty closer.
#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FunctionCall {
    pub(crate) id: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) args: Option<Value>,
    #[serde(default)]
    pub(crate) will_continue: bool,
    #[serde(default)]
    pub(crate) partial_args: Vec<PartialArg>,
}

/// One piece of a streamed argument: the value at a JSON path (`$.recipe.steps[4]`), a string
/// arriving in pieces until one without `willContinue`.
#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PartialArg {
    pub(crate) json_path: String,
    pub(crate) string_value: Option<String>,
    pub(crate) number_value: Option<serde_json::Number>,
    pub(crate) bool_value: Option<bool>,
    pub(crate) null_value: Option<Value>,
}

/// The result of code the model ran.
#[derive(Debug, PartialEq, Deserialize)]
pub(crate) struct CodeExecutionResult {
    pub(crate) outcome: Option<String>,
    pub(crate) output: Option<String>,
}

/// Token counts, cumulative within a response (they can also go down between chunks), each
/// read leniently: a broken count costs its value, never the stream.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UsageMetadata {
    #[serde(default, deserialize_with = "token_count")]
    pub(crate) prompt_token_count: Option<u64>,
    #[serde(default, deserialize_with = "token_count")]
    pub(crate) candidates_token_count: Option<u64>,
    #[serde(default, deserialize_with = "token_count")]
    pub(crate) thoughts_token_count: Option<u64>,
    #[serde(default, deserialize_with = "token_count")]
    pub(crate) cached_content_token_count: Option<u64>,
    #[serde(default, deserialize_with = "token_count")]
    pub(crate) tool_use_prompt_token_count: Option<u64>,
}

impl UsageMetadata {
    /// As patchbay's usage: `input` without the cached tokens (reported as `cache_read`) but
    /// with the tool-use prompt (search results the model read), `output` with the thoughts.
    pub(crate) fn usage(&self) -> patchbay_core::Usage {
        let cached = self.cached_content_token_count;
        let input = self.prompt_token_count.map(|prompt| {
            prompt
                .saturating_sub(cached.unwrap_or(0))
                .saturating_add(self.tool_use_prompt_token_count.unwrap_or(0))
        });
        let output = match (self.candidates_token_count, self.thoughts_token_count) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
        };
        patchbay_core::Usage {
            input,
            output,
            cache_read: cached,
            reasoning: self.thoughts_token_count,
            ..Default::default()
        }
    }
}
