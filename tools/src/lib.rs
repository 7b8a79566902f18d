//! Tools for patchbay (work in progress).
