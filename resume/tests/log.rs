//! The in-memory replay log: replay then live, reconnects, many readers, slow readers, trims.

use bytes::Bytes;
use futures::StreamExt;
use futures::future::FutureExt;
use patchbay_resume::{Error, Limits, Reader, ReplayLog};

type Items = Vec<Result<(u64, String), Error>>;

fn text(n: u64) -> String {
    format!("part {n}")
}

fn ok(range: std::ops::RangeInclusive<u64>) -> Items {
    range.map(|n| Ok((n, text(n)))).collect()
}

/// The next item, or `None` when the reader would wait.
fn ready<T>(reader: &mut Reader<T>) -> Option<Option<Result<(u64, T), Error>>> {
    reader.next().now_or_never()
}

#[tokio::test]
async fn stored_items_then_live_ones_then_the_end() {
    let (writer, log) = ReplayLog::new(Limits::new());
    writer.append(text(1));
    writer.append(text(2));
    let mut reader = log.reader(0).expect("open");
    assert_eq!(reader.next().await, Some(Ok((1, text(1)))));
    assert_eq!(reader.next().await, Some(Ok((2, text(2)))));
    assert_eq!(ready(&mut reader), None, "waits for the writer");
    writer.append(text(3));
    assert_eq!(reader.next().await, Some(Ok((3, text(3)))));
    writer.close();
    assert_eq!(reader.next().await, None);
    assert!(log.is_closed());
    assert_eq!(log.last_seq(), 3);
}

#[tokio::test]
async fn a_reconnect_mid_stream_gets_exactly_the_rest() {
    let (writer, log) = ReplayLog::new(Limits::new());
    for n in 1..=5 {
        writer.append(text(n));
    }
    // The first connection sees 1..=3, then goes away.
    let mut first = log.reader(0).expect("open");
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(first.next().await.expect("an item"));
    }
    drop(first);
    let last = seen.last().and_then(|item| item.as_ref().ok()).map(|(seq, _)| *seq);
    assert_eq!(last, Some(3));
    // More comes while it is away; it reconnects after its last id.
    writer.append(text(6));
    let mut second = log.reader(3).expect("open");
    writer.append(text(7));
    writer.close();
    while let Some(item) = second.next().await {
        seen.push(item);
    }
    assert_eq!(seen, ok(1..=7), "no duplicate, no gap");
}

#[tokio::test]
async fn a_reader_of_a_closed_log_reads_to_the_end() {
    let (writer, log) = ReplayLog::new(Limits::new());
    writer.append(text(1));
    writer.append(text(2));
    drop(writer);
    assert_eq!(log.reader(1).expect("open").collect::<Items>().await, ok(2..=2));
    assert_eq!(log.reader(2).expect("open").collect::<Items>().await, Vec::new());
}

#[tokio::test]
async fn many_readers_each_get_everything_in_order() {
    let (writer, log) = ReplayLog::new(Limits::new());
    let readers: Vec<_> = (0..8)
        .map(|_| tokio::spawn(log.reader(0).expect("open").collect::<Items>()))
        .collect();
    let producer = tokio::spawn(async move {
        for n in 1..=1000 {
            writer.append(text(n));
            if n % 50 == 0 {
                tokio::task::yield_now().await;
            }
        }
    });
    producer.await.expect("the writer ran");
    for reader in readers {
        assert_eq!(reader.await.expect("the reader ran"), ok(1..=1000));
    }
}

#[tokio::test]
async fn a_slow_reader_does_not_hold_the_writer_up() {
    let (writer, log) = ReplayLog::new(Limits::new().with_max_items(100));
    let mut slow = log.reader(0).expect("open");
    writer.append(text(1));
    assert_eq!(slow.next().await, Some(Ok((1, text(1)))));
    // The reader stops reading; the writer goes on (appends return at once) far past the log's
    // bound, and a reader that keeps up gets everything.
    let mut keeping_up = log.reader(0).expect("open");
    let mut kept = vec![keeping_up.next().await.expect("an item")];
    for n in 2..=10_000 {
        assert_eq!(writer.append(text(n)), n);
        if let Some(Some(item)) = ready(&mut keeping_up) {
            kept.push(item);
        }
    }
    writer.close();
    while let Some(item) = keeping_up.next().await {
        kept.push(item);
    }
    assert_eq!(kept, ok(1..=10_000));
    // The slow one fell past what is kept: the typed error, then its end.
    assert_eq!(
        slow.next().await,
        Some(Err(Error::Trimmed {
            after: 1,
            dropped: 9_900
        }))
    );
    assert_eq!(slow.next().await, None);
}

#[tokio::test]
async fn resuming_before_what_is_kept_is_trimmed_not_a_gap() {
    let (writer, log) = ReplayLog::new(Limits::new().with_max_items(3));
    for n in 1..=10 {
        writer.append(text(n));
    }
    let error = log.reader(5).map(|_| ()).expect_err("7 is the first kept");
    assert_eq!(error, Error::Trimmed { after: 5, dropped: 7 });
    assert_eq!(
        error.to_string(),
        "events up to 7 were dropped from the log: cannot resume after 5"
    );
    writer.close();
    // Right after what was dropped is fine.
    assert_eq!(log.reader(7).expect("open").collect::<Items>().await, ok(8..=10));
}

#[tokio::test]
async fn byte_bound_drops_the_oldest_but_keeps_the_newest() {
    let limits = Limits::new().with_max_bytes(10, |b: &Bytes| b.len());
    let (writer, log) = ReplayLog::new(limits);
    writer.append(Bytes::from_static(b"1234"));
    writer.append(Bytes::from_static(b"5678"));
    assert!(log.reader(0).is_ok(), "8 bytes fit");
    writer.append(Bytes::from_static(b"9abc"));
    assert_eq!(
        log.reader(0).map(|_| ()).expect_err("12 bytes do not"),
        Error::Trimmed { after: 0, dropped: 1 }
    );
    // One item over the bound is kept alone.
    writer.append(Bytes::from(vec![0; 64]));
    drop(writer);
    let rest: Vec<_> = log.reader(3).expect("open").collect().await;
    assert_eq!(rest, [Ok((4, Bytes::from(vec![0; 64])))]);
}

#[tokio::test]
async fn resuming_past_the_last_seq_is_ahead() {
    let (writer, log) = ReplayLog::new(Limits::new());
    writer.append(text(1));
    assert_eq!(
        log.reader(2).map(|_| ()).expect_err("no seq 2 yet"),
        Error::Ahead { after: 2, last: 1 }
    );
}

#[tokio::test]
async fn dropping_the_writer_ends_the_readers() {
    let (writer, log) = ReplayLog::new(Limits::new());
    let mut reader = log.reader(0).expect("open");
    let waiting = tokio::spawn(async move { reader.next().await });
    tokio::task::yield_now().await;
    drop(writer);
    assert_eq!(waiting.await.expect("ran"), None::<Result<(u64, String), Error>>);
}

#[tokio::test]
async fn readers_are_sendable_into_tasks_and_the_log_handle_from_the_writer() {
    let (writer, _log) = ReplayLog::new(Limits::new());
    let log = writer.log();
    let task = tokio::spawn(log.reader(0).expect("open").collect::<Items>());
    writer.append(text(1));
    writer.close();
    assert_eq!(task.await.expect("ran"), ok(1..=1));
}
