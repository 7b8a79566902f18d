//! The crate's one error type.

/// What can go wrong when resuming, reading or keeping a stream. The messages say what was
/// wrong in words a client can act on (a server answers the first two with `400`, `Trimmed`
/// and `Ahead` with `410` or `400`, `Full` with `503`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The `Last-Event-ID` header is not a seq (not text, empty, not a whole number).
    #[error("the Last-Event-ID header must be an event's seq (a number)")]
    NotASeq,
    /// The header or the `after` parameter is below 0.
    #[error("`after` and Last-Event-ID must be 0 or more")]
    Negative,
    /// Items the reader still needed were dropped from a bounded log: resuming would leave a
    /// gap, so the reader gets this instead.
    #[error("events up to {dropped} were dropped from the log: cannot resume after {after}")]
    Trimmed {
        /// The seq the reader asked to resume after.
        after: u64,
        /// The last seq dropped (the first kept is the one after it).
        dropped: u64,
    },
    /// The reader asked to resume after a seq the log never gave (a stale id from another run).
    #[error("no event {after} in this log yet (its last is {last})")]
    Ahead {
        /// The seq the reader asked to resume after.
        after: u64,
        /// The log's last seq when asked.
        last: u64,
    },
    /// The registry holds its maximum of open logs and none it may drop.
    #[error("too many streams are kept (at most {max}): try again later")]
    Full {
        /// The registry's cap.
        max: usize,
    },
    /// The registry already holds a log with this id.
    #[error("a stream with this id is already kept")]
    Exists,
    /// An event name holds a CR or LF, which would end the field and inject others.
    #[error("an event name cannot hold CR or LF")]
    EventName,
}
