//! The implementer kit: what a provider crate needs and a host does not (like OpenDAL's `raw`).
//!
//! - [`Wire`] is the one trait a wire family implements: its [`Framing`], a pure translator
//!   from frames to events, and the mapping of its HTTP errors ([`ErrorResponse`]).
//! - [`Driver`] turns a response body into the event stream `create_response` returns through
//!   a wire: framing, cancellation, the [`StreamLimits`] (read and content timeouts), typed
//!   errors naming the [`Limit`](crate::Limit) that tripped, provider and request-id tagging.
//!   Generic over the byte source, so core has no HTTP client (`patchbay-http`'s call runner
//!   is the HTTP end). [`replay`] runs a wire over a recorded body, one [`Recording`] per
//!   response.
//! - [`Framer`] slices SSE frames, JSON lines or plain lines out of bytes cut anywhere, with
//!   one cap ([`MAX_LINE_BYTES`]).
//! - [`within`] awaits a request or its headers under the same signal and read timeout;
//!   [`read_error_body`] reads a capped, bounded error body.
//! - [`redact_url`] and [`redirect_error`] keep keys on their host and out of logs.
//! - [`token_count`] reads a server's usage numbers so no value breaks a stream or a sum.
//! - [`read_options`] reads a provider's JSON options, naming the key at fault and quoting no
//!   value.
//! - [`Secret`] holds a key so no `Debug` shows it; [`request_span_for`] is the one span of a
//!   model call (OpenTelemetry GenAI attributes, see [`telemetry`](crate::telemetry)),
//!   [`in_span`] polls an event stream inside it and fills in the response's attributes.
//! - Helpers every provider needs: [`check_conversation`] (input checks before any I/O),
//!   [`kind_for_status`] and [`parse_retry_after`] (HTTP errors), [`MetricsRecorder`] (the
//!   `Finish` metrics), [`ContentBuilder`] (events back into content blocks), [`run_tool`]
//!   (a host tool run with its errors turned into results).
//! - [`ParentDeathSignal`] rewrites a program line so the child dies with the thread that
//!   spawned it (util-linux `setpriv --pdeathsig=KILL`), and [`find_program`] searches a
//!   `PATH` value: for the crates that spawn processes (tools, claude-agent, MCP). Core itself
//!   spawns nothing; here is the lowest crate they all share.
//! - [`openai_error`] and [`openai_http_error`] read the OpenAI error family (Chat Completions
//!   and Responses servers alike).

mod call_ids;
mod content;
mod conversation;
mod counts;
mod drive;
mod framing;
mod json_cursor;
mod metrics;
mod openai_error;
mod options;
mod pdeathsig;
mod redact;
mod request_checks;
mod run_tool;
mod secret;
mod span;
mod status;
mod wire;

pub use counts::token_count;
pub use drive::{Driver, StreamLimits, read_error_body, within};
pub use framing::{Framer, Framing, MAX_LINE_BYTES};
pub use json_cursor::{JsonCursor, string_run};
pub use openai_error::{openai_error, openai_http_error};
pub use options::{OptionsError, env_var, read_options};
pub use pdeathsig::{ParentDeathSignal, find_program};
pub use redact::{redact_serde_message, redact_url, redirect_error};
pub use request_checks::{has_cache_markers, unique_warnings};
pub use secret::Secret;
pub(crate) use span::observed;
pub use span::{in_span, record_error, request_span, request_span_for};
pub use wire::{ErrorResponse, Recording, Wire, frame_head, replay, request_id, translate};

pub use call_ids::CallIds;
pub use content::ContentBuilder;
pub use conversation::check_conversation;
pub use metrics::MetricsRecorder;
pub use run_tool::run_tool;
pub use status::{kind_for_status, parse_retry_after};
