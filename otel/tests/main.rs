//! patchbay-otel's tests: spans and metrics through in-memory exporters, and one export over
//! OTLP/HTTP to a loopback receiver.

mod config;
mod mcp;
mod otlp;
mod provider_tools;
mod spans;
mod support;
