//! The generic tail over a source that is not the in-memory log: a "store" read in pages, with
//! a change counter, and an end decided by the source.

use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::future::FutureExt;
use patchbay_resume::{Batch, Source, Tailed, tail};
use tokio::sync::watch;

/// A table of rows and a status, shared by the test and the source.
#[derive(Clone)]
struct Table {
    rows: Arc<Mutex<Vec<String>>>,
    ended: Arc<Mutex<Option<&'static str>>>,
    changes: watch::Sender<u64>,
}

impl Table {
    fn new() -> Self {
        Self {
            rows: Arc::default(),
            ended: Arc::default(),
            changes: watch::Sender::new(0),
        }
    }

    fn insert(&self, row: &str) {
        self.rows.lock().expect("lock").push(row.to_owned());
        self.changes.send_modify(|v| *v += 1);
    }

    fn end(&self, why: &'static str) {
        *self.ended.lock().expect("lock") = Some(why);
        self.changes.send_modify(|v| *v += 1);
    }

    fn source(&self, page: usize, repeat: bool) -> TableSource {
        TableSource {
            table: self.clone(),
            seen: self.changes.subscribe(),
            page,
            repeat,
            reads: Arc::default(),
        }
    }
}

struct TableSource {
    table: Table,
    seen: watch::Receiver<u64>,
    /// At most this many rows per read (a store's page).
    page: usize,
    /// Read one row before `after` too (a source that repeats itself).
    repeat: bool,
    reads: Arc<Mutex<usize>>,
}

impl Source for TableSource {
    type Item = String;
    type End = &'static str;

    async fn read(&mut self, after: u64) -> Batch<String, &'static str> {
        *self.reads.lock().expect("lock") += 1;
        self.seen.borrow_and_update();
        // As the orchestrator does: whether it ended, before reading the rows.
        let end = *self.table.ended.lock().expect("lock");
        let rows = self.table.rows.lock().expect("lock");
        let from = if self.repeat { after.saturating_sub(1) } else { after };
        let items = (from..rows.len() as u64)
            .take(self.page)
            .map(|at| (at + 1, rows[at as usize].clone()))
            .collect();
        Batch { items, end }
    }

    async fn wait(&mut self) {
        let _ = self.seen.changed().await;
    }
}

fn item(seq: u64, row: &str) -> Tailed<String, &'static str> {
    Tailed::Item(seq, row.to_owned())
}

#[tokio::test]
async fn pages_then_live_rows_then_the_end_after_the_last_row() {
    let table = Table::new();
    for row in ["a", "b", "c", "d", "e"] {
        table.insert(row);
    }
    let source = table.source(2, false);
    let reads = Arc::clone(&source.reads);
    let mut stream = Box::pin(tail(source, 1));
    let mut seen = Vec::new();
    for _ in 0..4 {
        seen.push(stream.next().await.expect("a row"));
    }
    assert_eq!(seen, [item(2, "b"), item(3, "c"), item(4, "d"), item(5, "e")]);
    assert!(stream.next().now_or_never().is_none(), "waits for a change");
    let reads_before = *reads.lock().expect("lock");
    table.insert("f");
    table.end("ended");
    assert_eq!(
        stream.next().await,
        Some(item(6, "f")),
        "rows stored before the end come first"
    );
    assert_eq!(stream.next().await, Some(Tailed::End("ended")));
    assert_eq!(stream.next().await, None);
    assert!(*reads.lock().expect("lock") <= reads_before + 3, "no busy loop");
}

#[tokio::test]
async fn a_source_that_repeats_rows_yields_each_once() {
    let table = Table::new();
    for row in ["a", "b", "c"] {
        table.insert(row);
    }
    table.end("ended");
    let all: Vec<_> = tail(table.source(2, true), 0).collect().await;
    assert_eq!(all, [item(1, "a"), item(2, "b"), item(3, "c"), Tailed::End("ended")]);
}

#[tokio::test]
async fn an_end_with_nothing_after_comes_at_once() {
    let table = Table::new();
    table.end("deleted");
    let all: Vec<_> = tail(table.source(10, false), 0).collect().await;
    assert_eq!(all, [Tailed::End("deleted")]);
}

#[tokio::test]
async fn the_tail_is_send_for_servers() {
    let table = Table::new();
    let task = tokio::spawn(tail(table.source(10, false), 0).collect::<Vec<_>>());
    table.insert("x");
    table.end("ended");
    assert_eq!(task.await.expect("ran"), [item(1, "x"), Tailed::End("ended")]);
}
