//! Keeping secrets out of `Debug`, `Display` and logs.

use std::borrow::Cow;

use crate::{ErrorKind, ProviderError};

/// A URL fit to print: credentials in it (`http://user:KEY@host`) and its query string (`?key=`)
/// are replaced by `<redacted>`; everything else is kept. Text that is not a URL is returned
/// unchanged.
///
/// ```
/// use patchbay_core::kit::redact_url;
/// assert_eq!(redact_url("http://user:sk-1@example.com:8080/v1"), "http://<redacted>@example.com:8080/v1");
/// assert_eq!(redact_url("https://example.com/v1?key=sk-1#x"), "https://example.com/v1?<redacted>#x");
/// assert_eq!(redact_url("https://api.anthropic.com"), "https://api.anthropic.com");
/// ```
pub fn redact_url(url: &str) -> Cow<'_, str> {
    let Some(scheme_end) = url.find("://").map(|at| at + 3) else {
        return Cow::Borrowed(url);
    };
    let rest = &url[scheme_end..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let userinfo_end = rest[..authority_end].rfind('@');
    let query = rest.find('?').map(|at| {
        let end = rest[at..].find('#').map_or(rest.len(), |hash| at + hash);
        (at, end)
    });
    if userinfo_end.is_none() && query.is_none() {
        return Cow::Borrowed(url);
    }
    let mut out = String::with_capacity(url.len());
    out.push_str(&url[..scheme_end]);
    let mut from = 0;
    if let Some(at) = userinfo_end {
        out.push_str("<redacted>");
        from = at;
    }
    match query {
        Some((start, end)) => {
            out.push_str(&rest[from..=start]);
            out.push_str("<redacted>");
            out.push_str(&rest[end..]);
        }
        None => out.push_str(&rest[from..]),
    }
    Cow::Owned(out)
}

/// The error for a redirect: model APIs do not redirect, so no provider follows one (the key,
/// headers and body would go to whatever host the server names). A `Config` error naming the
/// status and the location (credentials redacted): point the base URL at the final address.
pub fn redirect_error(status: u16, location: Option<&str>) -> ProviderError {
    let location = location.map_or(Cow::Borrowed("no location"), redact_url);
    ProviderError::new(
        ErrorKind::Config,
        format!(
            "the server redirected to {location}: patchbay does not follow redirects (the API key and request would \
             go to another address); set the base URL to the final address"
        ),
    )
    .with_status(status)
}

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn credentials_and_queries_never_survive() {
        for (url, want) in [
            ("http://KEY@h/", "http://<redacted>@h/"),
            ("http://u:p@ss@h:1/x?y=1", "http://<redacted>@h:1/x?<redacted>"),
            ("http://h/a@b", "http://h/a@b"),
            ("http://h?k=v", "http://h?<redacted>"),
            ("not a url", "not a url"),
            ("", ""),
        ] {
            assert_eq!(redact_url(url), want, "{url}");
        }
    }
}
