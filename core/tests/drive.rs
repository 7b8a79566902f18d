//! The driver's read and content timeouts, on tokio's paused clock: a timeout fires at its
//! setting after the last activity, not at twice it.

use std::time::Duration;

use futures::{Stream, StreamExt};
use patchbay_core::kit::{Driver, Framing, StreamLimits, Wire};
use patchbay_core::{Event, Limit, ProviderError, Signal};
use tokio::time::Instant;

/// One `TextDelta` per line, except a line `:` (a keep-alive), which gives nothing.
struct Echo;

impl Wire for Echo {
    fn framing(&self) -> Framing {
        Framing::Lines
    }
    fn frame(&mut self, data: &[u8]) -> Result<Option<Event>, ProviderError> {
        Ok((data != b":").then(|| Event::TextDelta {
            index: 0,
            text: String::from_utf8_lossy(data).into_owned(),
        }))
    }
    fn end(&mut self) -> Result<(), ProviderError> {
        Ok(())
    }
    fn next_event(&mut self) -> Option<Event> {
        None
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
    let mut events = Driver::new(body, Echo, &Signal::new())
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
            Ok(&b"hi\n"[..])
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
        Ok(&b":\n"[..])
    });
    let body = futures::stream::iter([Ok(&b"hi\n"[..])]).chain(keepalives);
    let limits = StreamLimits::default().with_content_timeout(Some(limit));
    let (elapsed, error) = silence_before_error(body, limits).await;
    assert_eq!(error.limit(), Some(Limit::ContentTimeout), "{error}");
    assert!(
        within_a_tenth(elapsed, limit),
        "fired {elapsed:?} after the last event, limit {limit:?}"
    );
}

/// One `TextDelta` per SSE frame (trimmed, as a JSON parser would read it): a wire whose own
/// framing is SSE.
struct SseEcho(bool);

impl Wire for SseEcho {
    fn framing(&self) -> Framing {
        Framing::Sse
    }
    fn frame(&mut self, data: &[u8]) -> Result<Option<Event>, ProviderError> {
        Ok(Some(Event::TextDelta {
            index: 0,
            text: String::from_utf8_lossy(data.trim_ascii()).into_owned(),
        }))
    }
    fn end(&mut self) -> Result<(), ProviderError> {
        self.0 = true;
        Ok(())
    }
    fn next_event(&mut self) -> Option<Event> {
        None
    }
    fn is_done(&self) -> bool {
        self.0
    }
}

#[test]
fn a_recording_of_json_lines_replays_as_json_lines_however_it_is_cut() {
    let body: &[u8] = b"\n  {\"a\":1}\n{\"b\":2}\n";
    for at in 0..body.len() {
        let (head, tail) = body.split_at(at);
        let recordings = patchbay_core::kit::replay(|| SseEcho(false), [head, tail]);
        assert_eq!(recordings.len(), 1, "cut at {at}");
        assert_eq!(recordings[0].text(), "{\"a\":1}{\"b\":2}", "cut at {at}");
    }
}

/// A wire whose whole-body answer is the body's text, once.
struct WholeEcho(Option<Event>);

impl Wire for WholeEcho {
    fn framing(&self) -> Framing {
        Framing::Sse
    }
    fn frame(&mut self, _: &[u8]) -> Result<Option<Event>, ProviderError> {
        Err(ProviderError::protocol("framed"))
    }
    fn end(&mut self) -> Result<(), ProviderError> {
        Ok(())
    }
    fn next_event(&mut self) -> Option<Event> {
        self.0.take()
    }
    fn is_done(&self) -> bool {
        true
    }
    fn whole_body(&mut self, body: &[u8]) -> Result<(), ProviderError> {
        self.0 = Some(Event::TextDelta {
            index: 0,
            text: String::from_utf8_lossy(body).into_owned(),
        });
        Ok(())
    }
}

#[test]
fn a_recording_of_a_json_array_is_one_whole_answer_however_it_is_cut() {
    let body: &[u8] = b"\n[{\"a\":1}\n,\r\n{\"b\":2}\n]";
    for at in 0..body.len() {
        let (head, tail) = body.split_at(at);
        let recordings = patchbay_core::kit::replay(|| WholeEcho(None), [head, tail]);
        assert_eq!(recordings.len(), 1, "cut at {at}");
        assert_eq!(recordings[0].text().as_bytes(), body, "cut at {at}");
        assert!(recordings[0].error.is_none());
    }
}
