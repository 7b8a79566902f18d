//! The [`Translator`]: the `State` machine as core's [`Wire`] for chat-completions streams.

use std::collections::VecDeque;

use patchbay_core::kit::{ErrorResponse, Framer, Framing, Wire};
use patchbay_core::{Event, ProviderError, Warning};
use serde_json::Value;

use super::state::{EventBuffer, State};
use crate::api_error;

/// The translator. See the [module docs](super) for what it does with the wire.
#[derive(Debug)]
pub struct Translator {
    framing: Framing,
    state: State,
    queue: VecDeque<Event>,
}

impl Default for Translator {
    fn default() -> Self {
        Self::new(Framing::DataLines)
    }
}

impl Translator {
    /// A translator reading payloads framed this way: [`Framing::DataLines`] as servers send
    /// them (the value of each `data:` line), [`Framing::Lines`] for one JSON payload per line
    /// (raw-chunk captures such as `*.chunks.txt`). `Started` names the model the first chunk
    /// reports.
    pub fn new(framing: Framing) -> Self {
        Self {
            framing,
            state: State::new(),
            queue: VecDeque::new(),
        }
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

    /// Whether `Started` was produced (the retry layer may still retry before that).
    pub fn has_started(&self) -> bool {
        self.state.started
    }

    /// Work done so far by the tool-call and choice bookkeeping, in steps: each index lookup
    /// (one or two per tool-call fragment, one per chunk of an extra choice), each call
    /// finalized and each id tried when making ids unique. A measure of the translator's cost
    /// that does not depend on the machine: it grows linearly with the stream, which the
    /// scaling tests check. Not a stable API.
    #[doc(hidden)]
    pub fn lookups(&self) -> u64 {
        self.state.lookups
    }

    /// One payload into the state; an error ends the stream.
    fn payload(&mut self, payload: &[u8]) -> Result<(), ProviderError> {
        Self::payload_into(&mut self.state, payload, &mut self.queue)
    }

    fn payload_into(state: &mut State, payload: &[u8], out: &mut impl EventBuffer) -> Result<(), ProviderError> {
        let payload = payload.trim_ascii();
        if state.ended || payload.is_empty() {
            return Ok(());
        }
        let result = state.payload(payload, out);
        if result.is_err() {
            state.ended = true;
        }
        result
    }
}

/// The events of one frame: the first handed back directly (a text chunk's one event never
/// touches the queue), the rest queued after it.
struct FirstThenQueue<'a> {
    first: Option<Event>,
    queue: &'a mut VecDeque<Event>,
}

impl EventBuffer for FirstThenQueue<'_> {
    fn push_event(&mut self, event: Event) {
        if self.first.is_none() && self.queue.is_empty() {
            self.first = Some(event);
        } else {
            self.queue.push_back(event);
        }
    }
}

impl Wire for Translator {
    fn framing(&self) -> Framing {
        self.framing
    }

    fn frame(&mut self, data: &[u8]) -> Result<Option<Event>, ProviderError> {
        let mut out = FirstThenQueue {
            first: None,
            queue: &mut self.queue,
        };
        match Self::payload_into(&mut self.state, data, &mut out) {
            Ok(()) => Ok(out.first),
            Err(error) => {
                // The events before the error are delivered before it: all of them queued.
                if let Some(first) = out.first {
                    self.queue.push_front(first);
                }
                Err(error)
            }
        }
    }

    /// Close the stream: `Finish`, or a `Protocol` error if the response never finished.
    fn end(&mut self) -> Result<(), ProviderError> {
        if self.state.ended {
            return Ok(());
        }
        self.state.end(false, &mut self.queue)
    }

    fn next_event(&mut self) -> Option<Event> {
        self.queue.pop_front()
    }

    /// Whether the stream ended (`Finish` or an error was produced); later bytes are ignored.
    fn is_done(&self) -> bool {
        self.state.ended
    }

    /// A JSON body where a stream was asked for: read as the stream would have been (an error
    /// object on a line of its own is typed; anything else ends without a finish).
    fn whole_body(&mut self, body: &[u8]) -> Result<(), ProviderError> {
        let mut framer = Framer::new(self.framing).with_max_bytes(body.len().max(1));
        framer.push(body, |data| self.payload(data))?;
        framer.finish(|data| self.payload(data))?;
        self.end()
    }

    fn error_response(&self, response: ErrorResponse<'_>) -> ProviderError {
        api_error::from_http(response)
    }

    /// A payload with choices or an error (a trailer such as `{"choices": [], "cost": ...}`
    /// after `[DONE]` starts nothing).
    fn starts_response(&self, data: &[u8]) -> bool {
        match serde_json::from_slice::<Value>(data) {
            Ok(value) => {
                value.get("error").is_some()
                    || value
                        .get("choices")
                        .and_then(Value::as_array)
                        .is_some_and(|c| !c.is_empty())
            }
            Err(_) => data != b"[DONE]",
        }
    }
}
