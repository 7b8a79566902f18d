//! Per-request contexts of the tool server, registered under unguessable ids.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, RwLock, Weak};

use patchbay_core::{RequestContext, ToolSet, context::Extensions};

/// Header carrying the registered context id.
pub const CONTEXT_HEADER: &str = "x-patchbay-context";
/// Prefix of headers carrying request metadata (`x-patchbay-meta-project_id: p1`).
pub const META_HEADER_PREFIX: &str = "x-patchbay-meta-";

/// What a tool call served under a context gets.
#[derive(Clone, Default)]
pub(crate) struct HostContext {
    pub(crate) metadata: BTreeMap<String, String>,
    pub(crate) extensions: Extensions,
    pub(crate) working_dir: Option<PathBuf>,
    pub(crate) tools: Option<ToolSet>,
    /// The span current where the context was registered (an agent runtime's model call): the
    /// parent of the spans of tool calls served under it, so they join the caller's trace
    /// although the MCP request arrives on another task.
    pub(crate) parent: Option<tracing::Span>,
}

impl HostContext {
    pub(crate) fn from_request(context: &RequestContext, tools: Option<ToolSet>) -> Self {
        let current = tracing::Span::current();
        Self {
            metadata: context.metadata.clone(),
            extensions: context.extensions.clone(),
            working_dir: context.working_dir.clone(),
            tools,
            parent: (!current.is_none()).then_some(current),
        }
    }
}

type Map = RwLock<HashMap<String, Arc<HostContext>>>;

/// The contexts registered with one tool server.
#[derive(Clone, Default)]
pub(crate) struct ContextRegistry {
    map: Arc<Map>,
}

impl ContextRegistry {
    pub(crate) fn register(&self, context: HostContext) -> (String, Weak<Map>) {
        let id = fresh_id();
        if let Ok(mut map) = self.map.write() {
            map.insert(id.clone(), Arc::new(context));
        }
        (id, Arc::downgrade(&self.map))
    }

    pub(crate) fn get(&self, id: &str) -> Option<Arc<HostContext>> {
        self.map.read().ok()?.get(id).cloned()
    }

    pub(crate) fn len(&self) -> usize {
        self.map.read().map(|map| map.len()).unwrap_or(0)
    }
}

/// 244 random bits from the OS generator (two v4 UUIDs), as 64 hex digits.
pub(crate) fn fresh_id() -> String {
    format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple())
}

/// A registered context: its id and the headers an MCP client must send to use it.
/// Dropping the guard unregisters the context; later calls with its id are refused.
pub struct ContextGuard {
    id: String,
    headers: BTreeMap<String, String>,
    url: String,
    map: Weak<Map>,
}

impl ContextGuard {
    pub(crate) fn new(
        id: String,
        map: Weak<Map>,
        url: String,
        token: &str,
        metadata: &BTreeMap<String, String>,
    ) -> Self {
        let mut headers = BTreeMap::new();
        headers.insert("Authorization".to_owned(), format!("Bearer {token}"));
        headers.insert(CONTEXT_HEADER.to_owned(), id.clone());
        for (key, value) in metadata {
            if let Some(name) = meta_header_name(key) {
                headers.insert(name, percent_encode(value));
            }
        }
        Self { id, headers, url, map }
    }

    /// The context id (unguessable; treat it as a secret).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The server's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Every header a client sends: the bearer token, the context id, and the metadata
    /// (`x-patchbay-meta-<key>`, values percent-encoded where not plain ASCII). The metadata
    /// headers are for whoever else reads the request: the tool server itself uses the copy
    /// registered with the context and ignores them.
    pub fn headers(&self) -> &BTreeMap<String, String> {
        &self.headers
    }

    /// An [`McpServerConfig`](patchbay_core::context::McpServerConfig) that reaches the server under this
    /// context, for a client set or an agent runtime.
    pub fn server_config(&self, name: impl Into<String>) -> patchbay_core::context::McpServerConfig {
        patchbay_core::context::McpServerConfig {
            name: name.into(),
            transport: patchbay_core::context::McpTransport::Http {
                url: self.url.clone(),
                headers: self.headers.clone(),
            },
        }
    }
}

impl fmt::Debug for ContextGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContextGuard")
            .field("url", &self.url)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Drop for ContextGuard {
    fn drop(&mut self) {
        if let Some(map) = self.map.upgrade()
            && let Ok(mut map) = map.write()
        {
            map.remove(&self.id);
        }
    }
}

/// The header name for a metadata key, if the key can be one (lowercased).
fn meta_header_name(key: &str) -> Option<String> {
    let name = format!("{META_HEADER_PREFIX}{}", key.to_ascii_lowercase());
    http::HeaderName::try_from(name.as_str()).ok().map(|_| name)
}

/// Metadata carried in `x-patchbay-meta-*` headers.
pub(crate) fn metadata_from_headers(headers: &http::HeaderMap) -> BTreeMap<String, String> {
    let mut metadata = BTreeMap::new();
    for (name, value) in headers {
        if let Some(key) = name.as_str().strip_prefix(META_HEADER_PREFIX)
            && let Ok(value) = value.to_str()
        {
            metadata.insert(key.to_owned(), percent_decode(value));
        }
    }
    metadata
}

fn percent_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if (0x20..0x7f).contains(&byte) && byte != b'%' {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn percent_decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = value.get(i + 1..i + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_survives_header_encoding() {
        for value in ["p1", "100%", "naïve — ünïcode", "tab\there", ""] {
            assert_eq!(percent_decode(&percent_encode(value)), value);
            assert!(http::HeaderValue::try_from(percent_encode(value)).is_ok());
        }
    }

    #[test]
    fn ids_are_long_and_fresh() {
        let (a, b) = (fresh_id(), fresh_id());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }
}
