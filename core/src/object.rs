//! Structured output: ask for a JSON object of a schema, stream it as it grows, validate it.
//!
//! [`OutputSchema`] goes in [`RequestContext::output_schema`]; each provider maps it the native
//! way (a JSON-schema response format, a forced tool, a runtime flag) and delivers the object by
//! one contract, so hosts read it the same way everywhere:
//!
//! - the object arrives as JSON text in the response's **final text block**, with nothing else
//!   in that block (text before it, in earlier blocks, is allowed);
//! - a provider that forces the shape with a tool translates that tool's input stream into
//!   `TextDelta`s of one block and does not emit the tool call (no `ToolCallStart`, no
//!   `ToolCall`: the host never sees the synthetic tool);
//! - a provider that cannot honour the schema says so with a
//!   [`Warning::UNSUPPORTED_OPTION`](crate::Warning::UNSUPPORTED_OPTION) on `Started` and answers
//!   as it can; it never fails because of it. [`generate_object`] still validates what came.
//!
//! On top, [`ProviderExt::generate_object`](crate::ProviderExt::generate_object) and
//! [`ProviderExt::stream_object`](crate::ProviderExt::stream_object) derive the schema from a
//! type with schemars, run the call, validate the final text block against the schema (with the
//! `jsonschema` crate) and deserialize it. Partial objects come from [`parse_partial_json`]
//! (pydantic's `jiter` in its partial mode): the text so far, with open strings, arrays and
//! objects closed.

use std::pin::Pin;

use futures::{Stream, StreamExt};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Number, Value};

use crate::context::RequestContext;
use crate::event::Event;
use crate::kit::ContentBuilder;
use crate::message::{ContentBlock, Message};
use crate::provider::Provider;
pub use crate::schema::{ObjectError, OutputSchema, SchemaValidator, object_text};
use crate::signal::Signal;
use crate::toolset::ToolSet;

/// What [`ProviderExt::stream_object`](crate::ProviderExt::stream_object) yields.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ObjectEvent<T> {
    /// The object so far, each time the growing JSON parses (open strings, arrays and objects
    /// closed) into a value different from the last one. Not validated: fields are missing and
    /// strings cut short until the end.
    Partial(Value),
    /// The final object, validated against the schema and deserialized. Always last.
    Complete(T),
}

/// The stream of [`ProviderExt::stream_object`](crate::ProviderExt::stream_object).
pub type ObjectStream<'a, T> = Pin<Box<dyn Stream<Item = Result<ObjectEvent<T>, ObjectError>> + Send + 'a>>;

/// The value a JSON prefix stands for so far: strings, arrays and objects still open are closed
/// (a key without its value is left out), a number is taken as far as it goes. `None` when the
/// text is not the start of a JSON value (or is empty, or ends inside a literal such as `tru`),
/// or when it nests arrays and objects deeper than serde_json reads ([`MAX_PARTIAL_DEPTH`]): the
/// final object is read by serde_json, so no partial object is one it would refuse.
///
/// ```
/// use patchbay_core::object::parse_partial_json;
/// use serde_json::json;
/// assert_eq!(parse_partial_json(r#"{"city": "Par"#), Some(json!({"city": "Par"})));
/// assert_eq!(parse_partial_json(r#"{"tags": ["a", "b"#), Some(json!({"tags": ["a", "b"]})));
/// assert_eq!(parse_partial_json("Here is"), None);
/// ```
pub fn parse_partial_json(text: &str) -> Option<Value> {
    let text = text.trim_start();
    if text.is_empty() {
        return None;
    }
    jiter::JsonValue::parse_with_config(text.as_bytes(), false, jiter::PartialMode::TrailingStrings)
        .ok()
        .and_then(|value| to_serde(&value, MAX_PARTIAL_DEPTH))
}

/// The deepest nesting of arrays and objects [`parse_partial_json`] returns: serde_json's reader
/// refuses a value nested deeper (its recursion limit of 128).
pub const MAX_PARTIAL_DEPTH: usize = 127;

