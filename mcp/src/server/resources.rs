//! Resources a host serves beside its tools: fixed URIs ([`Resource`]) and URI templates
//! ([`ResourceTemplate`]), read with patchbay's [`ToolContent`] and answered with rmcp's
//! model types.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use patchbay_core::tool::ToolContent;
use rmcp::ErrorData;
use rmcp::model::{ReadResourceResult, ResourceContents};

use crate::server::{Complete, boxed};

/// What reading a resource answers: its contents, or why it cannot be read (sent to the
/// client as an internal error).
pub type ReadResult = Result<Vec<ToolContent>, String>;

type Read = Arc<dyn Fn(ResourceRequest) -> BoxFuture<'static, ReadResult> + Send + Sync>;

/// One `resources/read` of a served resource: the URI asked for and, for a
/// [`ResourceTemplate`], the values its variables took in that URI.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResourceRequest {
    /// The URI asked for.
    pub uri: String,
    /// The template's variables (`{id}` → `id`) and their values; empty for a [`Resource`].
    pub variables: BTreeMap<String, String>,
}

/// The facts listed about a resource or template.
#[derive(Debug, Clone, Default)]
struct Facts {
    title: Option<String>,
    description: Option<String>,
    mime_type: Option<String>,
}

impl Facts {
    /// The title, description and MIME type, in that order.
    fn into_parts(self) -> (Option<String>, Option<String>, Option<String>) {
        (self.title, self.description, self.mime_type)
    }
}

/// What a [`Resource`] and a [`ResourceTemplate`] share: the URI or template they answer
/// for, their name, the facts listed about them, and how they are read.
#[derive(Clone)]
struct Served {
    key: String,
    name: String,
    facts: Facts,
    read: Read,
}

impl Served {
    fn new(key: String, name: String, read: Read) -> Self {
        Self {
            key,
            name,
            facts: Facts::default(),
            read,
        }
    }

    /// `Debug` for the served type named `kind`, its key shown as the field `key_field`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>, kind: &str, key_field: &str) -> fmt::Result {
        f.debug_struct(kind)
            .field(key_field, &self.key)
            .field("name", &self.name)
            .field("facts", &self.facts)
            .finish_non_exhaustive()
    }
}

/// The builders of the facts listed about a resource or template (`$what` names it in the
/// docs); the type has a `served: Served` field.
macro_rules! facts_builders {
    ($what:literal) => {
        #[doc = concat!("The same ", $what, " with a human-readable title.")]
        pub fn with_title(mut self, title: impl Into<String>) -> Self {
            self.served.facts.title = Some(title.into());
            self
        }

        #[doc = concat!("The same ", $what, " with a description.")]
        pub fn with_description(mut self, description: impl Into<String>) -> Self {
            self.served.facts.description = Some(description.into());
            self
        }

        #[doc = concat!("The same ", $what, " with a MIME type (listed, and given to contents without one).")]
        pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
            self.served.facts.mime_type = Some(mime_type.into());
            self
        }
    };
}

/// A resource at a fixed URI, read on each `resources/read`.
///
/// Its contents are patchbay [`ToolContent`]s: a `Resource` piece is sent as it is (its URI
/// defaulting to the resource's), `Text` and `Json` as text contents (`Json` with
/// `application/json`), `Image` as a blob with its media type; a piece without a MIME type
/// gets the resource's.
///
/// ```
/// use patchbay_mcp::server::Resource;
/// let notes = Resource::text("notes://today", "today", "Buy milk.").with_description("Today's notes");
/// assert_eq!(notes.uri(), "notes://today");
/// ```
#[derive(Clone)]
pub struct Resource {
    served: Served,
}

impl fmt::Debug for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.served.fmt(f, "Resource", "uri")
    }
}

