//! The wire translator: a pure state machine from chat-completions stream bytes to patchbay
//! [`Event`]s. No I/O, no clock beyond the metrics recorder: feed it bytes cut anywhere and it
//! produces the same events.
//!
//! ```
//! use patchbay_openrouter::translate::{Framing, Translator};
//! let body = b"data: {\"id\":\"r1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n\
//!              data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
//! let (events, error) = Translator::new(Framing::Sse).translate_all([&body[..]]);
//! assert!(error.is_none());
//! assert_eq!(events.len(), 3); // Started, TextDelta, Finish
//! ```
//!
//! # What it does with the wire
//! - **Framing**: core's [`Framer`] slices lines out of the incoming bytes (one buffer, one cap:
//!   a line past [`Translator::with_max_line_bytes`], default 64 MiB, is a `Protocol` error
//!   naming [`Limit::LineLength`](patchbay_core::Limit)) and each `data:` line is
//!   parsed once, in place, into borrowing typed structs. `\n` and `\r\n` line ends; comment
//!   lines (`: OPENROUTER PROCESSING`) and `event:`/`id:`/`retry:` fields are ignored; each
//!   `data:` line is one payload (chat-completions servers never split a payload across lines).
//!   [`Framing::JsonLines`] reads one payload per line without SSE fields (recorded captures).
//! - **Blocks**: content block indexes are assigned in order of appearance; a new block opens
//!   whenever the kind changes (reasoning, text), after a reasoning signature, for encrypted
//!   reasoning, and after tool calls.
//! - **Reasoning**: `reasoning_details` win when present (`reasoning.text` with its signature,
//!   `reasoning.summary`, `reasoning.encrypted` as [`Event::RedactedReasoning`] whose data is the
//!   whole detail object as JSON, so id and format survive the round trip); otherwise
//!   `reasoning`, else `reasoning_content`.
//! - **Tool calls** are assembled by `index` (by id, or the last call, when a server leaves the
//!   index out; a new id on an index already holding a named call starts a new call). Ids and
//!   names may arrive late; ids missing or used twice are made unique. A call's
//!   `ToolCallStart`, input and `ToolCall` are emitted together when its choice finishes (a
//!   chat-completions stream has no per-call end, and partial JSON that happens to parse is
//!   not an end). A call whose input is not complete JSON when the choice ends (cut by the
//!   length limit) becomes an [`Event::Opaque`] `incomplete_tool_call`, never a call the host
//!   would run.
//! - **Several choices**: the first choice seen streams; every other choice is collected and
//!   reported at the end as an [`Event::Opaque`] `extra_choice` (nothing is dropped).
//! - **Finish**: `stop` (or `Refusal` after refusal deltas, or `ToolUse` when tool calls were
//!   made), `length`, `tool_calls`, `content_filter`; a missing or `null` reason with tool calls
//!   is `ToolUse`. `Finish` is emitted at `[DONE]`, or at the end of the body once the choice
//!   finished; a body that ends before either is a `Protocol` error.
//! - **Usage** may arrive in any chunk (usually a final chunk with `choices: []`); each one
//!   becomes a cumulative [`Event::Usage`]. `input` excludes cached tokens, which are reported
//!   as `cache_read` (and OpenRouter's `cache_write_tokens` as `cache_write`).
//! - **Errors**: an `error` object inside the stream ends it with a typed error; what was
//!   already emitted stays.

mod convert;
mod replay;
mod state;

use patchbay_core::kit::{self, Framer};
use patchbay_core::{Event, ProviderError, Warning};

pub use replay::{Replayed, replay};
use state::State;

/// Where the translator puts events: a `Vec` or a `VecDeque` (the provider hands events out
/// from the front without moving them twice).
pub trait EventSink {
    /// Append one event.
    fn push_event(&mut self, event: Event);
}

impl EventSink for Vec<Event> {
    fn push_event(&mut self, event: Event) {
        self.push(event);
    }
}

impl EventSink for std::collections::VecDeque<Event> {
    fn push_event(&mut self, event: Event) {
        self.push_back(event);
    }
}

/// How payloads are framed in the byte stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Framing {
    /// Server-sent events (`data: {...}` lines), as servers send them.
    #[default]
    Sse,
    /// One JSON payload per line, no SSE fields (raw-chunk captures such as `*.chunks.txt`).
    JsonLines,
}

/// The translator. See the [module docs](self) for what it does with the wire.
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
    pub fn feed(&mut self, bytes: &[u8], out: &mut impl EventSink) -> Result<(), ProviderError> {
        if self.state.ended {
            return Ok(());
        }
        let (state, framing) = (&mut self.state, self.framing);
        let result = self.lines.push(bytes, |line| {
            if state.ended {
                return Ok(());
            }
            state.line(line, framing, out)
        });
        if result.is_err() {
            self.state.ended = true;
        }
        result
    }

    /// The body ended: translate a last line without a line end, then close the stream
    /// (`Finish`, or a `Protocol` error if the response never finished).
    pub fn finish(&mut self, out: &mut impl EventSink) -> Result<(), ProviderError> {
        while !self.state.ended
            && let Some(line) = self.lines.end()?
        {
            self.state.line(line, self.framing, out)?;
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
