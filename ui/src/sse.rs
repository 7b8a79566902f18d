//! The UI message stream as SSE bytes: the response headers, one `data: {json}\n\n` frame per
//! chunk, `data: [DONE]\n\n` at the end; and [`UiStream`] run over a whole event stream.

use std::collections::VecDeque;

use bytes::Bytes;
use futures::stream::{self, Stream, StreamExt};
use patchbay_core::EventStream;

use crate::adapter::UiStream;
use crate::parts::UiChunk;

/// The response header that tells the AI SDK's client this body is a UI message stream.
pub const HEADER_NAME: &str = "x-vercel-ai-ui-message-stream";

/// The value of [`HEADER_NAME`].
pub const HEADER_VALUE: &str = "v1";

/// The response's content type.
pub const CONTENT_TYPE: &str = "text/event-stream";

/// Every header the AI SDK's own server sets on a UI message stream response (its
/// `UI_MESSAGE_STREAM_HEADERS`): the content type, no caching, keep-alive, [`HEADER_NAME`], and
/// `x-accel-buffering: no` so that nginx does not hold the frames back.
pub const HEADERS: [(&str, &str); 5] = [
    ("content-type", CONTENT_TYPE),
    ("cache-control", "no-cache"),
    ("connection", "keep-alive"),
    (HEADER_NAME, HEADER_VALUE),
    ("x-accel-buffering", "no"),
];

/// The last frame of every stream.
pub const DONE: &[u8] = b"data: [DONE]\n\n";

/// One chunk as an SSE frame: `data: {json}\n\n` (JSON has no raw newline, so one line).
///
/// ```
/// use patchbay_ui::{UiChunk, sse};
/// let frame = sse::encode(&UiChunk::TextDelta { id: "text-0".into(), delta: "Hi".into() });
/// assert_eq!(frame, &b"data: {\"type\":\"text-delta\",\"id\":\"text-0\",\"delta\":\"Hi\"}\n\n"[..]);
/// ```
pub fn encode(chunk: &UiChunk) -> Bytes {
    frame(None, chunk)
}

/// One chunk as an SSE frame with an `id:` line first (`id: {id}\ndata: {json}\n\n`), for a
/// host that keeps the frames to replay after a reconnect (`Last-Event-ID`). `id` must hold no
/// line break (one is replaced by a space).
pub fn encode_with_id(chunk: &UiChunk, id: &str) -> Bytes {
    frame(Some(id), chunk)
}

fn frame(id: Option<&str>, chunk: &UiChunk) -> Bytes {
    let mut out = Vec::with_capacity(64);
    if let Some(id) = id {
        out.extend_from_slice(b"id: ");
        out.extend(id.bytes().map(|b| if b == b'\n' || b == b'\r' { b' ' } else { b }));
        out.push(b'\n');
    }
    out.extend_from_slice(b"data: ");
    // A chunk is plain data (strings, numbers, JSON values): serializing it does not fail; were
    // it to, the frame says so rather than carrying half a JSON object.
    let json = serde_json::to_vec(chunk)
        .unwrap_or_else(|_| br#"{"type":"error","errorText":"a chunk could not be encoded"}"#.to_vec());
    out.extend_from_slice(&json);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

/// The chunks of a whole run, with a default [`UiStream`] (see [`UiStream::chunks`]).
pub fn chunks(events: EventStream) -> impl Stream<Item = UiChunk> + Send {
    UiStream::new().chunks(events)
}

/// The SSE body of a whole run, with a default [`UiStream`] (see [`UiStream::sse`]).
pub fn sse(events: EventStream) -> impl Stream<Item = Bytes> + Send {
    UiStream::new().sse(events)
}

impl UiStream {
    /// The chunks of a whole run: every event through [`push`](Self::push), the error that
    /// ends it through [`error`](Self::error), and [`end`](Self::end) when it stops without
    /// either. The stream ends with the message (what the event stream yields after an error
    /// is not read).
    pub fn chunks(self, events: EventStream) -> impl Stream<Item = UiChunk> + Send {
        let start = (Some(events), self, VecDeque::new());
        stream::unfold(start, |(mut events, mut adapter, mut queue)| async move {
            loop {
                if let Some(chunk) = queue.pop_front() {
                    return Some((chunk, (events, adapter, queue)));
                }
                let source = events.as_mut().filter(|_| !adapter.is_ended())?;
                let chunks = match source.next().await {
                    Some(Ok(event)) => adapter.push(&event),
                    Some(Err(error)) => adapter.error(&error),
                    None => adapter.end(),
                };
                if adapter.is_ended() {
                    events = None;
                }
                queue.extend(chunks);
            }
        })
    }

    /// The SSE body of a whole run: [`chunks`](Self::chunks) encoded, then [`DONE`]. Serve it
    /// with [`HEADERS`].
    pub fn sse(self, events: EventStream) -> impl Stream<Item = Bytes> + Send {
        self.chunks(events)
            .map(|chunk| encode(&chunk))
            .chain(stream::once(async { Bytes::from_static(DONE) }))
    }

    /// [`sse`](Self::sse) with an `id:` line on every frame but the last: the chunk's position
    /// in the stream, from 0.
    pub fn sse_with_ids(self, events: EventStream) -> impl Stream<Item = Bytes> + Send {
        self.chunks(events)
            .enumerate()
            .map(|(n, chunk)| encode_with_id(&chunk, &n.to_string()))
            .chain(stream::once(async { Bytes::from_static(DONE) }))
    }
}
