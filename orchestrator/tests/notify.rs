//! Wake-ups: waiters are woken by a change, not by a timer, and never miss one.

use std::time::{Duration, Instant};

use patchbay_orchestrator::notify::Notifier;

const LONG: Duration = Duration::from_secs(30);

#[tokio::test]
async fn a_waiter_wakes_when_the_session_changes() {
    let notifier = Notifier::new();
    let seen = notifier.version("child");
    let waiter = {
        let notifier = notifier.clone();
        tokio::spawn(async move { notifier.changed("child", seen, LONG).await })
    };
    tokio::task::yield_now().await;
    let started = Instant::now();
    notifier.notify("child");
    let woke = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("woken well before its 30 s limit")
        .expect("the waiter ran");
    assert!(woke);
    assert!(started.elapsed() < LONG);
}

#[tokio::test]
async fn a_change_before_the_wait_is_not_missed() {
    let notifier = Notifier::new();
    let seen = notifier.version("child");
    notifier.notify("child");
    assert!(notifier.changed("child", seen, Duration::ZERO).await);
}

#[tokio::test(start_paused = true)]
async fn without_a_change_the_wait_ends_at_its_limit() {
    let notifier = Notifier::new();
    let seen = notifier.version("child");
    notifier.notify("other");
    assert!(!notifier.changed("child", seen, Duration::from_secs(2)).await);
}

#[tokio::test]
async fn many_waiters_of_one_session_all_wake() {
    let notifier = Notifier::new();
    let seen = notifier.version("parent");
    let waiters: Vec<_> = (0..50)
        .map(|_| {
            let notifier = notifier.clone();
            tokio::spawn(async move { notifier.changed("parent", seen, LONG).await })
        })
        .collect();
    tokio::task::yield_now().await;
    notifier.notify("parent");
    for waiter in waiters {
        let woke = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("woken")
            .expect("ran");
        assert!(woke);
    }
}

#[test]
fn forgetting_drops_only_unwatched_sessions() {
    let notifier = Notifier::new();
    // A session nobody asked about gets no counter.
    notifier.notify("unasked");
    assert!(notifier.is_empty());
    assert_eq!(notifier.version("gone"), 0);
    assert_eq!(notifier.version("kept"), 0);
    notifier.notify("gone");
    notifier.notify("kept");
    assert_eq!(notifier.len(), 2);
    notifier.forget("gone");
    assert_eq!(notifier.len(), 1);
    assert_eq!(notifier.version("kept"), 1);
    assert_eq!(notifier.version("gone"), 0, "a forgotten session starts again from 0");
}
