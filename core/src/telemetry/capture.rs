//! Whether message content goes on spans: off by default, switched process-wide.

use std::sync::atomic::{AtomicBool, Ordering};

static CAPTURE_CONTENT: AtomicBool = AtomicBool::new(false);

/// Record message content (prompts, answers, tool arguments and results) on spans from now on,
/// process-wide. Off by default: content may hold personal data. patchbay's OpenTelemetry
/// setup turns it on from `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` or its
/// config.
///
/// ```
/// patchbay_core::telemetry::set_capture_content(false);
/// assert!(!patchbay_core::telemetry::captures_content());
/// ```
pub fn set_capture_content(on: bool) {
    CAPTURE_CONTENT.store(on, Ordering::Relaxed);
}

/// Whether message content is recorded on spans (see [`set_capture_content`]).
pub fn captures_content() -> bool {
    CAPTURE_CONTENT.load(Ordering::Relaxed)
}
