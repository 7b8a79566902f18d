//! What a recording leaves out: credential headers, key-like query values, URL credentials, and
//! every occurrence of a configured secret.

use std::collections::BTreeMap;

use reqwest::header::HeaderMap;

/// What replaces a secret in a recorded file.
pub(crate) const REDACTED: &str = "[redacted]";

/// Secrets shorter than this are not searched for in recorded bytes: replacing a two-letter
/// "key" everywhere would wreck the body and protect nothing.
pub(crate) const MIN_SECRET_LEN: usize = 6;

/// Header names never recorded, whatever their value.
const SECRET_HEADERS: [&str; 5] = ["authorization", "x-api-key", "api-key", "proxy-authorization", "cookie"];

/// Parts of a header or query parameter name that mark a credential.
const SECRET_PARTS: [&str; 7] = ["key", "token", "secret", "auth", "password", "cookie", "credential"];

/// Whether a header (or query parameter) of this name may hold a credential: the names of
/// [`SECRET_HEADERS`], and any name containing a part of [`SECRET_PARTS`] (`x-goog-api-key`,
/// `x-auth-token`, `openai-secret`...), case-insensitively.
pub(crate) fn is_secret_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_HEADERS.contains(&name.as_str()) || SECRET_PARTS.iter().any(|part| name.contains(part))
}

/// Whether a query parameter's value looks like a credential: a secret name, or a signature
/// (`sig`, `signature`: pre-signed URLs).
fn is_secret_param(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    is_secret_name(&lower) || lower == "sig" || lower.contains("signature")
}

/// The headers of a request as recorded: the kept ones by name (lowercase; several values of
/// one name joined with `, `), and the names of the removed ones. Removed: credential names
/// ([`is_secret_name`]), values the sender marked sensitive (providers mark every header set in
/// their config so), and values that are not text.
pub(crate) fn headers(headers: &HeaderMap) -> (BTreeMap<String, String>, Vec<String>) {
    let mut kept: BTreeMap<String, String> = BTreeMap::new();
    let mut removed = Vec::new();
    for (name, value) in headers {
        let name = name.as_str().to_string();
        match value.to_str() {
            Ok(text) if !value.is_sensitive() && !is_secret_name(&name) => {
                kept.entry(name)
                    .and_modify(|joined| {
                        joined.push_str(", ");
                        joined.push_str(text);
                    })
                    .or_insert_with(|| text.to_string());
            }
            _ => {
                if !removed.contains(&name) {
                    removed.push(name);
                }
            }
        }
    }
    removed.sort();
    (kept, removed)
}

/// A URL as recorded: without user name and password, and with the value of every query
/// parameter that looks like a credential ([`is_secret_param`]: `key=`, `api_key=`, `token=`,
/// `sig=`...) replaced by `[redacted]`. Other parameters are kept.
pub(crate) fn url(url: &reqwest::Url) -> String {
    let mut url = url.clone();
    // Both fail only for URLs that cannot have credentials, which then have none to remove.
    let _ = url.set_username("");
    let _ = url.set_password(None);
    if url.query().is_some() {
        let pairs: Vec<(String, String)> = url
            .query_pairs()
            .map(|(name, value)| {
                let value = if is_secret_param(&name) {
                    REDACTED.to_string()
                } else {
                    value.into_owned()
                };
                (name.into_owned(), value)
            })
            .collect();
        url.query_pairs_mut().clear().extend_pairs(pairs);
    }
    url.to_string()
}

/// Replaces every occurrence of the secrets in a text.
pub(crate) fn scrub_text(text: &str, secrets: &[String]) -> String {
    let mut text = text.to_string();
    for secret in secrets {
        if text.contains(secret.as_str()) {
            text = text.replace(secret.as_str(), REDACTED);
        }
    }
    text
}

/// Replaces every occurrence of the secrets in bytes written piece by piece: a secret cut
/// between two pieces is still found, because the last `longest - 1` bytes are held back until
/// the next piece (or [`finish`](Self::finish)).
#[derive(Debug, Default)]
pub(crate) struct Scrubber {
    secrets: Vec<Vec<u8>>,
    hold: usize,
    pending: Vec<u8>,
}

impl Scrubber {
    /// A scrubber for these secrets (those shorter than [`MIN_SECRET_LEN`] are left out).
    pub(crate) fn new(secrets: &[String]) -> Self {
        let secrets: Vec<Vec<u8>> = secrets
            .iter()
            .filter(|s| s.len() >= MIN_SECRET_LEN)
            .map(|s| s.as_bytes().to_vec())
            .collect();
        let hold = secrets.iter().map(Vec::len).max().unwrap_or(1) - 1;
        Self {
            secrets,
            hold,
            pending: Vec::new(),
        }
    }

