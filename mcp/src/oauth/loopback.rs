//! The CLI host's authorization step: open (or print) the authorization URL and receive the
//! redirect on a loopback listener (RFC 8252 §7.3).

use std::fmt;
use std::net::{Ipv4Addr, SocketAddr, TcpListener as StdListener};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::oauth::error::OAuthError;
use crate::oauth::handler::{
    AuthorizationHandler, AuthorizationPrompt, AuthorizationRedirect, DEFAULT_AUTHORIZATION_TIMEOUT, parse_redirect,
};

/// Shows the user an authorization URL (prints it, opens a browser...).
pub type Opener = Arc<dyn Fn(&AuthorizationPrompt) -> Result<(), OAuthError> + Send + Sync>;

const PATH: &str = "/callback";
const MAX_HEAD: usize = 8 * 1024;
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// A loopback listener on `127.0.0.1` that receives the authorization redirect at
/// `http://127.0.0.1:<port>/callback`, for CLI hosts. The URL is shown by the opener: printed
/// on stderr by default, or opened in the browser ([`with_browser`](Self::with_browser)).
/// Authorizations through one listener take turns; a request with another path or an unknown
/// `state` is answered with an error and the listener keeps waiting.
///
/// ```no_run
/// use patchbay_mcp::oauth::{LoopbackRedirect, OAuthClient};
/// let oauth = OAuthClient::new(LoopbackRedirect::bind()?.with_browser());
/// # Ok::<(), patchbay_mcp::oauth::OAuthError>(())
/// ```
pub struct LoopbackRedirect {
    listener: StdListener,
    addr: SocketAddr,
    opener: Opener,
    timeout: Duration,
    turn: tokio::sync::Mutex<()>,
}

impl fmt::Debug for LoopbackRedirect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoopbackRedirect")
            .field("redirect_uri", &self.uri())
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl LoopbackRedirect {
    /// Listen on a free port of `127.0.0.1`.
    pub fn bind() -> Result<Self, OAuthError> {
        Self::bind_port(0)
    }

    /// Listen on `127.0.0.1:port` (for an authorization server that only accepts a redirect
    /// URI registered with a fixed port).
    pub fn bind_port(port: u16) -> Result<Self, OAuthError> {
        let listen_error = |source| OAuthError::Listener {
            message: format!("cannot listen on 127.0.0.1:{port}"),
            source,
        };
        let listener = StdListener::bind((Ipv4Addr::LOCALHOST, port)).map_err(listen_error)?;
        listener.set_nonblocking(true).map_err(listen_error)?;
        let addr = listener.local_addr().map_err(listen_error)?;
        Ok(Self {
            listener,
            addr,
            opener: Arc::new(print_url),
            timeout: DEFAULT_AUTHORIZATION_TIMEOUT,
            turn: tokio::sync::Mutex::new(()),
        })
    }

    /// Show the URL with `opener` instead of printing it.
    pub fn with_opener(
        mut self,
        opener: impl Fn(&AuthorizationPrompt) -> Result<(), OAuthError> + Send + Sync + 'static,
    ) -> Self {
        self.opener = Arc::new(opener);
        self
    }

    /// Open the URL in the default browser (`open` on macOS, `xdg-open` elsewhere), printing
    /// it as well.
    pub fn with_browser(self) -> Self {
        self.with_opener(open_in_browser)
    }

    /// How long an authorization waits for the redirect (5 minutes by default).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The redirect URI: `http://127.0.0.1:<port>/callback`.
    pub fn uri(&self) -> String {
        format!("http://{}{PATH}", self.addr)
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn listen_error(&self, message: &str, source: std::io::Error) -> OAuthError {
        OAuthError::Listener {
            message: format!("{message} on {}", self.addr),
            source,
        }
    }
}

/// Print the authorization URL on stderr (the default opener).
pub fn print_url(prompt: &AuthorizationPrompt) -> Result<(), OAuthError> {
    eprintln!(
        "MCP server `{}` asks for authorization; open this URL in a browser:\n{}",
        prompt.server(),
        prompt.url()
    );
    Ok(())
}

/// Print the authorization URL and open it in the default browser.
pub fn open_in_browser(prompt: &AuthorizationPrompt) -> Result<(), OAuthError> {
    print_url(prompt)?;
    let program = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    if let Err(error) = std::process::Command::new(program)
        .arg(prompt.url())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        tracing::warn!("cannot start `{program}` to open the browser: {error}");
    }
    Ok(())
}

#[async_trait]
impl AuthorizationHandler for LoopbackRedirect {
    async fn redirect_uri(&self) -> Result<String, OAuthError> {
        Ok(self.uri())
    }

    async fn authorize(&self, prompt: AuthorizationPrompt) -> Result<AuthorizationRedirect, OAuthError> {
        let _turn = self.turn.lock().await;
        let clone = self
            .listener
            .try_clone()
            .map_err(|e| self.listen_error("cannot listen", e))?;
        let listener = TcpListener::from_std(clone).map_err(|e| self.listen_error("cannot listen", e))?;
        (self.opener)(&prompt)?;
        let deadline = tokio::time::Instant::now() + self.timeout;
        loop {
            let accepted = tokio::time::timeout_at(deadline, listener.accept()).await;
            let (stream, _) = accepted
                .map_err(|_| OAuthError::Timeout(self.timeout))?
                .map_err(|e| self.listen_error("cannot accept", e))?;
            if let Some(outcome) = answer(stream, prompt.state()).await {
                return outcome;
            }
        }
    }
}

/// Read one request; `None` when it is not this authorization's redirect.
async fn answer(mut stream: TcpStream, state: &str) -> Option<Result<AuthorizationRedirect, OAuthError>> {
    let target = match tokio::time::timeout(READ_TIMEOUT, read_target(&mut stream)).await {
        Ok(Some(target)) => target,
        _ => {
            respond(&mut stream, "400 Bad Request", "Not an HTTP request.").await;
            return None;
        }
    };
    if target.split('?').next() != Some(PATH) {
        respond(&mut stream, "404 Not Found", "Not found.").await;
        return None;
    }
    let (received, outcome) = parse_redirect(&target);
    if received.as_deref() != Some(state) {
        respond(
            &mut stream,
            "400 Bad Request",
            "This authorization is not the pending one.",
        )
        .await;
        return None;
    }
    let page = match &outcome {
        Ok(_) => "Authorized. You can close this tab and return to the application.",
        Err(_) => "The authorization did not complete. You can close this tab.",
    };
    respond(&mut stream, "200 OK", page).await;
    Some(outcome)
}

/// The request target of a `GET`, once the head is read.
async fn read_target(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::with_capacity(1024);
    let mut buffer = [0u8; 1024];
    while !head.windows(4).any(|window| window == b"\r\n\r\n") {
        let read = stream.read(&mut buffer).await.ok()?;
        if read == 0 || head.len() + read > MAX_HEAD {
            return None;
        }
        head.extend_from_slice(&buffer[..read]);
    }
    let line = std::str::from_utf8(&head).ok()?.lines().next()?;
    let mut parts = line.split(' ');
    match (parts.next(), parts.next()) {
        (Some("GET"), Some(target)) => Some(target.to_owned()),
        _ => None,
    }
}

async fn respond(stream: &mut TcpStream, status: &str, message: &str) {
    let body = format!("<!doctype html><title>Authorization</title><p>{message}</p>\n");
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}
