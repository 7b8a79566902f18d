//! One ACP connection to one agent process, on the official SDK (`agent-client-protocol`, v1
//! client role): the SDK runs the JSON-RPC; this module starts its driver on a task, sends
//! requests, and routes what the agent sends to the session it names:
//! - `session/update` notifications go to the session's run, in order, as their JSON;
//! - `session/request_permission` goes to the session's run (which asks the approval handler)
//!   on a task of its own, so the dispatch loop is never held;
//! - `fs/read_text_file` and `fs/write_text_file` are served, confined to the session's
//!   working directory, when the configuration allows them; refused otherwise;
//! - anything else the agent asks (terminals, which are not offered) is `method not found`.
//!
//! Messages are sent and read as JSON (`UntypedMessage`): the crate reads every field it uses
//! leniently, so an agent a protocol revision ahead is read, not refused.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::UntypedMessage;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Agent, Client};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::config::FileAccess;
use crate::error::Error;
use crate::files;
use crate::transport::Fault;

/// What a session's run receives from the agent.
#[derive(Debug)]
pub(crate) enum Inbound {
    /// A `session/update`'s `update` object.
    Update(Value),
    /// A permission request's params, and where to send the chosen outcome (the
    /// `RequestPermissionOutcome` JSON); dropping it answers `cancelled`.
    Permission(Value, oneshot::Sender<Value>),
}

/// Where one session's traffic goes.
#[derive(Debug, Clone)]
pub(crate) struct Route {
    pub(crate) tx: mpsc::UnboundedSender<Inbound>,
    pub(crate) root: Option<std::path::PathBuf>,
    pub(crate) access: FileAccess,
}

type Routes = Arc<Mutex<HashMap<String, Route>>>;

/// A live connection.
pub(crate) struct Connection {
    cx: ConnectionTo<Agent>,
    routes: Routes,
    shutdown: Option<oneshot::Sender<()>>,
    driver: Option<tokio::task::JoinHandle<()>>,
    fault: Fault,
    /// The agent's `initialize` answer.
    pub(crate) agent: Value,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").finish_non_exhaustive()
    }
}

/// A session's route, removed when dropped.
#[derive(Debug)]
pub(crate) struct RouteGuard {
    routes: Routes,
    session: String,
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        if let Ok(mut routes) = self.routes.lock() {
            routes.remove(&self.session);
        }
    }
}

impl Connection {
    /// Start the SDK's driver over `transport` and `initialize` (within `timeout`).
    pub(crate) async fn open(
        transport: impl agent_client_protocol::ConnectTo<Client> + 'static,
        fault: Fault,
        access: FileAccess,
        timeout: Duration,
    ) -> Result<Self, Error> {
        let routes: Routes = Arc::default();
        let (cx_tx, cx_rx) = oneshot::channel();
        let (shutdown_tx, shutdown_rx) = oneshot::channel::<()>();
        let notify_routes = routes.clone();
        let request_routes = routes.clone();
        let driver = Client
            .v1()
            .name("patchbay-acp")
            .on_receive_notification(
                async move |message: UntypedMessage, _cx| {
                    route_notification(&notify_routes, message);
                    Ok(())
                },
                agent_client_protocol::on_receive_notification!(),
            )
            .on_receive_request(
                async move |message: UntypedMessage, responder, _cx| {
                    let routes = request_routes.clone();
                    tokio::spawn(async move {
                        let (method, params) = message.into_parts();
                        let _ = match answer(&routes, &method, params).await {
                            Ok(value) => responder.respond(value),
                            Err(error) => responder.respond_with_error(error),
                        };
                    });
                    Ok(())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
                let _ = cx_tx.send(cx.clone());
                let _ = shutdown_rx.await;
                Ok(())
            });
        let driver = tokio::spawn(async move {
            if let Err(error) = driver.await {
                tracing::debug!(code = i32::from(error.code), "ACP connection ended: {}", error.message);
            }
        });
        let cx = cx_rx.await.map_err(|_| Error::Exited {
            status: String::new(),
            tail: String::new(),
        })?;
        let mut connection = Self {
            cx,
            routes,
            shutdown: Some(shutdown_tx),
            driver: Some(driver),
            fault,
            agent: Value::Null,
        };
        let params = json!({
            "protocolVersion": 1,
            "clientCapabilities": {
                "fs": {
                    "readTextFile": access != FileAccess::Off,
                    "writeTextFile": access == FileAccess::ReadWrite,
                },
                "terminal": false,
            },
            "clientInfo": { "name": "patchbay", "version": env!("CARGO_PKG_VERSION") },
        });
        connection.agent = connection.request_within("initialize", params, timeout).await?;
        Ok(connection)
    }

