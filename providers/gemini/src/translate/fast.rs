//! The parser-free read of the common chunk: one candidate whose content is one text part (its
//! escapes decoded as serde does, an escaped surrogate left to serde), its role, index and finish reason, the usage counts, the model version and the
//! response id, in any order, with JSON whitespace anywhere (the API prints a space after every
//! colon). It gives exactly the [`Chunk`] serde gives or `None`, and serde reads anything else:
//! an unknown or repeated key, an escape outside the text, a number that is not a plain count, a
//! second part.
//! Values it does not keep (`totalTokenCount`, `promptTokensDetails`...) are checked as JSON, not
//! parsed. The `gemini` fuzz target compares it with serde on every frame it takes.

use std::borrow::Cow;

use super::chunk::{Candidate, Chunk, Content, Part, UsageMetadata};

/// Nesting the skipped values may have (serde's own limit is 128).
const MAX_DEPTH: usize = 64;

/// A cursor over the payload.
struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn skip_space(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.bytes().get(self.at) {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_space();
        self.bytes().get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// A string without escapes or control characters, borrowed.
    fn plain_str(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.at;
        let len = string_run(&self.bytes()[start..])?;
        if self.bytes()[start + len] != b'"' {
            return None;
        }
        self.at = start + len + 1;
        Some(&self.text[start..start + len])
    }

    /// A string value: borrowed when it has no escapes, else decoded (`\n`, `\"`, `\uXXXX`...),
    /// as serde gives it. An escaped surrogate (a pair, or a lone one serde refuses) is left to
    /// serde.
    fn text_value(&mut self) -> Option<Cow<'a, str>> {
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.at + 1;
        let run = string_run(&self.bytes()[start..])?;
        self.at = start + run;
        if self.bytes()[self.at] == b'"' {
            self.at += 1;
            return Some(Cow::Borrowed(&self.text[start..start + run]));
        }
        // An escape (or a control character, refused as serde refuses it): decoded from here on,
        // one pass, each plain run copied whole.
        let mut out = String::from(&self.text[start..self.at]);
        loop {
            match self.bytes()[self.at] {
                b'"' => {
                    self.at += 1;
                    return Some(Cow::Owned(out));
                }
                b'\\' => {
                    let escaped = *self.bytes().get(self.at + 1)?;
                    self.at += 2;
                    out.push(match escaped {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hex = self.text.get(self.at..self.at + 4)?;
                            if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                                return None;
                            }
                            let unit = u32::from_str_radix(hex, 16).ok()?;
                            self.at += 4;
                            // A surrogate is half of a pair: serde's business.
                            char::from_u32(unit)?
                        }
                        _ => return None,
                    });
                }
                _ => return None,
            }
            let run = string_run(&self.bytes()[self.at..])?;
            out.push_str(&self.text[self.at..self.at + run]);
            self.at += run;
        }
    }

    /// A key and its colon.
    fn key(&mut self) -> Option<&'a str> {
        let key = self.plain_str()?;
        self.eat(b':')?;
        Some(key)
    }

    /// A count as `token_count` reads it when it is a plain non-negative integer (at most 19
    /// digits, so it fits a `u64`); anything else is left to serde.
    fn count(&mut self) -> Option<u64> {
        self.skip_space();
        let rest = &self.bytes()[self.at..];
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 || digits > 19 || (digits > 1 && rest[0] == b'0') {
            return None;
        }
        if matches!(rest.get(digits), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        let value = self.text[self.at..self.at + digits].parse().ok()?;
        self.at += digits;
        Some(value)
    }

    /// `,` (more follows) or the closing byte (`false`).
    fn more(&mut self, close: u8) -> Option<bool> {
        match self.peek()? {
            b',' => {
                self.at += 1;
                Some(true)
            }
            byte if byte == close => {
                self.at += 1;
                Some(false)
            }
            _ => None,
        }
    }

    /// Check one JSON value and step over it.
    fn skip_value(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => self.skip_string(),
            b'{' => {
                self.at += 1;
                if self.peek()? == b'}' {
                    self.at += 1;
                    return Some(());
                }
                loop {
                    self.skip_string()?;
                    self.eat(b':')?;
                    self.skip_value(depth + 1)?;
                    if !self.more(b'}')? {
                        return Some(());
                    }
                }
            }
            b'[' => {
                self.at += 1;
                if self.peek()? == b']' {
                    self.at += 1;
                    return Some(());
                }
                loop {
                    self.skip_value(depth + 1)?;
                    if !self.more(b']')? {
                        return Some(());
                    }
                }
            }
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            _ => self.skip_number(),
        }
    }

    fn literal(&mut self, word: &str) -> Option<()> {
        self.text[self.at..].starts_with(word).then(|| self.at += word.len())
    }

    /// A string with its escapes checked (`\uXXXX` as four hex digits).
    fn skip_string(&mut self) -> Option<()> {
        self.eat(b'"')?;
        loop {
            let byte = *self.bytes().get(self.at)?;
            self.at += 1;
            match byte {
                b'"' => return Some(()),
                b'\\' => {
                    match *self.bytes().get(self.at)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.at += 1,
                        b'u' => {
                            let hex = self.text.get(self.at + 1..self.at + 5)?;
                            let unit = u16::from_str_radix(hex, 16).ok()?;
                            // A surrogate must pair as serde wants: leave those to serde.
                            if !hex.bytes().all(|b| b.is_ascii_hexdigit()) || (0xD800..0xE000).contains(&unit) {
                                return None;
                            }
                            self.at += 5;
                        }
                        _ => return None,
                    }
                }
                0..0x20 => return None,
                _ => {}
            }
        }
    }

    /// A JSON number: `-`? int (`0` or no leading zero) (`.` digits)? (`e` sign? digits)?.
    fn skip_number(&mut self) -> Option<()> {
        let bytes = self.bytes();
        let mut at = self.at;
        if bytes.get(at) == Some(&b'-') {
            at += 1;
        }
        let digits = |from: usize| bytes[from..].iter().take_while(|b| b.is_ascii_digit()).count();
        let int = digits(at);
        if int == 0 || (int > 1 && bytes[at] == b'0') {
            return None;
        }
        at += int;
        if bytes.get(at) == Some(&b'.') {
            let frac = digits(at + 1);
            if frac == 0 {
                return None;
            }
            at += 1 + frac;
        }
        if let Some(b'e' | b'E') = bytes.get(at) {
            at += 1;
            if let Some(b'+' | b'-') = bytes.get(at) {
                at += 1;
            }
            let exp = digits(at);
            if exp == 0 {
                return None;
            }
            at += exp;
        }
        self.at = at;
        Some(())
    }
}

