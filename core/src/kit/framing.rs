//! One incremental line framer for every byte stream: server-sent events, JSON lines, plain
//! lines. One buffer, frames sliced out of it, no per-chunk copies, one cap.
//!
//! Complete lines are found with `memchr` from where the last search stopped (a huge line
//! arriving in small pieces is scanned once); a frame is handed to the caller as a byte slice
//! (the JSON parser checks UTF-8). [`Framer::push`] and [`Framer::next_frame_in`] read a chunk
//! where it is: a frame that lies whole in it is a slice of the chunk, and only what crosses
//! chunks (the lines that complete a frame begun earlier, the unfinished tail) is copied into
//! the one `Vec<u8>` buffer. [`Framer::feed`] appends whole chunks to that buffer instead;
//! consumed bytes are dropped only when a new chunk arrives.
//!
//! Lines end with LF or CRLF. In [`Framing::Sse`], `event:`, `id:`, `retry:` and comment lines
//! are ignored (the payloads name their own types) and several `data:` lines of one frame are
//! joined with `\n` as the SSE spec says; [`Framing::SseOrJsonLines`] also takes a line starting
//! with `{` as a frame on its own (recordings with one JSON payload per line). In
//! [`Framing::Lines`] every non-empty line is a frame, as it is (the caller reads its fields);
//! in [`Framing::DataLines`] the trimmed value of every `data:` line is.
//!
//! The cap: an unfinished line (or SSE frame) longer than [`Framer::max_bytes`] (default
//! [`MAX_LINE_BYTES`], 64 MiB) is a `Protocol` error with [`Limit::LineLength`], so a server
//! that never sends a newline cannot make the reader allocate without bound.

use crate::{ErrorKind, Limit, ProviderError};

/// The default cap on one line or SSE frame (64 MiB).
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// How bytes become frames; see [`Framer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Framing {
    /// Server-sent events: a frame is the joined `data:` lines up to a blank line.
    #[default]
    Sse,
    /// Server-sent events, and also bare lines starting with `{` as frames of their own.
    SseOrJsonLines,
    /// Every non-empty line is a frame, unchanged (JSON lines; or SSE read line by line).
    Lines,
    /// Server-sent events read line by line: the value of every `data:` line, trimmed, is a
    /// frame of its own; other lines are ignored. For chat-completions servers, which put one
    /// payload on each `data:` line and do not all send the blank line between events.
    DataLines,
}

impl Framing {
    /// Whether every frame is one line.
    fn by_line(self) -> bool {
        matches!(self, Framing::Lines | Framing::DataLines)
    }

    /// The frame a line holds in a line-by-line framing: the line, or a `data:` line's value.
    fn line_frame(self, line: &[u8]) -> Option<&[u8]> {
        let frame = match self {
            Framing::DataLines => line.strip_prefix(b"data:")?.trim_ascii(),
            _ => line,
        };
        (!frame.is_empty()).then_some(frame)
    }
}

/// One incremental framer for every byte stream: SSE, JSON lines, plain lines. One buffer,
/// frames sliced out of it (no per-chunk copies), one cap ([`MAX_LINE_BYTES`] by default; a
/// longer line or frame is a `Protocol` error naming [`Limit::LineLength`]). Lines end with LF
/// or CRLF.
///
/// Pull-based: [`feed`](Self::feed) bytes, then take frames with
/// [`next_frame`](Self::next_frame) until it returns `None`, then feed again; at the end of
/// input, [`end`](Self::end) delivers what is left. Or, without copying the chunks, take
/// frames with [`next_frame_in`](Self::next_frame_in) of each chunk until it returns `None`
/// (the driver's way), then [`end`](Self::end). [`push`](Self::push) and
/// [`finish`](Self::finish) do the same with a callback. Do not switch ways within a chunk.
#[derive(Debug)]
pub struct Framer {
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
    /// A frame found by [`has_frame`](Framer::has_frame), not yet taken.
    ready: Option<Frame>,
    /// How far the chunk given to [`next_frame_in`](Framer::next_frame_in) was read.
    reading: Reading,
    framing: Framing,
    max_bytes: usize,
}

