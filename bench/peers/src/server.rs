//! A loopback HTTP/1.1 server that answers every POST with a prepared SSE body, cut into writes
//! decided in advance, so each consumer reads the very same bytes in the very same writes.
//!
//! `…/messages` gets the Anthropic body, `…/chat/completions` the OpenAI one,
//! `…:streamGenerateContent` (any query) the Gemini one, `…/responses` the OpenAI Responses
//! one; anything else a 404. Responses use chunked transfer encoding, as the real APIs do; the status line and
//! headers go out in the same write as the first piece of the body. Connections are kept alive.
//! The request body is read and dropped: every consumer is asked the same question.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};

/// How a body is cut into writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunking {
    /// 64 KiB writes, cut wherever the 64 KiB boundary falls.
    Kib64,
    /// One SSE frame per write (as an API flushes per token).
    PerFrame,
}

impl Chunking {
    /// The name used on the command line and in tables.
    pub fn name(self) -> &'static str {
        match self {
            Chunking::Kib64 => "64 KiB chunks",
            Chunking::PerFrame => "one event per chunk",
        }
    }

    /// Parse `64k` or `frame`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "64k" => Some(Chunking::Kib64),
            "frame" => Some(Chunking::PerFrame),
            _ => None,
        }
    }
}

const HEAD: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n";
const NOT_FOUND: &[u8] = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n";
const LARGEST_HEAD: usize = 1 << 20;

/// A response ready to write: one `Bytes` per write, HTTP framing included.
#[derive(Debug, Clone)]
pub struct Prepared {
    writes: Arc<Vec<Bytes>>,
}

impl Prepared {
    /// `body` cut by `chunking`, framed as a chunked HTTP response.
    pub fn new(body: &str, chunking: Chunking) -> Self {
        let pieces = match chunking {
            Chunking::Kib64 => body.as_bytes().chunks(64 * 1024).collect::<Vec<_>>(),
            Chunking::PerFrame => frames(body.as_bytes()),
        };
        let last = pieces.len().saturating_sub(1);
        let writes = pieces
            .iter()
            .enumerate()
            .map(|(i, piece)| {
                let mut write = Vec::with_capacity(piece.len() + HEAD.len() + 16);
                if i == 0 {
                    write.extend_from_slice(HEAD);
                }
                write.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
                write.extend_from_slice(piece);
                write.extend_from_slice(b"\r\n");
                if i == last {
                    write.extend_from_slice(b"0\r\n\r\n");
                }
                Bytes::from(write)
            })
            .collect();
        Prepared {
            writes: Arc::new(writes),
        }
    }

    /// How many writes the response takes.
    pub fn writes(&self) -> usize {
        self.writes.len()
    }
}

/// Split after each blank line (`\n\n`, or `\r\n\r\n` as the Gemini API ends its frames).
fn frames(body: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    while let Some(end) = blank_line_end(&body[start..]) {
        out.push(&body[start..start + end]);
        start += end;
    }
    if start < body.len() {
        out.push(&body[start..]);
    }
    out
}

/// Where the first blank line of `bytes` ends: after `\n\n` or `\n\r\n`.
fn blank_line_end(bytes: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = memchr::memchr(b'\n', &bytes[from..]) {
        let rest = &bytes[from + at + 1..];
        if rest.starts_with(b"\n") {
            return Some(from + at + 2);
        }
        if rest.starts_with(b"\r\n") {
            return Some(from + at + 3);
        }
        from += at + 1;
    }
    None
}

/// What the server answers.
#[derive(Debug, Clone)]
pub struct Routes {
    /// For `…/chat/completions`.
    pub openai: Prepared,
    /// For `…/messages`.
    pub anthropic: Prepared,
    /// For `…/models/{model}:streamGenerateContent` (`?alt=sse`, and rig's `&key=`).
    pub gemini: Prepared,
    /// For `…/responses` (OpenAI's Responses API).
    pub responses: Prepared,
}

impl Routes {
    /// Every body of `deltas` deltas, cut by `chunking`.
    pub fn new(deltas: usize, chunking: Chunking) -> Self {
        Routes {
            openai: Prepared::new(&crate::wire::openai(deltas), chunking),
            anthropic: Prepared::new(&crate::wire::anthropic(deltas), chunking),
            gemini: Prepared::new(&crate::wire::gemini(deltas), chunking),
            responses: Prepared::new(&crate::wire::responses(deltas), chunking),
        }
    }

    fn pick(&self, path: &str) -> Option<&Prepared> {
        let path = path.split('?').next().unwrap_or(path);
        if path.ends_with("/messages") {
            Some(&self.anthropic)
        } else if path.ends_with("/chat/completions") {
            Some(&self.openai)
        } else if path.ends_with(":streamGenerateContent") {
            Some(&self.gemini)
        } else if path.ends_with("/responses") {
            Some(&self.responses)
        } else {
            None
        }
    }
}

/// A listener on loopback with a backlog deep enough for thousands of connects at once (the
/// kernel caps it at `net.core.somaxconn`).
pub fn listen(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(16_384)
}

/// Accept and serve until the runtime stops.
pub async fn serve(listener: TcpListener, routes: Routes) {
    let routes = Arc::new(routes);
    loop {
        match listener.accept().await {
            Ok((socket, _)) => {
                let routes = routes.clone();
                tokio::spawn(async move {
                    // A client that goes away mid-answer is not the server's failure.
                    let _ = connection(socket, &routes).await;
                });
            }
            // Out of descriptors or similar: back off briefly, keep serving the others.
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(5)).await,
        }
    }
}

