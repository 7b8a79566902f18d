//! Frame encoding, checked by decoding as a client does (the WHATWG event-stream rules).

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use patchbay_resume::{DEFAULT_KEEP_ALIVE, Error, EventName, KEEP_ALIVE, KeepAlive, frame};
use proptest::prelude::*;

/// One message as a client sees it.
#[derive(Debug, Default, PartialEq)]
struct Seen {
    id: Option<String>,
    event: Option<String>,
    data: String,
}

/// The messages of `stream` as a browser's `EventSource` reads them (comments skipped).
fn decode(stream: &[u8]) -> Vec<Seen> {
    let text = std::str::from_utf8(stream).expect("frames are UTF-8");
    let mut seen = Vec::new();
    let mut current = Seen::default();
    let mut data: Option<String> = None;
    let mut rest = text;
    while !rest.is_empty() {
        let end = rest.find(['\r', '\n']).expect("every line ends");
        let line = &rest[..end];
        let skip = if rest[end..].starts_with("\r\n") { 2 } else { 1 };
        rest = &rest[end + skip..];
        if line.is_empty() {
            if let Some(data) = data.take() {
                current.data = data;
                seen.push(std::mem::take(&mut current));
            }
            current = Seen::default();
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "id" => current.id = Some(value.to_owned()),
            "event" => current.event = Some(value.to_owned()),
            "data" => match &mut data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => data = Some(value.to_owned()),
            },
            other => panic!("unexpected field {other:?}"),
        }
    }
    assert!(data.is_none() && current == Seen::default(), "a message left open");
    seen
}

#[test]
fn multi_line_data_becomes_several_data_lines() {
    let bytes = frame(Some(3), None, "one\ntwo\n\nfour");
    assert_eq!(&bytes[..], b"id: 3\ndata: one\ndata: two\ndata: \ndata: four\n\n");
}

#[test]
fn cr_and_crlf_in_data_end_lines_and_inject_nothing() {
    let bytes = frame(None, None, "a\rid: 99\r\nevent: x\n\ndata: y");
    let seen = decode(&bytes);
    assert_eq!(
        seen,
        [Seen {
            id: None,
            event: None,
            data: "a\nid: 99\nevent: x\n\ndata: y".to_owned()
        }]
    );
    assert!(!bytes.windows(2).any(|w| w == b"\r\n") && !bytes.contains(&b'\r'));
}

#[test]
fn event_name_with_cr_or_lf_is_refused() {
    assert_eq!(EventName::new("end\ndata: x"), Err(Error::EventName));
    assert_eq!(EventName::new("end\r"), Err(Error::EventName));
    assert_eq!(
        EventName::new("text-delta").map(|n| n.as_str().to_owned()),
        Ok("text-delta".to_owned())
    );
}

#[test]
#[should_panic(expected = "CR or LF")]
fn static_event_name_with_lf_panics() {
    let name: &'static str = Box::leak(String::from("a\nb").into_boxed_str());
    let _ = EventName::from_static(name);
}

#[test]
fn empty_data_is_one_empty_data_line_and_leading_space_is_kept() {
    assert_eq!(&frame(None, None, "")[..], b"data: \n\n");
    assert_eq!(decode(&frame(None, None, "  x"))[0].data, "  x");
}

#[test]
fn keep_alive_is_a_comment_clients_skip() {
    assert_eq!(&KEEP_ALIVE[..], b":\n\n");
    let mut stream = KEEP_ALIVE.to_vec();
    stream.extend_from_slice(&frame(Some(1), None, "x"));
    assert_eq!(decode(&stream).len(), 1);
}

#[tokio::test(start_paused = true)]
async fn keep_alive_goes_out_after_each_silence_and_ends_with_the_stream() {
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel::<Bytes>();
    let frames = tokio_stream_from(receiver);
    let mut stream = Box::pin(KeepAlive::new(frames, DEFAULT_KEEP_ALIVE));
    // Silence: the comment (paused time advances to the timer).
    assert_eq!(stream.next().await, Some(KEEP_ALIVE));
    sender.send(frame(Some(1), None, "x")).expect("open");
    assert_eq!(stream.next().await, Some(frame(Some(1), None, "x")));
    assert_eq!(stream.next().await, Some(KEEP_ALIVE));
    drop(sender);
    assert_eq!(stream.next().await, None);
}

/// An unbounded receiver as a stream.
fn tokio_stream_from(receiver: tokio::sync::mpsc::UnboundedReceiver<Bytes>) -> impl futures::Stream<Item = Bytes> {
    futures::stream::unfold(receiver, |mut receiver| async move {
        let next = receiver.recv().await?;
        Some((next, receiver))
    })
}

#[test]
fn keep_alive_interval_is_fifteen_seconds() {
    assert_eq!(DEFAULT_KEEP_ALIVE, Duration::from_secs(15));
}

/// Text that is mostly line ends, spaces, colons and field names.
fn tricky_text() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just("\n"),
            Just("\r"),
            Just("\r\n"),
            Just(" "),
            Just(":"),
            Just("data"),
            Just("id"),
            Just("event"),
            Just("é"),
            Just("x"),
        ],
        0..24,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    /// A client reads back the id, the name and the data (every line end as LF).
    #[test]
    fn a_client_reads_back_what_was_framed(
        id in proptest::option::of(any::<u64>()),
        name in proptest::option::of("[a-z-]{0,12}"),
        data in tricky_text(),
    ) {
        let event = name.map(|name| EventName::new(name).expect("no CR or LF"));
        let bytes = frame(id, event.as_ref(), &data);
        let seen = decode(&bytes);
        let expected = Seen {
            id: id.map(|id| id.to_string()),
            event: event.map(|e| e.as_str().to_owned()),
            data: data.replace("\r\n", "\n").replace('\r', "\n"),
        };
        prop_assert_eq!(seen, vec![expected]);
    }

    /// However names are made, one frame is one message and never holds a CR.
    #[test]
    fn any_name_is_refused_or_harmless(name in tricky_text(), data in tricky_text()) {
        if let Ok(event) = EventName::new(name.clone()) {
            let bytes = frame(Some(1), Some(&event), &data);
            prop_assert_eq!(decode(&bytes).len(), 1);
            prop_assert!(!bytes.contains(&b'\r'));
        } else {
            prop_assert!(name.contains(['\r', '\n']));
        }
    }
}
