//! patchbay-resume's integration tests: one binary, one module per area.

mod frame;
mod log;
mod registry;
mod resume;
mod tail;
