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

/// A serde error message with the values it quotes redacted: a secret put where another type
/// was expected (`"env": "ANTHROPIC_API_KEY=sk-..."`) comes back as `invalid type: string
/// "<redacted>", expected a map`. Field names stay.
pub fn redact_serde_message(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    loop {
        let string = rest.find("string \"").map(|i| (i + "string \"".len(), '"'));
        let variant = rest.find("variant `").map(|i| (i + "variant `".len(), '`'));
        let next = match (string, variant) {
            (Some(a), Some(b)) => Some(if a.0 < b.0 { a } else { b }),
            (a, b) => a.or(b),
        };
        let Some((start, close)) = next else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..start]);
        out.push_str("<redacted>");
        rest = &rest[start..];
        // The closing quote (serde escapes `"` inside a string as `\"`); none: redact the rest.
        let mut end = None;
        let mut escaped = false;
        for (i, c) in rest.char_indices() {
            match c {
                '\\' if close == '"' && !escaped => escaped = true,
                c if c == close && !escaped => {
                    end = Some(i);
                    break;
                }
                _ => escaped = false,
            }
        }
        match end {
            Some(end) => rest = &rest[end..],
            None => return out,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{redact_serde_message, redact_url};

    #[test]
    fn serde_messages_keep_their_shape_without_the_values() {
        let message = r#"invalid type: string "KEY=sk-\"x\" y", expected a map"#;
        assert_eq!(
            redact_serde_message(message),
            r#"invalid type: string "<redacted>", expected a map"#
        );
        let message = "unknown variant `sk-1`, expected `in_process` or `http`";
        assert_eq!(
            redact_serde_message(message),
            "unknown variant `<redacted>`, expected `in_process` or `http`"
        );
        assert_eq!(redact_serde_message("unknown field `envv`"), "unknown field `envv`");
        assert_eq!(
            redact_serde_message("invalid type: string \"sk-1"),
            "invalid type: string \"<redacted>"
        );
    }

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
