//! The translator as core's [`Wire`]: the CLI's stdout is JSON lines, one message per line, so a
//! recorded transcript replays like any other wire (`replay --family claude-agent`).

use patchbay_core::kit::{Framing, Wire};
use patchbay_core::{Event, ProviderError};
use serde_json::Value;

use super::Translator;

impl Wire for Translator {
    fn framing(&self) -> Framing {
        Framing::Lines
    }

    fn frame(&mut self, data: &[u8]) -> Result<Option<Event>, ProviderError> {
        let value: Value = serde_json::from_slice(data).map_err(|e| {
            let head = patchbay_core::kit::frame_head(data);
            self.fail(ProviderError::protocol(format!(
                "the CLI wrote a line that is not JSON ({e}): {head:?}"
            )))
        })?;
        self.push_value(&value).map(|()| None)
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

    /// The `system` `init` line the CLI writes at the start of every turn: a transcript may
    /// hold several turns.
    fn starts_response(&self, data: &[u8]) -> bool {
        serde_json::from_slice::<Value>(data).is_ok_and(|line| {
            line.get("type").and_then(Value::as_str) == Some("system")
                && line.get("subtype").and_then(Value::as_str) == Some("init")
        })
    }
}
