//! Borrowing typed views of Anthropic stream events, parsed once per SSE `data:` payload.
//!
//! Every string borrows from the payload when it has no escapes (`Cow::Borrowed`), so a text
//! delta costs one parse and one allocation (the event's `String`). Fields not listed here are
//! skipped by serde; blocks and events patchbay has no typed view for are re-read as raw JSON
//! on the rare path (see [`Translator`](crate::Translator)).

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// An optional string that borrows from the input when it has no escapes. (serde borrows a
/// bare `Cow<str>` field, but an `Option<Cow<str>>` would always allocate.)
fn borrowed<'de, 'a, D>(deserializer: D) -> Result<Option<Cow<'a, str>>, D::Error>
where
    D: Deserializer<'de>,
    'de: 'a,
{
    #[derive(Deserialize)]
    struct Borrowed<'a>(#[serde(borrow)] Cow<'a, str>);
    Ok(Option::<Borrowed<'a>>::deserialize(deserializer)?.map(|b| b.0))
}

/// One stream event (`message_start`, `content_block_delta`, `error`...), as a flat struct: the
/// `type` plus every field any event type carries. Unknown types parse too.
#[derive(Debug, Clone, Default, Deserialize)]
#[non_exhaustive]
pub struct StreamEvent<'a> {
    /// The event type.
    #[serde(rename = "type", borrow)]
    pub kind: Cow<'a, str>,
    /// The content block index (block events).
    #[serde(default)]
    pub index: Option<u32>,
    /// `content_block_delta` and `message_delta` payload.
    #[serde(default, borrow)]
    pub delta: Option<Delta<'a>>,
    /// `content_block_start` payload (boxed: rare, and large).
    #[serde(default, borrow)]
    pub content_block: Option<Box<Block<'a>>>,
    /// `message_start` payload.
    #[serde(default, borrow)]
    pub message: Option<Box<MessageHead<'a>>>,
    /// `message_delta` usage (cumulative).
    #[serde(default)]
    pub usage: Option<Box<WireUsage>>,
    /// `error` payload (the event's `request_id`, when a proxy adds one, is read from the raw
    /// event on this rare path).
    #[serde(default, borrow)]
    pub error: Option<Box<WireError<'a>>>,
}

/// The fields of the hottest event, `content_block_delta`: parsed first, so the common case
/// fills a small struct (the full [`StreamEvent`] is parsed only for the other events).
#[derive(Debug, Clone, Default, Deserialize)]
#[non_exhaustive]
pub struct HotEvent<'a> {
    /// The event type.
    #[serde(rename = "type", borrow)]
    pub kind: Cow<'a, str>,
    /// The content block index.
    #[serde(default)]
    pub index: Option<u32>,
    /// The delta.
    #[serde(default, borrow)]
    pub delta: Option<Delta<'a>>,
}

/// The hottest payload in the layout the Messages API sends it, read without the JSON parser:
/// `{"type":"content_block_delta","index":N,"delta":{"type":"text_delta","text":"..."}}`, with
/// no escape (and no control character) in the text. Gives the index and the text; `None` for
/// anything else, which the parser then reads ([`HotEvent`]), so this accepts only payloads the
/// parser would read the same way (the `anthropic` fuzz target checks it on every frame).
///
/// ```
/// use patchbay_anthropic::wire::text_delta;
/// let payload = r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#;
/// assert_eq!(text_delta(payload), Some((0, "Hi")));
/// assert_eq!(text_delta(&payload.replace("Hi", r"H\ni")), None);
/// ```
pub fn text_delta(payload: &str) -> Option<(u32, &str)> {
    let rest = payload.strip_prefix(r#"{"type":"content_block_delta","index":"#)?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    // JSON has no leading zeros; nine digits always fit a `u32`.
    if digits == 0 || digits > 9 || (digits > 1 && rest.starts_with('0')) {
        return None;
    }
    let index = rest[..digits].parse().ok()?;
    let rest = rest[digits..].strip_prefix(r#","delta":{"type":"text_delta","text":""#)?;
    let end = rest.bytes().position(|b| b == b'"' || b == b'\\' || b < 0x20)?;
    (rest.get(end..) == Some(r#""}}"#)).then_some((index, &rest[..end]))
}

/// A delta: a content block delta (`text_delta`, `input_json_delta`...) or a message delta
/// (`stop_reason`).
///
/// The payload of `text_delta` (`text`), `thinking_delta` (`thinking`), `signature_delta`
/// (`signature`) and `input_json_delta` (`partial_json`) is one field, [`Delta::payload`]: the
/// delta type says which it is, and the struct stays small on the hot path.
#[derive(Debug, Clone, Default, Deserialize)]
#[non_exhaustive]
pub struct Delta<'a> {
    /// The delta type (empty on `message_delta`).
    #[serde(rename = "type", default, borrow)]
    pub kind: Cow<'a, str>,
    /// `text`, `thinking`, `signature` or `partial_json`, whichever the delta carries (empty
    /// when none).
    #[serde(
        rename = "text",
        alias = "thinking",
        alias = "signature",
        alias = "partial_json",
        default,
        borrow
    )]
    pub payload: Cow<'a, str>,
    /// `citations_delta`.
    #[serde(default)]
    pub citation: Option<Box<Value>>,
    /// `message_delta` (boxed: once per message, and it keeps the struct small).
    #[serde(default, borrow)]
    pub stop_reason: Option<Box<Cow<'a, str>>>,
}

/// The head of a content block (`content_block_start`, or a block of a pre-filled message).
#[derive(Debug, Clone, Default, Deserialize)]
#[non_exhaustive]
pub struct Block<'a> {
    /// The block type.
    #[serde(rename = "type", borrow)]
    pub kind: Cow<'a, str>,
    /// Tool call id.
    #[serde(default, borrow, deserialize_with = "borrowed")]
    pub id: Option<Cow<'a, str>>,
    /// Tool name.
    #[serde(default, borrow, deserialize_with = "borrowed")]
    pub name: Option<Cow<'a, str>>,
    /// Initial text.
    #[serde(default, borrow, deserialize_with = "borrowed")]
    pub text: Option<Cow<'a, str>>,
    /// Initial thinking.
    #[serde(default, borrow, deserialize_with = "borrowed")]
    pub thinking: Option<Cow<'a, str>>,
    /// Initial signature.
    #[serde(default, borrow, deserialize_with = "borrowed")]
    pub signature: Option<Cow<'a, str>>,
    /// Redacted thinking data.
    #[serde(default, borrow, deserialize_with = "borrowed")]
    pub data: Option<Cow<'a, str>>,
    /// The call a server tool result answers.
    #[serde(default, borrow, deserialize_with = "borrowed")]
    pub tool_use_id: Option<Cow<'a, str>>,
    /// Initial tool input (usually `{}`; complete for pre-filled blocks).
    #[serde(default)]
    pub input: Option<Value>,
    /// Citations already on a text block.
    #[serde(default)]
    pub citations: Option<Vec<Value>>,
}

