//! The wire translator: a pure state machine from chat-completions stream bytes to patchbay
//! [`Event`](patchbay_core::Event)s. No I/O, no clock beyond the metrics recorder: feed it bytes cut anywhere and it
//! produces the same events.
//!
//! ```
//! use patchbay_core::kit::{Framing, translate};
//! use patchbay_openrouter::translate::Translator;
//! let body = b"data: {\"id\":\"r1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n\
//!              data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
//! let recording = translate(Translator::new(Framing::DataLines), [&body[..]]);
//! assert!(recording.error.is_none());
//! assert_eq!(recording.events.len(), 3); // Started, TextDelta, Finish
//! ```
//!
//! # What it does with the wire
//! - **Framing**: the [`Translator`] is core's [`Wire`](patchbay_core::kit::Wire) with
//!   [`Framing::DataLines`](patchbay_core::kit::Framing::DataLines): core's framer slices lines
//!   out of the incoming bytes (one buffer, one cap: a line past the limits' `max_line_bytes`,
//!   default 64 MiB, is a `Protocol` error naming [`Limit::LineLength`](patchbay_core::Limit))
//!   and each `data:` line is parsed once, in place, into borrowing typed structs. `\n` and
//!   `\r\n` line ends; comment lines (`: OPENROUTER PROCESSING`) and `event:`/`id:`/`retry:`
//!   fields are ignored; each `data:` line is one payload (chat-completions servers never split
//!   a payload across lines). [`Framing::Lines`](patchbay_core::kit::Framing::Lines) reads one
//!   payload per line without SSE fields (recorded captures).
//! - **Blocks**: content block indexes are assigned in order of appearance; a new block opens
//!   whenever the kind changes (reasoning, text), after a reasoning signature, for encrypted
//!   reasoning, and after tool calls.
//! - **Reasoning**: `reasoning_details` win when present (`reasoning.text` with its signature,
//!   `reasoning.summary`, `reasoning.encrypted` as [`Event::RedactedReasoning`](patchbay_core::Event::RedactedReasoning) whose data is the
//!   whole detail object as JSON, so id and format survive the round trip); otherwise
//!   `reasoning`, else `reasoning_content`.
//! - **Tool calls** are assembled by `index` (by id, or the last call, when a server leaves the
//!   index out; a new id on an index already holding a named call starts a new call). Ids and
//!   names may arrive late; ids missing or used twice are made unique. A call's
//!   `ToolCallStart`, input and `ToolCall` are emitted together when its choice finishes (a
//!   chat-completions stream has no per-call end, and partial JSON that happens to parse is
//!   not an end). A call whose input is not complete JSON when the choice ends (cut by the
//!   length limit) becomes an [`Event::Opaque`](patchbay_core::Event::Opaque) `incomplete_tool_call`, never a call the host
//!   would run.
//! - **Several choices**: the first choice seen streams; every other choice is collected and
//!   reported at the end as an [`Event::Opaque`](patchbay_core::Event::Opaque) `extra_choice` (nothing is dropped).
//! - **Finish**: `stop` (or `Refusal` after refusal deltas, or `ToolUse` when tool calls were
//!   made), `length`, `tool_calls`, `content_filter`; a missing or `null` reason with tool calls
//!   is `ToolUse`. `Finish` is emitted at `[DONE]`, or at the end of the body once the choice
//!   finished; a body that ends before either is a `Protocol` error.
//! - **Usage** may arrive in any chunk (usually a final chunk with `choices: []`); each one
//!   becomes a cumulative [`Event::Usage`](patchbay_core::Event::Usage). `input` excludes cached tokens, which are reported
//!   as `cache_read` (and OpenRouter's `cache_write_tokens` as `cache_write`).
//! - **Sources** (see `sources.rs`): `url_citation` annotations become `Source`s of the text
//!   block they annotate, with the span they support; Perplexity's `citations` and
//!   `search_results` become one `Source` per position, numbered like the text's `[n]` markers.
//! - **Errors**: an `error` object inside the stream ends it with a typed error; what was
//!   already emitted stays, and usage sent in the same chunk is emitted before the error.

// The modules in dependency order, as in the crate root: each uses only those above it (and
// the crate's `wire`, `api_error` and `NAME`).
//
// convert: tool-call assembly, reasoning details, usage, finish reasons; pure.
mod convert;

// sources: annotations and Perplexity citations as sources; pure.
mod sources;

// state: the state machine, payloads in, events out; uses convert.
mod state;

// translator: the `Translator`, core's `Wire` around the state; uses state.
mod translator;

pub use translator::Translator;

#[doc(hidden)]
pub use crate::fast::check as check_fast_read;
