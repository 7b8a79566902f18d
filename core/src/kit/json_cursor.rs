//! A cursor over one JSON payload, shared by the wires' parser-free reads of their hottest
//! frame (Gemini's text chunk, the Responses API's delta events). Each crate's fuzz target
//! compares its read with serde's on every frame it takes.

use std::borrow::Cow;

/// Nesting the skipped values may have (serde's own limit is 128).
pub(crate) const MAX_DEPTH: usize = 64;

/// A cursor over one JSON payload, for a wire's parser-free read of its most common frame:
/// each method reads one token the way serde_json reads it, or returns `None` (the frame is
/// then left to serde). Strings are scanned with `memchr2`; an escaped surrogate, a control
/// character, a number that is not a plain count are all left to serde.
pub struct JsonCursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> JsonCursor<'a> {
    /// A cursor at the start of `text`.
    pub fn new(text: &'a str) -> Self {
        Self { text, at: 0 }
    }

    /// Whether only JSON whitespace is left.
    pub fn at_end(&mut self) -> bool {
        self.skip_space();
        self.at == self.text.len()
    }

    /// Step over the byte `peek` just returned (a `}` or `]` the caller checked).
    pub fn bump(&mut self) {
        self.at += 1;
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// Step over JSON whitespace.
    pub fn skip_space(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.bytes().get(self.at) {
            self.at += 1;
        }
    }

    /// The next byte after whitespace, not consumed.
    pub fn peek(&mut self) -> Option<u8> {
        self.skip_space();
        self.bytes().get(self.at).copied()
    }

    /// Consume `byte` (after whitespace), or `None` when something else comes.
    pub fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// A string without escapes or control characters, borrowed.
    pub fn plain_str(&mut self) -> Option<&'a str> {
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
    pub fn text_value(&mut self) -> Option<Cow<'a, str>> {
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
    pub fn key(&mut self) -> Option<&'a str> {
        let key = self.plain_str()?;
        self.eat(b':')?;
        Some(key)
    }

    /// A count as `token_count` reads it when it is a plain non-negative integer (at most 19
    /// digits, so it fits a `u64`); anything else is left to serde.
    pub fn count(&mut self) -> Option<u64> {
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
    pub fn more(&mut self, close: u8) -> Option<bool> {
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
    pub fn skip_value(&mut self, depth: usize) -> Option<()> {
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
pub fn string_run(bytes: &[u8]) -> Option<usize> {
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
