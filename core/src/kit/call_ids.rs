//! Tool call ids unique across an agent run, for wires whose calls may come without an id.

use std::collections::HashSet;

use crate::{ContentBlock, Message};

/// The ids of one response's tool calls: the wire's id when it is new, else the next free
/// `call_N`, numbered on from the calls already in the conversation (so ids stay unique across
/// an agent run, as the lifecycle rules want).
///
/// ```
/// use patchbay_core::kit::CallIds;
/// use patchbay_core::{ContentBlock, Message, Role};
/// let history = [Message::new(Role::Assistant, vec![ContentBlock::tool_use("call_1", "f", serde_json::json!({}))])];
/// let mut ids = CallIds::with_history(&history);
/// assert_eq!(ids.id(None), "call_2");
/// assert_eq!(ids.id(Some("abc")), "abc");
/// assert_eq!(ids.id(Some("abc")), "call_3", "a repeated wire id is renamed");
/// ```
#[derive(Debug, Clone)]
pub struct CallIds {
    used: HashSet<String>,
    next: usize,
}

impl Default for CallIds {
    fn default() -> Self {
        Self {
            used: HashSet::new(),
            next: 1,
        }
    }
}

impl CallIds {
    /// Ids for a response to `messages`: their calls' ids are taken, numbering starts after them.
    pub fn with_history(messages: &[Message]) -> Self {
        let mut ids = Self::default();
        for message in messages {
            for block in &message.content {
                if let ContentBlock::ToolUse { id, .. } = block {
                    ids.used.insert(id.clone());
                }
            }
        }
        ids.next = ids.used.len() + 1;
        ids
    }

    /// The id of the next call: `wire_id` when it is not empty and not used yet, else the next
    /// free `call_N`.
    pub fn id(&mut self, wire_id: Option<&str>) -> String {
        if let Some(id) = wire_id.filter(|id| !id.is_empty())
            && self.used.insert(id.to_string())
        {
            return id.to_string();
        }
        loop {
            let id = format!("call_{}", self.next);
            self.next += 1;
            if self.used.insert(id.clone()) {
                return id;
            }
        }
    }
}
