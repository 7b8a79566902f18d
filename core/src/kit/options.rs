//! [`read_options`]: JSON options into a provider's options struct, with an error that names
//! the key at fault and never quotes a value (a value may be a key).

use std::fmt;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::redact::redact_serde_message;

/// Why JSON options could not be read: the key at fault when there is one, and serde's message
/// with every quoted value redacted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionsError {
    /// The first key that is refused on its own (unknown, or a value of the wrong type);
    /// `None` when the options are not an object.
    pub key: Option<String>,
    /// What is wrong, values redacted.
    pub message: String,
}

impl fmt::Display for OptionsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            Some(key) => write!(f, "option `{key}`: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for OptionsError {}

impl OptionsError {
    /// The error for a call's `context.provider_options(provider)` that cannot be read: kind
    /// [`InvalidRequest`](crate::ErrorKind::InvalidRequest) (the caller sent it with this
    /// request, so it is the request that is wrong, not the provider's configuration), the
    /// provider named, this error kept as the source. Like every options error it names the key
    /// and never quotes a value. Every provider reports a bad call option this way, before any
    /// I/O.
    ///
    /// ```
    /// use patchbay_core::ErrorKind;
    /// use patchbay_core::kit::read_options;
    /// #[derive(Default, serde::Deserialize)]
    /// #[serde(deny_unknown_fields)]
    /// struct CallOptions { think: Option<bool> }
    /// let error = read_options::<CallOptions>(&serde_json::json!({ "think": "sk-secret" }))
    ///     .map_err(|e| e.into_call_error("ollama"))
    ///     .err()
    ///     .unwrap();
    /// assert_eq!(error.kind(), ErrorKind::InvalidRequest);
    /// assert!(error.to_string().contains("think") && !error.to_string().contains("sk-secret"));
    /// ```
    pub fn into_call_error(self, provider: &str) -> crate::ProviderError {
        crate::ProviderError::new(
            crate::ErrorKind::InvalidRequest,
            format!("invalid `{provider}` call options: {self}"),
        )
        .with_provider(provider)
        .with_source(self)
    }
}

/// Reads `options` into `T`: `null` is `T::default()`, an object is deserialized (declare `T`
/// with `#[serde(deny_unknown_fields)]` so an unknown key is refused), anything else is an
/// error. serde names an unknown key but not the key of a value of the wrong type, so on an
/// error each entry is read alone to find the first one at fault.
///
/// ```
/// #[derive(Default, serde::Deserialize)]
/// #[serde(deny_unknown_fields)]
/// struct Options {
///     api_key: Option<String>,
///     read_timeout_ms: Option<u64>,
/// }
/// use patchbay_core::kit::read_options;
/// let json = serde_json::json!({ "api_key": "sk-1", "read_timeout_ms": "sk-secret" });
/// let error = read_options::<Options>(&json).err().unwrap();
/// assert_eq!(error.key.as_deref(), Some("read_timeout_ms"));
/// assert!(!error.to_string().contains("sk-secret"));
/// let error = read_options::<Options>(&serde_json::json!({ "nope": 1 })).err().unwrap();
/// assert_eq!(error.key.as_deref(), Some("nope"));
/// assert!(read_options::<Options>(&serde_json::Value::Null).is_ok());
/// ```
pub fn read_options<T: DeserializeOwned + Default>(options: &Value) -> Result<T, OptionsError> {
    let map = match options {
        Value::Null => return Ok(T::default()),
        Value::Object(map) => map,
        _ => {
            return Err(OptionsError {
                key: None,
                message: "the options must be a JSON object or null".into(),
            });
        }
    };
    T::deserialize(options).map_err(|error| OptionsError {
        key: key_at_fault::<T>(map),
        message: redact_serde_message(&error.to_string()),
    })
}

/// The first key whose entry, read alone, is refused.
fn key_at_fault<T: DeserializeOwned>(map: &Map<String, Value>) -> Option<String> {
    map.iter()
        .find(|(key, value)| {
            let alone = Value::Object(Map::from_iter([((*key).clone(), (*value).clone())]));
            T::deserialize(&alone).is_err()
        })
        .map(|(key, _)| key.clone())
}

/// One variable of the process environment as a provider's `from_env` reads it: unset or
/// blank is `None`; a value that is not Unicode is `Err` with the reason (`"not valid
/// Unicode"`), for the crate's `Error::Env { name, reason }`, which never quotes the value.
///
/// ```
/// assert_eq!(patchbay_core::kit::env_var("PATCHBAY_SURELY_UNSET_VARIABLE"), Ok(None));
/// ```
pub fn env_var(name: &str) -> Result<Option<String>, &'static str> {
    match std::env::var(name) {
        Ok(value) if value.trim().is_empty() => Ok(None),
        Ok(value) => Ok(Some(value)),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err("not valid Unicode"),
    }
}
