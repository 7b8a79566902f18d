//! Borrowing typed views of one chat-completions stream payload.
//!
//! Every `data:` payload is parsed once into these structs: strings borrow from the frame when
//! they have no escapes (`Cow::Borrowed`), unknown fields are skipped without being built.
//! Only rare, small parts (error bodies, cost) are kept as `serde_json::Value`.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

/// One `chat.completion.chunk` (or an error payload).
///
/// `S` is [`Str`] for the first chunk, whose `id` and `model` go into `Started`, and
/// [`IgnoredAny`] afterwards, so later chunks skip those strings without validating them.
#[derive(Debug, Deserialize)]
#[allow(clippy::box_collection)] // rare lists stay one pointer wide, as in `Delta`
pub(crate) struct Chunk<'a, S> {
    #[serde(default = "none")]
    pub(crate) id: Option<S>,
    #[serde(default = "none")]
    pub(crate) model: Option<S>,
    #[serde(default, borrow, deserialize_with = "null_as_empty")]
    pub(crate) choices: Vec<Choice<'a>>,
    /// Boxed: rare, and a small struct moves cheaply through the parser's layers.
    #[serde(default)]
    pub(crate) usage: Option<Box<WireUsage>>,
    #[serde(default)]
    pub(crate) x_groq: Option<Box<XGroq>>,
    /// Kept as a value: rare, and some servers send a string instead of an object.
    #[serde(default)]
    pub(crate) error: Option<Box<Value>>,
    /// Venice's cost object (`{"usd": ..., "diem": ...}`), beside `usage`.
    #[serde(default)]
    pub(crate) cost: Option<Box<Value>>,
    /// Perplexity's cited URLs (the whole list, in every chunk).
    #[serde(default)]
    pub(crate) citations: Option<Box<Vec<Value>>>,
    /// Perplexity's search results (the whole list, in every chunk).
    #[serde(default)]
    pub(crate) search_results: Option<Box<Vec<Value>>>,
}

fn none<S>() -> Option<S> {
    None
}

pub(crate) use serde::de::IgnoredAny;

/// A string borrowed from the frame when it has no escapes. (`Option<Cow<str>>` fields never
/// borrow with serde's derive: every one of them would allocate.)
#[derive(Debug)]
pub(crate) struct Str<'a>(pub(crate) Cow<'a, str>);

impl std::ops::Deref for Str<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = Str<'a>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Borrowed(v)))
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v.to_string())))
            }

            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(Visit(std::marker::PhantomData))
    }
}

fn null_as_empty<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(deserializer)?.unwrap_or_default())
}

/// Groq puts usage under `x_groq`.
#[derive(Debug, Deserialize)]
pub(crate) struct XGroq {
    #[serde(default)]
    pub(crate) usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Choice<'a> {
    #[serde(default)]
    pub(crate) index: u32,
    #[serde(default, borrow)]
    pub(crate) delta: Option<Delta<'a>>,
    /// Boxed (rare) to keep `Choice` small: small structs move without `memcpy` calls.
    #[serde(default, borrow)]
    pub(crate) finish_reason: Option<Box<Str<'a>>>,
    /// Token log probabilities, when asked for (`null` otherwise).
    #[serde(default)]
    pub(crate) logprobs: Option<Box<Value>>,
}

/// Rare fields are boxed so that a text delta stays small (at most 128 bytes, moved without a
/// `memcpy` call); that is worth the extra allocation when they are present.
#[derive(Debug, Default, Deserialize)]
#[allow(clippy::box_collection)]
pub(crate) struct Delta<'a> {
    #[serde(default, borrow)]
    pub(crate) content: Option<Content<'a>>,
    #[serde(default, borrow)]
    pub(crate) refusal: Option<Box<Str<'a>>>,
    #[serde(default, borrow)]
    pub(crate) reasoning: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub(crate) reasoning_content: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub(crate) reasoning_details: Option<Box<Vec<ReasoningDetail<'a>>>>,
    #[serde(default, borrow)]
    pub(crate) tool_calls: Option<Box<Vec<ToolCallDelta<'a>>>>,
    /// `url_citation` annotations (OpenAI search models, OpenRouter's web plugin).
    #[serde(default)]
    pub(crate) annotations: Option<Box<Vec<Value>>>,
}

