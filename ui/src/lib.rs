#![doc = include_str!("../README.md")]

mod adapter;
mod convert;
pub mod custom;
mod ids;
mod parts;
pub mod request;
mod sources;
pub mod sse;

pub use adapter::{ABORTED_TOOL_TEXT, UiStream};
pub use ids::generate_message_id;
pub use parts::{DataChunk, MessageMetadata, PROVIDER_METADATA_KEY, UiChunk, UiFinishReason};
pub use request::{ChatRequest, UiMessage, UiPart};
