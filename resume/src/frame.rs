//! Server-sent event frames: encoding one message, the keep-alive comment, and a stream
//! wrapper that sends the comment when nothing else went out for a while.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use futures::Stream;
use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};

use crate::error::Error;

/// The `Content-Type` of an event stream. Send `Cache-Control: no-cache` with it, so no proxy
/// keeps a copy.
pub const CONTENT_TYPE: &str = "text/event-stream";

/// The keep-alive frame: an empty comment (`:` and a blank line), which clients ignore and
/// which shows the server when a client went away.
pub const KEEP_ALIVE: Bytes = Bytes::from_static(b":\n\n");

/// How long a stream may stay silent before [`KeepAlive`] sends [`KEEP_ALIVE`].
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// An event name (the `event:` field) without CR or LF, so it cannot end its field early and
/// slip other fields into the stream.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EventName(Cow<'static, str>);

impl EventName {
    /// A name known when compiling; a CR or LF in it fails the build when used in a `const`
    /// (and panics otherwise).
    pub const fn from_static(name: &'static str) -> Self {
        let bytes = name.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            if bytes[at] == b'\r' || bytes[at] == b'\n' {
                panic!("an event name cannot hold CR or LF");
            }
            at += 1;
        }
        Self(Cow::Borrowed(name))
    }

    /// A name from text: [`Error::EventName`] when it holds a CR or LF.
    pub fn new(name: impl Into<String>) -> Result<Self, Error> {
        let name = name.into();
        if name.contains(['\r', '\n']) {
            return Err(Error::EventName);
        }
        Ok(Self(Cow::Owned(name)))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// One message: `id: <id>` (when given), `event: <name>` (when given), one `data: ` line per
/// line of `data`, then the blank line that ends the message.
///
/// Lines of `data` end at CR LF, CR or LF, as a client splits them, so a client joins the
/// `data:` lines back into `data` with LF for every line end (a CR LF or a lone CR comes back as
/// LF). Each value follows `: `, so a value starting with a space keeps it.
///
/// ```
/// use patchbay_resume::{EventName, frame};
///
/// const END: EventName = EventName::from_static("end");
/// assert_eq!(&frame(Some(7), None, "a\nb")[..], b"id: 7\ndata: a\ndata: b\n\n");
/// assert_eq!(&frame(None, Some(&END), "{}")[..], b"event: end\ndata: {}\n\n");
/// ```
pub fn frame(id: Option<u64>, event: Option<&EventName>, data: &str) -> Bytes {
    let mut out = BytesMut::with_capacity(data.len() + 48);
    if let Some(id) = id {
        out.put_slice(b"id: ");
        out.put_slice(id.to_string().as_bytes());
        out.put_u8(b'\n');
    }
    if let Some(event) = event {
        out.put_slice(b"event: ");
        out.put_slice(event.as_str().as_bytes());
        out.put_u8(b'\n');
    }
    for line in lines(data) {
        out.put_slice(b"data: ");
        out.put_slice(line.as_bytes());
        out.put_u8(b'\n');
    }
    out.put_u8(b'\n');
    out.freeze()
}

/// The lines of `data`, split at CR LF, CR or LF (an empty `data` is one empty line).
fn lines(data: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(data);
    std::iter::from_fn(move || {
        let text = rest?;
        match text.find(['\r', '\n']) {
            None => {
                rest = None;
                Some(text)
            }
            Some(at) => {
                let skip = if text[at..].starts_with("\r\n") { 2 } else { 1 };
                rest = Some(&text[at + skip..]);
                Some(&text[..at])
            }
        }
    })
}

pin_project! {
    /// A stream of frames with [`KEEP_ALIVE`] sent whenever `every` passed since the last
    /// frame; it ends when the inner stream ends. Made by [`KeepAlive::new`].
    #[derive(Debug)]
    pub struct KeepAlive<S> {
        #[pin]
        inner: S,
        #[pin]
        timer: Sleep,
        every: Duration,
    }
}

impl<S: Stream<Item = Bytes>> KeepAlive<S> {
    /// `inner` with a keep-alive comment after each silence of `every`
    /// ([`DEFAULT_KEEP_ALIVE`] is what browsers and proxies are used to).
    pub fn new(inner: S, every: Duration) -> Self {
        Self {
            inner,
            timer: tokio::time::sleep(every),
            every,
        }
    }
}

impl<S: Stream<Item = Bytes>> Stream for KeepAlive<S> {
    type Item = Bytes;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let mut this = self.project();
        if let Poll::Ready(frame) = this.inner.poll_next(cx) {
            this.timer.reset(Instant::now() + *this.every);
            return Poll::Ready(frame);
        }
        ready!(this.timer.as_mut().poll(cx));
        this.timer.reset(Instant::now() + *this.every);
        Poll::Ready(Some(KEEP_ALIVE))
    }
}
