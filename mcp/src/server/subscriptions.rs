//! Resource subscriptions: which sessions asked (`resources/subscribe`) to hear that a
//! resource changed, and the handle a host tells it through.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::{Peer, RoleServer};

/// The sessions subscribed to each resource URI, each with the peer to tell.
type Subscribers = HashMap<String, Vec<(u64, Peer<RoleServer>)>>;

/// Tells the clients subscribed to a resource that it changed: the handle a host keeps to
/// announce changes of the resources it serves (from
/// [`ToolServerBuilder::resource_updates`](crate::ToolServerBuilder::resource_updates), so it
/// works over stdio too, or [`ToolServer::resource_updated`](crate::ToolServer::resource_updated)).
/// Cheap to clone.
#[derive(Clone, Default)]
pub struct ResourceUpdates {
    subscribers: Arc<Mutex<Subscribers>>,
}

impl fmt::Debug for ResourceUpdates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let subscribers = self.lock();
        f.debug_struct("ResourceUpdates")
            .field("uris", &subscribers.len())
            .finish()
    }
}

impl ResourceUpdates {
    fn lock(&self) -> std::sync::MutexGuard<'_, Subscribers> {
        self.subscribers.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Session `session` (whose client is `peer`) wants to hear about `uri`.
    pub(crate) fn subscribe(&self, uri: &str, session: u64, peer: Peer<RoleServer>) {
        let mut subscribers = self.lock();
        let sessions = subscribers.entry(uri.to_owned()).or_default();
        if !sessions.iter().any(|(id, _)| *id == session) {
            sessions.push((session, peer));
        }
    }

    /// Session `session` no longer wants to hear about `uri`.
    pub(crate) fn unsubscribe(&self, uri: &str, session: u64) {
        let mut subscribers = self.lock();
        if let Some(sessions) = subscribers.get_mut(uri) {
            sessions.retain(|(id, _)| *id != session);
            if sessions.is_empty() {
                subscribers.remove(uri);
            }
        }
    }

    /// How many sessions are subscribed to `uri`.
    pub fn subscribers(&self, uri: &str) -> usize {
        self.lock().get(uri).map_or(0, Vec::len)
    }

    /// Send `notifications/resources/updated` for `uri` to every session subscribed to it;
    /// how many were told. A session whose client is gone is forgotten.
    pub async fn updated(&self, uri: &str) -> usize {
        let sessions = self.lock().get(uri).cloned().unwrap_or_default();
        let mut told = 0;
        for (session, peer) in sessions {
            let notified = peer
                .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                .await;
            match notified {
                Ok(()) => told += 1,
                Err(error) => {
                    tracing::debug!(%error, uri, "a subscribed client is gone: forgotten");
                    self.unsubscribe(uri, session);
                }
            }
        }
        told
    }
}
