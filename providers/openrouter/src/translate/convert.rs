//! Small pure conversions of the translator: tool-call fragments, reasoning details, usage,
//! finish reasons. The bottom of `translate`: uses only the crate's `wire`.

use std::collections::HashMap;

use patchbay_core::{FinishReason, Usage};
use serde_json::Value;

use crate::wire::{ReasoningDetail, Str, ToolCallDelta, WireUsage};

/// A string field that is present and not empty.
pub(super) fn non_empty<'s>(value: &'s Option<Str<'_>>) -> Option<&'s str> {
    value.as_deref().filter(|s| !s.is_empty())
}

/// A tool call being assembled from fragments (kept in [`ToolCalls`]).
#[derive(Debug, Default)]
pub(super) struct ToolAcc {
    pub(super) id: Option<String>,
    pub(super) name: String,
    pub(super) arguments: String,
}

/// The tool calls of one choice, in order of appearance, with the indexes that find the call
/// a fragment belongs to in O(1): by wire index and by id, each to the last call holding it.
/// Calls before `finalized` were emitted and take no more fragments (calls are finalized all
/// at once, so they are a prefix).
#[derive(Debug, Default)]
pub(super) struct ToolCalls {
    list: Vec<ToolAcc>,
    /// The last call opened with each wire index (a call's wire index never changes).
    by_index: HashMap<u32, usize>,
    /// The last call holding each id (a call's id is set at most once).
    by_id: HashMap<String, usize>,
    finalized: usize,
}

impl ToolCalls {
    /// Every call, in order of appearance.
    pub(super) fn iter(&self) -> std::slice::Iter<'_, ToolAcc> {
        self.list.iter()
    }

    /// The calls not finalized yet, with their positions among all calls; they count as
    /// finalized from now on (later fragments open new calls).
    pub(super) fn finalize(&mut self) -> impl Iterator<Item = (usize, &mut ToolAcc)> {
        let start = std::mem::replace(&mut self.finalized, self.list.len());
        self.list[start..]
            .iter_mut()
            .enumerate()
            .map(move |(offset, call)| (start + offset, call))
    }

    /// Add one tool-call fragment; `lookups` counts the index lookups made (one or two per
    /// fragment, see `Translator::lookups`).
    pub(super) fn accumulate(&mut self, call: &ToolCallDelta<'_>, lookups: &mut u64) {
        let id = non_empty(&call.id);
        let function = call.function.as_ref();
        let name = function.and_then(|f| non_empty(&f.name));
        *lookups += 1;
        let slot = match call.index {
            Some(index) => self.by_index.get(&index).copied().filter(|&at| {
                // A new id on an index whose call already has a name and another id: a new
                // call (servers that number every call 0).
                let known = &self.list[at];
                !matches!((id, known.id.as_deref()), (Some(new), Some(old)) if new != old && !known.name.is_empty())
            }),
            None => match id {
                Some(id) => self.by_id.get(id).copied(),
                None => self.list.len().checked_sub(1),
            },
        };
        let slot = match slot {
            Some(slot) if slot >= self.finalized => slot,
            _ => self.open(call.index),
        };
        let acc = &mut self.list[slot];
        if let Some(id) = id
            && acc.id.is_none()
        {
            acc.id = Some(id.to_string());
            *lookups += 1;
            match self.by_id.get_mut(id) {
                // An earlier call may take an id later than a newer call: keep the newer.
                Some(last) => *last = (*last).max(slot),
                None => {
                    self.by_id.insert(id.to_string(), slot);
                }
            }
        }
        if let Some(name) = name {
            // Servers repeat the whole name on every fragment, or stream it in pieces.
            if acc.name != name {
                acc.name.push_str(name);
            }
        }
        if let Some(arguments) = function.and_then(|f| f.arguments.as_deref()) {
            acc.arguments.push_str(arguments);
        }
    }

    /// Open a new call at the end.
    fn open(&mut self, wire_index: Option<u32>) -> usize {
        let slot = self.list.len();
        self.list.push(ToolAcc::default());
        if let Some(index) = wire_index {
            self.by_index.insert(index, slot);
        }
        slot
    }
}

pub(super) fn detail_json(detail: &ReasoningDetail<'_>) -> Value {
    let mut map = serde_json::Map::new();
    map.insert("type".into(), Value::String(detail.kind.to_string()));
    let fields = [
        ("id", &detail.id),
        ("format", &detail.format),
        ("data", &detail.data),
        ("text", &detail.text),
        ("summary", &detail.summary),
        ("signature", &detail.signature),
    ];
    for (key, value) in fields {
        if let Some(value) = value {
            map.insert(key.into(), Value::String(value.to_string()));
        }
    }
    if let Some(index) = detail.index {
        map.insert("index".into(), Value::from(index));
    }
    Value::Object(map)
}

pub(super) fn convert_usage(wire: &WireUsage) -> Usage {
    let details = wire.prompt_tokens_details.as_ref();
    let cache_read = details.and_then(|d| d.cached_tokens).or(wire.prompt_cache_hit_tokens);
    let cache_write = details.and_then(|d| d.cache_write_tokens);
    let input = wire.prompt_tokens.map(|prompt| {
        prompt
            .saturating_sub(cache_read.unwrap_or(0))
            .saturating_sub(cache_write.unwrap_or(0))
    });
    let cost_usd = wire
        .cost
        .as_ref()
        .and_then(|cost| match cost {
            Value::Number(n) => n.as_f64(),
            Value::Object(map) => map.get("total_cost").and_then(Value::as_f64),
            _ => None,
        })
        .or_else(|| wire.cost_in_usd_ticks.map(|ticks| ticks as f64 / 1e10));
    Usage {
        input,
        output: wire.completion_tokens,
        cache_read,
        cache_write,
        reasoning: wire
            .completion_tokens_details
            .as_ref()
            .and_then(|d| d.reasoning_tokens)
            .or(wire.reasoning_tokens),
        cost_usd,
    }
}

/// Map a chat-completions finish reason.
pub(super) fn finish_reason(raw: Option<&str>, refusal: bool, tool_calls: bool) -> FinishReason {
    match raw {
        None => {
            if tool_calls {
                FinishReason::ToolUse
            } else if refusal {
                FinishReason::Refusal
            } else {
                FinishReason::Stop
            }
        }
        Some("stop" | "end_turn" | "stop_sequence" | "eos" | "eos_token") => {
            if refusal {
                FinishReason::Refusal
            } else if tool_calls {
                FinishReason::ToolUse
            } else {
                FinishReason::Stop
            }
        }
        Some("length" | "max_tokens" | "model_length") => FinishReason::Length,
        Some("tool_calls" | "function_call" | "tool_use") => FinishReason::ToolUse,
        Some("content_filter") => FinishReason::ContentFilter,
        Some("refusal") => FinishReason::Refusal,
        Some(other) => FinishReason::Other(other.to_string()),
    }
}