    /// Take a piece; returns the bytes that are safe to write now. Without secrets, the piece
    /// itself (no copy).
    pub(crate) fn push<'a>(&mut self, piece: &'a [u8]) -> std::borrow::Cow<'a, [u8]> {
        if self.secrets.is_empty() {
            return piece.into();
        }
        self.pending.extend_from_slice(piece);
        self.replace_pending();
        let keep = self.hold.min(self.pending.len());
        let tail = self.pending.split_off(self.pending.len() - keep);
        std::mem::replace(&mut self.pending, tail).into()
    }

    /// The bytes held back, once the body ended.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        self.replace_pending();
        std::mem::take(&mut self.pending)
    }

    fn replace_pending(&mut self) {
        for secret in &self.secrets {
            if let Some(replaced) = replace_bytes(&self.pending, secret) {
                self.pending = replaced;
            }
        }
    }
}

/// `haystack` with every `needle` replaced by [`REDACTED`], or `None` if there is none.
fn replace_bytes(haystack: &[u8], needle: &[u8]) -> Option<Vec<u8>> {
    let mut found = memchr::memmem::find_iter(haystack, needle).peekable();
    found.peek()?;
    let mut out = Vec::with_capacity(haystack.len());
    let mut from = 0;
    for at in found {
        if at < from {
            continue;
        }
        out.extend_from_slice(&haystack[from..at]);
        out.extend_from_slice(REDACTED.as_bytes());
        from = at + needle.len();
    }
    out.extend_from_slice(&haystack[from..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    #[test]
    fn credential_headers_and_sensitive_values_are_removed_by_name() {
        let mut map = HeaderMap::new();
        for (name, value) in [
            ("authorization", "Bearer sk-1"),
            ("x-api-key", "sk-2"),
            ("api-key", "sk-3"),
            ("proxy-authorization", "Basic x"),
            ("cookie", "a=b"),
            ("x-goog-api-key", "sk-4"),
            ("x-auth-token", "sk-5"),
            ("x-client-secret", "sk-6"),
            ("anthropic-version", "2023-06-01"),
            ("content-type", "application/json"),
        ] {
            map.insert(name, HeaderValue::from_static(value));
        }
        let mut marked = HeaderValue::from_static("sk-7");
        marked.set_sensitive(true);
        map.insert("x-custom", marked);
        let (kept, removed) = headers(&map);
        assert_eq!(
            kept.keys().map(String::as_str).collect::<Vec<_>>(),
            ["anthropic-version", "content-type"]
        );
        assert_eq!(removed.len(), 9, "{removed:?}");
        assert!(removed.contains(&"x-custom".to_string()));
    }

    #[test]
    fn key_like_query_values_and_url_credentials_are_dropped() {
        let parsed = reqwest::Url::parse("https://user:pw@example.com/v1/x?key=sk-1&beta=true&api_key=sk-2&sig=abc")
            .expect("a URL");
        let recorded = url(&parsed);
        assert_eq!(
            recorded,
            "https://example.com/v1/x?key=%5Bredacted%5D&beta=true&api_key=%5Bredacted%5D&sig=%5Bredacted%5D"
        );
    }

    #[test]
    fn a_secret_cut_between_pieces_is_still_replaced() {
        let secret = "sk-ant-0123456789".to_string();
        let body = format!("data: {{\"echo\":\"{secret}\"}}\n\ndata: {secret}{secret}\n\n");
        for size in 1..body.len() {
            let mut scrubber = Scrubber::new(std::slice::from_ref(&secret));
            let mut out = Vec::new();
            for piece in body.as_bytes().chunks(size) {
                out.extend_from_slice(&scrubber.push(piece));
            }
            out.extend_from_slice(&scrubber.finish());
            let out = String::from_utf8(out).expect("text");
            assert_eq!(out, body.replace(&secret, REDACTED), "pieces of {size}");
        }
    }

    #[test]
    fn without_secrets_pieces_pass_unchanged_and_short_secrets_are_ignored() {
        let mut scrubber = Scrubber::new(&["ab".to_string()]);
        assert_eq!(&*scrubber.push(b"abc"), b"abc");
        assert!(scrubber.finish().is_empty());
        assert_eq!(scrub_text("a sk-123456 b", &["sk-123456".into()]), "a [redacted] b");
    }
}
