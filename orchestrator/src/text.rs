//! Long texts cut for an answer (results, descriptions), with a line saying so.

/// The most characters of a result text an answer carries.
pub const MAX_RESULT_CHARS: usize = 25_000;

/// `text` unchanged when it has at most [`MAX_RESULT_CHARS`] characters; otherwise its first
/// [`MAX_RESULT_CHARS`] characters (cut at a character boundary) and a line saying it was
/// truncated.
pub fn truncate_result(text: &str) -> String {
    truncate(text, MAX_RESULT_CHARS, "result")
}

/// `text` cut after `max` characters with a line saying so (`what`: "result", "description").
pub fn truncate(text: &str, max: usize, what: &str) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((cut, _)) => {
            let total = text.chars().count();
            format!(
                "{}\n\n[truncated: the {what} had {} characters; the first {} are shown]",
                &text[..cut],
                thousands(total),
                thousands(max),
            )
        }
    }
}

/// `25000` as `25,000`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
