//! [`Secret`]: a credential that never shows in `Debug`, `Display` or logs.

use std::fmt;

/// A secret string (an API key, a bearer token) whose `Debug` never shows it.
///
/// ```
/// let key = patchbay_core::kit::Secret::new("sk-live-1234");
/// assert_eq!(format!("{key:?}"), "Secret([redacted])");
/// assert_eq!(key.expose(), "sk-live-1234");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself, for the one place that sends it (a request header).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self(value)
    }
}

impl<'de> serde::Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self)
    }
}
