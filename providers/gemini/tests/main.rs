//! The integration tests of patchbay-gemini, one binary.
