//! Integration tests (work in progress).