/// Where [`Framer::next_frame_in`] is in the chunk it is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// No chunk is being read: the next call starts a new one.
    Idle,
    /// The chunk was appended whole (a frame found by `has_frame` was waiting).
    Fed,
    /// A frame begun in an earlier chunk is being completed: the chunk's lines before this
    /// offset were appended to the buffer, one at a time.
    Completing(usize),
    /// Nothing is buffered: the offsets point into the chunk itself.
    InPlace,
}

impl Default for Framer {
    fn default() -> Self {
        Self::new(Framing::Sse)
    }
}

#[derive(Debug, Clone, Copy)]
/// Where a delivered frame's data is.
enum Frame {
    Slice(usize, usize),
    Joined,
    /// A line or frame past the cap.
    TooLong,
}

impl Framer {
    /// A framer of this kind with the default cap.
    pub fn new(framing: Framing) -> Self {
        Self {
            buf: Vec::new(),
            frame_start: 0,
            line_start: 0,
            scan: 0,
            data: Vec::new(),
            joined: Vec::new(),
            ready: None,
            reading: Reading::Idle,
            framing,
            max_bytes: MAX_LINE_BYTES,
        }
    }

    /// Set the cap on one unfinished line or frame (at least 1 byte).
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes.max(1);
        self
    }

    /// The cap on one unfinished line or frame.
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// The framing.
    pub fn framing(&self) -> Framing {
        self.framing
    }

    /// Append bytes (after taking every frame of the bytes before). Fails (`Protocol`,
    /// [`Limit::LineLength`]) when the unfinished line or frame already exceeds the cap, so at
    /// most the cap plus one chunk is ever buffered.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), ProviderError> {
        self.compact();
        if self.unfinished_too_long() {
            return Err(line_too_long(self.max_bytes));
        }
        self.buf.extend_from_slice(chunk);
        Ok(())
    }

    /// Whether the unfinished line or frame is past the cap. A last `\r` is not counted: it may
    /// be the first half of a CRLF line end, and the line it ends may be exactly the cap.
    fn unfinished_too_long(&self) -> bool {
        self.unfinished_too_long_in(&self.buf)
    }

    /// [`unfinished_too_long`](Self::unfinished_too_long) with the offsets pointing into `src`.
    fn unfinished_too_long_in(&self, src: &[u8]) -> bool {
        let end = src.len() - usize::from(src.last() == Some(&b'\r'));
        end.saturating_sub(self.frame_start) > self.max_bytes
    }

    /// The data of the next complete frame in what was fed, if any. Fails (`Protocol`,
    /// [`Limit::LineLength`]) for a line or frame past the cap, however it was cut into chunks.
    pub fn next_frame(&mut self) -> Result<Option<&[u8]>, ProviderError> {
        let frame = match self.ready.take() {
            Some(frame) => frame,
            None => match self.advance_own(false) {
                Some(frame) => frame,
                None => return Ok(None),
            },
        };
        self.slice(frame).map(Some)
    }

    /// Whether [`next_frame`](Self::next_frame) has a frame to give (it is found now and kept
    /// for it; for callers that must decide before borrowing the frame).
    pub fn has_frame(&mut self) -> bool {
        if self.ready.is_none() {
            self.ready = self.advance_own(false);
        }
        self.ready.is_some()
    }

    /// End of input: the frames left, including a last line without its newline and a last
    /// frame without its blank line. Call until it returns `Ok(None)`. Fails like
    /// [`feed`](Self::feed) when the unfinished rest is past the cap.
    pub fn end(&mut self) -> Result<Option<&[u8]>, ProviderError> {
        if let Some(frame) = self.ready.take() {
            return self.slice(frame).map(Some);
        }
        match self.advance_own(true) {
            Some(frame) => self.slice(frame).map(Some),
            None => Ok(None),
        }
    }

    /// Feed bytes; `on_data` gets the data of every frame they complete, in order. The first
    /// error (from the framing or from `on_data`) stops decoding and is returned.
    ///
    /// Frames are handed out straight from `chunk` (see [`next_frame_in`](Self::next_frame_in)):
    /// only a frame that crosses chunks, and the unfinished tail, are copied.
    pub fn push<F>(&mut self, chunk: &[u8], mut on_data: F) -> Result<(), ProviderError>
    where
        F: FnMut(&[u8]) -> Result<(), ProviderError>,
    {
        loop {
            let frame = match self.next_frame_in(chunk) {
                Ok(Some(frame)) => frame,
                Ok(None) => return Ok(()),
                Err(error) => {
                    self.put_aside(chunk);
                    return Err(error);
                }
            };
            if let Err(error) = on_data(frame) {
                self.put_aside(chunk);
                return Err(error);
            }
        }
    }

    /// The data of the next complete frame of what was fed and then `chunk`, read in place: a
    /// frame that lies whole in `chunk` is a slice of it, not a copy. Pass the same `chunk` until
    /// this returns `Ok(None)`: by then its unfinished tail is kept (the only bytes copied, with
    /// the lines that complete a frame begun in an earlier chunk), and the next call starts on
    /// the next chunk. Fails like [`next_frame`](Self::next_frame), and like
    /// [`feed`](Self::feed) when the unfinished rest was already past the cap.
    ///
    /// The same frames, and the same outcome, as [`feed`](Self::feed) of the chunk and then
    /// [`next_frame`](Self::next_frame) until `None`.
    pub fn next_frame_in<'a>(&'a mut self, chunk: &'a [u8]) -> Result<Option<&'a [u8]>, ProviderError> {
        Ok(match self.find_in(chunk)? {
            None => None,
            Some((Frame::Slice(start, end), true)) => Some(&chunk[start..end]),
            Some((frame, _)) => Some(self.slice(frame)?),
        })
    }

    /// The next frame of [`next_frame_in`](Self::next_frame_in), and whether its offsets point
    /// into `chunk` (else into the buffer).
    fn find_in(&mut self, chunk: &[u8]) -> Result<Option<(Frame, bool)>, ProviderError> {
        loop {
            match self.reading {
                Reading::Idle => {
                    if self.ready.is_some() {
                        // A frame kept by `has_frame` lies in the buffer: append, as `feed` does.
                        self.feed(chunk)?;
                        self.reading = Reading::Fed;
                        continue;
                    }
                    self.compact();
                    if self.unfinished_too_long() {
                        return Err(line_too_long(self.max_bytes));
                    }
                    self.reading = Reading::Completing(0);
                }
                Reading::Fed => {
                    let frame = self.ready.take().or_else(|| self.advance_own(false));
                    if frame.is_none() {
                        self.reading = Reading::Idle;
                    }
                    return Ok(frame.map(|frame| (frame, false)));
                }
                Reading::Completing(at) => {
                    if let Some(frame) = self.advance_own(false) {
                        return Ok(Some((frame, false)));
                    }
                    if self.frame_start == self.buf.len() {
                        // Nothing pending: the rest of the chunk is read where it is.
                        self.buf.clear();
                        (self.frame_start, self.line_start, self.scan) = (at, at, at);
                        self.reading = Reading::InPlace;
                        continue;
                    }
                    if at == chunk.len() {
                        self.reading = Reading::Idle;
                        return Ok(None);
                    }
                    // Complete the pending frame a line at a time: copy no more than it needs.
                    let next = memchr::memchr(b'\n', &chunk[at..]).map_or(chunk.len(), |i| at + i + 1);
                    self.buf.extend_from_slice(&chunk[at..next]);
                    self.reading = Reading::Completing(next);
                }
                Reading::InPlace => {
                    return Ok(match self.advance(chunk, false) {
                        Some(Frame::TooLong) => {
                            self.keep_tail(chunk);
                            Some((Frame::TooLong, false))
                        }
                        Some(frame) => Some((frame, true)),
                        None => {
                            self.keep_tail(chunk);
                            self.reading = Reading::Idle;
                            None
                        }
                    });
                }
            }
        }
    }

    /// Read in place up to here: the unfinished rest of `chunk` moves into the buffer, the
    /// offsets with it.
    fn keep_tail(&mut self, chunk: &[u8]) {
        let shift = self.frame_start;
        self.buf.clear();
        self.buf.extend_from_slice(&chunk[shift..]);
        self.frame_start = 0;
        self.line_start -= shift;
        self.scan = self.scan.saturating_sub(shift);
        for (start, end) in &mut self.data {
            *start -= shift;
            *end -= shift;
        }
        self.reading = Reading::Fed;
    }

    /// Stop reading `chunk` part way (an error): what is left of it is buffered, as if fed.
    fn put_aside(&mut self, chunk: &[u8]) {
        match self.reading {
            Reading::InPlace => self.keep_tail(chunk),
            Reading::Completing(at) => self.buf.extend_from_slice(&chunk[at..]),
            Reading::Idle | Reading::Fed => {}
        }
        // The chunk is all in the buffer now: the next call starts on the next chunk.
        self.reading = Reading::Idle;
    }

    /// End of input with a callback (see [`end`](Self::end)).
    pub fn finish<F>(&mut self, mut on_data: F) -> Result<(), ProviderError>
    where
        F: FnMut(&[u8]) -> Result<(), ProviderError>,
    {
        while let Some(frame) = self.end()? {
            on_data(frame)?;
        }
        Ok(())
    }

    /// Bytes received but not yet part of a delivered frame.
    pub fn pending(&self) -> usize {
        self.buf.len() - self.frame_start
    }

    fn slice(&self, frame: Frame) -> Result<&[u8], ProviderError> {
        Ok(match frame {
            Frame::Slice(start, end) => &self.buf[start..end],
            Frame::Joined => &self.joined,
            Frame::TooLong => return Err(line_too_long(self.max_bytes)),
        })
    }

    fn compact(&mut self) {
        // A frame kept by `has_frame` lies before `frame_start`: keep it until it is taken.
        if self.frame_start == 0 || self.ready.is_some() {
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

    /// [`advance`](Self::advance) over the buffer.
    fn advance_own(&mut self, at_end: bool) -> Option<Frame> {
        let buf = std::mem::take(&mut self.buf);
        let frame = self.advance(&buf, at_end);
        self.buf = buf;
        frame
    }

    /// The next frame in `src` (the buffer, or a chunk read in place) from the offsets on.
    fn advance(&mut self, src: &[u8], at_end: bool) -> Option<Frame> {
        loop {
            let from = self.scan.max(self.line_start);
            let (start, next) = match memchr::memchr(b'\n', &src[from..]) {
                Some(offset) => (self.line_start, from + offset + 1),
                None if at_end && self.line_start < src.len() => (self.line_start, src.len() + 1),
                None if at_end => return self.take_frame(src),
                None => {
                    self.scan = src.len();
                    // Past the cap already: say so now, whatever the next chunk brings.
                    return self.unfinished_too_long_in(src).then_some(Frame::TooLong);
                }
            };
            let mut end = (next - 1).min(src.len());
            if end > start && src[end - 1] == b'\r' {
                end -= 1;
            }
            let next = next.min(src.len());
            // The cap holds for complete lines too, so chunking never changes the outcome.
            if end - start > self.max_bytes || end - self.frame_start > self.max_bytes {
                return Some(Frame::TooLong);
            }
            let line = &src[start..end];
            if self.framing.by_line() {
                self.line_start = next;
                self.frame_start = next;
                match self.framing.line_frame(line) {
                    Some(frame) => {
                        // The frame lies within the line: its offsets, from their distance to the line's end.
                        let frame_start = start + (frame.as_ptr() as usize - line.as_ptr() as usize);
                        return Some(Frame::Slice(frame_start, frame_start + frame.len()));
                    }
                    None => continue,
                }
            }
            if line.is_empty() {
                self.line_start = next;
                match self.take_frame(src) {
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
            if self.framing == Framing::SseOrJsonLines && line[0] == b'{' {
                if !self.data.is_empty() {
                    // Deliver the pending frame first; this line is read again next time.
                    return self.take_frame(src);
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

    fn take_frame(&mut self, src: &[u8]) -> Option<Frame> {
        let frame = match self.data.as_slice() {
            [] => None,
            [(start, end)] => Some(Frame::Slice(*start, *end)),
            ranges => {
                self.joined.clear();
                for (i, (start, end)) in ranges.iter().enumerate() {
                    if i > 0 {
                        self.joined.push(b'\n');
                    }
                    self.joined.extend_from_slice(&src[*start..*end]);
                }
                Some(Frame::Joined)
            }
        };
        self.data.clear();
        self.frame_start = self.line_start;
        frame
    }
}

fn line_too_long(max: usize) -> ProviderError {
    ProviderError::new(
        ErrorKind::Protocol,
        format!("a line of the stream grew past {max} bytes without ending (limit max_line_bytes)"),
    )
    .with_limit(Limit::LineLength)
}

#[cfg(test)]
mod tests;
