//! An ordered, name-unique collection of tools with explicit merging.

use std::fmt;
use std::sync::Arc;

use crate::event::Warning;
use crate::tool::{Tool, ToolSpec};

/// An ordered, name-unique collection of tools.
///
/// Adding a tool whose name is taken keeps the first one and reports the dropped duplicate as
/// a [`Warning`]; nothing is silently overwritten. Native tools are added before MCP tools, so
/// they win a clash.
///
/// ```
/// use patchbay_core::{FnTool, ToolResult, ToolSet, ToolContext};
/// # #[derive(serde::Deserialize, schemars::JsonSchema)] struct Empty {}
/// let first = FnTool::new("echo", "first", |_: Empty, _: ToolContext| async { ToolResult::text("1") });
/// let second = FnTool::new("echo", "second", |_: Empty, _: ToolContext| async { ToolResult::text("2") });
/// let mut tools = ToolSet::new().with(first);
/// let warnings = tools.merge(ToolSet::new().with(second));
/// assert_eq!(tools.len(), 1);
/// assert_eq!(tools.get("echo").unwrap().spec().description, "first");
/// assert_eq!(warnings.len(), 1);
/// ```
#[derive(Clone, Default)]
pub struct ToolSet {
    tools: Vec<Arc<dyn Tool>>,
}

impl ToolSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a tool (builder style). A duplicate name is dropped; use [`ToolSet::insert`] to see
    /// the warning.
    pub fn with(mut self, tool: impl Tool + 'static) -> Self {
        if let Some(warning) = self.insert(Arc::new(tool)) {
            tracing::warn!(code = %warning.code, "{}", warning.message);
        }
        self
    }

    /// Add a shared tool. Returns a warning, and keeps the existing tool, if the name is taken.
    pub fn insert(&mut self, tool: Arc<dyn Tool>) -> Option<Warning> {
        let name = &tool.spec().name;
        if self.get(name).is_some() {
            return Some(Warning::new(
                "duplicate_tool",
                format!("tool `{name}` is already defined; the later definition was dropped"),
            ));
        }
        self.tools.push(tool);
        None
    }

    /// Append every tool of `other` after this set's tools; returns one warning per dropped
    /// duplicate.
    pub fn merge(&mut self, other: ToolSet) -> Vec<Warning> {
        other.tools.into_iter().filter_map(|tool| self.insert(tool)).collect()
    }

    /// The tool with this name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|tool| tool.spec().name == name)
    }

    /// The tools, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.tools.iter()
    }

    /// The specs, in order.
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.iter().map(|tool| tool.spec())
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

impl fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.specs().map(|spec| &spec.name)).finish()
    }
}
