//! Replay logs by id: lookup, expiry of closed logs, the cap.

use std::time::Duration;

use futures::StreamExt;
use patchbay_resume::{Error, RegistryLimits, ReplayLogs};

fn registry(max_logs: usize) -> ReplayLogs<u32> {
    ReplayLogs::new(
        RegistryLimits::new()
            .with_max_logs(max_logs)
            .with_keep_closed(Duration::from_secs(60)),
    )
}

#[tokio::test(start_paused = true)]
async fn a_closed_log_is_kept_for_a_while_then_dropped() {
    let logs = registry(4);
    let writer = logs.create("run-1").expect("room");
    writer.append(7);
    tokio::time::advance(Duration::from_secs(3600)).await;
    assert!(logs.get("run-1").is_some(), "an open log never expires");
    let reader = logs.get("run-1").expect("kept").reader(0).expect("open");
    writer.close();
    tokio::time::advance(Duration::from_secs(59)).await;
    assert!(logs.get("run-1").is_some(), "kept after its close");
    tokio::time::advance(Duration::from_secs(1)).await;
    assert!(logs.get("run-1").is_none(), "dropped once the time is up");
    assert!(logs.is_empty());
    // A reader that held it reads on to its end.
    assert_eq!(reader.collect::<Vec<_>>().await, [Ok((1, 7))]);
}

#[tokio::test(start_paused = true)]
async fn the_cap_refuses_when_every_log_is_open() {
    let logs = registry(2);
    let _a = logs.create("a").expect("room");
    let _b = logs.create("b").expect("room");
    let refused = logs.create("c").map(|_| ()).expect_err("full");
    assert_eq!(refused, Error::Full { max: 2 });
    assert_eq!(logs.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn the_cap_makes_room_by_dropping_the_longest_closed_log() {
    let logs = registry(2);
    let a = logs.create("a").expect("room");
    let b = logs.create("b").expect("room");
    b.close();
    tokio::time::advance(Duration::from_secs(1)).await;
    a.close();
    let _c = logs.create("c").expect("room made");
    assert!(logs.get("b").is_none(), "closed first, dropped first");
    assert!(logs.get("a").is_some());
    assert_eq!(logs.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn an_id_is_taken_while_its_log_is_open_and_free_once_closed() {
    let logs = registry(4);
    let first = logs.create("chat").expect("room");
    first.append(1);
    assert_eq!(logs.create("chat").map(|_| ()).expect_err("open"), Error::Exists);
    first.close();
    let second = logs.create("chat").expect("replaces the closed log");
    second.append(2);
    let log = logs.get("chat").expect("kept");
    assert!(!log.is_closed());
    assert_eq!(log.last_seq(), 1);
}

#[tokio::test(start_paused = true)]
async fn remove_forgets_at_once() {
    let logs = registry(4);
    let _writer = logs.create("x").expect("room");
    assert!(logs.remove("x").is_some());
    assert!(logs.get("x").is_none());
    assert!(logs.remove("x").is_none());
}
