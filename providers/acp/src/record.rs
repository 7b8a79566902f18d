//! Recording a call's ACP traffic (`record_dir`): patchbay-http's recorder writes one body file
//! per call under `<dir>/acp/`, family `acp`, each line `{"dir": "send" | "recv", "msg": ...}`
//! (the JSON-RPC message as sent or received; a line that is not JSON as a string), with the
//! configured environment's values scrubbed, and a manifest line when the events end.
//!
//! The transport's tap writes into a slot the agent keeps: a kept-alive agent's next call puts
//! its own tape there.

use std::sync::{Arc, Mutex};

use patchbay_http::record::{BodySink, Recorder, Tape};

use crate::NAME;
use crate::config::AcpConfig;
use crate::transport::{Direction, Tap};

/// Where the transport writes recorded lines: the current call's body file, if it records.
#[derive(Debug, Clone, Default)]
pub(crate) struct TapSlot(Arc<Mutex<Option<BodySink>>>);

impl TapSlot {
    /// The tap that writes into this slot.
    pub(crate) fn tap(&self) -> Tap {
        let slot = self.0.clone();
        Arc::new(move |direction: Direction, line: &str| {
            let Ok(mut slot) = slot.lock() else { return };
            let Some(sink) = slot.as_mut() else { return };
            let dir = match direction {
                Direction::Sent => "send",
                Direction::Received => "recv",
            };
            let msg = if serde_json::from_str::<serde::de::IgnoredAny>(line).is_ok() {
                line.to_owned()
            } else {
                serde_json::Value::String(line.to_owned()).to_string()
            };
            sink.write(format!("{{\"dir\":\"{dir}\",\"msg\":{msg}}}\n").as_bytes());
        })
    }

    /// Record into `sink` from now on (`None`: stop recording).
    pub(crate) fn set(&self, sink: Option<BodySink>) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = sink;
        }
    }
}

/// The tape of one call: on when `record_dir` is set.
pub(crate) fn tape(config: &AcpConfig, model: &str) -> Tape {
    let Some(dir) = &config.record_dir else {
        return Tape::off();
    };
    let mut recorder = Recorder::new(dir, NAME)
        .with_recorded_by(concat!("patchbay-acp ", env!("CARGO_PKG_VERSION")))
        .with_server("acp agent");
    for value in config.env.values() {
        recorder = recorder.with_secret(value.as_str());
    }
    Tape::start(Some(&recorder), model)
}

/// The body file of `tape`, when it records.
pub(crate) fn sink(tape: &Tape) -> Option<BodySink> {
    tape.is_on().then(|| {
        tape.body_sink(
            "jsonl",
            "ACP JSON-RPC lines, both directions: {\"dir\": \"send\"|\"recv\", \"msg\": ...}",
        )
    })
}
