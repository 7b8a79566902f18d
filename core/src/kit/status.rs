//! What an HTTP error response means to a provider: the kind its status stands for, and how long
//! it asks the caller to wait.

use std::time::Duration;

use crate::error::ErrorKind;

/// Map an HTTP status to the error kind a host acts on.
pub fn kind_for_status(status: u16) -> ErrorKind {
    match status {
        401 | 403 => ErrorKind::Auth,
        408 => ErrorKind::Transport,
        413 => ErrorKind::ContextTooLong,
        429 => ErrorKind::RateLimited,
        503 | 529 => ErrorKind::Overloaded,
        400..=499 => ErrorKind::InvalidRequest,
        _ => ErrorKind::Server,
    }
}

/// The longest wait a header may ask for: a day.
const MAX_HEADER_WAIT_SECS: f64 = 86_400.0;

/// Parse the wait a server asked for: `retry-after-ms` (milliseconds) when present and valid,
/// else `retry-after` in seconds (possibly fractional) or as an HTTP date (RFC 9110: the wait
/// until that time, zero for a time already past). Waits are clamped to a day. Providers pass
/// the raw header values.
///
/// ```
/// use std::time::Duration;
/// use patchbay_core::kit::parse_retry_after;
/// assert_eq!(parse_retry_after(Some("1500"), Some("9")), Some(Duration::from_millis(1500)));
/// assert_eq!(parse_retry_after(None, Some(" 2 ")), Some(Duration::from_secs(2)));
/// assert_eq!(parse_retry_after(None, Some("1e300")), Some(Duration::from_secs(86_400)));
/// assert_eq!(parse_retry_after(None, Some("Wed, 21 Oct 2015 07:28:00 GMT")), Some(Duration::ZERO));
/// assert_eq!(parse_retry_after(Some("-1"), Some("soon")), None);
/// ```
pub fn parse_retry_after(retry_after_ms: Option<&str>, retry_after: Option<&str>) -> Option<Duration> {
    parse_retry_after_at(retry_after_ms, retry_after, std::time::SystemTime::now())
}

fn parse_retry_after_at(
    retry_after_ms: Option<&str>,
    retry_after: Option<&str>,
    now: std::time::SystemTime,
) -> Option<Duration> {
    let number = |value: Option<&str>| {
        value
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|n| n.is_finite() && *n >= 0.0)
    };
    let max = Duration::from_secs_f64(MAX_HEADER_WAIT_SECS);
    if let Some(secs) = number(retry_after_ms)
        .map(|ms| ms / 1000.0)
        .or_else(|| number(retry_after))
    {
        return Some(Duration::from_secs_f64(secs.min(MAX_HEADER_WAIT_SECS)));
    }
    let date = httpdate::parse_http_date(retry_after?.trim()).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO).min(max))
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::parse_retry_after_at;

    #[test]
    fn an_http_date_is_the_wait_until_then() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(
            parse_retry_after_at(None, Some(&later), now),
            Some(Duration::from_secs(30))
        );
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(parse_retry_after_at(None, Some(&earlier), now), Some(Duration::ZERO));
        let far = httpdate::fmt_http_date(now + Duration::from_secs(10 * 86_400));
        assert_eq!(
            parse_retry_after_at(None, Some(&far), now),
            Some(Duration::from_secs(86_400))
        );
        // `retry-after-ms` still wins, and garbage is no wait at all.
        assert_eq!(
            parse_retry_after_at(Some("5"), Some(&later), now),
            Some(Duration::from_millis(5))
        );
        assert_eq!(parse_retry_after_at(None, Some("Someday, 99 Foo"), now), None);
    }
}
