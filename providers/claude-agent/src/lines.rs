//! Newline-delimited reading of the CLI's stdout on core's line framer
//! ([`Framer`] in [`Framing::Lines`]): the workspace's one framer, with its one cap.

use patchbay_core::kit::{Framer, Framing, MAX_LINE_BYTES};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::error::Error;

/// The default longest stdout line accepted: the workspace's line cap (64 MiB).
pub const DEFAULT_MAX_LINE: usize = MAX_LINE_BYTES;

/// How much is read from the pipe at once.
const READ_CHUNK: usize = 64 * 1024;

/// Reads `\n`-terminated lines from a byte stream. At most the limit plus one read is buffered;
/// a line past the limit is [`Error::LineTooLong`]. Blank lines are skipped and a trailing `\r`
/// is dropped (the CLI writes one JSON value per line).
#[derive(Debug)]
pub struct LineReader<R> {
    inner: R,
    framer: Framer,
    /// One read from the pipe, before it goes to the framer.
    chunk: Vec<u8>,
    max: usize,
    eof: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// A reader accepting lines up to `max` bytes (newline excluded).
    pub fn new(inner: R, max: usize) -> Self {
        Self {
            inner,
            framer: Framer::new(Framing::Lines).with_max_bytes(max),
            chunk: Vec::with_capacity(READ_CHUNK),
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

    /// The next line without its newline, or `None` at the end. A last line without a newline
    /// is returned too. Cancel-safe: a dropped call loses nothing.
    pub async fn next_line(&mut self) -> Result<Option<&[u8]>, Error> {
        let max = self.max;
        let too_long = move |_| Error::LineTooLong { limit: max };
        loop {
            if self.framer.has_frame() {
                return self.framer.next_frame().map_err(too_long);
            }
            if self.eof {
                return self.framer.end().map_err(too_long);
            }
            // `read_buf` fills spare capacity and grows the length only once a read completes,
            // so a call dropped mid-read (inside `select!`) leaves everything as it was.
            self.chunk.clear();
            self.chunk.reserve(READ_CHUNK);
            match self.inner.read_buf(&mut self.chunk).await {
                Ok(0) => self.eof = true,
                Ok(_) => self.framer.feed(&self.chunk).map_err(too_long)?,
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
        let got = lines(b"a\nbb\r\n\nccc", 10).await.ok();
        assert_eq!(got, Some(vec!["a".into(), "bb".into(), "ccc".into()]));
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
