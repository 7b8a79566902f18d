//! Usage totals as the store keeps and answers them: a job's, a session's, a tree's.

use serde::{Deserialize, Serialize};

/// Tokens and cost summed over runs (of one job, one session or one tree).
///
/// Token counts follow [`patchbay::Usage`]: `input_tokens` excludes cache reads and writes where
/// the provider splits them, `output_tokens` includes reasoning. `cost_usd` is `None` until a
/// provider reports a cost. In JSON it also carries `total_tokens` ([`Self::total_tokens`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
pub struct UsageTotals {
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens (reasoning included).
    pub output_tokens: u64,
    /// Tokens read from the prompt cache.
    pub cache_read_tokens: u64,
    /// Tokens written to the prompt cache.
    pub cache_write_tokens: u64,
    /// Reasoning tokens, where the provider reports them separately (part of `output_tokens`).
    pub reasoning_tokens: u64,
    /// Cost in US dollars, where the provider reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

impl UsageTotals {
    /// Every token the model read or wrote: input, cache reads and writes, and output. Token
    /// budgets count this.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_read_tokens)
            .saturating_add(self.cache_write_tokens)
            .saturating_add(self.output_tokens)
    }

    /// Whether nothing was spent (no tokens, no cost).
    pub fn is_empty(&self) -> bool {
        self.total_tokens() == 0 && self.reasoning_tokens == 0 && self.cost_usd.is_none()
    }

    /// Adds `other`, field by field (saturating).
    pub fn add(&mut self, other: &UsageTotals) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_tokens = self.cache_read_tokens.saturating_add(other.cache_read_tokens);
        self.cache_write_tokens = self.cache_write_tokens.saturating_add(other.cache_write_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(other.reasoning_tokens);
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
    }

    /// What `self` has beyond `earlier` (a later cumulative total minus an earlier one),
    /// field by field, never below zero.
    pub fn since(&self, earlier: &UsageTotals) -> UsageTotals {
        UsageTotals {
            input_tokens: self.input_tokens.saturating_sub(earlier.input_tokens),
            output_tokens: self.output_tokens.saturating_sub(earlier.output_tokens),
            cache_read_tokens: self.cache_read_tokens.saturating_sub(earlier.cache_read_tokens),
            cache_write_tokens: self.cache_write_tokens.saturating_sub(earlier.cache_write_tokens),
            reasoning_tokens: self.reasoning_tokens.saturating_sub(earlier.reasoning_tokens),
            cost_usd: match (self.cost_usd, earlier.cost_usd) {
                (Some(now), Some(before)) if now > before => Some(now - before),
                (Some(_), Some(_)) => None,
                (now, None) => now,
                (None, Some(_)) => None,
            },
        }
    }
}

impl Serialize for UsageTotals {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let mut out = serializer.serialize_struct("UsageTotals", 7)?;
        out.serialize_field("total_tokens", &self.total_tokens())?;
        out.serialize_field("input_tokens", &self.input_tokens)?;
        out.serialize_field("output_tokens", &self.output_tokens)?;
        out.serialize_field("cache_read_tokens", &self.cache_read_tokens)?;
        out.serialize_field("cache_write_tokens", &self.cache_write_tokens)?;
        out.serialize_field("reasoning_tokens", &self.reasoning_tokens)?;
        match self.cost_usd {
            Some(cost) => out.serialize_field("cost_usd", &cost)?,
            None => out.skip_field("cost_usd")?,
        }
        out.end()
    }
}

impl std::fmt::Display for UsageTotals {
    /// `1234 tokens (input 1000, output 234, cache read 0, cache write 0), $0.0123`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} tokens (input {}, output {}, cache read {}, cache write {})",
            self.total_tokens(),
            self.input_tokens,
            self.output_tokens,
            self.cache_read_tokens,
            self.cache_write_tokens
        )?;
        if let Some(cost) = self.cost_usd {
            write!(f, ", ${cost:.4}")?;
        }
        Ok(())
    }
}

impl From<&patchbay::Usage> for UsageTotals {
    fn from(usage: &patchbay::Usage) -> Self {
        Self {
            input_tokens: usage.input.unwrap_or(0),
            output_tokens: usage.output.unwrap_or(0),
            cache_read_tokens: usage.cache_read.unwrap_or(0),
            cache_write_tokens: usage.cache_write.unwrap_or(0),
            reasoning_tokens: usage.reasoning.unwrap_or(0),
            cost_usd: usage.cost_usd.filter(|c| c.is_finite() && *c >= 0.0),
        }
    }
}

/// The usage of a session tree: its root's name and the sum over its sessions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TreeUsage {
    /// The root session of the tree (`None`: the session does not exist).
    pub root_session_name: Option<String>,
    /// The sum over every session of the tree.
    pub usage: UsageTotals,
}