    /// A request, answered within `timeout`.
    pub(crate) async fn request_within(
        &self,
        method: &'static str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, Error> {
        match tokio::time::timeout(timeout, self.request(method, params)).await {
            Ok(result) => result,
            Err(_) => Err(Error::Timeout {
                method,
                seconds: timeout.as_secs(),
            }),
        }
    }

    /// A request and its answer (a JSON-RPC error is [`Error::Refused`]; a connection that ended
    /// is the transport's fault when it had one, else [`Error::Exited`]).
    pub(crate) async fn request(&self, method: &'static str, params: Value) -> Result<Value, Error> {
        let message = UntypedMessage::new(method, params).map_err(|e| Error::Protocol { message: e.message })?;
        match self.cx.send_request(message).block_task().await {
            Ok(value) => Ok(value),
            Err(error) => Err(self.error_of(method, error)),
        }
    }

    /// A notification (`session/cancel`).
    pub(crate) fn notify(&self, method: &'static str, params: Value) -> Result<(), Error> {
        let message = UntypedMessage::new(method, params).map_err(|e| Error::Protocol { message: e.message })?;
        self.cx
            .send_notification(message)
            .map_err(|error| self.error_of(method, error))
    }

    fn error_of(&self, method: &'static str, error: agent_client_protocol::Error) -> Error {
        if let Some(fault) = self.fault.error() {
            return fault;
        }
        if agent_client_protocol::is_incoming_transport_closed(&error)
            || agent_client_protocol::is_connection_terminated(&error)
        {
            return Error::Exited {
                status: String::new(),
                tail: String::new(),
            };
        }
        Error::Refused {
            method,
            code: i32::from(error.code),
            message: error.message,
        }
    }

    /// Route `session`'s traffic to `route` until the guard drops.
    pub(crate) fn route(&self, session: &str, route: Route) -> RouteGuard {
        if let Ok(mut routes) = self.routes.lock() {
            routes.insert(session.to_owned(), route);
        }
        RouteGuard {
            routes: self.routes.clone(),
            session: session.to_owned(),
        }
    }

    /// End the connection: the driver stops and drops the transport, closing the agent's stdin.
    pub(crate) async fn close(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(driver) = self.driver.take() {
            let _ = tokio::time::timeout(Duration::from_secs(2), driver).await;
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(driver) = self.driver.take() {
            driver.abort();
        }
    }
}

fn session_of(params: &Value) -> Option<String> {
    params.get("sessionId").and_then(Value::as_str).map(str::to_owned)
}

fn route_of(routes: &Routes, params: &Value) -> Option<Route> {
    let session = session_of(params)?;
    routes.lock().ok()?.get(&session).cloned()
}

fn route_notification(routes: &Routes, message: UntypedMessage) {
    let (method, mut params) = message.into_parts();
    if method != "session/update" {
        return;
    }
    let Some(route) = route_of(routes, &params) else {
        return;
    };
    if let Some(update) = params.get_mut("update").map(Value::take) {
        let _ = route.tx.send(Inbound::Update(update));
    }
}

/// The answer to one request from the agent.
async fn answer(routes: &Routes, method: &str, params: Value) -> Result<Value, agent_client_protocol::Error> {
    let not_found = agent_client_protocol::Error::method_not_found;
    let route = route_of(routes, &params)
        .ok_or_else(|| agent_client_protocol::Error::invalid_params().data(json!({ "reason": "unknown session" })))?;
    match method {
        "session/request_permission" => {
            let (tx, rx) = oneshot::channel();
            let _ = route.tx.send(Inbound::Permission(params, tx));
            let outcome = rx.await.unwrap_or_else(|_| json!({ "outcome": "cancelled" }));
            Ok(json!({ "outcome": outcome }))
        }
        "fs/read_text_file" if route.access != FileAccess::Off => files::read(route.root.as_deref(), &params)
            .await
            .map(|content| json!({ "content": content })),
        "fs/write_text_file" if route.access == FileAccess::ReadWrite => {
            files::write(route.root.as_deref(), &params).await.map(|()| json!({}))
        }
        _ => Err(not_found()),
    }
}
