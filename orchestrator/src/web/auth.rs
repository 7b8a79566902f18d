//! The web view's secrets and checks: one-time login codes, cookie sessions, and what a
//! cookie-authenticated request must show besides its cookie (see the [module docs](super)).

use crate::secret::fresh_secret;
use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, header};

/// The header the page's script sends with every request that changes state; a plain
/// cross-site form cannot send it, and a cross-site script cannot send it without a CORS
/// preflight that this server never grants.
pub const CSRF_HEADER: &str = "x-patchbay-csrf";
/// How long a login code can be used.
pub const CODE_LIFETIME: Duration = Duration::from_secs(600);
/// Login codes kept at once; minting another drops the oldest.
const MAX_CODES: usize = 16;
/// Cookie sessions kept at once; logging in once more ends the oldest.
const MAX_SESSIONS: usize = 64;

/// Equal bytes, in a time that depends on the lengths only.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether `given` equals one of `known`, comparing with every one of them in constant time.
fn matches_any<'a>(known: impl Iterator<Item = &'a str>, given: &str) -> Option<usize> {
    let mut found = None;
    for (i, secret) in known.enumerate() {
        if constant_time_eq(secret.as_bytes(), given.as_bytes()) {
            found = Some(i);
        }
    }
    found
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The bearer token, the outstanding login codes and the open cookie sessions. Never logged:
/// its `Debug` shows counts only.
pub(crate) struct Keys {
    token: String,
    port: OnceLock<u16>,
    codes: Mutex<Vec<(String, Instant)>>,
    sessions: Mutex<VecDeque<String>>,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keys")
            .field("port", &self.port.get())
            .field("codes", &lock(&self.codes).len())
            .field("sessions", &lock(&self.sessions).len())
            .finish_non_exhaustive()
    }
}

impl Keys {
    pub(crate) fn new(token: String) -> Self {
        Self {
            token,
            port: OnceLock::new(),
            codes: Mutex::new(Vec::new()),
            sessions: Mutex::new(VecDeque::new()),
        }
    }

    /// The port, once the listener is bound (it names the cookie).
    pub(crate) fn set_port(&self, port: u16) {
        let _ = self.port.set(port);
    }

    /// `patchbay_<port>`: cookies are not scoped by port, so two orchestrators on one machine
    /// would otherwise overwrite each other's.
    pub(crate) fn cookie_name(&self) -> String {
        format!("patchbay_{}", self.port.get().copied().unwrap_or(0))
    }

    /// A new one-time login code, valid for [`CODE_LIFETIME`].
    pub(crate) fn mint_code(&self) -> String {
        let code = fresh_secret();
        let mut codes = lock(&self.codes);
        let now = Instant::now();
        codes.retain(|(_, expires)| *expires > now);
        if codes.len() >= MAX_CODES {
            codes.remove(0);
        }
        codes.push((code.clone(), now + CODE_LIFETIME));
        code
    }

    /// Use up `code`: `true` once for a code minted less than [`CODE_LIFETIME`] ago.
    pub(crate) fn redeem(&self, code: &str) -> bool {
        let mut codes = lock(&self.codes);
        let now = Instant::now();
        codes.retain(|(_, expires)| *expires > now);
        match matches_any(codes.iter().map(|(c, _)| c.as_str()), code) {
            Some(i) => {
                codes.remove(i);
                true
            }
            None => false,
        }
    }

    /// Whether `given` is the bearer token (without `Bearer `).
    pub(crate) fn is_token(&self, given: &str) -> bool {
        constant_time_eq(given.as_bytes(), self.token.as_bytes())
    }

    /// A new cookie session: the `Set-Cookie` value to send. The cookie holds a fresh secret
    /// of its own (never the code or the token), `HttpOnly` (no script reads it),
    /// `SameSite=Strict` (no other site's page sends it) and `Path=/`; it lasts the browser
    /// session, and the server forgets it on restart.
    pub(crate) fn open_session(&self) -> String {
        let secret = fresh_secret();
        let mut sessions = lock(&self.sessions);
        if sessions.len() >= MAX_SESSIONS {
            sessions.pop_front();
        }
        sessions.push_back(secret.clone());
        format!("{}={secret}; HttpOnly; SameSite=Strict; Path=/", self.cookie_name())
    }

    /// Whether the request carries the cookie of an open session.
    pub(crate) fn has_session(&self, headers: &HeaderMap) -> bool {
        let name = self.cookie_name();
        let Some(given) = cookie_value(headers, &name) else {
            return false;
        };
        let sessions = lock(&self.sessions);
        matches_any(sessions.iter().map(String::as_str), given).is_some()
    }

