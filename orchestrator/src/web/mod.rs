//! The web view: a live page of the sessions (a parent/child tree, with status, agent, folder
//! and age), the jobs, and one session's event stream as it happens (text as it streams,
//! reasoning folded, tool calls with their input and result, errors, usage and timings), with
//! buttons to cancel a job and to resume a session. Served by [`crate::http::serve`] on the
//! same loopback port as the MCP endpoint and the JSON API ([`crate::api`]).
//!
//! The pages are a static HTML shell with one small script and one stylesheet, compiled into
//! the binary (no build step, nothing fetched from elsewhere: it works offline). The script
//! reads the JSON API with the browser's cookie and follows `GET /sessions/{id}/events`
//! (server-sent events) for the session page.
//!
//! | Route | Needs | Answer |
//! |---|---|---|
//! | `GET /` | cookie or token | the sessions and the jobs (else an HTML `401` saying how to log in) |
//! | `GET /web/sessions/{id}` | cookie or token | one session, its jobs and its events, live |
//! | `GET /web/sessions/by-name/{name}` | cookie or token | the same, by session name |
//! | `GET /web/app.js`, `GET /web/style.css` | nothing | the script and the style |
//! | `GET /login?code=` | a one-time code | sets the cookie, `303` to `/` |
//! | `GET /login` | nothing | a form to paste the bearer token |
//! | `POST /login` | the token (form field `token`) | sets the cookie, `303` to `/` |
//!
//! # Logging in
//! `patchbay-orchestrator serve` prints a one-time link, `http://127.0.0.1:<port>/login?code=<code>`
//! ([`WebLogin::login_url`]). Opening it uses the code up and sets a session cookie, then
//! redirects to `/`. A code works once and for ten minutes; once it is used up, the `/login`
//! form takes the bearer token instead. The JSON API accepts the cookie as it accepts the
//! token (through [`patchbay::mcp::ToolServerBuilder::authorize_with`]); API and MCP clients
//! keep sending `Authorization: Bearer <token>`, unchanged.
//!
//! # Decisions
//! - **The cookie is a secret of its own**, neither the code nor the token: a fresh random
//!   value per login (244 random bits), kept in memory (at most 64 sessions, the oldest
//!   dropped), so a restart logs every browser out. It is `HttpOnly` (page scripts cannot
//!   read it), `SameSite=Strict` (no other site's page sends it) and `Path=/`, named
//!   `patchbay_<port>` because cookies are not scoped by port. It has no `Secure` flag: the
//!   server speaks plain HTTP on loopback. A consequence worth knowing: a page served by
//!   another program on `127.0.0.1` receives the cookie too (so could that program's owner,
//!   who can read the printed token as well).
//! - **The one-time code travels in a URL**, so it is single use, short-lived and answered
//!   with `Referrer-Policy: same-origin` (no referrer to other sites; `no-referrer` made
//!   Chromium post the token form with `Origin: null`) and `Cache-Control: no-store`; it never becomes the
//!   cookie.
//! - **Secrets are compared in constant time** (the token, every stored code and cookie is
//!   compared in full, whatever matches), and never logged: log lines say that someone
//!   logged in or was refused, without values, and `Debug` output shows counts only.
//! - **Requests with the cookie that change state are checked against cross-site forgery**:
//!   a `POST` or `DELETE` must carry `X-Patchbay-Csrf: 1` (the page's script sends it; a
//!   plain cross-site form cannot, and a cross-site script would need a CORS preflight that is
//!   never granted), and any request with the cookie that has an `Origin` header must name
//!   the host it was sent to (`http://127.0.0.1:<port>`), with no `Sec-Fetch-Site:
//!   cross-site`. `SameSite=Strict` alone would not do: a page on another port of
//!   `127.0.0.1` is the same site, so the browser sends it the cookie. The cookie opens the
//!   JSON API only, never `/mcp`. The API has no `GET` that changes anything.
//! - **The `Host` check applies to the cookie and to the public routes**: the listener asks
//!   the cookie check only for requests whose `Host` is its own `127.0.0.1:<port>` or
//!   `localhost:<port>`, and answers `403` on the login and asset routes otherwise (DNS
//!   rebinding).
//! - **Pages carry a strict Content-Security-Policy** (only their own script, style and
//!   requests; no framing), and the script writes every value as text, never as HTML.
//! - **A login's event streams have a budget** (see [`crate::api`], "Streams"): each login
//!   (cookie) may follow 64 sessions at once, apart from the token's share, so tabs left open
//!   cannot take the listener's connections; a session page opened beyond that shows its
//!   events as "disconnected" (the stream was answered `429`) until reloaded after another
//!   tab closed.
//! - **Listings are refreshed every few seconds** (the API has no change feed for them); the
//!   session page follows the event stream, so text shows as it is stored.

mod auth;
mod pages;

use std::net::SocketAddr;
use std::sync::Arc;

use patchbay::mcp::{Authorizer, Grant};

use self::auth::Keys;

pub use self::auth::{CODE_LIFETIME, CSRF_HEADER};

/// The web view of one listener before it is bound: its routes and its check of the cookie.
#[derive(Debug)]
pub(crate) struct WebView {
    keys: Arc<Keys>,
}

impl WebView {
    /// A web view accepting `token` (the listener's bearer token) on its login form.
    pub(crate) fn new(token: String) -> Self {
        Self {
            keys: Arc::new(Keys::new(token)),
        }
    }

    /// The routes served without the token (see the table above).
    pub(crate) fn routes(&self) -> axum::Router {
        pages::routes(self.keys.clone())
    }

    /// Whether an `Authorization: Bearer` value is the token (for the stream budget, which
    /// counts the token as one credential and each cookie session as another).
    pub(crate) fn token_check(&self) -> crate::api::TokenCheck {
        let keys = self.keys.clone();
        Arc::new(move |given| keys.is_token(given))
    }

    /// The cookie check for the JSON API.
    pub(crate) fn authorizer(&self) -> Authorizer {
        let keys = self.keys.clone();
        Arc::new(move |parts| keys.authorize(parts).then(Grant::new))
    }

    /// The login handle once the listener is bound at `addr`.
    pub(crate) fn bound(self, addr: SocketAddr) -> WebLogin {
        self.keys.set_port(addr.port());
        WebLogin {
            keys: self.keys,
            url: format!("http://127.0.0.1:{}/", addr.port()),
        }
    }
}

/// The web view of a running listener: its address and fresh one-time login links.
#[derive(Clone)]
pub struct WebLogin {
    keys: Arc<Keys>,
    url: String,
}

impl std::fmt::Debug for WebLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebLogin")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl WebLogin {
    /// The web view, `http://127.0.0.1:<port>/` (it answers `401` until the browser logs in).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A new one-time login link, `http://127.0.0.1:<port>/login?code=<code>`: opening it
    /// logs the browser in. It works once, for [`CODE_LIFETIME`] (a secret until then: print
    /// it for the person, never log it).
    pub fn login_url(&self) -> String {
        format!("{}login?code={}", self.url, self.keys.mint_code())
    }
}
