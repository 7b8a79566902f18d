//! `GET /sessions/{id}/events`: a session's stored events, then live ones, as server-sent
//! events (see the [module docs](super) for the protocol).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

use std::sync::Arc;

use axum::extract::{Extension, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::error::{ApiError, Id, Params};
use super::streams::{StreamBudget, StreamPermit};
use crate::service::Orchestrator;
use crate::store::{JobStatus, StoredEvent};

/// How long one wait for a change lasts before the stream looks again on its own (a safety
/// net: every change that matters wakes it at once).
const RECHECK: Duration = Duration::from_secs(30);

/// The query of the events endpoint.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct EventsQuery {
    /// Start after this seq (0: from the first event).
    #[serde(default)]
    after: Option<i64>,
    /// `false`: end once the session's run has ended and nothing is queued.
    #[serde(default)]
    follow: Option<bool>,
}

/// Why the stream ended (the data of the final `end` message).
#[derive(Debug, Clone, Copy)]
enum End {
    Deleted,
    Stopping,
    Ended,
    Error,
}

impl End {
    fn as_str(self) -> &'static str {
        match self {
            Self::Deleted => "deleted",
            Self::Stopping => "stopping",
            Self::Ended => "ended",
            Self::Error => "error",
        }
    }
}

/// The state of one event stream between messages.
struct Tail {
    orchestrator: Orchestrator,
    session_id: String,
    session_name: String,
    after: i64,
    follow: bool,
    pending: VecDeque<StoredEvent>,
    /// Set once the stream should end (after what is pending).
    ending: Option<End>,
    done: bool,
    /// The stream's place in the budget, given back when the stream is dropped.
    _permit: StreamPermit,
}

/// The events endpoint: `429` over the stream budget (before any other check, so a flood of
/// streams costs no store reads), else the stream.
pub(super) async fn events(
    State(o): State<Orchestrator>,
    Extension(budget): Extension<Arc<StreamBudget>>,
    Id(id): Id,
    Params(query): Params<EventsQuery>,
    headers: HeaderMap,
) -> Response {
    let permit = match budget.open(&headers) {
        Ok(permit) => permit,
        Err(refused) => return refused.into_response(),
    };
    match follow(o, id, query, headers, permit).await {
        Ok(stream) => stream.into_response(),
        Err(error) => error.into_response(),
    }
}

/// The stream of session `id`'s events, holding `permit` while it is open.
async fn follow(
    o: Orchestrator,
    id: String,
    query: EventsQuery,
    headers: HeaderMap,
    permit: StreamPermit,
) -> Result<Sse<impl futures::Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let after = match headers.get("last-event-id") {
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse::<i64>().ok())
            .ok_or_else(|| ApiError::invalid("the Last-Event-ID header must be an event's seq (a number)"))?,
        None => query.after.unwrap_or(0),
    };
    if after < 0 {
        return Err(ApiError::invalid("`after` and Last-Event-ID must be 0 or more"));
    }
    let session = o.session(&id).await?;
    let tail = Tail {
        orchestrator: o,
        session_id: session.session_id,
        session_name: session.session_name,
        after,
        follow: query.follow.unwrap_or(true),
        pending: VecDeque::new(),
        ending: None,
        done: false,
        _permit: permit,
    };
    let stream = futures::stream::unfold(tail, |mut tail| async move {
        let event = tail.next().await?;
        Some((Ok(event), tail))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

impl Tail {
    /// The next message, or `None` once the end message went out.
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(stored) = self.pending.pop_front() {
                self.after = stored.seq;
                return Some(message(&stored));
            }
            if self.done {
                return None;
            }
            if self.ending.is_none() && self.orchestrator.inner.stop.is_cancelled() {
                self.ending = Some(End::Stopping);
            }
            // Versions first, then look: a change after this point wakes the wait below.
            let name = self.session_name.clone();
            let events_seen = self.orchestrator.events_version(&name);
            let status_seen = self.orchestrator.inner.status.version(&name);
            // Whether the run had ended before the events are read: a run stores all its
            // events before its job ends, so none can come after this read.
            let ended = match self.settled().await {
                Ok(Some(ended)) => ended,
                Ok(None) => {
                    self.ending.get_or_insert(End::Deleted);
                    true
                }
                Err(()) => return Some(self.finish(End::Error)),
            };
            match self
                .orchestrator
                .store()
                .events_since(&self.session_id, self.after)
                .await
            {
                Ok(batch) if !batch.is_empty() => {
                    self.pending = batch.into();
                    continue;
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::error!(%error, session = %name, "cannot read events");
                    return Some(self.finish(End::Error));
                }
            }
            if let Some(end) = self.ending {
                return Some(self.finish(end));
            }
            if ended && !self.follow {
                return Some(self.finish(End::Ended));
            }
            let o = &self.orchestrator;
            tokio::select! {
                _ = o.events_changed(&name, events_seen, RECHECK) => {}
                _ = o.inner.status.changed(&name, status_seen, RECHECK), if !self.follow => {}
                () = o.stopping() => { self.ending = Some(End::Stopping); }
            }
        }
    }

    /// `Some(true)` when the session's run has ended and nothing is queued, `Some(false)` while
    /// a run is queued or going on, `None` once the session is gone.
    async fn settled(&self) -> Result<Option<bool>, ()> {
        let o = &self.orchestrator;
        let session = match o.store().get_session(&self.session_id).await {
            Ok(Some(session)) => session,
            Ok(None) => return Ok(None),
            Err(error) => {
                tracing::error!(%error, session = %self.session_name, "cannot read the session");
                return Err(());
            }
        };
        if self.follow {
            return Ok(Some(false));
        }
        match o.report(&session).await {
            Ok(report) => {
                Ok(Some(report.job_status.as_deref().is_none_or(|s| {
                    s.parse::<JobStatus>().is_ok_and(JobStatus::is_terminal)
                })))
            }
            Err(error) => {
                tracing::error!(%error, session = %self.session_name, "cannot read the session's jobs");
                Err(())
            }
        }
    }

    /// The end message; the stream stops after it.
    fn finish(&mut self, end: End) -> Event {
        self.done = true;
        Event::default()
            .event("end")
            .data(serde_json::json!({ "reason": end.as_str() }).to_string())
    }
}

/// One stored event as the API shows it: the stored event with its time as RFC 3339 text, as
/// every time the API answers.
#[derive(serde::Serialize)]
struct EventView<'a> {
    session_id: &'a str,
    job_id: Option<&'a str>,
    seq: i64,
    event: &'a serde_json::Value,
    created_at: String,
}

/// One stored event as a message: `id: <seq>`, `data: <StoredEvent JSON>` (`created_at` as
/// RFC 3339 text).
fn message(stored: &StoredEvent) -> Event {
    let view = EventView {
        session_id: &stored.session_id,
        job_id: stored.job_id.as_deref(),
        seq: stored.seq,
        event: &stored.event,
        created_at: crate::service::rfc3339(stored.created_at),
    };
    let data = serde_json::to_string(&view).unwrap_or_else(|e| {
        // Values already decoded from JSON: re-encoding cannot fail.
        serde_json::json!({ "seq": stored.seq, "error": e.to_string() }).to_string()
    });
    Event::default().id(stored.seq.to_string()).data(data)
}
