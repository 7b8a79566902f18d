//! The call options (`context.provider_options("gemini")`), read and checked before any I/O.

use std::collections::BTreeMap;

use patchbay_core::kit::{OptionsError, read_options};
use patchbay_core::{ProviderError, RequestContext};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::NAME;

/// A server tool option: on, off, or on with this config.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum ServerTool {
    On(bool),
    Config(Map<String, Value>),
}

impl ServerTool {
    pub(super) fn config(&self) -> Option<Value> {
        match self {
            Self::On(true) => Some(json!({})),
            Self::On(false) => None,
            Self::Config(config) => Some(Value::Object(config.clone())),
        }
    }
}

/// The call options (`context.provider_options("gemini")`), every key in the module's table.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CallOptions {
    pub(super) google_search: Option<ServerTool>,
    pub(super) url_context: Option<ServerTool>,
    pub(super) code_execution: Option<ServerTool>,
    pub(super) tools: Option<Vec<Map<String, Value>>>,
    pub(super) function_calling_mode: Option<String>,
    pub(super) allowed_function_names: Option<Vec<String>>,
    pub(super) thinking_budget: Option<i64>,
    pub(super) thinking_level: Option<String>,
    pub(super) include_thoughts: Option<bool>,
    pub(super) response_mime_type: Option<String>,
    pub(super) generation_config: Option<Map<String, Value>>,
    pub(super) safety_settings: Option<Vec<Map<String, Value>>>,
    pub(super) cached_content: Option<String>,
    pub(super) labels: Option<BTreeMap<String, String>>,
}

/// The refusal of option `key`: an `InvalidRequest` naming it, never quoting its value.
pub(super) fn refuse(key: &str, message: &str) -> ProviderError {
    OptionsError {
        key: Some(key.into()),
        message: message.into(),
    }
    .into_call_error(NAME)
}

impl CallOptions {
    /// The options of this context: typed, then checked (values the types let through that
    /// Gemini refuses).
    pub(super) fn read(context: &RequestContext) -> Result<Self, ProviderError> {
        let Some(options) = context.provider_options(NAME) else {
            return Ok(Self::default());
        };
        let mut options: Self = read_options(options).map_err(|e| e.into_call_error(NAME))?;
        if let Some(mode) = &mut options.function_calling_mode {
            *mode = match mode.to_ascii_lowercase().as_str() {
                "auto" => "AUTO",
                "any" => "ANY",
                "none" => "NONE",
                "validated" => "VALIDATED",
                _ => {
                    return Err(refuse(
                        "function_calling_mode",
                        "must be one of auto, any, none, validated",
                    ));
                }
            }
            .into();
        }
        if let Some(level) = &mut options.thinking_level {
            *level = match level.to_ascii_lowercase().as_str() {
                "minimal" => "MINIMAL",
                "low" => "LOW",
                "medium" => "MEDIUM",
                "high" => "HIGH",
                _ => return Err(refuse("thinking_level", "must be one of minimal, low, medium, high")),
            }
            .into();
            if options.thinking_budget.is_some() {
                return Err(refuse(
                    "thinking_level",
                    "cannot be set with `thinking_budget` (Gemini refuses both); choose one",
                ));
            }
        }
        if options.thinking_budget.is_some_and(|budget| budget < -1) {
            return Err(refuse(
                "thinking_budget",
                "must be -1 (dynamic), 0 (off) or a number of tokens",
            ));
        }
        if options.allowed_function_names.as_ref().is_some_and(Vec::is_empty) {
            return Err(refuse("allowed_function_names", "must name at least one function"));
        }
        if options
            .cached_content
            .as_ref()
            .is_some_and(|name| name.trim().is_empty())
        {
            return Err(refuse("cached_content", "must name a cached content"));
        }
        Ok(options)
    }
}
