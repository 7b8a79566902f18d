//! The `Finish` metrics, counted as events pass.

use std::time::Instant;

use crate::event::{Event, Metrics};

/// Counts events as they pass and produces [`Metrics`]; providers and the agent loop use it.
#[derive(Debug, Clone)]
pub struct MetricsRecorder {
    started: Instant,
    metrics: Metrics,
}

impl Default for MetricsRecorder {
    fn default() -> Self {
        Self::start()
    }
}

impl MetricsRecorder {
    /// Start the clock now.
    pub fn start() -> Self {
        Self {
            started: Instant::now(),
            metrics: Metrics::default(),
        }
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Count one event. The clock is read only for the first event and the first text, not
    /// once per event.
    pub fn observe(&mut self, event: &Event) {
        self.metrics.events = self.metrics.events.saturating_add(1);
        if self.metrics.first_event_ms.is_none() {
            self.metrics.first_event_ms = Some(self.elapsed_ms());
        }
        match event {
            Event::TextDelta { text, .. } => {
                if self.metrics.first_text_ms.is_none() {
                    self.metrics.first_text_ms = Some(self.elapsed_ms());
                }
                self.metrics.text_chars = self.metrics.text_chars.saturating_add(text.chars().count() as u64);
            }
            Event::ReasoningDelta { text, .. } => {
                self.metrics.reasoning_chars = self.metrics.reasoning_chars.saturating_add(text.chars().count() as u64);
            }
            _ => {}
        }
    }

    /// The metrics so far, counting the `Finish` event about to be emitted.
    pub fn finish(&self) -> Metrics {
        let mut metrics = self.metrics;
        metrics.events = metrics.events.saturating_add(1);
        metrics.total_ms = self.elapsed_ms();
        metrics.first_event_ms.get_or_insert(metrics.total_ms);
        metrics
    }
}
