use std::sync::Arc;
use std::time::{Duration, Instant};

use patchbay::scripted::{End, Part, Response, Script, ScriptedError, ScriptedProvider, Turn};
use patchbay::{ErrorKind, Event, Message, Provider, Retry, RetryPolicy, Signal, ToolSet};
use patchbay_conformance::Recording;

fn rate_limited(retry_after_ms: u64) -> Turn {
    Turn::Fail(ScriptedError {
        kind: ErrorKind::RateLimited,
        message: "slow down".into(),
        status: Some(429),
        retry_after_ms: Some(retry_after_ms),
    })
}

async fn run(provider: &Retry<Arc<ScriptedProvider>>) -> (Vec<Event>, Option<patchbay::ProviderError>) {
    let Recording { events, error } = Recording::call(
        provider,
        &[Message::user("hi")],
        &ToolSet::new(),
        "m",
        &Signal::new(),
        None,
    )
    .await;
    (events, error)
}

#[tokio::test]
async fn rate_limits_are_retried_honouring_retry_after() {
    let scripted = Arc::new(ScriptedProvider::new(Script::new(vec![
        rate_limited(150),
        Turn::text("fine"),
    ])));
    let provider = Retry::new(
        scripted.clone(),
        RetryPolicy::default().with_backoff(Duration::ZERO, Duration::ZERO),
    );
    let started = Instant::now();
    let (events, error) = run(&provider).await;
    assert!(error.is_none(), "{error:?}");
    assert!(
        started.elapsed() >= Duration::from_millis(150),
        "retry-after was not honoured"
    );
    assert_eq!(scripted.requests().len(), 2);
    assert!(matches!(events.first(), Some(Event::Started { .. })));
}

#[tokio::test]
async fn an_overload_before_any_content_is_retried() {
    let overloaded_first = Turn::Respond(Response::new(vec![]).with_end(End::Error(ScriptedError::new(
        ErrorKind::Overloaded,
        "overloaded_error",
    ))));
    let scripted = Arc::new(ScriptedProvider::new(Script::new(vec![
        overloaded_first,
        Turn::text("fine"),
    ])));
    let provider = Retry::new(scripted.clone(), RetryPolicy::immediate(2));
    let (events, error) = run(&provider).await;
    assert!(error.is_none(), "{error:?}");
    let started = events.iter().filter(|e| matches!(e, Event::Started { .. })).count();
    assert_eq!(started, 1, "the failed attempt's Started never reached the caller");
    assert_eq!(scripted.requests().len(), 2);
}

#[tokio::test]
async fn an_error_after_text_reached_the_caller_is_not_retried() {
    let mid = Turn::Respond(
        Response::new(vec![Part::text("partial")])
            .with_end(End::Error(ScriptedError::new(ErrorKind::Overloaded, "overloaded"))),
    );
    let scripted = Arc::new(ScriptedProvider::new(Script::new(vec![mid, Turn::text("never")])));
    let provider = Retry::new(scripted.clone(), RetryPolicy::immediate(3));
    let (events, error) = run(&provider).await;
    assert_eq!(error.map(|e| e.kind()), Some(ErrorKind::Overloaded));
    assert!(events.iter().any(|e| matches!(e, Event::TextDelta { .. })));
    assert_eq!(scripted.requests().len(), 1);
}

#[tokio::test]
async fn retries_stop_at_the_limit_and_non_retryable_errors_pass_through() {
    let scripted = Arc::new(ScriptedProvider::new(Script::new(vec![rate_limited(0)]).repeating()));
    let provider = Retry::new(scripted.clone(), RetryPolicy::immediate(2));
    let (_, error) = run(&provider).await;
    assert_eq!(error.map(|e| e.kind()), Some(ErrorKind::RateLimited));
    assert_eq!(scripted.requests().len(), 3, "one try and two retries");

    let auth = Turn::Fail(ScriptedError::new(ErrorKind::Auth, "bad key"));
    let scripted = Arc::new(ScriptedProvider::new(Script::new(vec![auth]).repeating()));
    let provider = Retry::new(scripted.clone(), RetryPolicy::immediate(5));
    let (_, error) = run(&provider).await;
    assert_eq!(error.map(|e| e.kind()), Some(ErrorKind::Auth));
    assert_eq!(scripted.requests().len(), 1);
}

#[tokio::test]
async fn a_retry_after_beyond_the_limit_goes_to_the_caller() {
    let scripted = Arc::new(ScriptedProvider::new(Script::new(vec![
        rate_limited(120_000),
        Turn::text("fine"),
    ])));
    let provider = Retry::new(
        scripted,
        RetryPolicy::default().with_max_retry_after(Duration::from_secs(1)),
    );
    let (_, error) = run(&provider).await;
    let error = error.expect("not retried");
    assert_eq!(error.retry_after(), Some(Duration::from_secs(120)));
}

#[tokio::test]
async fn cancelling_during_a_backoff_ends_promptly() {
    let scripted = Arc::new(ScriptedProvider::new(Script::new(vec![
        rate_limited(20_000),
        Turn::text("fine"),
    ])));
    let provider = Retry::new(scripted, RetryPolicy::default());
    let signal = Signal::new();
    let canceller = signal.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        canceller.cancel();
    });
    let started = Instant::now();
    let result = provider
        .create_response(&[Message::user("hi")], &ToolSet::new(), "m", &signal, None)
        .await;
    assert_eq!(result.err().map(|e| e.kind()), Some(ErrorKind::Cancelled));
    assert!(started.elapsed() < Duration::from_secs(5));
}
