//! The rmcp handler: every request of a session, resolved to its patchbay context, answered
//! from the server's tools, resources and prompts.

// Logging, sampling and `resources/subscribe` are deprecated by rmcp for 2026-07-28
// (SEP-2577); they are the 2025-11-25 way, which clients speak today.
#![allow(deprecated)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use patchbay_core::kit::run_tool;
use patchbay_core::tool::ToolContent;
use patchbay_core::{Signal, ToolContext, ToolSet};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, CompletionInfo,
    GetPromptRequestParams, GetPromptResponse, Implementation, InitializeRequestParams, InitializeResult, JsonObject,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    PromptsCapability, ReadResourceRequestParams, ReadResourceResponse, Reference, ResourcesCapability,
    ServerCapabilities, ServerConfig, SetLevelRequestParams, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::RequestContext as McpRequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use tracing::Instrument;

use crate::auth::Grant;
use crate::contexts::{CONTEXT_HEADER, ContextRegistry, HostContext, metadata_from_headers};
use crate::convert::{META_CLAUDE_TOOL_USE_ID, META_TOOL_USE_ID, spec_to_mcp, to_call_tool_result};
use crate::server::caller::McpCaller;
use crate::server::prompts::Prompts;
use crate::server::relay::{LevelFilter, Relay};
use crate::server::resources::Resources;
use crate::server::subscriptions::ResourceUpdates;

/// What every session of a server shares.
pub(crate) struct Shared {
    pub(crate) tools: ToolSet,
    pub(crate) registry: ContextRegistry,
    pub(crate) require_context: bool,
    /// The one context of a stdio server.
    pub(crate) fixed: Option<Arc<HostContext>>,
    /// Headers copied into the metadata of anonymous calls.
    pub(crate) metadata_headers: Vec<(http::HeaderName, String)>,
    /// The name and version announced in `initialize`.
    pub(crate) server_info: (String, String),
    pub(crate) resources: Resources,
    pub(crate) prompts: Prompts,
    pub(crate) updates: ResourceUpdates,
}

/// What one session keeps: its id (for its resource subscriptions) and its client's log level.
#[derive(Debug, Default)]
struct Session {
    id: u64,
    level: Arc<LevelFilter>,
}

/// The rmcp handler of one session (a stateless HTTP request is a session of its own).
#[derive(Clone)]
pub(crate) struct Handler {
    shared: Arc<Shared>,
    session: Arc<Session>,
}

