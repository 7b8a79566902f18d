//! [`CacheControl`]: the prompt-caching marker messages and tool specs carry.

use serde::{Deserialize, Serialize};

/// A prompt-caching marker (Anthropic `cache_control`), kept on the block it marks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheControl {
    /// The cache kind; `"ephemeral"` is the only one Anthropic defines today.
    #[serde(rename = "type")]
    pub kind: String,
    /// Optional time to live such as `"5m"` or `"1h"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<String>,
}

impl CacheControl {
    /// The ordinary `{"type": "ephemeral"}` marker.
    pub fn ephemeral() -> Self {
        Self {
            kind: "ephemeral".into(),
            ttl: None,
        }
    }
}
