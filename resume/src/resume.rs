//! Where a reconnecting client resumes: the `Last-Event-ID` header or an `after` parameter.

use crate::error::Error;

/// The header a reconnecting `EventSource` sends, in the lower case HTTP/2 and `http` use.
pub const LAST_EVENT_ID: &str = "last-event-id";

/// The seq a stream resumes after: the `Last-Event-ID` header's when there is one (a
/// reconnecting `EventSource`; it wins), else the `after` query parameter's, else 0 (from the
/// first item).
///
/// `header` is the header's raw value (`HeaderValue::as_bytes`): surrounding spaces are
/// allowed; anything but a whole number is [`Error::NotASeq`], a number below 0 (header or
/// parameter) [`Error::Negative`].
///
/// ```
/// use patchbay_resume::{Error, last_event_id};
///
/// assert_eq!(last_event_id(Some(b" 7"), Some(3)), Ok(7));
/// assert_eq!(last_event_id(None, Some(3)), Ok(3));
/// assert_eq!(last_event_id(None, None), Ok(0));
/// assert_eq!(last_event_id(Some(b"seven"), None), Err(Error::NotASeq));
/// assert_eq!(last_event_id(None, Some(-1)), Err(Error::Negative));
/// ```
pub fn last_event_id(header: Option<&[u8]>, after: Option<i64>) -> Result<u64, Error> {
    let Some(header) = header else {
        return u64::try_from(after.unwrap_or(0)).map_err(|_| Error::Negative);
    };
    let text = std::str::from_utf8(header).map_err(|_| Error::NotASeq)?.trim();
    // Wider than a seq, so that `-3` is told apart as below 0 and `+3` reads as `3` (as Rust's
    // integers read them); past `u64::MAX` is no seq.
    let number = text.parse::<i128>().map_err(|_| Error::NotASeq)?;
    if number < 0 {
        return Err(Error::Negative);
    }
    u64::try_from(number).map_err(|_| Error::NotASeq)
}
