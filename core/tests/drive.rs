//! The driver's read and content timeouts, on tokio's paused clock: a timeout fires at its
//! setting after the last activity, not at twice it.

use std::time::Duration;

use futures::{Stream, StreamExt};
use patchbay_core::kit::{Driver, StreamLimits, StreamTranslator};
use patchbay_core::{Event, Limit, ProviderError, Signal};
use tokio::time::Instant;

/// One `TextDelta` per chunk, except a chunk `:` (a keep-alive), which gives nothing.
struct Echo(Vec<Event>);

impl StreamTranslator for Echo {
    fn feed(&mut self, bytes: &[u8]) -> Result<(), ProviderError> {
        if bytes != b":" {
            let text = String::from_utf8_lossy(bytes).into_owned();
            self.0.push(Event::TextDelta { index: 0, text });
        }
        Ok(())
    }
    fn finish(&mut self) -> Result<(), ProviderError> {
        Ok(())
    }
    fn next_event(&mut self) -> Option<Result<Event, ProviderError>> {
        (!self.0.is_empty()).then(|| Ok(self.0.remove(0)))
    }
    fn is_done(&self) -> bool {
        false
    }
}

/// Drive `body` and answer how long after the last event the error came, and the error.
async fn silence_before_error<B>(body: B, limits: StreamLimits) -> (Duration, ProviderError)
where
    B: Stream<Item = Result<&'static [u8], ProviderError>> + Send + 'static,
{
    let mut events = Driver::new(body, Echo(Vec::new()), &Signal::new())
        .with_limits(&limits)
        .into_stream();
    let mut last = Instant::now();
    loop {
        match events.next().await.expect("an error ends the stream") {
            Ok(_) => last = Instant::now(),
            Err(error) => return (last.elapsed(), error),
        }
    }
}

/// `elapsed` is at least `limit` and within a tenth more.
fn within_a_tenth(elapsed: Duration, limit: Duration) -> bool {
    elapsed >= limit && elapsed <= limit + limit / 10
}

#[tokio::test(start_paused = true)]
async fn a_stream_stalled_after_data_hits_the_read_timeout_at_its_setting() {
    let limit = Duration::from_millis(300);
    // Text for a while (several timer periods), then silence.
    let body = futures::stream::iter(0..10)
        .then(|_| async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok(&b"hi"[..])
        })
        .chain(futures::stream::pending());
    let limits = StreamLimits::default().with_read_timeout(Some(limit));
    let (elapsed, error) = silence_before_error(body, limits).await;
    assert_eq!(error.limit(), Some(Limit::ReadTimeout), "{error}");
    assert!(
        within_a_tenth(elapsed, limit),
        "fired {elapsed:?} after the last bytes, limit {limit:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn keepalives_after_content_hit_the_content_timeout_at_its_setting() {
    let limit = Duration::from_millis(1500);
    // One text, then keep-alives every 50 ms forever.
    let keepalives = futures::stream::repeat(()).then(|()| async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        Ok(&b":"[..])
    });
    let body = futures::stream::iter([Ok(&b"hi"[..])]).chain(keepalives);
    let limits = StreamLimits::default().with_content_timeout(Some(limit));
    let (elapsed, error) = silence_before_error(body, limits).await;
    assert_eq!(error.limit(), Some(Limit::ContentTimeout), "{error}");
    assert!(
        within_a_tenth(elapsed, limit),
        "fired {elapsed:?} after the last event, limit {limit:?}"
    );
}
