//! Bringing a server back: a watcher per connection notices when the connection in use is gone
//! (a stdio server exited, an HTTP transport closed for good) and connects again with bounded
//! backoff. In between, calls fail at once with a result that says so, and the host gets a
//! `warning` notice (an `Event::Log` from logger `patchbay.mcp`); once back, the tools are
//! listed again. An HTTP session the server forgot (404) is not this: rmcp re-initializes the
//! session and sends the request again once (safe: the server did not run it).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::connection::{Health, Live, McpClient, Parts, list_tools, open};
use crate::handler::Handler;

/// How often the watcher looks at a connection.
const WATCH_EVERY: Duration = Duration::from_millis(100);

/// How a stopped server is restarted: up to `max_attempts` attempts in a row, waiting
/// `initial_delay` before the first and twice as long before each next one, at most
/// `max_delay`. A restart that succeeds starts the count again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestartPolicy {
    max_attempts: u32,
    initial_delay: Duration,
    max_delay: Duration,
}

impl Default for RestartPolicy {
    /// 5 attempts, from 250 ms up to 4 s apart (about 8 s in all before giving up).
    fn default() -> Self {
        Self {
            max_attempts: 5,
            initial_delay: Duration::from_millis(250),
            max_delay: Duration::from_secs(4),
        }
    }
}

impl RestartPolicy {
    /// Up to `max_attempts` attempts in a row (0: never restart), with the default delays.
    pub fn new(max_attempts: u32) -> Self {
        Self {
            max_attempts,
            ..Self::default()
        }
    }

    /// Never restart: a stopped server stays down.
    pub fn never() -> Self {
        Self::new(0)
    }

    /// Wait `initial` before the first attempt, doubling up to `max`.
    pub fn with_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_delay = initial;
        self.max_delay = max.max(initial);
        self
    }

    /// The most attempts in a row.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    fn delay(&self, attempt: u32) -> Duration {
        let factor = 1u32 << attempt.saturating_sub(1).min(16);
        self.initial_delay.saturating_mul(factor).min(self.max_delay)
    }
}

/// Watch `client` until it closes, restarting it under `policy` (bounded per attempt by
/// `connect_timeout`).
pub(crate) fn watch(client: &Arc<McpClient>, policy: RestartPolicy, connect_timeout: Duration) {
    let weak = Arc::downgrade(client);
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(WATCH_EVERY).await;
            let Some(client) = Weak::upgrade(&weak) else { return };
            if client.closed.load(Ordering::SeqCst) {
                return;
            }
            if client.connection_lost() && !restart(&client, policy, connect_timeout).await {
                return;
            }
        }
    });
}

fn set_health(client: &McpClient, health: Health) {
    client.live.lock().unwrap_or_else(|p| p.into_inner()).health = health;
}

/// Bring `client` back; `false` when it stays down (or was closed meanwhile).
async fn restart(client: &McpClient, policy: RestartPolicy, connect_timeout: Duration) -> bool {
    let notices = &client.shared.notices;
    let stderr = client
        .stderr
        .text()
        .map(|tail| format!(" (stderr: {tail})"))
        .unwrap_or_default();
    // The old connection is gone: close what is left of it (its process group too).
    let old = std::mem::take(&mut *client.parts.lock().unwrap_or_else(|p| p.into_inner()));
    old.close().await;
    let of = policy.max_attempts;
    if of == 0 {
        let reason = format!("it stopped{stderr}");
        notices.notice(
            &client.name,
            "warning",
            format!("MCP server `{}` stopped{stderr}; it is not restarted", client.name),
        );
        set_health(client, Health::Down { reason });
        return false;
    }
    let mut last_error = String::new();
    for attempt in 1..=of {
        set_health(client, Health::Restarting { attempt, of });
        let delay = policy.delay(attempt);
        notices.notice(
            &client.name,
            "warning",
            format!(
                "MCP server `{}` stopped{stderr}; restarting in {delay:?} (attempt {attempt} of {of}); its tools are unavailable meanwhile",
                client.name
            ),
        );
        tokio::time::sleep(delay).await;
        if client.closed.load(Ordering::SeqCst) {
            return false;
        }
        let handler = Handler {
            shared: client.shared.clone(),
        };
        let opened = tokio::time::timeout(connect_timeout, open(&client.recipe, handler, &client.stderr)).await;
        let (service, child, _warnings) = match opened {
            Ok(Ok(opened)) => opened,
            Ok(Err(error)) => {
                last_error = error.to_string();
                continue;
            }
            Err(_) => {
                last_error = format!("no answer within {connect_timeout:?}");
                continue;
            }
        };
        let peer = service.peer().clone();
        let pid = child.as_ref().and_then(|child| child.pid());
        let parts = Parts {
            service: Some(service),
            child,
        };
        match list_tools(&client.name, &peer).await {
            Ok(tools) => *client.tools.lock().await = tools,
            Err(error) => {
                last_error = error.to_string();
                parts.close().await;
                continue;
            }
        }
        if client.closed.load(Ordering::SeqCst) {
            parts.close().await;
            return false;
        }
        *client.parts.lock().unwrap_or_else(|p| p.into_inner()) = parts;
        *client.live.lock().unwrap_or_else(|p| p.into_inner()) = Live {
            peer,
            pid,
            health: Health::Up,
        };
        // The agent lists the tools again before its next model call.
        client.shared.tools_changed.store(true, Ordering::SeqCst);
        notices.notice(&client.name, "info", format!("MCP server `{}` restarted", client.name));
        return true;
    }
    let reason = format!("{of} restarts failed, the last: {last_error}");
    notices.notice(
        &client.name,
        "warning",
        format!(
            "MCP server `{}` stopped and could not be restarted ({reason}); its tools stay unavailable",
            client.name
        ),
    );
    set_health(client, Health::Down { reason });
    false
}