/// Start serving on a thread of its own (a one-thread runtime), so the server's work never
/// runs on the client's runtime. Returns the bound address.
pub fn spawn_thread(routes: Routes) -> SocketAddr {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("loopback-server".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("server runtime");
            runtime.block_on(async move {
                let listener = listen(([127, 0, 0, 1], 0).into()).expect("binds loopback");
                tx.send(listener.local_addr().expect("bound address"))
                    .expect("reports its address");
                serve(listener, routes).await;
            });
        })
        .expect("server thread");
    rx.recv().expect("server starts")
}

/// One request as far as the server cares.
struct Head {
    path: String,
    content_length: usize,
    chunked: bool,
    close: bool,
    len: usize,
}

fn parse_head(bytes: &[u8]) -> io::Result<Head> {
    let text = std::str::from_utf8(bytes).map_err(|_| io::Error::other("head is not UTF-8"))?;
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let path = request_line.split(' ').nth(1).unwrap_or("/").to_string();
    let mut head = Head {
        path,
        content_length: 0,
        chunked: false,
        close: false,
        len: bytes.len(),
    };
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            head.content_length = value.parse().map_err(|_| io::Error::other("bad content-length"))?;
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            head.chunked = value.eq_ignore_ascii_case("chunked");
        } else if name.eq_ignore_ascii_case("connection") {
            head.close = value.eq_ignore_ascii_case("close");
        }
    }
    Ok(head)
}

async fn fill(socket: &mut TcpStream, buf: &mut BytesMut) -> io::Result<bool> {
    Ok(socket.read_buf(buf).await? > 0)
}

/// Read one request head and its body; `None` when the client closed between requests.
async fn read_request(socket: &mut TcpStream, buf: &mut BytesMut) -> io::Result<Option<Head>> {
    let head = loop {
        if let Some(at) = memchr::memmem::find(buf, b"\r\n\r\n") {
            break parse_head(&buf[..at + 4])?;
        }
        if buf.len() > LARGEST_HEAD {
            return Err(io::Error::other("head too large"));
        }
        if !fill(socket, buf).await? {
            return Ok(None);
        }
    };
    buf.advance(head.len);
    if head.chunked {
        // Requests here are small: read until the last chunk and drop the lot.
        loop {
            if let Some(at) = memchr::memmem::find(buf, b"0\r\n\r\n") {
                buf.advance(at + 5);
                break;
            }
            if !fill(socket, buf).await? {
                return Err(io::Error::other("closed inside a chunked body"));
            }
        }
    } else {
        while buf.len() < head.content_length {
            if !fill(socket, buf).await? {
                return Err(io::Error::other("closed inside a body"));
            }
        }
        buf.advance(head.content_length);
    }
    Ok(Some(head))
}

async fn connection(mut socket: TcpStream, routes: &Routes) -> io::Result<()> {
    socket.set_nodelay(true)?;
    let mut buf = BytesMut::with_capacity(8 * 1024);
    while let Some(head) = read_request(&mut socket, &mut buf).await? {
        match routes.pick(&head.path) {
            Some(prepared) => {
                for write in prepared.writes.iter() {
                    socket.write_all(write).await?;
                }
            }
            None => socket.write_all(NOT_FOUND).await?,
        }
        if head.close {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_frame_writes_one_frame_each_and_frame_the_body() {
        let body = crate::wire::openai(10);
        let prepared = Prepared::new(&body, Chunking::PerFrame);
        assert_eq!(prepared.writes(), 10 + 4);
        let first = &prepared.writes[0];
        assert!(first.starts_with(HEAD));
        assert!(prepared.writes.last().expect("a write").ends_with(b"\r\n0\r\n\r\n"));
    }

    #[test]
    fn responses_frames_are_one_event_each() {
        let body = crate::wire::responses(10);
        let prepared = Prepared::new(&body, Chunking::PerFrame);
        assert_eq!(prepared.writes(), 10 + 8);
        assert!(
            frames(body.as_bytes())
                .iter()
                .all(|piece| piece.starts_with(b"event: response."))
        );
    }

    #[test]
    fn gemini_frames_end_after_their_crlf_blank_line() {
        let body = crate::wire::gemini(10);
        let prepared = Prepared::new(&body, Chunking::PerFrame);
        assert_eq!(prepared.writes(), 10);
        let pieces = frames(body.as_bytes());
        assert!(pieces.iter().all(|piece| piece.ends_with(b"}\r\n\r\n")));
        assert_eq!(pieces.concat(), body.as_bytes());
    }

    #[test]
    fn routes_pick_by_path_whatever_the_query() {
        let routes = Routes::new(2, Chunking::PerFrame);
        let gemini = routes.pick("/v1beta/models/gemini-bench:streamGenerateContent?alt=sse&key=bench");
        assert!(gemini.is_some_and(|p| Arc::ptr_eq(&p.writes, &routes.gemini.writes)));
        assert!(
            routes
                .pick("/v1/messages")
                .is_some_and(|p| Arc::ptr_eq(&p.writes, &routes.anthropic.writes))
        );
        assert!(
            routes
                .pick("/v1/chat/completions")
                .is_some_and(|p| Arc::ptr_eq(&p.writes, &routes.openai.writes))
        );
        assert!(
            routes
                .pick("/v1/responses")
                .is_some_and(|p| Arc::ptr_eq(&p.writes, &routes.responses.writes))
        );
        assert!(routes.pick("/v1beta/models/gemini-bench:generateContent").is_none());
    }

    #[test]
    fn large_chunks_are_64_kib_of_body() {
        let body = crate::wire::anthropic(2_000);
        let prepared = Prepared::new(&body, Chunking::Kib64);
        assert_eq!(prepared.writes(), body.len().div_ceil(64 * 1024));
        assert!(prepared.writes[1].starts_with(b"10000\r\n"));
    }
}
