//! An incremental SSE framing parser: one buffer, frames sliced out of it, no per-chunk copies.
//!
//! Bytes are appended to one `Vec<u8>`; complete lines are found with `memchr` from where the
//! last search stopped (a huge line arriving in small pieces is scanned once); a frame's `data:`
//! value is handed to the caller as a byte slice of the buffer (the JSON parser checks UTF-8).
//! Consumed bytes are dropped only when a new chunk arrives, so at most the unfinished tail is
//! moved, once per chunk.
//!
//! Lines end with LF or CRLF. `event:`, `id:`, `retry:` and comment lines are ignored: the
//! Anthropic payload names its own type. Several `data:` lines of one frame are joined with
//! `\n` as the SSE spec says. With [`SseDecoder::json_lines`], a line starting with `{` is a
//! frame on its own (recordings with one JSON payload per line and no SSE framing).

use patchbay_core::ProviderError;

use crate::error::PROVIDER;

/// The largest frame accepted before the stream is declared broken (64 MiB).
pub const MAX_FRAME_BYTES: usize = 64 * 1024 * 1024;

/// Incremental SSE decoder; see the module docs.
///
/// Pull-based: [`feed`](Self::feed) bytes, then take frames with
/// [`next_frame`](Self::next_frame) until it returns `None`, then feed again; at the end of
/// input, [`end`](Self::end) delivers what is left. [`push`](Self::push) and
/// [`finish`](Self::finish) do the same with a callback.
#[derive(Debug, Default)]
pub struct SseDecoder {
    buf: Vec<u8>,
    /// Start of the first line of the frame being read (bytes before it are consumed).
    frame_start: usize,
    /// Start of the line being read.
    line_start: usize,
    /// No newline lies between `line_start` and this.
    scan: usize,
    /// Byte ranges of the current frame's `data:` values.
    data: Vec<(usize, usize)>,
    /// Scratch space for frames with several `data:` lines.
    joined: Vec<u8>,
    json_lines: bool,
}

/// Where a delivered frame's data is.
enum Frame {
    Slice(usize, usize),
    Joined,
}

impl SseDecoder {
    /// A decoder for ordinary SSE.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also accept bare JSON lines (one payload per line, no `data:` prefix).
    pub fn json_lines(mut self) -> Self {
        self.json_lines = true;
        self
    }

