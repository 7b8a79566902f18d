//! The JSON HTTP API (filled in below).

use axum::Router;

use crate::service::Orchestrator;

/// The API routes over `orchestrator`.
pub fn routes(orchestrator: Orchestrator) -> Router {
    let _ = orchestrator;
    Router::new()
}
