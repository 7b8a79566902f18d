//! real
