//! The SDK's line transport over the agent's stdio: stdout read through core's `Framer`
//! (every line capped at `max_line_bytes`, a longer one ends the connection with
//! [`Error::LineTooLong`] instead of growing a buffer), stdin written line by line; each line
//! in either direction offered to a tap (the recorder). The SDK does the JSON-RPC.

use std::io;
use std::sync::{Arc, Mutex};

use agent_client_protocol::Lines;
use futures::{Sink, Stream};
use patchbay_core::kit::{Framer, Framing};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::error::Error;

/// Which way a line went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From patchbay to the agent.
    Sent,
    /// From the agent to patchbay.
    Received,
}

/// Sees every line (the recorder).
pub type Tap = Arc<dyn Fn(Direction, &str) + Send + Sync>;

/// Why the transport ended, when it was not a plain EOF (read by the provider to report a typed
/// error rather than the SDK's generic one).
#[derive(Debug, Clone, Default)]
pub(crate) struct Fault(Arc<Mutex<Option<FaultKind>>>);

#[derive(Debug, Clone)]
pub(crate) enum FaultKind {
    LineTooLong(usize),
    Read(String),
}

impl Fault {
    fn set(&self, kind: FaultKind) {
        if let Ok(mut slot) = self.0.lock() {
            slot.get_or_insert(kind);
        }
    }

    /// The fault as this crate's error, if there was one.
    pub(crate) fn error(&self) -> Option<Error> {
        let kind = self.0.lock().ok()?.clone()?;
        Some(match kind {
            FaultKind::LineTooLong(limit) => Error::LineTooLong { limit },
            FaultKind::Read(message) => Error::Protocol { message },
        })
    }
}

const READ_CHUNK: usize = 64 * 1024;

/// The transport over `stdout` (read) and `stdin` (written).
pub(crate) fn lines<R, W>(
    stdout: R,
    stdin: W,
    max_line: usize,
    tap: Option<Tap>,
    fault: Fault,
) -> Lines<impl Sink<String, Error = io::Error> + Send + 'static, impl Stream<Item = io::Result<String>> + Send + 'static>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    Lines::new(writer(stdin, tap.clone()), reader(stdout, max_line, tap, fault))
}

struct ReadState<R> {
    stdout: R,
    framer: Framer,
    pending: std::collections::VecDeque<String>,
    buf: Vec<u8>,
    ended: bool,
    tap: Option<Tap>,
    fault: Fault,
}

fn reader<R>(
    stdout: R,
    max_line: usize,
    tap: Option<Tap>,
    fault: Fault,
) -> impl Stream<Item = io::Result<String>> + Send
where
    R: AsyncRead + Unpin + Send + 'static,
{
    let state = ReadState {
        stdout,
        framer: Framer::new(Framing::Lines).with_max_bytes(max_line),
        pending: Default::default(),
        buf: vec![0; READ_CHUNK],
        ended: false,
        tap,
        fault,
    };
    futures::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(line) = state.pending.pop_front() {
                if let Some(tap) = &state.tap {
                    tap(Direction::Received, &line);
                }
                return Some((Ok(line), state));
            }
            if state.ended {
                return None;
            }
            let read = match state.stdout.read(&mut state.buf).await {
                Ok(read) => read,
                Err(error) => {
                    state
                        .fault
                        .set(FaultKind::Read(format!("reading the agent's stdout: {error}")));
                    state.ended = true;
                    return Some((Err(error), state));
                }
            };
            let framed = if read == 0 {
                state.ended = true;
                drain(&mut state.framer, &mut state.pending, true)
            } else {
                state
                    .framer
                    .feed(&state.buf[..read])
                    .and_then(|()| drain(&mut state.framer, &mut state.pending, false))
            };
            if framed.is_err() {
                state.fault.set(FaultKind::LineTooLong(state.framer.max_bytes()));
                state.ended = true;
                state.pending.clear();
                let error = io::Error::new(io::ErrorKind::InvalidData, "a line from the agent exceeded the limit");
                return Some((Err(error), state));
            }
        }
    })
}

/// Move every complete line (at the end: every line) from the framer to `pending`.
fn drain(
    framer: &mut Framer,
    pending: &mut std::collections::VecDeque<String>,
    end: bool,
) -> Result<(), patchbay_core::ProviderError> {
    loop {
        let frame = if end { framer.end()? } else { framer.next_frame()? };
        let Some(frame) = frame else { return Ok(()) };
        pending.push_back(String::from_utf8_lossy(frame).into_owned());
    }
}

fn writer<W>(stdin: W, tap: Option<Tap>) -> impl Sink<String, Error = io::Error> + Send
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    futures::sink::unfold((stdin, tap), |(mut stdin, tap), line: String| async move {
        if let Some(tap) = &tap {
            tap(Direction::Sent, &line);
        }
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        stdin.write_all(&bytes).await?;
        stdin.flush().await?;
        Ok::<_, io::Error>((stdin, tap))
    })
}