/// The value as serde_json's, `None` when it nests more than `depth` arrays and objects.
fn to_serde(value: &jiter::JsonValue<'_>, depth: usize) -> Option<Value> {
    Some(match value {
        jiter::JsonValue::Null => Value::Null,
        jiter::JsonValue::Bool(b) => Value::Bool(*b),
        jiter::JsonValue::Int(i) => Value::Number((*i).into()),
        // Past i64: a u64 when it fits, else the nearest f64, as serde_json reads such numbers.
        jiter::JsonValue::BigInt(big) => {
            let digits = big.to_string();
            match digits.parse::<u64>() {
                Ok(n) => Value::from(n),
                Err(_) => digits
                    .parse::<f64>()
                    .ok()
                    .and_then(Number::from_f64)
                    .map_or(Value::Null, Value::Number),
            }
        }
        jiter::JsonValue::Float(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
        jiter::JsonValue::Str(s) => Value::String(s.to_string()),
        jiter::JsonValue::Array(items) => {
            let inner = depth.checked_sub(1)?;
            Value::Array(items.iter().map(|item| to_serde(item, inner)).collect::<Option<_>>()?)
        }
        jiter::JsonValue::Object(fields) => {
            let inner = depth.checked_sub(1)?;
            let mut map = Map::with_capacity(fields.len());
            for (key, value) in fields.iter() {
                map.insert(key.to_string(), to_serde(value, inner)?);
            }
            Value::Object(map)
        }
    })
}

/// Follows the text of a streamed response and yields the partial object of its current text
/// block each time it changes (a new block starts over).
#[derive(Debug, Default)]
pub struct PartialObject {
    index: Option<usize>,
    text: String,
    last: Option<Value>,
}

impl PartialObject {
    /// A follower with no text yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed one event; a new partial value when a text delta changed it.
    pub fn push(&mut self, event: &Event) -> Option<Value> {
        let Event::TextDelta { index, text } = event else {
            return None;
        };
        if self.index != Some(*index) {
            self.index = Some(*index);
            self.text.clear();
            self.last = None;
        }
        self.text.push_str(text);
        // A fence opener before the JSON (see `object_text`) is skipped.
        let json = match self.text.trim_start().strip_prefix("```") {
            Some(rest) => rest.split_once('\n').map_or("", |(_, inner)| inner),
            None => &self.text,
        };
        let value = parse_partial_json(json.trim_end().trim_end_matches('`'))?;
        if self.last.as_ref() == Some(&value) {
            return None;
        }
        self.last = Some(value.clone());
        Some(value)
    }

    /// The text of the current block so far.
    pub fn text(&self) -> &str {
        &self.text
    }
}

/// The context of a structured-output call: the caller's (or an empty one) with the schema set.
fn context_with(context: Option<&RequestContext>, schema: OutputSchema) -> RequestContext {
    context.cloned().unwrap_or_default().with_output_schema(schema)
}

/// The text of the last text block of `content` (empty when there is none).
pub fn final_text(content: &[ContentBlock]) -> &str {
    content.iter().rev().find_map(ContentBlock::as_text).unwrap_or_default()
}

/// [`ProviderExt::generate_object`](crate::ProviderExt::generate_object) for any provider.
pub async fn generate_object<T, P>(
    provider: &P,
    messages: &[Message],
    model: &str,
    signal: &Signal,
    context: Option<&RequestContext>,
) -> Result<T, ObjectError>
where
    T: JsonSchema + DeserializeOwned,
    P: Provider + ?Sized,
{
    generate_object_with(provider, messages, model, signal, context, OutputSchema::of::<T>()).await
}

/// [`generate_object`] with a schema given rather than derived (a schema known only at run
/// time, read into `T = serde_json::Value`).
pub async fn generate_object_with<T, P>(
    provider: &P,
    messages: &[Message],
    model: &str,
    signal: &Signal,
    context: Option<&RequestContext>,
    schema: OutputSchema,
) -> Result<T, ObjectError>
where
    T: DeserializeOwned,
    P: Provider + ?Sized,
{
    let validator = schema.validator()?;
    let context = context_with(context, schema);
    let stream = provider
        .create_response(messages, &ToolSet::new(), model, signal, Some(&context))
        .await?;
    let response = crate::ProviderResponse::collect(stream).await?;
    validator.check(final_text(&response.content))
}

/// [`ProviderExt::stream_object`](crate::ProviderExt::stream_object) for any provider.
pub fn stream_object<'a, T, P>(
    provider: &'a P,
    messages: &'a [Message],
    model: &'a str,
    signal: &'a Signal,
    context: Option<&'a RequestContext>,
) -> ObjectStream<'a, T>
where
    T: JsonSchema + DeserializeOwned + Send + 'a,
    P: Provider + ?Sized,
{
    stream_object_with(provider, messages, model, signal, context, OutputSchema::of::<T>())
}

