//! patchbay-fixtures through its public API: the manifest's lines and file, and the layout.

mod layout;
mod manifest;
