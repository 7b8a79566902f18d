//! The client side of one connection as rmcp sees it: what the server may ask of the host
//! (elicitation, sampling) and what it tells it (progress, log messages, list changes).

// Logging and sampling are deprecated by SEP-2577 in rmcp's model; MCP 2025-11-25 has both.
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use patchbay_core::tool::{ProgressUpdate, ToolProgress};
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationCapability, FormElicitationCapability, Implementation, LoggingMessageNotificationParam,
    ProgressNotificationParam, ProgressToken, ProtocolVersion, SamplingCapability,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::Value;

use crate::interact::Interact;
use crate::notices::Notices;

/// What one server's connection shares with its handler, across restarts.
pub(crate) struct Shared {
    pub(crate) server: String,
    pub(crate) tools_changed: AtomicBool,
    pub(crate) resources_changed: AtomicBool,
    pub(crate) prompts_changed: AtomicBool,
    /// Each routed token's reporter and the last progress it passed on.
    progress: Mutex<HashMap<ProgressToken, (ToolProgress, f64)>>,
    pub(crate) notices: Arc<Notices>,
    pub(crate) interact: Interact,
    protocol_version: Option<ProtocolVersion>,
}

impl Shared {
    pub(crate) fn new(
        server: String,
        notices: Arc<Notices>,
        interact: Interact,
        protocol_version: Option<ProtocolVersion>,
    ) -> Arc<Self> {
        Arc::new(Self {
            server,
            tools_changed: AtomicBool::new(false),
            resources_changed: AtomicBool::new(false),
            prompts_changed: AtomicBool::new(false),
            progress: Mutex::new(HashMap::new()),
            notices,
            interact,
            protocol_version,
        })
    }

    /// Route the notifications of `token` (the one rmcp put in the request's `_meta`) to
    /// `progress` until the guard drops.
    pub(crate) fn route_progress(self: &Arc<Self>, token: ProgressToken, progress: ToolProgress) -> ProgressRoute {
        self.progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(token.clone(), (progress, f64::NEG_INFINITY));
        ProgressRoute {
            shared: self.clone(),
            token,
        }
    }
}

/// A routed `progressToken`; dropping it stops the routing.
pub(crate) struct ProgressRoute {
    shared: Arc<Shared>,
    token: ProgressToken,
}

impl Drop for ProgressRoute {
    fn drop(&mut self) {
        self.shared
            .progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.token);
    }
}

/// rmcp's handler for one connection (cloned into each restart's service).
#[derive(Clone)]
pub(crate) struct Handler {
    pub(crate) shared: Arc<Shared>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.shared.tools_changed.store(true, Ordering::SeqCst);
        self.shared.notices.wake();
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.shared.resources_changed.store(true, Ordering::SeqCst);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.shared.prompts_changed.store(true, Ordering::SeqCst);
    }

    /// rmcp handles notifications concurrently, so two of one call may arrive swapped: a
    /// report whose progress does not exceed the last one passed on is stale and dropped
    /// (MCP's progress increases), which keeps the reporter's sequence increasing.
    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        let mut routes = self.shared.progress.lock().unwrap_or_else(|p| p.into_inner());
        let Some((progress, last)) = routes.get_mut(&params.progress_token) else {
            return;
        };
        if params.progress <= *last {
            return;
        }
        *last = params.progress;
        let mut update = ProgressUpdate::default().with_progress(params.progress, params.total);
        update.message = params.message;
        // Reported under the lock, so reports leave in the order they were checked.
        progress.report(update);
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let level = match serde_json::to_value(params.level) {
            Ok(Value::String(level)) => level,
            _ => "info".to_owned(),
        };
        self.shared
            .notices
            .log(&self.shared.server, level, params.logger, params.data);
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.shared.interact.elicit(&self.shared.server, request).await
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.shared.interact.sample(&self.shared.server, params).await
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.shared.interact.elicitation.is_some() {
            let mut elicitation = ElicitationCapability::new();
            elicitation.form = Some(FormElicitationCapability::new());
            capabilities.elicitation = Some(elicitation);
        }
        if self.shared.interact.sampling.is_some() {
            capabilities.sampling = Some(SamplingCapability::default());
        }
        let config = ClientConfig::new(capabilities, Implementation::new("patchbay", env!("CARGO_PKG_VERSION")));
        match &self.shared.protocol_version {
            Some(version) => config.with_protocol_version(version.clone()),
            None => config,
        }
    }
}
