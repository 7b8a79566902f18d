//! The live sides of a run's tool sources ([`LiveTools`]): their events for the host, and the
//! run's tool set rebuilt when a source's tools changed.

use std::sync::Arc;

use crate::agent::source::LiveTools;
use crate::event::Event;
use crate::toolset::ToolSet;

/// A run's tool sources as attached, for rebuilding its tool set.
#[derive(Default)]
pub(super) struct LiveSources {
    /// The live sides, each with the index of its source's tools in `source_tools`.
    live: Vec<(usize, Arc<dyn LiveTools>)>,
    /// The agent's own tools, before any source's were merged in.
    own_tools: ToolSet,
    /// Each source's tools as attached (or as last changed), in source order.
    source_tools: Vec<ToolSet>,
}

impl LiveSources {
    /// Start from the agent's own tools.
    pub(super) fn new(own_tools: ToolSet) -> Self {
        Self {
            own_tools,
            ..Self::default()
        }
    }

    /// Record one attached source (its tools, and its live side if any).
    pub(super) fn attached(&mut self, tools: &ToolSet, live: Option<Arc<dyn LiveTools>>) {
        if let Some(live) = live {
            self.live.push((self.source_tools.len(), live));
        }
        self.source_tools.push(tools.clone());
    }

    /// The live sides, for a step's tool calls to wait on.
    pub(super) fn sides(&self) -> Vec<Arc<dyn LiveTools>> {
        self.live.iter().map(|(_, live)| live.clone()).collect()
    }

    /// The run's tool set rebuilt as it was attached (own tools first, then each source's in
    /// order; a clash keeps the first and is logged, since `Started` already went out) when a
    /// source's tools changed; `None` when none did.
    pub(super) async fn changed_tools(&mut self) -> Option<ToolSet> {
        let mut changed = false;
        for (index, live) in &self.live {
            if let Some(tools) = live.changed_tools().await {
                self.source_tools[*index] = tools;
                changed = true;
            }
        }
        if !changed {
            return None;
        }
        let mut tools = self.own_tools.clone();
        for source in &self.source_tools {
            for warning in tools.merge(source.clone()) {
                tracing::warn!(code = %warning.code, "{}", warning.message);
            }
        }
        Some(tools)
    }

    /// The live sides' events so far.
    pub(super) fn take_events(&self) -> Vec<Event> {
        self.live.iter().flat_map(|(_, live)| live.take_events()).collect()
    }
}
