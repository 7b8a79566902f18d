//! Cancellation.

use tokio_util::sync::CancellationToken;

/// A cancellation signal shared by a caller and the call it started.
///
/// Cancelling ends the provider's stream promptly with [`ErrorKind::Cancelled`](crate::ErrorKind),
/// closes the HTTP response or stops the child process, and stops running tools. A thin wrapper
/// over tokio-util's [`CancellationToken`]; clones share one state.
#[derive(Debug, Clone, Default)]
pub struct Signal {
    token: CancellationToken,
}

impl Signal {
    /// A fresh, uncancelled signal.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancel: every clone and child sees it.
    pub fn cancel(&self) {
        self.token.cancel();
    }

    /// Whether it was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Resolves once cancelled.
    pub async fn cancelled(&self) {
        self.token.cancelled().await;
    }

    /// A child signal: cancelled when this one is, cancellable on its own without touching this one.
    pub fn child(&self) -> Signal {
        Signal {
            token: self.token.child_token(),
        }
    }

    /// The underlying token, for code built on tokio-util.
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }
}

impl From<CancellationToken> for Signal {
    fn from(token: CancellationToken) -> Self {
        Self { token }
    }
}
