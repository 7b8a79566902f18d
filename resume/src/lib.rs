#![doc = include_str!("../README.md")]

mod error;
mod frame;
mod log;
mod registry;
mod resume;
mod tail;

pub use error::Error;
pub use frame::{CONTENT_TYPE, DEFAULT_KEEP_ALIVE, EventName, KEEP_ALIVE, KeepAlive, frame};
pub use log::{Limits, Reader, ReplayLog, Writer};
pub use registry::{RegistryLimits, ReplayLogs};
pub use resume::{LAST_EVENT_ID, last_event_id};
pub use tail::{Batch, Source, Tailed, tail};
