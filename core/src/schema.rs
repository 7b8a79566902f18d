//! The schema of a structured answer ([`OutputSchema`]), its validator, and why an answer
//! was not the object asked for ([`ObjectError`]); [`crate::object`] runs the calls.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{ErrorKind, ProviderError};

/// The JSON object a call should answer with: a name, an optional description and a JSON
/// Schema (draft 2020-12, as schemars writes it).
///
/// `strict` asks a provider whose wire has a strict mode (OpenAI's `strict: true`) to use it;
/// strict modes restrict the schema (every property `required`, `additionalProperties: false`),
/// so it is off unless asked for. Providers without a strict mode ignore it.
///
/// ```
/// use patchbay_core::{OutputSchema, RequestContext};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// /// A city and its weather.
/// struct Weather { city: String, celsius: f64 }
///
/// let schema = OutputSchema::of::<Weather>();
/// assert_eq!(schema.name, "Weather");
/// assert_eq!(schema.description.as_deref(), Some("A city and its weather."));
/// let cx = RequestContext::new().with_output_schema(schema);
/// assert!(cx.output_schema.is_some());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OutputSchema {
    /// A name of ASCII letters, digits, `_` and `-` (at most 64), as the wires want.
    pub name: String,
    /// What the object is, for the model.
    #[serde(default)]
    pub description: Option<String>,
    /// The JSON Schema.
    pub schema: Value,
    /// Use the wire's strict mode where it has one.
    #[serde(default)]
    pub strict: bool,
}

impl OutputSchema {
    /// A schema named `name` (other characters than ASCII letters, digits, `_` and `-` become
    /// `_`; cut to 64; an empty name becomes `output`), not strict.
    pub fn new(name: impl AsRef<str>, schema: Value) -> Self {
        let mut name: String = name
            .as_ref()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        if name.is_empty() {
            name = "output".into();
        }
        Self {
            name,
            description: None,
            schema,
            strict: false,
        }
    }

    /// The schema of `T` from schemars: named after the type, described by its doc comment
    /// (the schema's `description`), without the `$schema` key (2020-12 is implied).
    pub fn of<T: JsonSchema>() -> Self {
        let mut schema = schemars::SchemaGenerator::default()
            .into_root_schema_for::<T>()
            .to_value();
        if let Value::Object(map) = &mut schema {
            map.remove("$schema");
        }
        let description = schema.get("description").and_then(Value::as_str).map(str::to_string);
        Self {
            description,
            ..Self::new(T::schema_name(), schema)
        }
    }

    /// Set the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Turn the wire's strict mode on or off.
    pub fn with_strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// A validator of the schema; a schema that does not compile is [`ObjectError::Schema`].
    pub fn validator(&self) -> Result<SchemaValidator, ObjectError> {
        jsonschema::validator_for(&self.schema)
            .map(|inner| SchemaValidator { inner })
            .map_err(|e| ObjectError::Schema { message: e.to_string() })
    }
}

/// A compiled [`OutputSchema`].
pub struct SchemaValidator {
    inner: jsonschema::Validator,
}

impl std::fmt::Debug for SchemaValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaValidator").finish_non_exhaustive()
    }
}

impl SchemaValidator {
    /// Every way `value` breaks the schema, each as `<JSON pointer>: <message>` (the pointer is
    /// empty for the root); empty when it matches.
    pub fn errors(&self, value: &Value) -> Vec<String> {
        self.inner
            .iter_errors(value)
            .map(|error| {
                let path = error.instance_path().to_string();
                if path.is_empty() {
                    error.to_string()
                } else {
                    format!("{path}: {error}")
                }
            })
            .collect()
    }

    /// Parse `raw` (see [`object_text`]), check it against the schema and deserialize it.
    pub fn check<T: DeserializeOwned>(&self, raw: &str) -> Result<T, ObjectError> {
        let value: Value = serde_json::from_str(object_text(raw)).map_err(|error| ObjectError::NotJson {
            raw: raw.to_string(),
            error,
        })?;
        let errors = self.errors(&value);
        if !errors.is_empty() {
            return Err(ObjectError::Invalid {
                raw: raw.to_string(),
                errors,
            });
        }
        serde_json::from_value(value).map_err(|error| ObjectError::Deserialize {
            raw: raw.to_string(),
            error,
        })
    }
}

/// Why no object came out of a structured-output call. Every variant about the reply keeps the
/// raw text of the final text block ([`raw_text`](Self::raw_text)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ObjectError {
    /// The call itself failed.
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// The output schema does not compile as a JSON Schema.
    #[error("the output schema is not a valid JSON Schema: {message}")]
    Schema {
        /// The compiler's message.
        message: String,
    },
    /// The final text block is not JSON (or there is none: `raw` is empty).
    #[error("the reply is not a JSON value: {error}")]
    NotJson {
        /// The final text block.
        raw: String,
        /// The parser's error.
        #[source]
        error: serde_json::Error,
    },
    /// The JSON does not match the schema.
    #[error("the reply does not match the output schema: {}", errors.join("; "))]
    Invalid {
        /// The final text block.
        raw: String,
        /// Each violation, as `<JSON pointer>: <message>`.
        errors: Vec<String>,
    },
    /// The JSON matches the schema but the type refuses it (a schema looser than the type).
    #[error("the reply matches the schema but does not deserialize: {error}")]
    Deserialize {
        /// The final text block.
        raw: String,
        /// serde's error.
        #[source]
        error: serde_json::Error,
    },
}

impl ObjectError {
    /// The raw text of the reply's final text block, when the reply was the problem.
    pub fn raw_text(&self) -> Option<&str> {
        match self {
            Self::NotJson { raw, .. } | Self::Invalid { raw, .. } | Self::Deserialize { raw, .. } => Some(raw),
            Self::Provider(_) | Self::Schema { .. } => None,
        }
    }

    /// The schema violations (empty unless [`ObjectError::Invalid`]).
    pub fn validation_errors(&self) -> &[String] {
        match self {
            Self::Invalid { errors, .. } => errors,
            _ => &[],
        }
    }
}

/// For hosts whose errors are `ProviderError`s: a failed call stays itself, a bad schema is
/// `InvalidRequest`, a reply that is no valid object is `Protocol` (the `ObjectError` kept as
/// the source, so the raw text is reachable by downcasting).
impl From<ObjectError> for ProviderError {
    fn from(error: ObjectError) -> Self {
        match error {
            ObjectError::Provider(error) => error,
            ObjectError::Schema { .. } => {
                ProviderError::new(ErrorKind::InvalidRequest, error.to_string()).with_source(error)
            }
            other => ProviderError::new(ErrorKind::Protocol, other.to_string()).with_source(other),
        }
    }
}

/// The JSON text inside a text block: surrounding whitespace trimmed, and one Markdown code
/// fence (```` ```json ... ``` ````) removed, which models answering without a native schema
/// mode sometimes add.
pub fn object_text(text: &str) -> &str {
    let trimmed = text.trim();
    let Some(rest) = trimmed.strip_prefix("```") else {
        return trimmed;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return trimmed;
    };
    // The info string (`json`) runs to the end of the first line.
    match body.split_once('\n') {
        Some((info, inner)) if !info.contains(['{', '[', '"']) => inner.trim(),
        _ => body.trim(),
    }
}
