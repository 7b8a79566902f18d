//! A raw loopback HTTP server for hostile-server tests: it answers every request with scripted
//! bytes (stalls, redirects, endless lines, keep-alives forever), which the well-behaved
//! [`mock`](crate::mock) servers never send.
//!
//! ```
//! use patchbay_conformance::raw::{RawServer, Step};
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let server = RawServer::start(vec![Step::send("HTTP/1.1 204 No Content\r\n\r\n")]).await;
//! assert!(server.url().starts_with("http://127.0.0.1:"));
//! assert_eq!(server.connections(), 0);
//! # });
//! ```

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One step of a scripted answer.
#[derive(Debug, Clone)]
pub enum Step {
    /// Write these bytes.
    Send(Vec<u8>),
    /// Wait this long.
    Pause(Duration),
    /// Hold the connection open and send nothing, until the server is dropped.
    Stall,
    /// Write these bytes every period, forever (keep-alives).
    Every(Vec<u8>, Duration),
    /// Write these bytes again and again, as fast as the client reads, forever.
    Endless(Vec<u8>),
}

impl Step {
    /// [`Step::Send`] of text.
    pub fn send(text: impl Into<String>) -> Self {
        Self::Send(text.into().into_bytes())
    }

    /// Response headers: `HTTP/1.1 {status}`, the given headers, and `connection: close`.
    pub fn head(status: &str, headers: &[(&str, &str)]) -> Self {
        let mut head = format!("HTTP/1.1 {status}\r\n");
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("connection: close\r\n\r\n");
        Self::send(head)
    }
}

#[derive(Default)]
struct Counters {
    connections: AtomicUsize,
    written: AtomicU64,
    requests: Mutex<Vec<Vec<u8>>>,
}

/// The server; see the [module docs](self). Dropping it closes every connection.
pub struct RawServer {
    url: String,
    counters: Arc<Counters>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for RawServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawServer")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl RawServer {
    /// Bind `127.0.0.1` on a free port and answer every request with `steps`.
    pub async fn start(steps: Vec<Step>) -> Self {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind loopback");
        let url = format!("http://{}", listener.local_addr().expect("local address"));
        let counters = Arc::new(Counters::default());
        let shared = counters.clone();
        let steps = Arc::new(steps);
        let task = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            while let Ok((stream, _)) = listener.accept().await {
                shared.connections.fetch_add(1, Ordering::SeqCst);
                connections.spawn(answer(stream, steps.clone(), shared.clone()));
            }
        });
        Self { url, counters, task }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.counters.connections.load(Ordering::SeqCst)
    }

    /// Bytes written to clients so far.
    pub fn bytes_written(&self) -> u64 {
        self.counters.written.load(Ordering::SeqCst)
    }

    /// The requests read so far (head and body, as received).
    pub fn requests(&self) -> Vec<Vec<u8>> {
        self.counters.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        // Aborting the accept loop drops its `JoinSet`, which aborts every connection.
        self.task.abort();
    }
}

/// Read one request (head, then a `content-length` body), then play the steps.
async fn answer(mut stream: TcpStream, steps: Arc<Vec<Step>>, counters: Arc<Counters>) {
    let mut request = Vec::new();
    let mut buf = [0u8; 8192];
    let head_end = loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
        if let Some(at) = request.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&request[..head_end]).to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    while request.len() < head_end + length {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    if let Ok(mut requests) = counters.requests.lock() {
        requests.push(request);
    }
    let mut write = async |bytes: &[u8]| -> bool {
        let ok = stream.write_all(bytes).await.is_ok() && stream.flush().await.is_ok();
        if ok {
            counters.written.fetch_add(bytes.len() as u64, Ordering::SeqCst);
        }
        ok
    };
    for step in steps.iter() {
        match step {
            Step::Send(bytes) => {
                if !write(bytes).await {
                    return;
                }
            }
            Step::Pause(wait) => tokio::time::sleep(*wait).await,
            Step::Stall => std::future::pending::<()>().await,
            Step::Every(bytes, period) => loop {
                if !write(bytes).await {
                    return;
                }
                tokio::time::sleep(*period).await;
            },
            Step::Endless(bytes) => while write(bytes).await {},
        }
    }
}
