#![doc = include_str!("../README.md")]

mod error;
mod layout;
mod manifest;
mod scenario;

pub use error::Error;
pub use layout::{
    CallFiles, DEFAULT_SOURCE, REQUESTS_DIR, body_extension, files_in, path_in, relative_name, stem, utc_time,
};
pub use manifest::{
    MANIFEST_COLUMNS, MANIFEST_FILE, ManifestEntry, append, header_line, parse_manifest, read_manifest,
};
pub use scenario::{Detector, detect_scenario};