/// Where a string's plain run ends: the first `"`, `\` or control character. The quote or
/// backslash is found with `memchr2` (a long text is scanned many bytes at a time, as serde
/// scans it), then the run is checked for control characters the same way.
fn string_run(bytes: &[u8]) -> Option<usize> {
    let end = memchr::memchr2(b'"', b'\\', bytes)?;
    let run = &bytes[..end];
    // Without an early exit the check compiles to wide compares; the position only when it hits.
    let control = run.iter().fold(false, |seen, &b| seen | (b < 0x20));
    Some(if control {
        run.iter().position(|&b| b < 0x20).unwrap_or(end)
    } else {
        end
    })
}

/// Keys already seen in one object (serde refuses a repeated field).
#[derive(Default)]
struct Seen(u16);

impl Seen {
    fn first(&mut self, bit: u16) -> Option<()> {
        let new = self.0 & bit == 0;
        self.0 |= bit;
        new.then_some(())
    }
}

/// The chunk serde would read from `payload`, when it is the common text chunk; else `None`.
pub(crate) fn chunk(payload: &str) -> Option<Chunk<'_>> {
    let mut cursor = Cursor { text: payload, at: 0 };
    cursor.eat(b'{')?;
    let mut chunk = Chunk::default();
    let mut seen = Seen::default();
    loop {
        match cursor.key()? {
            "candidates" => {
                seen.first(1)?;
                cursor.eat(b'[')?;
                chunk.candidates.push(candidate(&mut cursor)?);
                cursor.eat(b']')?;
            }
            "usageMetadata" => {
                seen.first(2)?;
                chunk.usage_metadata = Some(usage(&mut cursor)?);
            }
            "modelVersion" => {
                seen.first(4)?;
                chunk.model_version = Some(Cow::Borrowed(cursor.plain_str()?));
            }
            "responseId" => {
                seen.first(8)?;
                chunk.response_id = Some(Cow::Borrowed(cursor.plain_str()?));
            }
            _ => return None,
        }
        if !cursor.more(b'}')? {
            break;
        }
    }
    cursor.skip_space();
    (cursor.at == payload.len()).then_some(chunk)
}

