//! Retry as middleware: [`Retry`] wraps any provider, [`RetryLayer`] builds it (tower's shape).
//!
//! Rate limits, overload and connection failures are retried with exponential backoff that
//! honours `retry-after`, including an overload error arriving as the first event of a stream.
//! Events before the first content event (`Started`, `McpConnected`, `Usage`) are held back
//! until content arrives, so nothing reaches the caller from an attempt that is then retried;
//! once an event has reached the caller, an error is passed through and never retried.
//!
//! ```
//! use std::time::Duration;
//! use patchbay_core::{retry::RetryLayer, RetryPolicy};
//! use tower_layer::Layer;
//! # use patchbay_core::{Provider, ProviderInfo, Capabilities};
//! # fn wrap<P: Provider>(provider: P) {
//! let policy = RetryPolicy::default().with_max_retries(3).with_backoff(Duration::from_millis(200), Duration::from_secs(8));
//! let provider = RetryLayer::new(policy).layer(provider);
//! # }
//! ```

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;

use crate::context::RequestContext;
use crate::error::ProviderError;
use crate::event::Event;
use crate::message::Message;
use crate::provider::{EventStream, Provider, ProviderInfo};
use crate::signal::Signal;
use crate::toolset::ToolSet;

/// When and how long to wait before trying again.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 turns retry off).
    pub max_retries: u32,
    /// Backoff before the first retry; doubles each time.
    pub initial_backoff: Duration,
    /// Upper bound of the computed backoff.
    pub max_backoff: Duration,
    /// A `retry-after` longer than this is not waited for: the error goes to the caller.
    pub max_retry_after: Duration,
    /// Randomize each backoff between half and all of it.
    pub jitter: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 2,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
            jitter: true,
        }
    }
}

impl RetryPolicy {
    /// No retries at all (for tests that want to see every error).
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// Retry immediately, without waiting (for tests of the retry path).
    pub fn immediate(max_retries: u32) -> Self {
        Self {
            max_retries,
            initial_backoff: Duration::ZERO,
            max_backoff: Duration::ZERO,
            max_retry_after: Duration::from_secs(60),
            jitter: false,
        }
    }

    /// Set the number of retries.
    pub fn with_max_retries(mut self, max_retries: u32) -> Self {
        self.max_retries = max_retries;
        self
    }

    /// Set the initial and maximum backoff.
    pub fn with_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_backoff = initial;
        self.max_backoff = max;
        self
    }

    /// Set the longest `retry-after` worth waiting for.
    pub fn with_max_retry_after(mut self, max: Duration) -> Self {
        self.max_retry_after = max;
        self
    }

    /// Set jitter on or off.
    pub fn with_jitter(mut self, jitter: bool) -> Self {
        self.jitter = jitter;
        self
    }

    /// How long to wait before retry number `attempt` (0-based) after `error`, or `None` if the
    /// error must go to the caller.
    pub fn delay(&self, attempt: u32, error: &ProviderError) -> Option<Duration> {
        if attempt >= self.max_retries || !error.kind().is_retryable() {
            return None;
        }
        if let Some(wait) = error.retry_after() {
            return (wait <= self.max_retry_after).then_some(wait);
        }
        let factor = 2u32.saturating_pow(attempt);
        let backoff = self.initial_backoff.saturating_mul(factor).min(self.max_backoff);
        if !self.jitter || backoff.is_zero() {
            return Some(backoff);
        }
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u32(attempt);
        let unit = (hasher.finish() % 1_000) as f64 / 1_000.0;
        Some(backoff.mul_f64(0.5 + unit / 2.0))
    }
}

/// A provider that retries its inner provider per a [`RetryPolicy`].
#[derive(Debug, Clone)]
pub struct Retry<P> {
    inner: P,
    policy: RetryPolicy,
}

impl<P> Retry<P> {
    /// Wrap `inner`.
    pub fn new(inner: P, policy: RetryPolicy) -> Self {
        Self { inner, policy }
    }

    /// The wrapped provider.
    pub fn get_ref(&self) -> &P {
        &self.inner
    }

    /// The policy.
    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    /// Unwrap.
    pub fn into_inner(self) -> P {
        self.inner
    }
}

/// Builds [`Retry`] providers.
#[derive(Debug, Clone, Default)]
pub struct RetryLayer {
    policy: RetryPolicy,
}

impl RetryLayer {
    /// A layer with this policy.
    pub fn new(policy: RetryPolicy) -> Self {
        Self { policy }
    }
}

impl<P> tower_layer::Layer<P> for RetryLayer {
    type Service = Retry<P>;

    fn layer(&self, inner: P) -> Retry<P> {
        Retry::new(inner, self.policy.clone())
    }
}

/// The longest wait a `retry-after` header is read as (a day); larger values are clamped so a
/// hostile header cannot overflow a `Duration`.
/// Events that may be held back without delaying anything the user sees.
fn is_preamble(event: &Event) -> bool {
    matches!(
        event,
        Event::Started { .. } | Event::McpConnected { .. } | Event::Usage(_)
    )
}

async fn wait(delay: Duration, signal: &Signal) -> Result<(), ProviderError> {
    tokio::select! {
        _ = tokio::time::sleep(delay) => Ok(()),
        _ = signal.cancelled() => Err(ProviderError::cancelled()),
    }
}

#[async_trait]
impl<P: Provider> Provider for Retry<P> {
    fn info(&self) -> &ProviderInfo {
        self.inner.info()
    }

    async fn create_response(
        &self,
        messages: &[Message],
        tools: &ToolSet,
        model: &str,
        signal: &Signal,
        context: Option<&RequestContext>,
    ) -> Result<EventStream, ProviderError> {
        let mut attempt = 0;
        'attempts: loop {
            if signal.is_cancelled() {
                return Err(ProviderError::cancelled());
            }
            let mut stream = match self
                .inner
                .create_response(messages, tools, model, signal, context)
                .await
            {
                Ok(stream) => stream,
                Err(error) => match self.policy.delay(attempt, &error) {
                    Some(delay) => {
                        tracing::warn!(attempt, kind = %error.kind(), ?delay, "retrying after error");
                        wait(delay, signal).await?;
                        attempt += 1;
                        continue 'attempts;
                    }
                    None => return Err(error),
                },
            };
            let mut held: Vec<Result<Event, ProviderError>> = Vec::new();
            loop {
                match stream.next().await {
                    Some(Ok(event)) if is_preamble(&event) => held.push(Ok(event)),
                    Some(Ok(event)) => {
                        held.push(Ok(event));
                        break;
                    }
                    Some(Err(error)) => match self.policy.delay(attempt, &error) {
                        Some(delay) => {
                            tracing::warn!(attempt, kind = %error.kind(), ?delay, "retrying after an error before any content");
                            drop(stream);
                            wait(delay, signal).await?;
                            attempt += 1;
                            continue 'attempts;
                        }
                        None => {
                            held.push(Err(error));
                            break;
                        }
                    },
                    None => break,
                }
            }
            if held.last().is_some_and(Result::is_err) {
                // The error ended the stream: nothing of the inner stream may follow it.
                return Ok(Box::pin(futures::stream::iter(held)));
            }
            return Ok(Box::pin(futures::stream::iter(held).chain(stream)));
        }
    }
}
