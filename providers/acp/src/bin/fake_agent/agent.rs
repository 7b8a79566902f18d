//! The agent's state and its answers to the client's requests and notifications.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agent_client_protocol::v1::schema::{
    AuthenticateRequest, AuthenticateResponse, CancelNotification, InitializeRequest, InitializeResponse,
    LoadSessionRequest, LoadSessionResponse, McpServer, NewSessionRequest, NewSessionResponse, PromptRequest,
    PromptResponse, SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::io::Barriers;
use crate::mcp::McpClients;
use crate::script::Script;
use crate::steps::Turn;

/// Everything the agent remembers across requests.
#[derive(Debug)]
pub(crate) struct FakeAgent {
    pub(crate) script: Script,
    pub(crate) barriers: Arc<Barriers>,
    next_prompt: AtomicUsize,
    next_session: AtomicUsize,
    sessions: Mutex<HashMap<String, Session>>,
}

#[derive(Debug)]
struct Session {
    mcp: Arc<tokio::sync::Mutex<McpClients>>,
    /// The running prompt's cancellation.
    cancel: Option<CancellationToken>,
}

impl FakeAgent {
    pub(crate) fn new(script: Script, barriers: Arc<Barriers>) -> Self {
        Self {
            script,
            barriers,
            next_prompt: AtomicUsize::new(0),
            next_session: AtomicUsize::new(1),
            sessions: Mutex::new(HashMap::new()),
        }
    }

    fn sessions(&self) -> MutexGuard<'_, HashMap<String, Session>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn remember(&self, id: String, servers: Vec<McpServer>) {
        let session = Session {
            mcp: Arc::new(tokio::sync::Mutex::new(McpClients::new(servers))),
            cancel: None,
        };
        self.sessions().insert(id, session);
    }

    pub(crate) fn initialize(
        &self,
        _request: InitializeRequest,
        responder: Responder<InitializeResponse>,
    ) -> Result<(), Error> {
        let script = &self.script;
        let info = script
            .agent_info
            .clone()
            .unwrap_or_else(|| json!({"name": "patchbay-fake-agent", "version": env!("CARGO_PKG_VERSION")}));
        let response = json!({
            "protocolVersion": 1,
            "agentCapabilities": {
                "loadSession": script.load_session,
                "promptCapabilities": {"image": true, "embeddedContext": true},
                "mcpCapabilities": {"http": script.mcp_http},
            },
            "authMethods": script.auth_methods,
            "agentInfo": info,
        });
        responder.respond_with_result(crate::script::from_json(response))
    }

    pub(crate) fn authenticate(
        &self,
        _request: AuthenticateRequest,
        responder: Responder<AuthenticateResponse>,
    ) -> Result<(), Error> {
        responder.respond(AuthenticateResponse::new())
    }

    pub(crate) fn new_session(
        &self,
        request: NewSessionRequest,
        responder: Responder<NewSessionResponse>,
    ) -> Result<(), Error> {
        let id = format!("sess_{}", self.next_session.fetch_add(1, Ordering::SeqCst));
        self.remember(id.clone(), request.mcp_servers);
        responder.respond(NewSessionResponse::new(id))
    }

    pub(crate) fn load_session(
        &self,
        request: LoadSessionRequest,
        responder: Responder<LoadSessionResponse>,
    ) -> Result<(), Error> {
        if !self.script.load_session {
            return responder.respond_with_error(Error::method_not_found());
        }
        self.remember(request.session_id.0.to_string(), request.mcp_servers);
        responder.respond(LoadSessionResponse::new())
    }

    pub(crate) fn set_mode(
        &self,
        _request: SetSessionModeRequest,
        responder: Responder<SetSessionModeResponse>,
    ) -> Result<(), Error> {
        responder.respond(SetSessionModeResponse::new())
    }

    pub(crate) fn cancel(&self, notification: &CancelNotification) {
        if let Some(cancel) = self
            .sessions()
            .get(notification.session_id.0.as_ref())
            .and_then(|session| session.cancel.as_ref())
        {
            cancel.cancel();
        }
    }

    /// Play the next prompt of the script and answer it. Runs outside the dispatch loop, so
    /// `session/cancel` and the client's answers get through while it waits.
    pub(crate) async fn prompt(
        self: Arc<Self>,
        request: PromptRequest,
        responder: Responder<PromptResponse>,
        cx: ConnectionTo<Client>,
    ) {
        let session_id = request.session_id.0.to_string();
        let cancel = CancellationToken::new();
        let mcp = match self.sessions().get_mut(&session_id) {
            Some(session) => {
                session.cancel = Some(cancel.clone());
                session.mcp.clone()
            }
            None => {
                let error = Error::invalid_params().data(json!({"reason": "unknown session", "sessionId": session_id}));
                if let Err(error) = responder.respond_with_error(error) {
                    eprintln!("patchbay-acp-fake-agent: cannot answer session/prompt: {error}");
                }
                return;
            }
        };
        let index = self.next_prompt.fetch_add(1, Ordering::SeqCst);
        let steps = self.script.prompts.get(index).cloned().unwrap_or_default();
        let turn = Turn::new(self.barriers.clone(), cx, session_id, cancel, mcp);
        let sent = match turn.run(steps).await {
            Ok(response) => responder.respond(response),
            Err(error) => responder.respond_with_error(error),
        };
        if let Err(error) = sent {
            eprintln!("patchbay-acp-fake-agent: cannot answer session/prompt: {error}");
        }
    }
}
