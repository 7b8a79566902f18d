//! The call options (`context.provider_options("openai")`), read and checked before any I/O.

use std::collections::BTreeMap;

use patchbay_core::kit::{OptionsError, read_options};
use patchbay_core::{ProviderError, RequestContext};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::NAME;

/// OpenAI's limits on `metadata`: keys, key length, value length (in characters).
const METADATA_KEYS: usize = 16;
const METADATA_KEY_CHARS: usize = 64;
const METADATA_VALUE_CHARS: usize = 512;

/// The highest `top_logprobs` the API takes.
const TOP_LOGPROBS: u64 = 20;

/// The call options, every key in the module's table (`background` only to refuse it).
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CallOptions {
    pub(super) store: Option<bool>,
    pub(super) include: Option<Vec<String>>,
    pub(super) encrypted_reasoning: Option<bool>,
    pub(super) previous_response_id: Option<String>,
    pub(super) reasoning: Option<Map<String, Value>>,
    pub(super) verbosity: Option<String>,
    pub(super) tools: Option<Vec<Value>>,
    pub(super) strict_tools: Option<bool>,
    pub(super) tool_choice: Option<Value>,
    pub(super) parallel_tool_calls: Option<bool>,
    pub(super) image_detail: Option<String>,
    pub(super) service_tier: Option<String>,
    pub(super) prompt_cache_key: Option<String>,
    pub(super) prompt_cache_retention: Option<String>,
    pub(super) metadata: Option<BTreeMap<String, String>>,
    pub(super) user: Option<String>,
    pub(super) safety_identifier: Option<String>,
    pub(super) truncation: Option<String>,
    pub(super) max_tool_calls: Option<u64>,
    pub(super) top_logprobs: Option<u64>,
    background: Option<Value>,
}

/// The refusal of option `key`: an `InvalidRequest` naming it, never quoting its value.
pub(super) fn refuse(key: &str, message: impl Into<String>) -> ProviderError {
    OptionsError {
        key: Some(key.into()),
        message: message.into(),
    }
    .into_call_error(NAME)
}

/// `Ok` when `value` (of option `key`) is one of `allowed`.
fn one_of(key: &str, value: Option<&String>, allowed: &[&str]) -> Result<(), ProviderError> {
    match value {
        Some(value) if !allowed.contains(&value.as_str()) => {
            Err(refuse(key, format!("must be one of {}", allowed.join(", "))))
        }
        _ => Ok(()),
    }
}

impl CallOptions {
    /// The options of this context: typed, then checked (values the types let through that
    /// the API refuses).
    pub(super) fn read(context: &RequestContext) -> Result<Self, ProviderError> {
        let Some(options) = context.provider_options(NAME) else {
            return Ok(Self::default());
        };
        let options: Self = read_options(options).map_err(|e| e.into_call_error(NAME))?;
        options.check()?;
        Ok(options)
    }

    /// The checks the types cannot make.
    fn check(&self) -> Result<(), ProviderError> {
        if self.background.is_some() {
            return Err(refuse(
                "background",
                "is not taken: this provider streams every response; poll background responses yourself",
            ));
        }
        if self
            .previous_response_id
            .as_ref()
            .is_some_and(|id| id.trim().is_empty())
        {
            return Err(refuse("previous_response_id", "must name a response"));
        }
        if let Some(reasoning) = &self.reasoning {
            for field in ["effort", "summary"] {
                if reasoning.get(field).is_some_and(|value| !value.is_string()) {
                    return Err(refuse("reasoning", format!("`{field}` must be a string")));
                }
            }
        }
        one_of("verbosity", self.verbosity.as_ref(), &["low", "medium", "high"])?;
        one_of("truncation", self.truncation.as_ref(), &["auto", "disabled"])?;
        one_of(
            "image_detail",
            self.image_detail.as_ref(),
            &["auto", "low", "high", "original"],
        )?;
        for (at, tool) in self.tools.iter().flatten().enumerate() {
            if !tool.get("type").is_some_and(Value::is_string) {
                return Err(refuse(
                    "tools",
                    format!("entry {at} is not a JSON object with a string `type`"),
                ));
            }
        }
        if self.top_logprobs.is_some_and(|n| n > TOP_LOGPROBS) {
            return Err(refuse("top_logprobs", format!("must be at most {TOP_LOGPROBS}")));
        }
        self.check_metadata()
    }

    /// OpenAI's limits on `metadata`, naming the key at fault (a key too long is not quoted).
    fn check_metadata(&self) -> Result<(), ProviderError> {
        let Some(metadata) = &self.metadata else {
            return Ok(());
        };
        if metadata.len() > METADATA_KEYS {
            return Err(refuse("metadata", format!("takes at most {METADATA_KEYS} keys")));
        }
        for (key, value) in metadata {
            if key.chars().count() > METADATA_KEY_CHARS {
                return Err(refuse(
                    "metadata",
                    format!("a key is longer than {METADATA_KEY_CHARS} characters"),
                ));
            }
            if value.chars().count() > METADATA_VALUE_CHARS {
                return Err(refuse(
                    "metadata",
                    format!("the value of key `{key}` is longer than {METADATA_VALUE_CHARS} characters"),
                ));
            }
        }
        Ok(())
    }

    /// Whether the call is stored on the server (`store`, default false).
    pub(super) fn store(&self) -> bool {
        self.store.unwrap_or(false)
    }

    /// The `detail` of `input_image` parts (default `auto`).
    pub(super) fn image_detail(&self) -> &str {
        self.image_detail.as_deref().unwrap_or("auto")
    }

    /// The options sent under their own key, as given: `(key, value)` for each one set.
    pub(super) fn pass_through(&self) -> Vec<(&'static str, Value)> {
        let strings = [
            ("service_tier", &self.service_tier),
            ("prompt_cache_key", &self.prompt_cache_key),
            ("prompt_cache_retention", &self.prompt_cache_retention),
            ("user", &self.user),
            ("safety_identifier", &self.safety_identifier),
            ("truncation", &self.truncation),
        ];
        let mut out: Vec<(&'static str, Value)> = strings
            .into_iter()
            .filter_map(|(key, value)| value.as_ref().map(|value| (key, json!(value))))
            .collect();
        if let Some(metadata) = &self.metadata {
            out.push(("metadata", json!(metadata)));
        }
        if let Some(parallel) = self.parallel_tool_calls {
            out.push(("parallel_tool_calls", json!(parallel)));
        }
        if let Some(max) = self.max_tool_calls {
            out.push(("max_tool_calls", json!(max)));
        }
        if let Some(top) = self.top_logprobs {
            out.push(("top_logprobs", json!(top)));
        }
        out
    }
}