    /// Append bytes (after taking every frame of the bytes before). Fails when the unfinished
    /// frame already exceeds [`MAX_FRAME_BYTES`].
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), ProviderError> {
        self.compact();
        if self.buf.len() > MAX_FRAME_BYTES {
            return Err(ProviderError::protocol(format!(
                "an SSE frame exceeded {MAX_FRAME_BYTES} bytes without ending"
            ))
            .with_provider(PROVIDER));
        }
        self.buf.extend_from_slice(chunk);
        Ok(())
    }

    /// The data of the next complete frame in what was fed, if any.
    pub fn next_frame(&mut self) -> Option<&[u8]> {
        let frame = self.advance(false)?;
        Some(self.slice(frame))
    }

    /// End of input: the frames left, including a last line without its newline and a last
    /// frame without its blank line. Call until it returns `None`.
    pub fn end(&mut self) -> Option<&[u8]> {
        let frame = self.advance(true)?;
        Some(self.slice(frame))
    }

    /// Feed bytes; `on_data` gets the data of every frame they complete, in order. The first
    /// error (from the framing or from `on_data`) stops decoding and is returned.
    pub fn push<F>(&mut self, chunk: &[u8], mut on_data: F) -> Result<(), ProviderError>
    where
        F: FnMut(&[u8]) -> Result<(), ProviderError>,
    {
        self.feed(chunk)?;
        while let Some(frame) = self.next_frame() {
            on_data(frame)?;
        }
        Ok(())
    }

    /// End of input with a callback (see [`end`](Self::end)).
    pub fn finish<F>(&mut self, mut on_data: F) -> Result<(), ProviderError>
    where
        F: FnMut(&[u8]) -> Result<(), ProviderError>,
    {
        while let Some(frame) = self.end() {
            on_data(frame)?;
        }
        Ok(())
    }

    /// Bytes received but not yet part of a delivered frame.
    pub fn pending(&self) -> usize {
        self.buf.len() - self.frame_start
    }

    fn slice(&self, frame: Frame) -> &[u8] {
        match frame {
            Frame::Slice(start, end) => &self.buf[start..end],
            Frame::Joined => &self.joined,
        }
    }

    fn compact(&mut self) {
        if self.frame_start == 0 {
            return;
        }
        if self.frame_start == self.buf.len() {
            self.buf.clear();
        } else {
            self.buf.drain(..self.frame_start);
        }
        let shift = self.frame_start;
        self.line_start -= shift;
        self.scan = self.scan.saturating_sub(shift);
        for (start, end) in &mut self.data {
            *start -= shift;
            *end -= shift;
        }
        self.frame_start = 0;
    }

    fn advance(&mut self, at_end: bool) -> Option<Frame> {
        loop {
            let from = self.scan.max(self.line_start);
            let (start, next) = match memchr::memchr(b'\n', &self.buf[from..]) {
                Some(offset) => (self.line_start, from + offset + 1),
                None if at_end && self.line_start < self.buf.len() => (self.line_start, self.buf.len() + 1),
                None if at_end => return self.take_frame(),
                None => {
                    self.scan = self.buf.len();
                    return None;
                }
            };
            let mut end = (next - 1).min(self.buf.len());
            if end > start && self.buf[end - 1] == b'\r' {
                end -= 1;
            }
            let next = next.min(self.buf.len());
            let line = &self.buf[start..end];
            if line.is_empty() {
                self.line_start = next;
                match self.take_frame() {
                    Some(frame) => return Some(frame),
                    None => continue,
                }
            }
            if let Some(value) = line.strip_prefix(b"data:") {
                let skip = usize::from(value.first() == Some(&b' '));
                self.data.push((end - value.len() + skip, end));
                self.line_start = next;
                continue;
            }
            if self.json_lines && line[0] == b'{' {
                if !self.data.is_empty() {
                    // Deliver the pending frame first; this line is read again next time.
                    return self.take_frame();
                }
                self.line_start = next;
                self.frame_start = next;
                return Some(Frame::Slice(start, end));
            }
            // `event:`, `id:`, `retry:`, comments and unknown fields are ignored.
            self.line_start = next;
            if self.data.is_empty() {
                self.frame_start = next;
            }
        }
    }

    fn take_frame(&mut self) -> Option<Frame> {
        let frame = match self.data.as_slice() {
            [] => None,
            [(start, end)] => Some(Frame::Slice(*start, *end)),
            ranges => {
                self.joined.clear();
                for (i, (start, end)) in ranges.iter().enumerate() {
                    if i > 0 {
                        self.joined.push(b'\n');
                    }
                    self.joined.extend_from_slice(&self.buf[*start..*end]);
                }
                Some(Frame::Joined)
            }
        };
        self.data.clear();
        self.frame_start = self.line_start;
        frame
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(chunks: &[&[u8]], json_lines: bool) -> Vec<String> {
        let mut decoder = if json_lines {
            SseDecoder::new().json_lines()
        } else {
            SseDecoder::new()
        };
        let mut out = Vec::new();
        for chunk in chunks {
            decoder
                .push(chunk, |data| {
                    out.push(String::from_utf8_lossy(data).into_owned());
                    Ok(())
                })
                .expect("decodes");
        }
        decoder
            .finish(|data| {
                out.push(String::from_utf8_lossy(data).into_owned());
                Ok(())
            })
            .expect("finishes");
        out
    }

    #[test]
    fn frames_split_anywhere_decode_the_same() {
        let body = b"event: a\r\ndata: {\"x\":1}\r\n\r\n: comment\ndata:{\"y\":\"\xc3\xa9\"}\n\ndata: one\ndata: two\n\ndata: last";
        let whole = frames(&[body], false);
        assert_eq!(whole, vec!["{\"x\":1}", "{\"y\":\"é\"}", "one\ntwo", "last"]);
        for size in 1..body.len() {
            let chunks: Vec<&[u8]> = body.chunks(size).collect();
            assert_eq!(frames(&chunks, false), whole, "chunk size {size}");
        }
    }

    #[test]
    fn json_lines_are_frames() {
        let body = b"{\"a\":1}\n{\"b\":2}\n\n{\"c\":3}";
        assert_eq!(frames(&[body], true), vec!["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"]);
        assert!(frames(&[body], false).is_empty());
    }

    #[test]
    fn an_endless_frame_is_a_protocol_error() {
        let mut decoder = SseDecoder::new();
        let chunk = vec![b'x'; 1024 * 1024];
        let mut result = Ok(());
        for _ in 0..MAX_FRAME_BYTES / chunk.len() + 2 {
            result = decoder.push(&chunk, |_| Ok(()));
            if result.is_err() {
                break;
            }
        }
        assert_eq!(result.map_err(|e| e.kind()), Err(patchbay_core::ErrorKind::Protocol));
    }
}
