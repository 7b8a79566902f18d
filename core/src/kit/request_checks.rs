//! What request builders read off a call before building a body: prompt-caching markers, and
//! the warnings list `Started` carries, each once.

use crate::context::RequestContext;
use crate::event::Warning;
use crate::message::{ContentBlock, Message};
use crate::toolset::ToolSet;

/// Whether any block, tool or the system prompt carries a prompt-caching marker (for a wire
/// that caches on its own and says so with one warning).
pub fn has_cache_markers(context: &RequestContext, messages: &[Message], tools: &ToolSet) -> bool {
    context.system_cache_control.is_some()
        || tools.specs().any(|spec| spec.cache_control.is_some())
        || messages.iter().flat_map(|m| &m.content).any(|block| match block {
            ContentBlock::Text { cache_control, .. }
            | ContentBlock::Image { cache_control, .. }
            | ContentBlock::ToolResult { cache_control, .. } => cache_control.is_some(),
            _ => false,
        })
}

/// The warnings with repeats left out, the first of each kept in order.
pub fn unique_warnings(warnings: Vec<Warning>) -> Vec<Warning> {
    let mut unique: Vec<Warning> = Vec::with_capacity(warnings.len());
    for warning in warnings {
        if !unique.contains(&warning) {
            unique.push(warning);
        }
    }
    unique
}
