//! Vertex AI's bearer token: given, or printed by a command (`gcloud auth print-access-token`),
//! kept for a while and fetched again after a `401`.

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use patchbay_core::kit::Secret;
use patchbay_core::{ErrorKind, ProviderError, Signal};
use tokio::io::AsyncReadExt;
use tokio::sync::Mutex;

use crate::NAME;

/// The longest a token command may run.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);
/// The most of a token command's output read (a token is about 2 KB).
const MAX_OUTPUT: u64 = 64 * 1024;

/// Where the token comes from.
#[derive(Clone)]
pub(crate) enum TokenSource {
    /// A token the host gave.
    Fixed(Secret),
    /// A command that prints one, and the token it printed last with when.
    Command {
        command: Arc<[String]>,
        ttl: Duration,
        cached: Arc<Mutex<Option<(Secret, Instant)>>>,
    },
}

impl TokenSource {
    /// A token source running `command`, its tokens kept for `ttl`.
    pub(crate) fn command(command: &[String], ttl: Duration) -> Self {
        Self::Command {
            command: command.into(),
            ttl,
            cached: Arc::new(Mutex::new(None)),
        }
    }

    /// The token for the next request.
    pub(crate) async fn token(&self, signal: &Signal) -> Result<Secret, ProviderError> {
        match self {
            Self::Fixed(token) => Ok(token.clone()),
            Self::Command { command, ttl, cached } => {
                let mut cached = cached.lock().await;
                if let Some((token, at)) = cached.as_ref()
                    && at.elapsed() < *ttl
                {
                    return Ok(token.clone());
                }
                let token = run(command, signal).await?;
                *cached = Some((token.clone(), Instant::now()));
                Ok(token)
            }
        }
    }

    /// Forget the kept token (the server refused it).
    pub(crate) async fn invalidate(&self) {
        if let Self::Command { cached, .. } = self {
            *cached.lock().await = None;
        }
    }
}

fn auth_error(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ErrorKind::Auth, message).with_provider(NAME)
}

/// Run the command (no shell, no stdin, killed when dropped) and read its token.
async fn run(command: &[String], signal: &Signal) -> Result<Secret, ProviderError> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| auth_error("the token command is empty"))?;
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|error| auth_error(format!("cannot run the token command `{program}`: {error}")))?;
    let (mut stdout, mut stderr) = (child.stdout.take(), child.stderr.take());
    let read = async {
        let mut out = Vec::new();
        let mut err = Vec::new();
        if let Some(stdout) = stdout.as_mut() {
            stdout.take(MAX_OUTPUT).read_to_end(&mut out).await.ok();
        }
        if let Some(stderr) = stderr.as_mut() {
            stderr.take(MAX_OUTPUT).read_to_end(&mut err).await.ok();
        }
        let status = child.wait().await;
        (out, err, status)
    };
    let (out, err, status) = tokio::select! {
        result = tokio::time::timeout(COMMAND_TIMEOUT, read) => result
            .map_err(|_| auth_error(format!("the token command `{program}` did not finish within {} s", COMMAND_TIMEOUT.as_secs())))?,
        () = signal.cancelled() => return Err(ProviderError::cancelled().with_provider(NAME)),
    };
    let status = status.map_err(|error| auth_error(format!("the token command `{program}` failed: {error}")))?;
    if !status.success() {
        let tail: String = String::from_utf8_lossy(&err)
            .trim()
            .chars()
            .rev()
            .take(500)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let mut error = auth_error(format!("the token command `{program}` exited with {status}"));
        if !tail.is_empty() {
            error = error.with_stderr_tail(tail);
        }
        return Err(error);
    }
    let token = String::from_utf8(out).map_err(|_| {
        auth_error(format!(
            "the token command `{program}` printed something that is not text"
        ))
    })?;
    let token = token.trim();
    if token.is_empty() || token.contains(char::is_whitespace) {
        return Err(auth_error(format!(
            "the token command `{program}` printed no token (one word expected)"
        )));
    }
    Ok(Secret::new(token))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn shell(script: &str) -> Vec<String> {
        vec!["sh".into(), "-c".into(), script.into()]
    }

    #[tokio::test]
    async fn a_printed_token_is_kept_until_invalidated() {
        let dir = tempfile::tempdir().unwrap();
        let count = dir.path().join("count");
        let script = format!(
            "echo x >> {0}; echo \"token-$(wc -l < {0} | tr -d ' ')\"",
            count.display()
        );
        let source = TokenSource::command(&shell(&script), Duration::from_secs(600));
        let signal = Signal::new();
        assert_eq!(source.token(&signal).await.unwrap().expose(), "token-1");
        assert_eq!(source.token(&signal).await.unwrap().expose(), "token-1");
        source.invalidate().await;
        assert_eq!(source.token(&signal).await.unwrap().expose(), "token-2");
    }

    #[tokio::test]
    async fn a_failing_command_is_an_auth_error_with_its_stderr() {
        let source = TokenSource::command(&shell("echo 'not logged in' >&2; exit 3"), Duration::from_secs(1));
        let error = source.token(&Signal::new()).await.err().unwrap();
        assert_eq!(error.kind(), ErrorKind::Auth);
        assert_eq!(error.stderr_tail(), Some("not logged in"));
        let missing = TokenSource::command(&["/nonexistent/gcloud".to_string()], Duration::from_secs(1));
        assert_eq!(
            missing.token(&Signal::new()).await.err().unwrap().kind(),
            ErrorKind::Auth
        );
        let blank = TokenSource::command(&shell("echo"), Duration::from_secs(1));
        assert_eq!(blank.token(&Signal::new()).await.err().unwrap().kind(), ErrorKind::Auth);
    }

    #[tokio::test]
    async fn cancelling_stops_a_slow_command() {
        let source = TokenSource::command(&shell("sleep 30; echo late"), Duration::from_secs(1));
        let signal = Signal::new();
        let cancel = signal.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            cancel.cancel();
        });
        let error = source.token(&signal).await.err().unwrap();
        assert_eq!(error.kind(), ErrorKind::Cancelled);
    }
}
