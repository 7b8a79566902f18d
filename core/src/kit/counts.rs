//! Counters a server reports, read so that no value can break a stream or overflow a sum.

use std::fmt;

use serde::Deserializer;
use serde::de::{self, Visitor};

/// Deserialize a token count leniently, for `#[serde(default, deserialize_with = ...)]` on an
/// `Option<u64>` field: a non-negative integer as it is, a negative one as 0, a number past
/// `u64::MAX` (or a float) clamped into range, anything else (`null`, a string, an object) as
/// unknown. A broken usage field then costs its value, never the stream it arrived in.
///
/// ```
/// #[derive(serde::Deserialize)]
/// struct Usage {
///     #[serde(default, deserialize_with = "patchbay_core::kit::token_count")]
///     input: Option<u64>,
/// }
/// let read = |json: &str| serde_json::from_str::<Usage>(json).unwrap().input;
/// assert_eq!(read(r#"{"input": 12}"#), Some(12));
/// assert_eq!(read(r#"{"input": -5}"#), Some(0));
/// assert_eq!(read(r#"{"input": 1e30}"#), Some(u64::MAX));
/// assert_eq!(read(r#"{"input": 12.0}"#), Some(12));
/// assert_eq!(read(r#"{"input": "12"}"#), None);
/// assert_eq!(read(r#"{}"#), None);
/// ```
pub fn token_count<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    deserializer.deserialize_any(TokenCount)
}

struct TokenCount;

impl<'de> Visitor<'de> for TokenCount {
    type Value = Option<u64>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a token count")
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Self::Value, E> {
        Ok(Some(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Self::Value, E> {
        Ok(Some(u64::try_from(value).unwrap_or(0)))
    }

    fn visit_u128<E: de::Error>(self, value: u128) -> Result<Self::Value, E> {
        Ok(Some(u64::try_from(value).unwrap_or(u64::MAX)))
    }

    fn visit_i128<E: de::Error>(self, value: i128) -> Result<Self::Value, E> {
        Ok(Some(u64::try_from(value.max(0)).unwrap_or(u64::MAX)))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Self::Value, E> {
        // `as` saturates (and maps NaN to 0); NaN is no count at all.
        Ok((!value.is_nan()).then_some(value as u64))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<de::IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<de::IgnoredAny, de::IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}