/// [`stream_object`] with a schema given rather than derived.
pub fn stream_object_with<'a, T, P>(
    provider: &'a P,
    messages: &'a [Message],
    model: &'a str,
    signal: &'a Signal,
    context: Option<&'a RequestContext>,
    schema: OutputSchema,
) -> ObjectStream<'a, T>
where
    T: DeserializeOwned + Send + 'a,
    P: Provider + ?Sized,
{
    Box::pin(async_stream::stream! {
        let validator = match schema.validator() {
            Ok(validator) => validator,
            Err(error) => {
                yield Err(error);
                return;
            }
        };
        let context = context_with(context, schema);
        let mut events = match provider.create_response(messages, &ToolSet::new(), model, signal, Some(&context)).await {
            Ok(events) => events,
            Err(error) => {
                yield Err(error.into());
                return;
            }
        };
        let mut content = ContentBuilder::default();
        let mut partial = PartialObject::new();
        while let Some(event) = events.next().await {
            let event = match event {
                Ok(event) => event,
                Err(error) => {
                    yield Err(error.into());
                    return;
                }
            };
            content.push(&event);
            if let Some(value) = partial.push(&event) {
                yield Ok(ObjectEvent::Partial(value));
            }
        }
        let content = content.finish();
        yield validator.check(final_text(&content)).map(ObjectEvent::Complete);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn partial_json_closes_what_is_open() {
        assert_eq!(parse_partial_json("{"), Some(json!({})));
        assert_eq!(parse_partial_json(r#"{"a": [1, 2"#), Some(json!({"a": [1, 2]})));
        assert_eq!(parse_partial_json(r#"{"a": {"b": "x"#), Some(json!({"a": {"b": "x"}})));
        assert_eq!(parse_partial_json(r#"["é"#), Some(json!(["é"])));
        assert_eq!(parse_partial_json("  "), None);
        assert_eq!(parse_partial_json("nope"), None);
    }

    #[test]
    fn partial_json_with_an_integer_past_i64_is_not_refused() {
        // Found by the partial_json fuzz target: jiter without num-bigint refused the whole text.
        assert_eq!(
            parse_partial_json(r#"{"id": 18446744073709551615, "n": [1"#),
            Some(json!({"id": u64::MAX, "n": [1]}))
        );
        assert_eq!(
            parse_partial_json(r#"{"t": 25999999999999999999999"#),
            Some(json!({"t": 2.6e22}))
        );
    }

    #[test]
    fn partial_json_nested_deeper_than_serde_json_reads_is_none() {
        // Found by the partial_json fuzz target: jiter went deeper than serde_json, so a partial
        // object could be one the final read refuses ("recursion limit exceeded").
        let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let deepest = nested(MAX_PARTIAL_DEPTH);
        assert!(serde_json::from_str::<Value>(&deepest).is_ok());
        assert!(parse_partial_json(&deepest).is_some());
        assert!(parse_partial_json(&deepest[..MAX_PARTIAL_DEPTH + 3]).is_some());
        let deeper = nested(MAX_PARTIAL_DEPTH + 1);
        assert!(serde_json::from_str::<Value>(&deeper).is_err());
        assert_eq!(parse_partial_json(&deeper), None);
        assert_eq!(
            parse_partial_json(&format!("{{\"a\": {}", &deeper[..MAX_PARTIAL_DEPTH])),
            None
        );
    }

    #[test]
    fn object_text_strips_one_fence_and_whitespace() {
        assert_eq!(object_text("  {\"a\":1}\n"), "{\"a\":1}");
        assert_eq!(object_text("```json\n{\"a\":1}\n```"), "{\"a\":1}");
        assert_eq!(object_text("```\n[1]\n```"), "[1]");
        assert_eq!(object_text("```{\"a\":1}```"), "{\"a\":1}");
        assert_eq!(object_text("text ```"), "text ```");
    }

    #[test]
    fn partial_object_starts_over_with_a_new_block_and_skips_repeats() {
        let mut partial = PartialObject::new();
        let delta = |index, text: &str| Event::TextDelta {
            index,
            text: text.into(),
        };
        assert_eq!(partial.push(&delta(0, "Let me see.")), None);
        assert_eq!(partial.push(&delta(1, "{\"n\": ")), Some(json!({})));
        assert_eq!(partial.push(&delta(1, " ")), None);
        assert_eq!(partial.push(&delta(1, "1}")), Some(json!({"n": 1})));
        assert_eq!(partial.text(), "{\"n\":  1}");
    }

    #[test]
    fn partial_object_reads_inside_a_fence() {
        let mut partial = PartialObject::new();
        let mut last = None;
        for piece in ["```json\n", "{\"a\": ", "\"b\"}", "\n```"] {
            if let Some(value) = partial.push(&Event::TextDelta {
                index: 0,
                text: piece.into(),
            }) {
                last = Some(value);
            }
        }
        assert_eq!(last, Some(json!({"a": "b"})));
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            (-1.0e6f64..1.0e6).prop_map(|f| json!(f)),
            "[a-zé\"\\\\ 🎉\n]{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::btree_map("[a-z\"]{0,4}", inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Every prefix of a JSON text (cut at any character) yields nothing or a value that
        /// serializes back to valid JSON, never a panic; the whole text yields the value itself.
        #[test]
        fn every_prefix_parses_to_valid_json_or_nothing(value in json_value(), pretty in any::<bool>()) {
            let text = if pretty { serde_json::to_string_pretty(&value) } else { serde_json::to_string(&value) }
                .expect("a Value serializes");
            for (at, _) in text.char_indices() {
                if let Some(partial) = parse_partial_json(&text[..at]) {
                    let again = serde_json::to_string(&partial).expect("a Value serializes");
                    prop_assert!(serde_json::from_str::<Value>(&again).is_ok());
                }
            }
            prop_assert_eq!(parse_partial_json(&text), Some(value));
        }

        /// Arbitrary text never makes the partial parser panic.
        #[test]
        fn arbitrary_text_never_panics(text in "\\PC{0,64}") {
            let _ = parse_partial_json(&text);
        }
    }
}