impl Resource {
    /// A resource at `uri` named `name`, whose contents `read` gives on each read.
    pub fn new<F, Fut>(uri: impl Into<String>, name: impl Into<String>, read: F) -> Self
    where
        F: Fn(ResourceRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ReadResult> + Send + 'static,
    {
        Self {
            served: Served::new(uri.into(), name.into(), boxed(read)),
        }
    }

    /// A resource whose contents are always `text` (`text/plain`).
    pub fn text(uri: impl Into<String>, name: impl Into<String>, text: impl Into<String>) -> Self {
        let text = text.into();
        Self::new(uri, name, move |_| {
            let text = text.clone();
            async move { Ok(vec![ToolContent::text(text)]) }
        })
        .with_mime_type("text/plain")
    }

    /// A resource whose contents are always the binary `base64` of `mime_type`.
    pub fn blob(
        uri: impl Into<String>,
        name: impl Into<String>,
        mime_type: impl Into<String>,
        base64: impl Into<String>,
    ) -> Self {
        let (uri, base64, mime_type) = (uri.into(), base64.into(), mime_type.into());
        let piece = ToolContent::Resource {
            uri: uri.clone(),
            mime_type: Some(mime_type.clone()),
            text: None,
            blob: Some(base64),
        };
        Self::new(uri, name, move |_| {
            let piece = piece.clone();
            async move { Ok(vec![piece]) }
        })
        .with_mime_type(mime_type)
    }

    facts_builders!("resource");

    /// Its URI.
    pub fn uri(&self) -> &str {
        &self.served.key
    }

    fn to_mcp(&self) -> rmcp::model::Resource {
        let Served { key, name, facts, .. } = &self.served;
        let mut resource = rmcp::model::Resource::new(key.clone(), name.clone());
        (resource.title, resource.description, resource.mime_type) = facts.clone().into_parts();
        resource
    }
}

/// Resources under a URI template (RFC 6570 level 1: `{name}` stands for one path segment,
/// no `/`), read with the values the template's variables take in the URI asked for.
///
/// ```
/// use patchbay_core::tool::ToolContent;
/// use patchbay_mcp::server::ResourceTemplate;
/// let users = ResourceTemplate::new("users://{id}/profile", "profile", |request| async move {
///     Ok(vec![ToolContent::text(format!("user {}", request.variables["id"]))])
/// });
/// assert_eq!(users.matches("users://7/profile").unwrap()["id"], "7");
/// assert!(users.matches("users://7/other").is_none());
/// ```
#[derive(Clone)]
pub struct ResourceTemplate {
    served: Served,
    complete: Option<Complete>,
}

impl fmt::Debug for ResourceTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.served.fmt(f, "ResourceTemplate", "template")
    }
}

impl ResourceTemplate {
    /// Resources under `template` named `name`, whose contents `read` gives.
    pub fn new<F, Fut>(template: impl Into<String>, name: impl Into<String>, read: F) -> Self
    where
        F: Fn(ResourceRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ReadResult> + Send + 'static,
    {
        Self {
            served: Served::new(template.into(), name.into(), boxed(read)),
            complete: None,
        }
    }

    facts_builders!("template");

    /// The same template, completing its variables for `completion/complete`: `complete`
    /// gets the variable's name and what the user typed so far, and answers suggestions
    /// (at most 100 are sent).
    pub fn with_completion(mut self, complete: impl Fn(&str, &str) -> Vec<String> + Send + Sync + 'static) -> Self {
        self.complete = Some(Arc::new(complete));
        self
    }

    /// The variables' values when `uri` is under this template.
    pub fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        match_template(&self.served.key, uri)
    }

    fn to_mcp(&self) -> rmcp::model::ResourceTemplate {
        let Served { key, name, facts, .. } = &self.served;
        let mut template = rmcp::model::ResourceTemplate::new(key.clone(), name.clone());
        (template.title, template.description, template.mime_type) = facts.clone().into_parts();
        template
    }
}

/// The values of `template`'s `{variables}` in `uri`: each one path segment (no `/`), not
/// empty; literal text must match exactly.
fn match_template(template: &str, uri: &str) -> Option<BTreeMap<String, String>> {
    let mut variables = BTreeMap::new();
    let mut rest_template = template;
    let mut rest_uri = uri;
    while let Some(open) = rest_template.find('{') {
        let literal = &rest_template[..open];
        rest_uri = rest_uri.strip_prefix(literal)?;
        let close = rest_template[open..].find('}')? + open;
        let name = &rest_template[open + 1..close];
        rest_template = &rest_template[close + 1..];
        // The value runs to the next literal character (or a `/`, or the end).
        let stop = rest_template.chars().next();
        let end = rest_uri
            .char_indices()
            .find(|(_, c)| *c == '/' || Some(*c) == stop)
            .map_or(rest_uri.len(), |(i, _)| i);
        if end == 0 {
            return None;
        }
        variables.insert(name.to_owned(), rest_uri[..end].to_owned());
        rest_uri = &rest_uri[end..];
    }
    (rest_template == rest_uri).then_some(variables)
}

/// The resources and templates of a server.
#[derive(Clone, Default, Debug)]
pub(crate) struct Resources {
    pub(crate) fixed: Vec<Resource>,
    pub(crate) templates: Vec<ResourceTemplate>,
}