/// One candidate of one text part.
fn candidate<'a>(cursor: &mut Cursor<'a>) -> Option<Candidate<'a>> {
    cursor.eat(b'{')?;
    let mut candidate = Candidate::default();
    let mut seen = Seen::default();
    loop {
        match cursor.key()? {
            "content" => {
                seen.first(1)?;
                candidate.content = Some(content(cursor)?);
            }
            "finishReason" => {
                seen.first(2)?;
                candidate.finish_reason = Some(Cow::Borrowed(cursor.plain_str()?));
            }
            "index" => {
                seen.first(4)?;
                candidate.index = u32::try_from(cursor.count()?).ok()?;
            }
            _ => return None,
        }
        if !cursor.more(b'}')? {
            break;
        }
    }
    Some(candidate)
}

/// `{"parts": [{"text": ...}], "role": ...}`.
fn content<'a>(cursor: &mut Cursor<'a>) -> Option<Content<'a>> {
    cursor.eat(b'{')?;
    let mut content = None;
    let mut seen = Seen::default();
    loop {
        match cursor.key()? {
            "parts" => {
                seen.first(1)?;
                cursor.eat(b'[')?;
                cursor.eat(b'{')?;
                if cursor.key()? != "text" {
                    return None;
                }
                let text = cursor.text_value()?;
                cursor.eat(b'}')?;
                cursor.eat(b']')?;
                content = Some(Content {
                    parts: vec![Part {
                        text: Some(text),
                        ..Part::default()
                    }],
                });
            }
            "role" => {
                seen.first(2)?;
                cursor.plain_str()?;
            }
            _ => return None,
        }
        if !cursor.more(b'}')? {
            break;
        }
    }
    content
}

/// The counts patchbay reads; the other keys' values checked and stepped over.
fn usage(cursor: &mut Cursor<'_>) -> Option<UsageMetadata> {
    cursor.eat(b'{')?;
    let mut usage = UsageMetadata::default();
    if cursor.peek()? == b'}' {
        cursor.at += 1;
        return Some(usage);
    }
    let mut seen = Seen::default();
    loop {
        match cursor.key()? {
            "promptTokenCount" => {
                seen.first(1)?;
                usage.prompt_token_count = Some(cursor.count()?);
            }
            "candidatesTokenCount" => {
                seen.first(2)?;
                usage.candidates_token_count = Some(cursor.count()?);
            }
            "thoughtsTokenCount" => {
                seen.first(4)?;
                usage.thoughts_token_count = Some(cursor.count()?);
            }
            "cachedContentTokenCount" => {
                seen.first(8)?;
                usage.cached_content_token_count = Some(cursor.count()?);
            }
            "toolUsePromptTokenCount" => {
                seen.first(16)?;
                usage.tool_use_prompt_token_count = Some(cursor.count()?);
            }
            // serde ignores other keys (repeated ones too): checked as JSON, not kept.
            _ => cursor.skip_value(0)?,
        }
        if !cursor.more(b'}')? {
            break;
        }
    }
    Some(usage)
}

