//! Sub-agent definitions: what the CLI's `Agent` tool may start, sent with `initialize`.

use serde::{Deserialize, Serialize};

/// One sub-agent the model may start through the CLI's `Agent` tool (its `subagent_type` is
/// the name it is registered under, see [`ClaudeAgentConfig::with_agent`]). Serialized into
/// `initialize` as the CLI reads it (`{"description", "prompt", "tools"?, "model"?}`).
///
/// ```
/// use patchbay_claude_agent::{AgentDefinition, ClaudeAgentConfig};
/// let config = ClaudeAgentConfig::new().with_agent(
///     "reviewer",
///     AgentDefinition::new("Reviews code for bugs.", "You review code.").with_tools(["Read", "Grep"]),
/// );
/// assert!(config.agents().contains_key("reviewer"));
/// ```
///
/// [`ClaudeAgentConfig::with_agent`]: crate::ClaudeAgentConfig::with_agent
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentDefinition {
    /// When to use it: the model reads this to choose a sub-agent.
    pub description: String,
    /// Its system prompt.
    pub prompt: String,
    /// The tools it may use (`None`: the same as the main agent's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Its model (`sonnet`, `opus`, `haiku`, `inherit`...; `None`: the CLI's default for
    /// sub-agents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl AgentDefinition {
    /// A sub-agent with this description and system prompt, every tool, the default model.
    pub fn new(description: impl Into<String>, prompt: impl Into<String>) -> Self {
        Self {
            description: description.into(),
            prompt: prompt.into(),
            tools: None,
            model: None,
        }
    }

    /// Limit it to these tools.
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.tools = Some(tools.into_iter().map(Into::into).collect());
        self
    }

    /// Run it on this model.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }
}
