//! Replay a recorded stream without HTTP: raw SSE (with or without `event:` lines) or one JSON
//! payload per line, possibly several responses one after another.
//!
//! A `message_start` after a finished (or failed) response begins the next response; other
//! frames after the end of a response are ignored, as a client stops reading at
//! `message_stop`. Used by the `replay` command (`patchbay-replay`) and the fixture tests.

use patchbay_core::{Event, ProviderError};
use serde::Deserialize;

use crate::translate::Translator;
use patchbay_core::kit::{Framer, Framing};

/// One response of a recording: its events and the error that ended it, if any.
#[derive(Debug, Default)]
pub struct Replayed {
    /// Events in order.
    pub events: Vec<Event>,
    /// The error that ended the stream.
    pub error: Option<ProviderError>,
}

#[derive(Deserialize)]
struct Kind<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<std::borrow::Cow<'a, str>>,
}

fn is_message_start(data: &[u8]) -> bool {
    serde_json::from_slice::<Kind<'_>>(data)
        .ok()
        .and_then(|k| k.kind)
        .is_some_and(|k| k == "message_start")
}

#[derive(Default)]
struct Replayer {
    done: Vec<Replayed>,
    current: Option<(Translator, Replayed)>,
}

impl Replayer {
    fn close(&mut self) {
        if let Some((mut translator, mut replayed)) = self.current.take() {
            if let Err(error) = translator.finish() {
                replayed.error.get_or_insert(error);
            }
            replayed.events.extend(translator.drain());
            self.done.push(replayed);
        }
    }

    fn frame(&mut self, data: &[u8]) {
        let ended = self.current.as_ref().is_some_and(|(t, _)| t.is_done());
        if ended {
            if !is_message_start(data) {
                return;
            }
            self.close();
        }
        let (translator, replayed) = self.current.get_or_insert_with(Default::default);
        let result = translator.push_slice(data);
        replayed.events.extend(translator.drain());
        if let Err(error) = result {
            let restart = translator.is_started() && is_message_start(data);
            replayed.error = Some(error);
            if restart {
                // A new message spliced into an unfinished one: the old one failed, the new
                // one starts with this frame.
                self.close();
                self.frame(data);
            }
        }
    }

    fn framing_error(&mut self, error: ProviderError) {
        let (_, replayed) = self.current.get_or_insert_with(Default::default);
        replayed.error.get_or_insert(error);
        if let Some((translator, _)) = &mut self.current {
            // Mark the translator done so `close` reports this error, not a missing stop.
            let _ = translator.finish();
        }
    }
}

/// Replay a recording fed in chunks (split anywhere), as a client reading the network would.
pub fn replay_chunks<'a, I>(chunks: I) -> Vec<Replayed>
where
    I: IntoIterator<Item = &'a [u8]>,
{
    let mut decoder = Framer::new(Framing::SseOrJsonLines);
    let mut replayer = Replayer::default();
    for chunk in chunks {
        let result = decoder.push(chunk, |data| {
            replayer.frame(data);
            Ok(())
        });
        if let Err(error) = result {
            replayer.framing_error(error);
            replayer.close();
            return replayer.done;
        }
    }
    if let Err(error) = decoder.finish(|data| {
        replayer.frame(data);
        Ok(())
    }) {
        replayer.framing_error(error);
    }
    if replayer.current.is_none() && replayer.done.is_empty() {
        replayer.current = Some(Default::default());
    }
    replayer.close();
    replayer.done
}

/// Replay a whole recording.
pub fn replay(body: &[u8]) -> Vec<Replayed> {
    replay_chunks([body])
}