    /// Whether the request carries `Authorization: Bearer <token>`.
    pub(crate) fn has_bearer(&self, headers: &HeaderMap) -> bool {
        headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .is_some_and(|token| self.is_token(token))
    }

    /// Whether a page may be shown: a session cookie or the bearer token.
    pub(crate) fn may_view(&self, headers: &HeaderMap) -> bool {
        self.has_session(headers) || self.has_bearer(headers)
    }

    /// The API's second way in (the listener asks it when the bearer token is missing, for
    /// requests naming the own host): a session cookie, from the own origin, with the CSRF
    /// header on every method that changes state; never for `/mcp`.
    pub(crate) fn authorize(&self, parts: &Parts) -> bool {
        let path = parts.uri.path();
        if path == "/mcp" || path.starts_with("/mcp/") {
            return false;
        }
        if !self.has_session(&parts.headers) || !same_origin(&parts.headers) {
            return false;
        }
        let safe = matches!(parts.method, Method::GET | Method::HEAD);
        safe || parts.headers.get(CSRF_HEADER).is_some_and(|value| value == "1")
    }
}

/// The value of cookie `name` in the request's `Cookie` headers.
fn cookie_value<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find_map(|(key, value)| (key == name).then_some(value))
}

/// Whether the request may come from the own page: no `Origin` header, or one naming the
/// host the request was sent to (the listener made sure that host is its own), and no
/// `Sec-Fetch-Site: cross-site`.
pub(crate) fn same_origin(headers: &HeaderMap) -> bool {
    if headers.get("sec-fetch-site").is_some_and(|site| site == "cross-site") {
        return false;
    }
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let host = headers.get(header::HOST).and_then(|host| host.to_str().ok());
    match (origin.to_str().ok(), host) {
        (Some(origin), Some(host)) => origin
            .strip_prefix("http://")
            .is_some_and(|rest| rest.eq_ignore_ascii_case(host)),
        _ => false,
    }
}

/// The value of `key` in an `application/x-www-form-urlencoded` body.
pub(crate) fn form_value(body: &str, key: &str) -> Option<String> {
    body.split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == key)
        .and_then(|(_, value)| percent_decode(value))
}

/// `+` as space and `%XX` as the byte; `None` for a bad escape or bytes that are not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&first, tail)) = rest.split_first() {
        rest = tail;
        match first {
            b'+' => bytes.push(b' '),
            b'%' => {
                let hex = rest.get(..2)?;
                let hex = std::str::from_utf8(hex).ok()?;
                bytes.push(u8::from_str_radix(hex, 16).ok()?);
                rest = &rest[2..];
            }
            other => bytes.push(other),
        }
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, value.parse().expect("a header value"));
        }
        map
    }

    #[test]
    fn a_code_works_once() {
        let keys = Keys::new("t".into());
        let code = keys.mint_code();
        assert!(!keys.redeem("not-a-code"));
        assert!(keys.redeem(&code));
        assert!(!keys.redeem(&code));
    }

    #[test]
    fn the_cookie_is_a_secret_of_its_own() {
        let keys = Keys::new("token".into());
        keys.set_port(8080);
        let code = keys.mint_code();
        let cookie = keys.open_session();
        let (pair, attributes) = cookie.split_once(';').expect("attributes");
        let value = pair.strip_prefix("patchbay_8080=").expect("named after the port");
        assert_ne!(value, code);
        assert_ne!(value, "token");
        assert_eq!(attributes, " HttpOnly; SameSite=Strict; Path=/");
        assert!(keys.has_session(&headers(&[("cookie", &format!("other=1; {pair}"))])));
        assert!(!keys.has_session(&headers(&[("cookie", "patchbay_8080=guess")])));
    }

    #[test]
    fn the_origin_must_be_the_host() {
        let host = ("host", "127.0.0.1:9");
        assert!(same_origin(&headers(&[host])));
        assert!(same_origin(&headers(&[host, ("origin", "http://127.0.0.1:9")])));
        assert!(!same_origin(&headers(&[host, ("origin", "http://evil.example")])));
        assert!(!same_origin(&headers(&[host, ("origin", "null")])));
        assert!(!same_origin(&headers(&[host, ("sec-fetch-site", "cross-site")])));
    }

    #[test]
    fn form_values_are_decoded() {
        assert_eq!(form_value("a=1&token=x%2By+z", "token").as_deref(), Some("x+y z"));
        assert_eq!(form_value("token=%zz", "token"), None);
        assert_eq!(form_value("other=1", "token"), None);
    }
}
