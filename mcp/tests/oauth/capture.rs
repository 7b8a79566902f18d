//! A tracing subscriber that keeps every event and span field, at every level, as text.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};

#[derive(Clone, Default)]
pub(crate) struct Capture {
    text: Arc<Mutex<String>>,
    next: Arc<AtomicU64>,
}

impl Capture {
    pub(crate) fn text(&self) -> String {
        self.text.lock().expect("lock").clone()
    }
}

struct Line<'a>(&'a mut String);

impl Visit for Line<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={value:?}", field.name());
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        let _ = write!(self.0, " {}={value}", field.name());
    }
}

impl Subscriber for Capture {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        Interest::always()
    }

    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::TRACE)
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut text = self.text.lock().expect("lock");
        let _ = write!(text, "span {}:", span.metadata().name());
        span.record(&mut Line(&mut text));
        text.push('\n');
        Id::from_u64(self.next.fetch_add(1, Ordering::SeqCst) + 1)
    }

    fn record(&self, _: &Id, values: &Record<'_>) {
        let mut text = self.text.lock().expect("lock");
        values.record(&mut Line(&mut text));
        text.push('\n');
    }

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut text = self.text.lock().expect("lock");
        let _ = write!(text, "{} {}:", event.metadata().level(), event.metadata().target());
        event.record(&mut Line(&mut text));
        text.push('\n');
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}