impl Resources {
    pub(crate) fn is_empty(&self) -> bool {
        self.fixed.is_empty() && self.templates.is_empty()
    }

    pub(crate) fn list(&self) -> Vec<rmcp::model::Resource> {
        self.fixed.iter().map(Resource::to_mcp).collect()
    }

    pub(crate) fn list_templates(&self) -> Vec<rmcp::model::ResourceTemplate> {
        self.templates.iter().map(ResourceTemplate::to_mcp).collect()
    }

    /// Whether `uri` names a served resource (fixed or under a template).
    pub(crate) fn knows(&self, uri: &str) -> bool {
        self.fixed.iter().any(|r| r.served.key == uri) || self.templates.iter().any(|t| t.matches(uri).is_some())
    }

    /// Read `uri`: a fixed resource first, else the first template it is under.
    pub(crate) async fn read(&self, uri: &str) -> Result<ReadResourceResult, ErrorData> {
        let found = match self.fixed.iter().find(|r| r.served.key == uri) {
            Some(resource) => Some((&resource.served, BTreeMap::new())),
            None => self
                .templates
                .iter()
                .find_map(|t| t.matches(uri).map(|vars| (&t.served, vars))),
        };
        let Some((Served { read, facts, .. }, variables)) = found else {
            return Err(ErrorData::resource_not_found(
                format!("no resource `{uri}`"),
                Some(serde_json::json!({"uri": uri})),
            ));
        };
        let request = ResourceRequest {
            uri: uri.to_owned(),
            variables,
        };
        let pieces = read(request)
            .await
            .map_err(|message| ErrorData::internal_error(format!("cannot read `{uri}`: {message}"), None))?;
        let mime = facts.mime_type.as_deref();
        Ok(ReadResourceResult::new(
            pieces.iter().map(|piece| contents_to_mcp(uri, mime, piece)).collect(),
        ))
    }

    /// Suggestions for `argument` of the template `template` given what was typed.
    pub(crate) fn complete(&self, template: &str, argument: &str, value: &str) -> Vec<String> {
        self.templates
            .iter()
            .find(|t| t.served.key == template)
            .and_then(|t| t.complete.as_ref())
            .map(|complete| complete(argument, value))
            .unwrap_or_default()
    }
}

/// One piece of a read as MCP resource contents under `uri` (see [`Resource`]).
fn contents_to_mcp(uri: &str, mime: Option<&str>, piece: &ToolContent) -> ResourceContents {
    let mime = |own: Option<&str>, fallback: &str| Some(own.or(mime).unwrap_or(fallback).to_owned());
    match piece {
        ToolContent::Text { text } => ResourceContents::TextResourceContents {
            uri: uri.to_owned(),
            mime_type: mime(None, "text/plain"),
            text: text.clone(),
            meta: None,
        },
        ToolContent::Json { value } => ResourceContents::TextResourceContents {
            uri: uri.to_owned(),
            mime_type: Some("application/json".to_owned()),
            text: value.to_string(),
            meta: None,
        },
        ToolContent::Image { media_type, data } => ResourceContents::BlobResourceContents {
            uri: uri.to_owned(),
            mime_type: Some(media_type.clone()),
            blob: data.clone(),
            meta: None,
        },
        ToolContent::Resource {
            uri: own,
            mime_type,
            text,
            blob,
        } => {
            let uri = if own.is_empty() { uri.to_owned() } else { own.clone() };
            match blob {
                Some(blob) => ResourceContents::BlobResourceContents {
                    uri,
                    mime_type: mime(mime_type.as_deref(), "application/octet-stream"),
                    blob: blob.clone(),
                    meta: None,
                },
                None => ResourceContents::TextResourceContents {
                    uri,
                    mime_type: mime(mime_type.as_deref(), "text/plain"),
                    text: text.clone().unwrap_or_default(),
                    meta: None,
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::match_template;

    #[test]
    fn template_variables_take_one_segment_each() {
        let vars = match_template("test://template/{id}/data", "test://template/123/data").expect("matches");
        assert_eq!(vars["id"], "123");
        assert!(match_template("test://template/{id}/data", "test://template/1/2/data").is_none());
        assert!(match_template("test://template/{id}/data", "test://template//data").is_none());
        let vars = match_template("file:///{dir}/{name}.txt", "file:///a/b.txt").expect("matches");
        assert_eq!((vars["dir"].as_str(), vars["name"].as_str()), ("a", "b"));
        assert!(match_template("x://{a}", "y://1").is_none());
    }
}
