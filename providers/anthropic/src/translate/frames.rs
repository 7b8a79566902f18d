//! The translator as core's [`Wire`]: SSE frames in, the Messages API's HTTP errors mapped, a
//! whole JSON message from a server that ignored `stream: true` translated at once.

use patchbay_core::kit::{ErrorResponse, Framing, Wire};
use patchbay_core::{Event, ProviderError};
use serde::Deserialize;
use serde_json::{Value, json};

use super::Translator;
use crate::NAME;

impl Wire for Translator {
    fn framing(&self) -> Framing {
        Framing::Sse
    }

    fn frame(&mut self, data: &[u8]) -> Result<Option<Event>, ProviderError> {
        self.step(data)
    }

    fn end(&mut self) -> Result<(), ProviderError> {
        self.finish()
    }

    fn next_event(&mut self) -> Option<Event> {
        Translator::next_event(self)
    }

    fn is_done(&self) -> bool {
        Translator::is_done(self)
    }

    fn whole_body(&mut self, body: &[u8]) -> Result<(), ProviderError> {
        let message: Value = serde_json::from_slice(body).map_err(|e| {
            ProviderError::protocol(format!("the JSON response is not a message: {e}")).with_provider(NAME)
        })?;
        self.push_value(&json!({ "type": "message_start", "message": message }))?;
        self.push_value(&json!({ "type": "message_stop" }))
    }

    fn error_response(&self, response: ErrorResponse<'_>) -> ProviderError {
        crate::error::http_error(response)
    }

    /// A `message_start`: a recording may hold several responses one after another.
    fn starts_response(&self, data: &[u8]) -> bool {
        #[derive(Deserialize)]
        struct Kind<'a> {
            #[serde(rename = "type", borrow, default)]
            kind: Option<std::borrow::Cow<'a, str>>,
        }
        serde_json::from_slice::<Kind<'_>>(data)
            .ok()
            .and_then(|k| k.kind)
            .is_some_and(|k| k == "message_start")
    }
}
