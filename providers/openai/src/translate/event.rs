//! Serde views of the stream's events: one struct for every `type`, each field optional, text
//! borrowed from the payload where it has no escapes. Items, parts and annotations stay JSON
//! values (they are read once per item, not per token).

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// One stream event (`{"type": "response.output_text.delta", ...}`). Fields the translator
/// does not read are skipped by serde; `FIELDS.md` says what each one is.
#[derive(Debug, PartialEq, Deserialize)]
pub(crate) struct StreamEvent<'a> {
    /// The event's name.
    #[serde(rename = "type", borrow)]
    pub(crate) kind: Cow<'a, str>,
    /// The server's order (left out by some servers).
    #[serde(default)]
    pub(crate) sequence_number: Option<u64>,
    /// The text of a delta event.
    #[serde(default, borrow, deserialize_with = "text")]
    pub(crate) delta: Option<Cow<'a, str>>,
    /// The item an event belongs to.
    #[serde(default)]
    pub(crate) output_index: Option<usize>,
    /// The content part of a message (or reasoning item) an event belongs to.
    #[serde(default)]
    pub(crate) content_index: Option<usize>,
    /// The summary part of a reasoning item an event belongs to.
    #[serde(default)]
    pub(crate) summary_index: Option<usize>,
    /// The whole text of a `*.done` event.
    #[serde(default, borrow, deserialize_with = "text")]
    pub(crate) text: Option<Cow<'a, str>>,
    /// The whole refusal of `response.refusal.done`.
    #[serde(default, borrow, deserialize_with = "text")]
    pub(crate) refusal: Option<Cow<'a, str>>,
    /// The whole arguments of `response.function_call_arguments.done`.
    #[serde(default, borrow, deserialize_with = "text")]
    pub(crate) arguments: Option<Cow<'a, str>>,
    /// The item of `response.output_item.added` / `.done`.
    #[serde(default)]
    pub(crate) item: Option<Box<Value>>,
    /// The annotation of `response.output_text.annotation.added`.
    #[serde(default)]
    pub(crate) annotation: Option<Box<Value>>,
    /// The response of `response.created`, `.in_progress`, `.completed`, `.incomplete`,
    /// `.failed`, `.queued`.
    #[serde(default)]
    pub(crate) response: Option<Box<Response>>,
    /// An `error` event's code (flat form).
    #[serde(default)]
    pub(crate) code: Option<Value>,
    /// An `error` event's message (flat form).
    #[serde(default, borrow, deserialize_with = "text")]
    pub(crate) message: Option<Cow<'a, str>>,
    /// An `error` event's nested object (some servers nest it).
    #[serde(default)]
    pub(crate) error: Option<Box<Value>>,
}

impl StreamEvent<'_> {
    /// An event with no fields (the fast read fills it in).
    pub(crate) fn empty() -> Self {
        Self {
            kind: Cow::Borrowed(""),
            sequence_number: None,
            delta: None,
            output_index: None,
            content_index: None,
            summary_index: None,
            text: None,
            refusal: None,
            arguments: None,
            item: None,
            annotation: None,
            response: None,
            code: None,
            message: None,
            error: None,
        }
    }
}

/// A text field that some event types fill with something else (`response.shell_call_output_content.delta`
/// is an object): a string is read, borrowed when it has no escapes; anything else is skipped
/// as `None` (the event's finished item carries it).
fn text<'de: 'a, 'a, D>(deserializer: D) -> Result<Option<Cow<'a, str>>, D::Error>
where
    D: Deserializer<'de>,
{
    struct Text;
    impl<'de> Visitor<'de> for Text {
        type Value = Option<Cow<'de, str>>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any JSON value")
        }

        fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Borrowed(text)))
        }

        fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(text.to_owned())))
        }

        fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(text)))
        }

        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(None)
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(None)
        }
    }
    deserializer.deserialize_any(Text)
}

/// The response object of the lifecycle events. Its `output` (every item again, on the
/// terminal event) is not read from a stream: each item came in its own `output_item.done`, and
/// skipping it spares parsing the whole answer a second time. A JSON answer's items are taken
/// from the object itself (`whole_body`).
#[derive(Debug, Default, PartialEq, Deserialize)]
pub(crate) struct Response {
    /// `resp_...`.
    #[serde(default)]
    pub(crate) id: Option<String>,
    /// The model that answers (a dated version of the one asked for).
    #[serde(default)]
    pub(crate) model: Option<String>,
    /// `completed`, `incomplete`, `failed`, `in_progress`, `queued`, `cancelled`.
    #[serde(default)]
    pub(crate) status: Option<String>,
    /// Why an incomplete response stopped (`{"reason": "max_output_tokens"}`).
    #[serde(default)]
    pub(crate) incomplete_details: Option<Value>,
    /// A failed response's error object.
    #[serde(default)]
    pub(crate) error: Option<Value>,
    /// The token counts (on the terminal event).
    #[serde(default)]
    pub(crate) usage: Option<WireUsage>,
}

/// `usage` of the terminal event.
#[derive(Debug, Default, PartialEq, Deserialize)]
pub(crate) struct WireUsage {
    #[serde(default, deserialize_with = "patchbay_core::kit::token_count")]
    pub(crate) input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "patchbay_core::kit::token_count")]
    pub(crate) output_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) input_tokens_details: Option<InputDetails>,
    #[serde(default)]
    pub(crate) output_tokens_details: Option<OutputDetails>,
}

/// `usage.input_tokens_details`.
#[derive(Debug, Default, PartialEq, Deserialize)]
pub(crate) struct InputDetails {
    #[serde(default, deserialize_with = "patchbay_core::kit::token_count")]
    pub(crate) cached_tokens: Option<u64>,
}

/// `usage.output_tokens_details`.
#[derive(Debug, Default, PartialEq, Deserialize)]
pub(crate) struct OutputDetails {
    #[serde(default, deserialize_with = "patchbay_core::kit::token_count")]
    pub(crate) reasoning_tokens: Option<u64>,
}

impl WireUsage {
    /// As patchbay's usage: `input` leaves out the cached tokens (`cache_read`), `output`
    /// counts reasoning (`reasoning` says how much).
    pub(crate) fn usage(&self) -> patchbay_core::Usage {
        let cached = self.input_tokens_details.as_ref().and_then(|d| d.cached_tokens);
        patchbay_core::Usage {
            input: self.input_tokens.map(|input| input.saturating_sub(cached.unwrap_or(0))),
            output: self.output_tokens,
            cache_read: cached,
            reasoning: self.output_tokens_details.as_ref().and_then(|d| d.reasoning_tokens),
            ..patchbay_core::Usage::default()
        }
    }
}
