//! What `tracing` logs, kept in memory for a test to search: that no line shows a secret, that
//! a warning was logged.
//!
//! ```
//! use patchbay_conformance::logs::LogCapture;
//!
//! let capture = LogCapture::new();
//! tracing::subscriber::with_default(capture.subscriber(), || {
//!     tracing::info!(user = "ada", "signed in");
//! });
//! assert!(capture.text().contains("signed in"));
//! ```

use std::io::Write;
use std::sync::{Arc, Mutex};

use tracing_subscriber::fmt::MakeWriter;

/// Everything a `fmt` subscriber writes into it; clones share one buffer, so a test keeps one
/// clone to read while the subscriber writes into another.
#[derive(Clone, Debug, Default)]
pub struct LogCapture(Arc<Mutex<Vec<u8>>>);

impl LogCapture {
    /// An empty capture.
    pub fn new() -> Self {
        Self::default()
    }

    /// A `fmt` subscriber that logs every level (TRACE and up), without colours, into this
    /// capture. Install it for a scope (`tracing::subscriber::with_default`) or for the whole
    /// process (`tracing::subscriber::set_global_default`, which also sees other threads).
    pub fn subscriber(&self) -> impl tracing::Subscriber + Send + Sync + 'static {
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(self.clone())
            .finish()
    }

    /// Everything written so far, as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        self.0
            .lock()
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default()
    }
}

impl Write for LogCapture {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut all) = self.0.lock() {
            all.extend_from_slice(bytes);
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for LogCapture {
    type Writer = LogCapture;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}
