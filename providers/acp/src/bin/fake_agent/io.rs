//! The transport under the SDK: stdin lines (logged), and a stdout sink that also carries the
//! script's out-of-protocol writes (`raw`, `raw_repeat`) and `exit`, in order with the protocol.
//!
//! A step that must be ordered after everything the agent sent before it queues a *barrier*: an
//! `_patchbay_fake/barrier` notification sent through the SDK like any other message. The sink
//! never writes it: it runs the barrier's action in its place, so the action sees every earlier
//! message written and no later one.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write as _;
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use agent_client_protocol::UntypedMessage;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Client, Error};
use futures::{Sink, Stream};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, Stdout};
use tokio::sync::oneshot;

const BARRIER_METHOD: &str = "_patchbay_fake/barrier";
/// The largest piece of a `raw_repeat` line built at once.
const CHUNK: usize = 64 * 1024;

/// What the sink does in place of a barrier.
#[derive(Debug)]
pub(crate) enum Action {
    /// Write the text and a newline.
    Raw(String),
    /// Write `count` copies of the text, then a newline.
    Repeat(String, u64),
    /// Flush stdout and exit with this code.
    Exit(i32),
}

/// Barriers queued and not yet reached by the sink.
#[derive(Debug, Default)]
pub(crate) struct Barriers {
    next: AtomicU64,
    pending: Mutex<HashMap<u64, (Action, oneshot::Sender<()>)>>,
}

impl Barriers {
    /// Queue `action` after every message sent so far and wait until the sink has run it.
    pub(crate) async fn run(&self, cx: &ConnectionTo<Client>, action: Action) -> Result<(), Error> {
        let token = self.next.fetch_add(1, Ordering::SeqCst);
        let (done, wait) = oneshot::channel();
        self.lock().insert(token, (action, done));
        cx.send_notification(UntypedMessage::new(BARRIER_METHOD, json!({ "token": token }))?)?;
        wait.await
            .map_err(|_| Error::internal_error().data("the stdout writer stopped before the barrier"))
    }

    fn take(&self, line: &str) -> Option<(Action, oneshot::Sender<()>)> {
        if !line.contains(BARRIER_METHOD) {
            return None;
        }
        let message: Value = serde_json::from_str(line).ok()?;
        if message.get("method")?.as_str()? != BARRIER_METHOD {
            return None;
        }
        let token = message.get("params")?.get("token")?.as_u64()?;
        self.lock().remove(&token)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, (Action, oneshot::Sender<()>)>> {
        self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The sink the SDK writes its lines to: stdout, one line each, flushed; barriers run in place.
pub(crate) fn stdout_sink(
    barriers: std::sync::Arc<Barriers>,
) -> Pin<Box<dyn Sink<String, Error = std::io::Error> + Send>> {
    Box::pin(futures::sink::unfold(
        (tokio::io::stdout(), barriers),
        async |(mut out, barriers), line: String| {
            match barriers.take(&line) {
                Some((action, done)) => {
                    perform(&mut out, action).await?;
                    let _ = done.send(()); // The step waiting for it may be gone (cancelled).
                }
                None => {
                    let mut bytes = line.into_bytes();
                    bytes.push(b'\n');
                    out.write_all(&bytes).await?;
                    out.flush().await?;
                }
            }
            Ok((out, barriers))
        },
    ))
}

async fn perform(out: &mut Stdout, action: Action) -> std::io::Result<()> {
    match action {
        Action::Raw(text) => {
            out.write_all(text.as_bytes()).await?;
            out.write_all(b"\n").await?;
        }
        Action::Repeat(unit, count) => {
            if !unit.is_empty() {
                let per_chunk = (CHUNK / unit.len()).max(1);
                let chunk = unit.repeat(per_chunk);
                let mut left = count;
                while left > 0 {
                    let n = left.min(per_chunk as u64);
                    // `n` is at most `per_chunk`, so the slice stays inside `chunk`.
                    let len = usize::try_from(n).unwrap_or(per_chunk) * unit.len();
                    out.write_all(&chunk.as_bytes()[..len]).await?;
                    left -= n;
                }
            }
            out.write_all(b"\n").await?;
        }
        Action::Exit(code) => {
            out.flush().await?;
            std::process::exit(code);
        }
    }
    out.flush().await
}

/// Stdin's lines for the SDK, each request and notification logged on the way.
pub(crate) fn stdin_lines(log: Option<Log>) -> Pin<Box<dyn Stream<Item = std::io::Result<String>> + Send>> {
    let lines = BufReader::new(tokio::io::stdin()).lines();
    Box::pin(futures::stream::unfold(Some((lines, log)), async |state| {
        let (mut lines, log) = state?;
        match lines.next_line().await {
            Ok(Some(line)) => {
                if let Some(log) = &log {
                    log.record(&line);
                }
                Some((Ok(line), Some((lines, log))))
            }
            Ok(None) => None,
            Err(error) => Some((Err(error), None)),
        }
    }))
}

/// The log of received requests and notifications (`PATCHBAY_ACP_FAKE_LOG`).
#[derive(Debug)]
pub(crate) struct Log(Mutex<File>);

impl Log {
    /// The log named by `PATCHBAY_ACP_FAKE_LOG`, opened to append; `None` when unset.
    pub(crate) fn from_env() -> Result<Option<Self>, String> {
        let Some(path) = std::env::var_os("PATCHBAY_ACP_FAKE_LOG") else {
            return Ok(None);
        };
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| format!("cannot open log {}: {e}", path.display()))?;
        Ok(Some(Self(Mutex::new(file))))
    }

    /// Log `line` as `{"method", "params"}` when it is a request or a notification.
    fn record(&self, line: &str) {
        let Ok(message) = serde_json::from_str::<Value>(line) else {
            return;
        };
        let Some(method) = message.get("method") else {
            return;
        };
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        let mut entry = json!({ "method": method, "params": params }).to_string();
        entry.push('\n');
        let mut file = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Err(error) = file.write_all(entry.as_bytes()).and_then(|()| file.flush()) {
            eprintln!("patchbay-acp-fake-agent: cannot write the log: {error}");
        }
    }
}
