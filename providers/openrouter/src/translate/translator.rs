//! The [`Translator`]: core's line [`Framer`] in front of the `State` machine, and the
//! [`Framing`] that says which lines hold payloads.

use patchbay_core::kit::{self, Framer};
use patchbay_core::{Event, ProviderError, Warning};

use super::state::{EventBuffer, State};

/// How payloads are framed in the byte stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Framing {
    /// Server-sent events (`data: {...}` lines), as servers send them.
    #[default]
    Sse,
    /// One JSON payload per line, no SSE fields (raw-chunk captures such as `*.chunks.txt`).
    JsonLines,
}

impl Framing {
    /// The payload a line holds, trimmed: the whole line for JSON lines, the value of a `data:`
    /// field for SSE (`None` for blank lines, comments such as `: OPENROUTER PROCESSING` and
    /// other fields).
    pub(super) fn payload(self, line: &[u8]) -> Option<&[u8]> {
        let payload = match self {
            Framing::JsonLines => line,
            Framing::Sse => line.strip_prefix(b"data:")?,
        }
        .trim_ascii();
        (!payload.is_empty()).then_some(payload)
    }
}

/// The translator. See the [module docs](super) for what it does with the wire.
#[derive(Debug)]
pub struct Translator {
    framing: Framing,
    lines: Framer,
    state: State,
}

impl Default for Translator {
    fn default() -> Self {
        Self::new(Framing::Sse)
    }
}

impl Translator {
    /// A translator for this framing. `Started` names the model the first chunk reports.
    pub fn new(framing: Framing) -> Self {
        Self {
            framing,
            lines: Framer::new(kit::Framing::Lines),
            state: State::new(),
        }
    }

    /// Cap one line of the stream at `max` bytes (default [`kit::MAX_LINE_BYTES`]).
    pub fn with_max_line_bytes(mut self, max: usize) -> Self {
        self.lines = Framer::new(kit::Framing::Lines).with_max_bytes(max);
        self
    }

    /// The model to name in `Started` when the chunks name none.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.state.model = model.into();
        self
    }

    /// Warnings to put on `Started`.
    pub fn with_warnings(mut self, warnings: Vec<Warning>) -> Self {
        self.state.warnings = warnings;
        self
    }

    /// Whether the stream ended (`Finish` or an error was produced); later bytes are ignored.
    pub fn is_done(&self) -> bool {
        self.state.ended
    }

    /// Whether `Started` was produced (the retry layer may still retry before that).
    pub fn has_started(&self) -> bool {
        self.state.started
    }

    /// Feed bytes cut anywhere; complete events are appended to `out`. An error ends the
    /// stream: events appended before it stay valid and should reach the caller first.
    pub fn feed(&mut self, bytes: &[u8], out: &mut impl EventBuffer) -> Result<(), ProviderError> {
        if self.state.ended {
            return Ok(());
        }
        let (state, framing) = (&mut self.state, self.framing);
        let result = self.lines.push(bytes, |line| {
            if state.ended {
                return Ok(());
            }
            match framing.payload(line) {
                Some(payload) => state.payload(payload, out),
                None => Ok(()),
            }
        });
        if result.is_err() {
            self.state.ended = true;
        }
        result
    }

    /// The body ended: translate a last line without a line end, then close the stream
    /// (`Finish`, or a `Protocol` error if the response never finished).
    pub fn finish(&mut self, out: &mut impl EventBuffer) -> Result<(), ProviderError> {
        while !self.state.ended
            && let Some(line) = self.lines.end()?
        {
            if let Some(payload) = self.framing.payload(line) {
                self.state.payload(payload, out)?;
            }
        }
        if self.state.ended {
            return Ok(());
        }
        self.state.end(false, out)
    }

    /// Translate a whole body given as chunks; returns the events and the error that ended
    /// the stream, if any.
    pub fn translate_all<'a>(
        mut self,
        chunks: impl IntoIterator<Item = &'a [u8]>,
    ) -> (Vec<Event>, Option<ProviderError>) {
        let mut out = Vec::new();
        for chunk in chunks {
            if let Err(error) = self.feed(chunk, &mut out) {
                return (out, Some(error));
            }
        }
        match self.finish(&mut out) {
            Ok(()) => (out, None),
            Err(error) => (out, Some(error)),
        }
    }
}

impl Translator {
    /// Work done so far by the tool-call and choice bookkeeping, in steps: each index lookup
    /// (one or two per tool-call fragment, one per chunk of an extra choice), each call
    /// finalized and each id tried when making ids unique. A measure of the translator's cost
    /// that does not depend on the machine: it grows linearly with the stream, which the
    /// scaling tests check. Not a stable API.
    #[doc(hidden)]
    pub fn lookups(&self) -> u64 {
        self.state.lookups
    }
}