/// For the fuzz target: when the fast read takes `payload`, serde reads the same chunk from it.
/// Panics otherwise. Not a stable API.
pub fn check(payload: &[u8]) {
    let Ok(text) = std::str::from_utf8(payload) else {
        return;
    };
    if let Some(fast) = chunk(text) {
        match serde_json::from_str::<Chunk<'_>>(text) {
            Ok(serde) => assert_eq!(fast, serde, "the fast read differs from serde's on {text:?}"),
            Err(error) => panic!("the fast read took what serde refuses ({error}): {text:?}"),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn same(payload: &str) {
        let fast = chunk(payload).unwrap_or_else(|| panic!("the fast read takes {payload}"));
        let serde: Chunk<'_> = serde_json::from_str(payload).unwrap();
        assert_eq!(fast, serde, "{payload}");
    }

    #[test]
    fn the_fast_read_is_what_serde_reads() {
        same(
            r#"{"candidates": [{"content": {"parts": [{"text": "tok0 "}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 5,"candidatesTokenCount": 1,"totalTokenCount": 6,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 5}]},"modelVersion": "gemini-bench","responseId": "bR3nchMarkRespOnse1d23x"}"#,
        );
        same(
            "{\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"é done\"}],\"role\": \"model\"},\"finishReason\": \"STOP\",\"index\": 0}],\"usageMetadata\": {\"promptTokenCount\": 5,\"thoughtsTokenCount\": 7,\"x\": [1.5e-3, -0, true, null, {\"y\": \"\\u00e9\\n\"}]}}",
        );
        same(r#"{"candidates":[{"content":{"parts":[{"text":"a"}],"role":"model"},"index":0}],"usageMetadata":{}}"#);
        same("\r\n{ \"candidates\" : [ { \"content\" : { \"parts\" : [ { \"text\" : \"\" } ] } } ] } \n");
        same(r#"{"candidates": [{"content": {"parts": [{"text": "line\nnext \"q\" \\ \/ \t \u00e9\u2603 end"}]}}]}"#);
        let escaped = chunk(r#"{"candidates": [{"content": {"parts": [{"text": "a\nb"}]}}]}"#).unwrap();
        let text = escaped.candidates[0].content.as_ref().unwrap().parts[0].text.as_deref();
        assert_eq!(text, Some("a\nb"));
    }

    #[test]
    fn anything_else_is_left_to_serde() {
        for other in [
            r#"{"candidates": [{"content": {"parts": [{"text": "a\ud83d\ude00"}]}}]}"#,
            r#"{"candidates": [{"content": {"parts": [{"text": "a\q"}]}}]}"#,
            r#"{"candidates": [{"content": {"parts": [{"text": "a", "thought": true}]}}]}"#,
            r#"{"candidates": [{"content": {"parts": [{"functionCall": {"name": "f"}}]}}]}"#,
            r#"{"candidates": [{"content": {"parts": [{"text": "a"}, {"text": "b"}]}}]}"#,
            r#"{"candidates": [{"content": {"parts": [{"text": "a"}]}}, {"index": 1}]}"#,
            r#"{"candidates": [{"content": {"parts": [{"text": "a"}]}}], "candidates": []}"#,
            r#"{"candidates": [{"index": 0, "index": 1}]}"#,
            r#"{"usageMetadata": {"promptTokenCount": 1, "promptTokenCount": 2}}"#,
            r#"{"usageMetadata": {"promptTokenCount": -1}}"#,
            r#"{"usageMetadata": {"promptTokenCount": 1.0}}"#,
            r#"{"usageMetadata": {"promptTokenCount": 01}}"#,
            r#"{"usageMetadata": {"x": tru}}"#,
            r#"{"usageMetadata": {"x": "\ud800"}}"#,
            r#"{"usageMetadata": {"x": 1.}}"#,
            r#"{"candidates": [{"content": {"parts": [{"text": 5}]}}]}"#,
            "{\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"a\u{1}b\\n\"}]}}]}",
            r#"{"error": {"code": 500}}"#,
            r#"{"modelVersion": "m"} x"#,
        ] {
            assert!(chunk(other).is_none(), "{other}");
        }
    }
}