/// One entry of OpenRouter's `reasoning_details`.
#[derive(Debug, Deserialize)]
pub(crate) struct ReasoningDetail<'a> {
    #[serde(rename = "type", borrow)]
    pub(crate) kind: Cow<'a, str>,
    #[serde(default, borrow)]
    pub(crate) text: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub(crate) summary: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub(crate) signature: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub(crate) data: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub(crate) id: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub(crate) format: Option<Str<'a>>,
    #[serde(default)]
    pub(crate) index: Option<u32>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ToolCallDelta<'a> {
    #[serde(default)]
    pub(crate) index: Option<u32>,
    #[serde(default, borrow)]
    pub(crate) id: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub(crate) function: Option<FunctionDelta<'a>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct FunctionDelta<'a> {
    #[serde(default, borrow)]
    pub(crate) name: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub(crate) arguments: Option<Str<'a>>,
}

/// Usage as OpenAI, OpenRouter, DeepSeek and friends report it.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WireUsage {
    #[serde(default, deserialize_with = "patchbay_core::kit::token_count")]
    pub(crate) prompt_tokens: Option<u64>,
    #[serde(default, deserialize_with = "patchbay_core::kit::token_count")]
    pub(crate) completion_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    pub(crate) completion_tokens_details: Option<CompletionDetails>,
    /// DeepSeek's cache split.
    #[serde(default, deserialize_with = "patchbay_core::kit::token_count")]
    pub(crate) prompt_cache_hit_tokens: Option<u64>,
    /// OpenRouter's cost in credits (USD); Perplexity sends an object.
    #[serde(default)]
    pub(crate) cost: Option<Value>,
    /// xAI's cost in ticks of 10^-10 USD.
    #[serde(default, deserialize_with = "patchbay_core::kit::token_count")]
    pub(crate) cost_in_usd_ticks: Option<u64>,
    /// Reasoning tokens outside `completion_tokens_details` (some servers put them here).
    #[serde(default, deserialize_with = "patchbay_core::kit::token_count")]
    pub(crate) reasoning_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct PromptDetails {
    #[serde(default, deserialize_with = "patchbay_core::kit::token_count")]
    pub(crate) cached_tokens: Option<u64>,
    #[serde(default, deserialize_with = "patchbay_core::kit::token_count")]
    pub(crate) cache_write_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct CompletionDetails {
    #[serde(default, deserialize_with = "patchbay_core::kit::token_count")]
    pub(crate) reasoning_tokens: Option<u64>,
}

/// `content`: a string, or (Mistral) an array of parts.
#[derive(Debug)]
pub(crate) enum Content<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<ContentPart<'a>>),
}

/// One part of an array `content`: `{"type": "text", "text"}` or
/// `{"type": "thinking", "thinking": [parts]}`.
#[derive(Debug, Deserialize)]
pub(crate) struct ContentPart<'a> {
    #[serde(rename = "type", borrow)]
    pub(crate) kind: Cow<'a, str>,
    #[serde(default, borrow)]
    pub(crate) text: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub(crate) thinking: Option<Content<'a>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = Content<'a>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or an array of content parts")
            }

            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Borrowed(v)))
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Owned(v.to_string())))
            }

            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Owned(v)))
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut parts = Vec::new();
                while let Some(part) = seq.next_element()? {
                    parts.push(part);
                }
                Ok(Content::Parts(parts))
            }
        }
        deserializer.deserialize_any(Visit(std::marker::PhantomData))
    }
}

impl<'a> Delta<'a> {
    pub(crate) fn reasoning_details(&self) -> &[ReasoningDetail<'a>] {
        self.reasoning_details.as_deref().map_or(&[], Vec::as_slice)
    }

    pub(crate) fn tool_calls(&self) -> &[ToolCallDelta<'a>] {
        self.tool_calls.as_deref().map_or(&[], Vec::as_slice)
    }

    pub(crate) fn annotations(&self) -> &[Value] {
        self.annotations.as_deref().map_or(&[], Vec::as_slice)
    }
}

/// The text of an optional boxed string, if not empty.
pub(crate) fn boxed_text<'s>(value: &'s Option<Box<Str<'_>>>) -> Option<&'s str> {
    value.as_deref().map(|s| &*s.0).filter(|s| !s.is_empty())
}
