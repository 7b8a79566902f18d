//! patchbay-ui's tests: one binary, one module per source file (the real AI SDK client is the
//! `peer` binary).

mod adapter;
mod custom;
mod request;
mod sse;

/// Snapshot settings for `tests/snapshots/<folder>`, named by the snapshot name alone.
pub(crate) fn settings(folder: &str) -> insta::Settings {
    patchbay_conformance::settings_at(
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/snapshots")
            .join(folder),
    )
}
