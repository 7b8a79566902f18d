//! Prompts a host serves beside its tools: named message templates with arguments
//! ([`Prompt`]), their messages made of patchbay [`ToolContent`] and answered with rmcp's
//! model types.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use patchbay_core::tool::ToolContent;
use rmcp::ErrorData;
use rmcp::model::{GetPromptResult, JsonObject, Role};
use serde_json::Value;

use crate::convert::content_to_mcp;
use crate::server::{Complete, boxed};

/// What getting a prompt answers: its messages, or why it cannot be made (sent to the client
/// as an invalid-params error: the arguments are the usual cause).
pub type PromptResult = Result<Vec<PromptMessage>, String>;

type Render = Arc<dyn Fn(BTreeMap<String, String>) -> BoxFuture<'static, PromptResult> + Send + Sync>;

/// Who a prompt message is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptRole {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

/// One message of a prompt: a role and one piece of content (text, an image, an embedded
/// resource, JSON sent as text; audio as the MCP block [`audio_content`](crate::audio_content)
/// makes), converted as tool results are ([`to_call_tool_result`](crate::to_call_tool_result)).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PromptMessage {
    /// Who it is from.
    pub role: PromptRole,
    /// What it says.
    pub content: ToolContent,
}

impl PromptMessage {
    /// A user message.
    pub fn user(content: ToolContent) -> Self {
        Self {
            role: PromptRole::User,
            content,
        }
    }

    /// An assistant message.
    pub fn assistant(content: ToolContent) -> Self {
        Self {
            role: PromptRole::Assistant,
            content,
        }
    }

    fn to_mcp(&self) -> rmcp::model::PromptMessage {
        let role = match self.role {
            PromptRole::User => Role::User,
            PromptRole::Assistant => Role::Assistant,
        };
        rmcp::model::PromptMessage::new(role, content_to_mcp(&self.content))
    }
}

/// One argument of a [`Prompt`].
#[derive(Debug, Clone)]
struct Argument {
    name: String,
    description: Option<String>,
    required: bool,
}

/// A prompt: a name, its arguments, and the messages it makes from their values on each
/// `prompts/get` (a required argument missing is refused before `render` runs).
///
/// ```
/// use patchbay_core::tool::ToolContent;
/// use patchbay_mcp::server::{Prompt, PromptMessage};
/// let review = Prompt::new("review", "Review a file.", |args| async move {
///     Ok(vec![PromptMessage::user(ToolContent::text(format!("Review {}.", args["path"])))])
/// })
/// .with_argument("path", "The file to review", true);
/// assert_eq!(review.name(), "review");
/// ```
#[derive(Clone)]
pub struct Prompt {
    name: String,
    title: Option<String>,
    description: String,
    arguments: Vec<Argument>,
    render: Render,
    complete: Option<Complete>,
}

impl fmt::Debug for Prompt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prompt")
            .field("name", &self.name)
            .field("arguments", &self.arguments)
            .finish_non_exhaustive()
    }
}

impl Prompt {
    /// A prompt named `name` whose messages `render` makes from the arguments' values.
    pub fn new<F, Fut>(name: impl Into<String>, description: impl Into<String>, render: F) -> Self
    where
        F: Fn(BTreeMap<String, String>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = PromptResult> + Send + 'static,
    {
        Self {
            name: name.into(),
            title: None,
            description: description.into(),
            arguments: Vec::new(),
            render: boxed(render),
            complete: None,
        }
    }

    /// A prompt without arguments whose messages are always `messages`.
    pub fn fixed(name: impl Into<String>, description: impl Into<String>, messages: Vec<PromptMessage>) -> Self {
        Self::new(name, description, move |_| {
            let messages = messages.clone();
            async move { Ok(messages) }
        })
    }

    /// The same prompt with one more argument.
    pub fn with_argument(mut self, name: impl Into<String>, description: impl Into<String>, required: bool) -> Self {
        let description: String = description.into();
        self.arguments.push(Argument {
            name: name.into(),
            description: (!description.is_empty()).then_some(description),
            required,
        });
        self
    }

    /// The same prompt with a human-readable title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// The same prompt, completing its arguments for `completion/complete`: `complete` gets
    /// the argument's name and what the user typed so far, and answers suggestions (at most
    /// 100 are sent).
    pub fn with_completion(mut self, complete: impl Fn(&str, &str) -> Vec<String> + Send + Sync + 'static) -> Self {
        self.complete = Some(Arc::new(complete));
        self
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn to_mcp(&self) -> rmcp::model::Prompt {
        let arguments = (!self.arguments.is_empty()).then(|| {
            self.arguments
                .iter()
                .map(|argument| {
                    let mut mcp =
                        rmcp::model::PromptArgument::new(argument.name.clone()).with_required(argument.required);
                    mcp.description = argument.description.clone();
                    mcp
                })
                .collect()
        });
        let mut prompt = rmcp::model::Prompt::new(self.name.clone(), Some(self.description.clone()), arguments);
        prompt.title = self.title.clone();
        prompt
    }
}

/// The prompts of a server.
#[derive(Clone, Default, Debug)]
pub(crate) struct Prompts {
    pub(crate) all: Vec<Prompt>,
}

impl Prompts {
    pub(crate) fn is_empty(&self) -> bool {
        self.all.is_empty()
    }

    pub(crate) fn list(&self) -> Vec<rmcp::model::Prompt> {
        self.all.iter().map(Prompt::to_mcp).collect()
    }

    /// The messages of prompt `name` for these arguments.
    pub(crate) async fn get(&self, name: &str, arguments: Option<JsonObject>) -> Result<GetPromptResult, ErrorData> {
        let Some(prompt) = self.all.iter().find(|p| p.name == name) else {
            return Err(ErrorData::invalid_params(format!("no prompt `{name}`"), None));
        };
        let values: BTreeMap<String, String> = arguments
            .unwrap_or_default()
            .into_iter()
            .map(|(key, value)| {
                let text = match value {
                    Value::String(text) => text,
                    other => other.to_string(),
                };
                (key, text)
            })
            .collect();
        if let Some(missing) = prompt
            .arguments
            .iter()
            .find(|a| a.required && !values.contains_key(&a.name))
        {
            return Err(ErrorData::invalid_params(
                format!("prompt `{name}` needs the argument `{}`", missing.name),
                None,
            ));
        }
        let messages = (prompt.render)(values)
            .await
            .map_err(|message| ErrorData::invalid_params(format!("prompt `{name}`: {message}"), None))?;
        Ok(
            GetPromptResult::new(messages.iter().map(PromptMessage::to_mcp).collect())
                .with_description(prompt.description.clone()),
        )
    }

    /// Suggestions for `argument` of prompt `name` given what was typed.
    pub(crate) fn complete(&self, name: &str, argument: &str, value: &str) -> Vec<String> {
        self.all
            .iter()
            .find(|p| p.name == name)
            .and_then(|p| p.complete.as_ref())
            .map(|complete| complete(argument, value))
            .unwrap_or_default()
    }
}
