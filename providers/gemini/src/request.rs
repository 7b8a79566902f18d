//! The request body of one call.
