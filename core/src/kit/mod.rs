//! The implementer kit: what a provider crate needs and a host does not (like OpenDAL's `raw`).
//!
//! - [`Driver`] turns a response body into the event stream `create_response` returns, around
//!   a [`StreamTranslator`] (the provider's pure wire state machine): cancellation, the
//!   [`StreamLimits`] (read and content timeouts), typed errors naming the [`Limit`](crate::Limit)
//!   that tripped, provider and request-id tagging. Generic over the byte source, so core has
//!   no HTTP client.
//! - [`Framer`] slices SSE frames, JSON lines or plain lines out of bytes cut anywhere, with
//!   one cap ([`MAX_LINE_BYTES`]).
//! - [`within`] awaits a request or its headers under the same signal and read timeout;
//!   [`read_error_body`] reads a capped, bounded error body.
//! - [`redact_url`] and [`redirect_error`] keep keys on their host and out of logs.
//! - [`token_count`] reads a server's usage numbers so no value breaks a stream or a sum.

mod counts;
mod drive;
mod framing;
mod redact;

pub use counts::token_count;
pub use drive::{Driver, StreamLimits, StreamTranslator, read_error_body, within};
pub use framing::{Framer, Framing, MAX_LINE_BYTES};
pub use redact::{redact_serde_message, redact_url, redirect_error};
