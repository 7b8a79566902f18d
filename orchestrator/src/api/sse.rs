//! `GET /sessions/{id}/events`: a session's stored events, then live ones, as server-sent
//! events (see the [module docs](super) for the protocol). The resume point, the frames and
//! the replay-then-follow loop are `patchbay_resume`'s; this file is the session as a
//! [`Source`]: its events from the store, its change notifications, and why it ends.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use patchbay_resume::{
    Batch, DEFAULT_KEEP_ALIVE, EventName, KeepAlive, LAST_EVENT_ID, Source, Tailed, frame, last_event_id, tail,
};
use serde::Deserialize;

use super::error::{ApiError, Id, Params};
use super::streams::{StreamBudget, StreamPermit};
use crate::service::Orchestrator;
use crate::store::{JobStatus, StoredEvent};

/// How long one wait for a change lasts before the stream looks again on its own (a safety
/// net: every change that matters wakes it at once).
const RECHECK: Duration = Duration::from_secs(30);

/// The name of the stream's final message.
const END: EventName = EventName::from_static("end");

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

/// One session's events as a source for [`tail`].
struct SessionEvents {
    orchestrator: Orchestrator,
    session_id: String,
    session_name: String,
    follow: bool,
    /// Set once the stream should end (after what is stored).
    ending: Option<End>,
    /// The change counters seen when the last read began.
    events_seen: u64,
    status_seen: u64,
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
        Ok(stream) => stream,
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
) -> Result<Response, ApiError> {
    let header = headers.get(LAST_EVENT_ID).map(|value| value.as_bytes());
    let after = last_event_id(header, query.after).map_err(|e| ApiError::invalid(e.to_string()))?;
    // Seqs are the store's `i64`: a larger id names no event.
    if i64::try_from(after).is_err() {
        return Err(ApiError::invalid(patchbay_resume::Error::NotASeq.to_string()));
    }
    let session = o.session(&id).await?;
    let source = SessionEvents {
        orchestrator: o,
        session_id: session.session_id,
        session_name: session.session_name,
        follow: query.follow.unwrap_or(true),
        ending: None,
        events_seen: 0,
        status_seen: 0,
        _permit: permit,
    };
    let frames = tail(source, after).map(|next| match next {
        Tailed::Item(seq, stored) => message(seq, &stored),
        Tailed::End(end) => finish(end),
    });
    let body = Body::from_stream(KeepAlive::new(frames, DEFAULT_KEEP_ALIVE).map(Ok::<_, Infallible>));
    Ok((
        [
            (header::CONTENT_TYPE, patchbay_resume::CONTENT_TYPE),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response())
}

impl Source for SessionEvents {
    type Item = StoredEvent;
    type End = End;

    async fn read(&mut self, after: u64) -> Batch<StoredEvent, End> {
        if self.ending.is_none() && self.orchestrator.inner.stop.is_cancelled() {
            self.ending = Some(End::Stopping);
        }
        // Versions first, then look: a change after this point wakes `wait`.
        self.events_seen = self.orchestrator.events_version(&self.session_name);
        self.status_seen = self.orchestrator.inner.status.version(&self.session_name);
        // Whether the run had ended before the events are read: a run stores all its events
        // before its job ends, so none can come after this read.
        let ended = match self.settled().await {
            Ok(Some(ended)) => ended,
            Ok(None) => {
                self.ending.get_or_insert(End::Deleted);
                true
            }
            Err(()) => return Batch::end(End::Error),
        };
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        match self.orchestrator.store().events_since(&self.session_id, after).await {
            Ok(batch) if !batch.is_empty() => {
                // Stored seqs start at 1; a 0 would be passed over by the tail.
                let items = batch
                    .into_iter()
                    .map(|stored| (u64::try_from(stored.seq).unwrap_or(0), stored))
                    .collect();
                return Batch::items(items);
            }
            Ok(_) => {}
            Err(error) => {
                tracing::error!(%error, session = %self.session_name, "cannot read events");
                return Batch::end(End::Error);
            }
        }
        if let Some(end) = self.ending {
            return Batch::end(end);
        }
        if ended && !self.follow {
            return Batch::end(End::Ended);
        }
        Batch::empty()
    }

    async fn wait(&mut self) {
        let o = &self.orchestrator;
        let name = &self.session_name;
        tokio::select! {
            _ = o.events_changed(name, self.events_seen, RECHECK) => {}
            _ = o.inner.status.changed(name, self.status_seen, RECHECK), if !self.follow => {}
            () = o.stopping() => { self.ending = Some(End::Stopping); }
        }
    }
}

impl SessionEvents {
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
}

/// The end message, without an id (a client reconnecting after it resumes where it was).
fn finish(end: End) -> Bytes {
    let data = serde_json::json!({ "reason": end.as_str() }).to_string();
    frame(None, Some(&END), &data)
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
fn message(seq: u64, stored: &StoredEvent) -> Bytes {
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
    frame(Some(seq), None, &data)
}
