//! Newline-delimited reading with a size limit: one buffer, lines sliced out of it.

use tokio::io::{AsyncRead, AsyncReadExt};

use crate::error::Error;

/// The default longest stdout line accepted (32 MiB).
pub const DEFAULT_MAX_LINE: usize = 32 * 1024 * 1024;

/// Reads `\n`-terminated lines from a byte stream. The buffer grows only up to the limit; a
/// line past it is [`Error::LineTooLong`] (nothing is buffered without bound).
#[derive(Debug)]
pub struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// Start of the unread part of `buf`.
    start: usize,
    /// How far `buf[start..]` was already searched for a newline.
    scanned: usize,
    max: usize,
    eof: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// A reader accepting lines up to `max` bytes (newline excluded).
    pub fn new(inner: R, max: usize) -> Self {
        Self {
            inner,
            buf: Vec::with_capacity(64 * 1024),
            start: 0,
            scanned: 0,
            max,
            eof: false,
        }
    }

    /// The byte stream read from.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// The byte stream read from (reading it directly skips what is buffered here).
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// The next line without its newline (a trailing `\r` is kept), or `None` at the end. A last
    /// line without a newline is returned too. Cancel-safe: a dropped call loses nothing.
    pub async fn next_line(&mut self) -> Result<Option<&[u8]>, Error> {
        loop {
            let pending = &self.buf[self.start + self.scanned..];
            if let Some(pos) = memchr::memchr(b'\n', pending) {
                let line_start = self.start;
                let end = self.start + self.scanned + pos;
                if end - line_start > self.max {
                    return Err(Error::LineTooLong { limit: self.max });
                }
                self.start = end + 1;
                self.scanned = 0;
                return Ok(Some(&self.buf[line_start..end]));
            }
            self.scanned = self.buf.len() - self.start;
            if self.scanned > self.max {
                return Err(Error::LineTooLong { limit: self.max });
            }
            if self.eof {
                if self.scanned == 0 {
                    return Ok(None);
                }
                let line_start = self.start;
                self.start = self.buf.len();
                self.scanned = 0;
                return Ok(Some(&self.buf[line_start..]));
            }
            // Compact once the consumed prefix dominates: amortized linear.
            if self.start > 0 && self.start >= self.buf.len() / 2 {
                self.buf.drain(..self.start);
                self.start = 0;
            }
            // `read_buf` fills spare capacity and grows the length only once a read completes,
            // so a call dropped mid-read (inside `select!`) leaves the buffer as it was.
            self.buf.reserve(64 * 1024);
            match self.inner.read_buf(&mut self.buf).await {
                Ok(0) => self.eof = true,
                Ok(_) => {}
                Err(source) => {
                    return Err(Error::Io {
                        what: "reading the CLI's stdout",
                        source,
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Result<Vec<String>, Error> {
        let mut reader = LineReader::new(input, max);
        let mut out = Vec::new();
        while let Some(line) = reader.next_line().await? {
            out.push(String::from_utf8_lossy(line).into_owned());
        }
        Ok(out)
    }

    #[tokio::test]
    async fn splits_lines_and_keeps_the_last_one() {
        let got = lines(b"a\nbb\n\nccc", 10).await.ok();
        assert_eq!(got, Some(vec!["a".into(), "bb".into(), "".into(), "ccc".into()]));
    }

    #[tokio::test]
    async fn a_line_past_the_limit_is_a_typed_error() {
        let long = [b'x'; 100];
        assert!(matches!(lines(&long, 10).await, Err(Error::LineTooLong { limit: 10 })));
        let mut exact = vec![b'y'; 10];
        exact.push(b'\n');
        assert_eq!(lines(&exact, 10).await.ok().map(|l| l.len()), Some(1));
    }

    #[tokio::test]
    async fn a_dropped_read_loses_nothing() {
        let (mut tx, rx) = tokio::io::duplex(16);
        let mut reader = LineReader::new(rx, 1024);
        // Start a read that cannot finish, and drop it (as `select!` does).
        let pending = tokio::time::timeout(std::time::Duration::from_millis(20), reader.next_line()).await;
        assert!(pending.is_err());
        use tokio::io::AsyncWriteExt;
        let _ = tx.write_all(b"abc\n").await;
        drop(tx);
        let line = reader.next_line().await.ok().flatten().map(<[u8]>::to_vec);
        assert_eq!(line.as_deref(), Some(&b"abc"[..]));
    }

    #[tokio::test]
    async fn big_lines_cross_many_reads() {
        let mut input = Vec::new();
        for i in 0..5 {
            input.extend(std::iter::repeat_n(b'a' + i, 300_000));
            input.push(b'\n');
        }
        let got = lines(&input, 1 << 20).await.ok().unwrap_or_default();
        assert_eq!(got.len(), 5);
        assert!(got.iter().all(|l| l.len() == 300_000));
    }
}
