//! Where a request resumes: the header wins, bad values are typed.

use patchbay_resume::{Error, last_event_id};

#[test]
fn header_wins_over_after() {
    assert_eq!(last_event_id(Some(b"5"), Some(2)), Ok(5));
    assert_eq!(last_event_id(Some(b"0"), Some(2)), Ok(0));
}

#[test]
fn after_then_zero_without_a_header() {
    assert_eq!(last_event_id(None, Some(9)), Ok(9));
    assert_eq!(last_event_id(None, None), Ok(0));
}

#[test]
fn header_read_as_an_integer_with_spaces_around() {
    assert_eq!(last_event_id(Some(b"  12 \t"), None), Ok(12));
    assert_eq!(last_event_id(Some(b"+3"), None), Ok(3));
    assert_eq!(last_event_id(Some(b"-0"), None), Ok(0));
    assert_eq!(last_event_id(Some(b"18446744073709551615"), None), Ok(u64::MAX));
}

#[test]
fn header_that_is_no_number_is_not_a_seq() {
    for bad in [
        &b""[..],
        b"   ",
        b"abc",
        b"1.5",
        b"1e3",
        b"0x10",
        b"1 2",
        b"\xff\xfe",
        b"18446744073709551616",
        b"99999999999999999999999999999999999999999999",
    ] {
        assert_eq!(last_event_id(Some(bad), Some(1)), Err(Error::NotASeq), "{bad:?}");
    }
}

#[test]
fn below_zero_is_negative_from_header_or_after() {
    assert_eq!(last_event_id(Some(b"-1"), None), Err(Error::Negative));
    assert_eq!(last_event_id(None, Some(-7)), Err(Error::Negative));
    // The header wins even over a bad `after`.
    assert_eq!(last_event_id(Some(b"4"), Some(-7)), Ok(4));
}

#[test]
fn messages_say_what_was_wrong() {
    assert_eq!(
        Error::NotASeq.to_string(),
        "the Last-Event-ID header must be an event's seq (a number)"
    );
    assert_eq!(
        Error::Negative.to_string(),
        "`after` and Last-Event-ID must be 0 or more"
    );
}
