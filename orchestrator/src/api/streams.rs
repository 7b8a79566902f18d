//! The budget of long-lived streams (`GET /sessions/{id}/events`): at most so many open at
//! once per credential and in all, so that streams, which never time out, cannot take every
//! connection of the listener (see the [module docs](super), "Streams").

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::error::ApiError;

/// Event streams one credential may hold open at once: 64, room for a person's browser tabs
/// and a few programs following runs, and an eighth of the listener's connection cap.
pub const DEFAULT_STREAMS_PER_CREDENTIAL: usize = 64;
/// Event streams open at once over all credentials: 256, half of the listener's default
/// connection cap ([`patchbay::mcp::DEFAULT_MAX_CONNECTIONS`]), so the other half always
/// serves short requests.
pub const DEFAULT_MAX_STREAMS: usize = 256;
/// What the `Retry-After` header of a refused stream says, in seconds.
const RETRY_AFTER_SECS: u32 = 5;

/// How many event streams may be open at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// Per credential: the bearer token is one, each web-view login (cookie) another
    /// (default [`DEFAULT_STREAMS_PER_CREDENTIAL`]).
    pub per_credential: usize,
    /// Over all credentials (default [`DEFAULT_MAX_STREAMS`]).
    pub total: usize,
}

impl Default for StreamLimits {
    fn default() -> Self {
        Self {
            per_credential: DEFAULT_STREAMS_PER_CREDENTIAL,
            total: DEFAULT_MAX_STREAMS,
        }
    }
}

/// Whether a header value is the listener's bearer token (compared in constant time).
pub(crate) type TokenCheck = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// The open streams of one listener, counted per credential. A credential is known by a
/// keyed hash of its value (the key is random per process), never by the value itself, and
/// `Debug` shows counts only.
pub(crate) struct StreamBudget {
    limits: StreamLimits,
    hasher: RandomState,
    is_token: Option<TokenCheck>,
    open: Mutex<Open>,
}

#[derive(Default)]
struct Open {
    total: usize,
    by_credential: HashMap<u64, usize>,
}

impl std::fmt::Debug for StreamBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let open = self.lock();
        f.debug_struct("StreamBudget")
            .field("limits", &self.limits)
            .field("open", &open.total)
            .field("credentials", &open.by_credential.len())
            .finish_non_exhaustive()
    }
}

impl StreamBudget {
    /// A budget of `limits`; `is_token` tells the bearer token from other `Authorization`
    /// values (without it, any `Authorization` value is the credential).
    pub(crate) fn new(limits: StreamLimits, is_token: Option<TokenCheck>) -> Self {
        Self {
            limits,
            hasher: RandomState::new(),
            is_token,
            open: Mutex::new(Open::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The credential that let this request in, as a keyed hash: the `Authorization` header
    /// when it holds the bearer token (the listener checks it first), else the web view's
    /// cookie (`patchbay_<port>`, the only other way in), else the `Authorization` header
    /// whatever it holds (an authorizer of another kind), else no credential at all (one
    /// shared budget).
    fn credential(&self, headers: &HeaderMap) -> u64 {
        let authorization = headers.get(header::AUTHORIZATION).map(|value| value.as_bytes());
        let bearer = authorization.filter(|value| {
            let token = std::str::from_utf8(value).ok().and_then(|v| v.strip_prefix("Bearer "));
            match (&self.is_token, token) {
                (Some(is_token), Some(token)) => is_token(token),
                (None, _) => true,
                (Some(_), None) => false,
            }
        });
        if let Some(value) = bearer {
            return self.hasher.hash_one((0u8, value));
        }
        let cookies: Vec<&str> = headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(';'))
            .map(str::trim)
            .filter(|pair| pair.starts_with("patchbay_"))
            .collect();
        if !cookies.is_empty() {
            return self.hasher.hash_one((1u8, cookies));
        }
        self.hasher.hash_one((2u8, authorization))
    }

    /// Count one more stream of the request's credential, or refuse it with `429`.
    pub(crate) fn open(self: &Arc<Self>, headers: &HeaderMap) -> Result<StreamPermit, Refused> {
        let credential = self.credential(headers);
        let mut open = self.lock();
        if open.total >= self.limits.total {
            return Err(Refused(format!(
                "{} event streams are open, the most this server serves at once: close one, or retry later",
                self.limits.total
            )));
        }
        let count = open.by_credential.entry(credential).or_default();
        if *count >= self.limits.per_credential {
            return Err(Refused(format!(
                "this credential holds {} event streams open, the most one credential may: close one, or \
                 retry later",
                self.limits.per_credential
            )));
        }
        *count += 1;
        open.total += 1;
        Ok(StreamPermit {
            budget: self.clone(),
            credential,
        })
    }
}

/// One open stream, counted until dropped (when the stream ends or its client goes away).
pub(crate) struct StreamPermit {
    budget: Arc<StreamBudget>,
    credential: u64,
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        let mut open = self.budget.lock();
        open.total = open.total.saturating_sub(1);
        if let Some(count) = open.by_credential.get_mut(&self.credential) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.by_credential.remove(&self.credential);
            }
        }
    }
}

/// A stream over the budget: `429 too_many_streams` with `Retry-After`.
#[derive(Debug)]
pub(crate) struct Refused(String);

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        let mut response = ApiError::new(StatusCode::TOO_MANY_REQUESTS, "too_many_streams", self.0).into_response();
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from(RETRY_AFTER_SECS));
        response
    }
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
    fn the_token_and_each_cookie_are_credentials_and_made_up_tokens_are_not() {
        let limits = StreamLimits {
            per_credential: 1,
            total: 3,
        };
        let budget = Arc::new(StreamBudget::new(limits, Some(Arc::new(|given| given == "tok"))));
        let token = headers(&[("authorization", "Bearer tok")]);
        let first = budget.open(&token).expect("the token's first stream");
        assert!(budget.open(&token).is_err(), "the token's second stream");

        // Let in by its cookie: a made-up Authorization value is no credential of its own.
        let cookie = |bearer| headers(&[("authorization", bearer), ("cookie", "other=1; patchbay_9=a")]);
        let _a = budget.open(&cookie("Bearer x")).expect("the cookie's first stream");
        assert!(budget.open(&cookie("Bearer y")).is_err(), "the same cookie again");
        let _b = budget
            .open(&headers(&[("cookie", "patchbay_9=b")]))
            .expect("another login");
        let over = budget.open(&headers(&[("cookie", "patchbay_9=c")]));
        assert!(over.is_err(), "over the total");

        drop(first);
        assert!(budget.open(&token).is_ok(), "a dropped stream gives its place back");
        assert!(!format!("{budget:?}").contains("tok"), "Debug shows counts only");
    }
}
