//! Output limits: long text is cut with a marker saying what was cut, never silently.

/// Which part of a long text to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Keep {
    /// The beginning (file contents, listings, matches).
    Head,
    /// The beginning and the end (command output: errors tend to come last).
    HeadAndTail,
}

/// Cut `text` to at most `limit` characters (plus the marker). Returns the text and how many
/// characters were cut.
pub(crate) fn truncate(text: String, limit: usize, keep: Keep, hint: &str) -> (String, usize) {
    let total = text.chars().count();
    if total <= limit {
        return (text, 0);
    }
    let cut = total - limit;
    let hint = if hint.is_empty() {
        String::new()
    } else {
        format!(" {hint}")
    };
    let out = match keep {
        Keep::Head => {
            let head = &text[..byte_index(&text, limit)];
            format!(
                "{head}\n[output truncated: showing the first {limit} of {total} characters; {cut} characters cut.{hint}]"
            )
        }
        Keep::HeadAndTail => {
            let head_chars = limit / 2;
            let head = &text[..byte_index(&text, head_chars)];
            let tail = &text[byte_index(&text, total - (limit - head_chars))..];
            format!(
                "{head}\n[output truncated: {cut} of {total} characters cut from the middle; showing the first {head_chars} and the last {} characters.{hint}]\n{tail}",
                limit - head_chars
            )
        }
    };
    (out, cut)
}

/// Cut one line to `limit` characters with a marker.
pub(crate) fn clip_line(line: &str, limit: usize) -> String {
    let total = line.chars().count();
    if total <= limit {
        return line.to_string();
    }
    format!(
        "{}... [line truncated: {} more characters]",
        &line[..byte_index(line, limit)],
        total - limit
    )
}

/// The byte index of the `chars`-th character (or the end).
fn byte_index(text: &str, chars: usize) -> usize {
    text.char_indices().nth(chars).map_or(text.len(), |(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_unchanged() {
        assert_eq!(truncate("abc".into(), 3, Keep::Head, ""), ("abc".to_string(), 0));
    }

    #[test]
    fn head_keeps_the_start_and_says_what_was_cut() {
        let (out, cut) = truncate("αβγδε".into(), 2, Keep::Head, "Narrow it.");
        assert_eq!(cut, 3);
        assert!(out.starts_with("αβ\n[output truncated: showing the first 2 of 5 characters; 3 characters cut."));
        assert!(out.ends_with("Narrow it.]"));
    }

    #[test]
    fn head_and_tail_keeps_both_ends() {
        let (out, cut) = truncate("0123456789".into(), 4, Keep::HeadAndTail, "");
        assert_eq!(cut, 6);
        assert!(out.starts_with("01\n"));
        assert!(out.ends_with("\n89"));
    }

    #[test]
    fn long_lines_are_clipped_on_char_boundaries() {
        assert_eq!(clip_line("ééé", 1), "é... [line truncated: 2 more characters]");
    }
}
