//! Conformance (work in progress).