/// The head of a `message_start` message.
#[derive(Debug, Clone, Default, Deserialize)]
#[non_exhaustive]
pub struct MessageHead<'a> {
    /// The message id.
    #[serde(default, borrow, deserialize_with = "borrowed")]
    pub id: Option<Cow<'a, str>>,
    /// The model that answers.
    #[serde(default, borrow, deserialize_with = "borrowed")]
    pub model: Option<Cow<'a, str>>,
    /// Usage so far.
    #[serde(default)]
    pub usage: Option<WireUsage>,
    /// Blocks already complete (usually empty).
    #[serde(default)]
    pub content: Vec<Value>,
    /// A stop reason already known (pre-filled messages).
    #[serde(default, borrow, deserialize_with = "borrowed")]
    pub stop_reason: Option<Cow<'a, str>>,
}

/// Token usage as Anthropic reports it.
#[derive(Debug, Clone, Default, Deserialize)]
#[non_exhaustive]
pub struct WireUsage {
    /// Input tokens (cache reads and writes excluded).
    #[serde(default, deserialize_with = "patchbay_core::kit::token_count")]
    pub input_tokens: Option<u64>,
    /// Output tokens.
    #[serde(default, deserialize_with = "patchbay_core::kit::token_count")]
    pub output_tokens: Option<u64>,
    /// Tokens written to the cache.
    #[serde(default, deserialize_with = "patchbay_core::kit::token_count")]
    pub cache_creation_input_tokens: Option<u64>,
    /// Tokens read from the cache.
    #[serde(default, deserialize_with = "patchbay_core::kit::token_count")]
    pub cache_read_input_tokens: Option<u64>,
    /// Server tool use counts (`web_search_requests`...).
    #[serde(default)]
    pub server_tool_use: Option<Value>,
    /// The breakdown of the output tokens (`thinking_tokens`).
    #[serde(default)]
    pub output_tokens_details: Option<OutputTokensDetails>,
}

/// The breakdown of [`WireUsage::output_tokens`].
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[non_exhaustive]
pub struct OutputTokensDetails {
    /// The output tokens spent thinking (included in `output_tokens`).
    #[serde(default, deserialize_with = "patchbay_core::kit::token_count")]
    pub thinking_tokens: Option<u64>,
}

impl WireUsage {
    /// As patchbay usage.
    pub fn to_usage(&self) -> patchbay_core::Usage {
        patchbay_core::Usage {
            input: self.input_tokens,
            output: self.output_tokens,
            cache_read: self.cache_read_input_tokens,
            cache_write: self.cache_creation_input_tokens,
            reasoning: self.output_tokens_details.and_then(|d| d.thinking_tokens),
            ..patchbay_core::Usage::default()
        }
    }
}

/// The `error` object of an error event or an HTTP error body.
#[derive(Debug, Clone, Default, Deserialize)]
#[non_exhaustive]
pub struct WireError<'a> {
    /// The error type (`overloaded_error`...).
    #[serde(rename = "type", default, borrow, deserialize_with = "borrowed")]
    pub kind: Option<Cow<'a, str>>,
    /// The message.
    #[serde(default, borrow, deserialize_with = "borrowed")]
    pub message: Option<Cow<'a, str>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_borrow_unless_escaped() {
        let data = r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}"#;
        let event: StreamEvent<'_> = serde_json::from_str(data).expect("parses");
        let delta = event.delta.expect("a delta");
        assert!(matches!(delta.kind, Cow::Borrowed("text_delta")));
        assert!(matches!(delta.payload, Cow::Borrowed("hi")));
        let escaped = r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\"b"}}"#;
        let event: StreamEvent<'_> = serde_json::from_str(escaped).expect("parses");
        assert_eq!(event.delta.map(|d| d.payload).as_deref(), Some("a\"b"));
        let value: Value = serde_json::from_str(data).expect("parses");
        let event = StreamEvent::deserialize(&value).expect("from a value");
        assert!(matches!(event.delta.map(|d| d.payload), Some(Cow::Borrowed("hi"))));
    }
}
