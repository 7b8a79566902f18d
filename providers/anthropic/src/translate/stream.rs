//! Bytes in, events out: the [`Framer`] in front of a [`Translator`].

use patchbay_core::kit::{self, Framer, Framing};
use patchbay_core::{Event, ProviderError};

use super::Translator;

/// Bytes in, events out: a [`Framer`] in front of a [`Translator`]. The provider hands it to
/// the kit's [`Driver`](patchbay_core::kit::Driver) through [`kit::StreamTranslator`].
#[derive(Debug)]
pub struct StreamTranslator {
    decoder: Framer,
    translator: Translator,
    /// An error met while events were still queued: delivered after them.
    failed: Option<ProviderError>,
}

impl Default for StreamTranslator {
    fn default() -> Self {
        Self::new(Translator::new())
    }
}

impl StreamTranslator {
    /// Decode SSE into `translator`.
    pub fn new(translator: Translator) -> Self {
        Self {
            decoder: Framer::new(Framing::Sse),
            translator,
            failed: None,
        }
    }

    /// Also accept bare JSON lines (recordings without SSE framing).
    pub fn json_lines(mut self) -> Self {
        self.decoder = Framer::new(Framing::SseOrJsonLines).with_max_bytes(self.decoder.max_bytes());
        self
    }

    /// Cap one SSE frame at `max` bytes (default [`patchbay_core::kit::MAX_LINE_BYTES`]).
    pub fn with_max_frame_bytes(mut self, max: usize) -> Self {
        self.decoder = Framer::new(self.decoder.framing()).with_max_bytes(max);
        self
    }

    /// Feed bytes; events queue up (read them with [`next_event`](Self::next_event)) until the
    /// first error, which is returned once.
    pub fn push_bytes(&mut self, bytes: &[u8]) -> Result<(), ProviderError> {
        let translator = &mut self.translator;
        self.decoder.push(bytes, |data| translator.push_slice(data))
    }

    /// Feed bytes without translating them yet: [`pull`](Self::pull) takes one event at a time,
    /// decoding frames only as needed (what the provider's stream does).
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), ProviderError> {
        self.decoder.feed(bytes)
    }

    /// The next event from what was fed: `Ok(None)` when more bytes are needed.
    pub fn pull(&mut self) -> Result<Option<Event>, ProviderError> {
        loop {
            if let Some(event) = self.translator.next_event() {
                return Ok(Some(event));
            }
            if self.translator.is_done() {
                return Ok(None);
            }
            match self.decoder.next_frame()? {
                Some(frame) => {
                    if let Some(event) = self.translator.step(frame)? {
                        return Ok(Some(event));
                    }
                }
                None => return Ok(None),
            }
        }
    }

    /// End of input: delivers a last unterminated frame, then requires `message_stop`.
    pub fn finish(&mut self) -> Result<(), ProviderError> {
        let translator = &mut self.translator;
        self.decoder.finish(|data| translator.push_slice(data))?;
        self.translator.finish()
    }

    /// The next queued event.
    pub fn next_event(&mut self) -> Option<Event> {
        self.translator.next_event()
    }

    /// Whether the response ended.
    pub fn is_done(&self) -> bool {
        self.translator.is_done()
    }

    /// The translator.
    pub fn translator(&mut self) -> &mut Translator {
        &mut self.translator
    }
}

impl kit::StreamTranslator for StreamTranslator {
    fn feed(&mut self, bytes: &[u8]) -> Result<(), ProviderError> {
        StreamTranslator::feed(self, bytes)
    }

    fn finish(&mut self) -> Result<(), ProviderError> {
        StreamTranslator::finish(self)
    }

    fn next_event(&mut self) -> Option<Result<Event, ProviderError>> {
        if let Some(error) = self.failed.take() {
            return Some(match self.translator.next_event() {
                Some(event) => {
                    self.failed = Some(error);
                    Ok(event)
                }
                None => Err(error),
            });
        }
        match self.pull() {
            Ok(event) => event.map(Ok),
            // Events queued before the error go first.
            Err(error) => match self.translator.next_event() {
                Some(event) => {
                    self.failed = Some(error);
                    Some(Ok(event))
                }
                None => Some(Err(error)),
            },
        }
    }

    fn is_done(&self) -> bool {
        self.translator.is_done()
    }
}