impl Handler {
    /// A handler for a new session.
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let session = Session {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            level: Arc::default(),
        };
        Self {
            shared,
            session: Arc::new(session),
        }
    }

    /// The context of this request: registered (by header id), fixed (stdio), or anonymous.
    fn resolve(&self, cx: &McpRequestContext<RoleServer>, for_call: bool) -> Result<Arc<HostContext>, ErrorData> {
        if let Some(fixed) = &self.shared.fixed {
            return Ok(fixed.clone());
        }
        let Some(parts) = cx.extensions.get::<http::request::Parts>() else {
            return Ok(Arc::new(HostContext::default()));
        };
        // What the authorizer vouched for wins over every claim of the request.
        let grant = parts.extensions.get::<Grant>().filter(|g| !g.metadata().is_empty());
        match parts.headers.get(CONTEXT_HEADER) {
            // The registered metadata is the whole metadata: `x-patchbay-meta-*` headers are
            // ignored, or a holder of the token could add keys (`role: admin`) tools trust.
            Some(id) => {
                let host = id
                    .to_str()
                    .ok()
                    .and_then(|id| self.shared.registry.get(id))
                    .ok_or_else(|| {
                        ErrorData::invalid_request(
                            "unknown or expired patchbay context id (x-patchbay-context): the context was never \
                             registered with this tool server or its guard was dropped",
                            None,
                        )
                    })?;
                Ok(match grant {
                    Some(grant) => {
                        let mut granted = HostContext::clone(&host);
                        grant.apply(&mut granted.metadata);
                        Arc::new(granted)
                    }
                    None => host,
                })
            }
            None if for_call && self.shared.require_context => Err(ErrorData::invalid_request(
                "missing x-patchbay-context header: this tool server runs tools only under a registered context",
                None,
            )),
            None => {
                let mut metadata = metadata_from_headers(&parts.headers);
                for (name, key) in &self.shared.metadata_headers {
                    if let Some(value) = parts.headers.get(name).and_then(|v| v.to_str().ok()) {
                        metadata.insert(key.clone(), value.to_owned());
                    }
                }
                if let Some(grant) = grant {
                    grant.apply(&mut metadata);
                }
                Ok(Arc::new(HostContext {
                    metadata,
                    ..HostContext::default()
                }))
            }
        }
    }

    fn tools<'a>(&'a self, host: &'a HostContext) -> &'a ToolSet {
        host.tools.as_ref().unwrap_or(&self.shared.tools)
    }
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder().enable_tools().build();
        capabilities.logging = Some(JsonObject::new());
        capabilities.completions = Some(JsonObject::new());
        if !self.shared.prompts.is_empty() {
            capabilities.prompts = Some(PromptsCapability::default());
        }
        if !self.shared.resources.is_empty() {
            let mut resources = ResourcesCapability::default();
            resources.subscribe = Some(true);
            capabilities.resources = Some(resources);
        }
        let mut info = ServerConfig::new(capabilities);
        let (name, version) = &self.shared.server_info;
        info.server_info = Implementation::new(name.clone(), version.clone());
        info
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: McpRequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        self.resolve(&context, false)?;
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: McpRequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let host = self.resolve(&context, false)?;
        let tools = self.tools(&host).specs().map(spec_to_mcp).collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: McpRequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let host = self.resolve(&context, true)?;
        let name = request.name.as_ref();
        let Some(tool) = self.tools(&host).get(name) else {
            return Err(ErrorData::invalid_params(format!("unknown tool `{name}`"), None));
        };
        let signal = Signal::from(context.ct.clone());
        let mut cx = ToolContext::new()
            .with_signal(signal.clone())
            .with_metadata(host.metadata.clone())
            .with_extensions(host.extensions.clone());
        if let Some(dir) = &host.working_dir {
            cx = cx.with_working_dir(dir.clone());
        }
        // rmcp moves a request's `_meta` into the context; look in both places.
        let tool_use_id = [Some(&context.meta), request.meta.as_ref()]
            .into_iter()
            .flatten()
            .find_map(|meta| {
                [META_TOOL_USE_ID, META_CLAUDE_TOOL_USE_ID]
                    .iter()
                    .find_map(|key| meta.get(*key).and_then(|value| value.as_str()))
            });
        if let Some(id) = tool_use_id {
            cx = cx.with_tool_use_id(id);
        }
        // A caller that sent a `progressToken` gets the tool's progress reports; every caller
        // its log messages at or above its level.
        let token = context
            .meta
            .get_progress_token()
            .or_else(|| request.meta.as_ref().and_then(|meta| meta.get_progress_token()));
        let (relay, progress, log) = Relay::start(
            token,
            self.session.level.clone(),
            context.peer.clone(),
            context.ct.clone(),
        );
        cx = cx.with_progress(progress).with_log(log);
        cx.extensions.insert(McpCaller::new(context.peer.clone()));
        let input = serde_json::Value::Object(request.arguments.clone().unwrap_or_default());
        let span = match &host.parent {
            Some(parent) => tracing::info_span!(parent: parent, "patchbay.mcp.tool", tool = %name),
            None => tracing::info_span!("patchbay.mcp.tool", tool = %name),
        };
        let result = run_tool(tool.as_ref(), input, &cx).instrument(span).await;
        // Every note goes out before the answer (after it, it would be lost).
        relay.finish().await;
        let mut answer = to_call_tool_result(&result);
        if answer.structured_content.is_none() && tool.spec().output_schema.is_some() {
            // A tool declaring an output schema answers with structured content: its first
            // JSON object.
            answer.structured_content = result.content.iter().find_map(|piece| match piece {
                ToolContent::Json {
                    value: value @ Value::Object(_),
                } => Some(value.clone()),
                _ => None,
            });
        }
        Ok(answer.into())
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: McpRequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.resolve(&context, false)?;
        self.session.level.set(request.level);
        Ok(())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: McpRequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.resolve(&context, false)?;
        Ok(ListResourcesResult::with_all_items(self.shared.resources.list()))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: McpRequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.resolve(&context, false)?;
        Ok(ListResourceTemplatesResult::with_all_items(
            self.shared.resources.list_templates(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: McpRequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.resolve(&context, false)?;
        Ok(self.shared.resources.read(&request.uri).await?.into())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: McpRequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.resolve(&context, false)?;
        // A resource that may appear later is fine to watch; a URI nothing serves is not.
        if !self.shared.resources.knows(&request.uri) {
            return Err(ErrorData::resource_not_found(
                format!("no resource `{}`", request.uri),
                None,
            ));
        }
        self.shared
            .updates
            .subscribe(&request.uri, self.session.id, context.peer.clone());
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: McpRequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.resolve(&context, false)?;
        self.shared.updates.unsubscribe(&request.uri, self.session.id);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: McpRequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.resolve(&context, false)?;
        Ok(ListPromptsResult::with_all_items(self.shared.prompts.list()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: McpRequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.resolve(&context, false)?;
        Ok(self.shared.prompts.get(&request.name, request.arguments).await?.into())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: McpRequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.resolve(&context, false)?;
        let (argument, typed) = (&request.argument.name, &request.argument.value);
        let mut values = match &request.r#ref {
            Reference::Prompt(prompt) => self.shared.prompts.complete(&prompt.name, argument, typed),
            Reference::Resource(template) => self.shared.resources.complete(&template.uri, argument, typed),
            _ => Vec::new(),
        };
        let total = values.len();
        values.truncate(CompletionInfo::MAX_VALUES);
        let mut completion = CompletionInfo::new(values).unwrap_or_default();
        completion.total = u32::try_from(total).ok();
        completion.has_more = Some(total > CompletionInfo::MAX_VALUES);
        Ok(CompleteResult::new(completion))
    }
}
