//! The parser-free read of the commonest payload, a chunk of plain text:
//!
//! ```text
//! {"id":"…","object":"chat.completion.chunk","created":1,"model":"…","choices":[{"index":0,"delta":{"content":"…"},"finish_reason":null}]}
//! ```
//!
//! [`chunk`] reads such a payload into the same [`Chunk`] serde would give, or gives `None`, and
//! the payload goes to serde as before. It takes only a strict subset of JSON, and only where the
//! meaning is plain: no whitespace between tokens; no escape or control character in any string;
//! besides `choices`, top-level members whose values are strings, numbers, `true`, `false` or
//! `null` (`id` and `model` once each; `usage`, `x_groq`, `error`, `cost`, `citations` and
//! `search_results` only as `null`); choices with `index` (a plain integer), `delta`,
//! `finish_reason` (a string or `null`), `logprobs` (`null`) and other scalar members; deltas
//! with `content` (a string or `null`), the other delta fields only as `null`, and other scalar
//! members. Anything else (an escape in the text, a tool call, usage, reasoning...) is serde's.
//! The `openai_bytes` fuzz target checks every frame this reads against serde's reading.

use std::borrow::Cow;

use crate::wire::{Choice, Chunk, Content, Delta, IgnoredAny, Str};

/// A plain text chunk read without the JSON parser, or `None` (see the module docs).
pub(crate) fn chunk(text: &str) -> Option<Chunk<'_, IgnoredAny>> {
    let mut read = Reader { text, at: 0 };
    let mut chunk = Chunk {
        id: None,
        model: None,
        choices: Vec::new(),
        usage: None,
        x_groq: None,
        error: None,
        cost: None,
        citations: None,
        search_results: None,
    };
    let mut seen = Seen::default();
    read.byte(b'{')?;
    loop {
        let key = read.key()?;
        match key {
            "choices" => {
                seen.once(0)?;
                chunk.choices = read.choices()?;
            }
            "id" | "model" => {
                seen.once(if key == "id" { 1 } else { 2 })?;
                if read.null().is_none() {
                    read.scalar()?;
                    let field = if key == "id" { &mut chunk.id } else { &mut chunk.model };
                    *field = Some(IgnoredAny);
                }
            }
            "usage" | "x_groq" | "error" | "cost" | "citations" | "search_results" => {
                seen.once(3 + TOP_NULLABLE.iter().position(|k| *k == key)?)?;
                read.null()?;
            }
            _ => read.scalar()?,
        }
        if !read.next_member()? {
            break;
        }
    }
    read.at_end().then_some(chunk)
}

const TOP_NULLABLE: [&str; 6] = ["usage", "x_groq", "error", "cost", "citations", "search_results"];
const DELTA_NULLABLE: [&str; 6] = [
    "refusal",
    "reasoning",
    "reasoning_content",
    "reasoning_details",
    "tool_calls",
    "annotations",
];

/// The known members of one object seen so far: serde refuses a known member twice.
#[derive(Default)]
struct Seen(u32);

impl Seen {
    fn once(&mut self, bit: usize) -> Option<()> {
        let mask = 1 << bit;
        if self.0 & mask != 0 {
            return None;
        }
        self.0 |= mask;
        Some(())
    }
}

struct Reader<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn byte(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    fn literal(&mut self, literal: &str) -> Option<()> {
        self.text[self.at..]
            .starts_with(literal)
            .then(|| self.at += literal.len())
    }

    fn at_end(&self) -> bool {
        self.at == self.text.len()
    }

    /// After a member: `,` (another follows: `true`) or `}` (the object ends: `false`).
    fn next_member(&mut self) -> Option<bool> {
        match self.peek()? {
            b',' => {
                self.at += 1;
                Some(true)
            }
            b'}' => {
                self.at += 1;
                Some(false)
            }
            _ => None,
        }
    }

    /// A string without escapes or control characters, its content borrowed.
    fn string(&mut self) -> Option<&'a str> {
        self.byte(b'"')?;
        let rest = &self.text.as_bytes()[self.at..];
        let end = rest.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
        if rest[end] != b'"' {
            return None;
        }
        let value = &self.text[self.at..self.at + end];
        self.at += end + 1;
        Some(value)
    }

    fn key(&mut self) -> Option<&'a str> {
        let key = self.string()?;
        self.byte(b':')?;
        Some(key)
    }

    fn null(&mut self) -> Option<()> {
        self.literal("null")
    }

    /// A JSON number as the grammar has it (`-`, no leading zeros, fraction, exponent).
    fn number(&mut self) -> Option<()> {
        let _ = self.byte(b'-');
        match self.peek()? {
            b'0' => self.at += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.byte(b'.').is_some() {
            self.some_digits()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            self.some_digits()?;
        }
        Some(())
    }

    fn digits(&mut self) {
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
    }

    fn some_digits(&mut self) -> Option<()> {
        let start = self.at;
        self.digits();
        (self.at > start).then_some(())
    }

    /// A string, number, `true`, `false` or `null`, skipped.
    fn scalar(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'n' => self.null(),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            _ => self.number(),
        }
    }

    /// A `u32` written as plain digits, no leading zero.
    fn index(&mut self) -> Option<u32> {
        let start = self.at;
        self.digits();
        let digits = &self.text[start..self.at];
        if digits.is_empty() || digits.len() > 9 || (digits.len() > 1 && digits.starts_with('0')) {
            return None;
        }
        digits.parse().ok()
    }

    fn choices(&mut self) -> Option<Vec<Choice<'a>>> {
        self.byte(b'[')?;
        let mut choices = Vec::new();
        if self.byte(b']').is_some() {
            return Some(choices);
        }
        loop {
            choices.push(self.choice()?);
            match self.peek()? {
                b',' => self.at += 1,
                b']' => {
                    self.at += 1;
                    return Some(choices);
                }
                _ => return None,
            }
        }
    }

    fn choice(&mut self) -> Option<Choice<'a>> {
        let mut choice = Choice {
            index: 0,
            delta: None,
            finish_reason: None,
            logprobs: None,
        };
        let mut seen = Seen::default();
        self.byte(b'{')?;
        if self.byte(b'}').is_some() {
            return Some(choice);
        }
        loop {
            match self.key()? {
                "index" => {
                    seen.once(0)?;
                    choice.index = self.index()?;
                }
                "delta" => {
                    seen.once(1)?;
                    if self.null().is_none() {
                        choice.delta = Some(self.delta()?);
                    }
                }
                "finish_reason" => {
                    seen.once(2)?;
                    if self.null().is_none() {
                        choice.finish_reason = Some(Box::new(Str(Cow::Borrowed(self.string()?))));
                    }
                }
                "logprobs" => {
                    seen.once(3)?;
                    self.null()?;
                }
                _ => self.scalar()?,
            }
            if !self.next_member()? {
                return Some(choice);
            }
        }
    }

    fn delta(&mut self) -> Option<Delta<'a>> {
        let mut delta = Delta::default();
        let mut seen = Seen::default();
        self.byte(b'{')?;
        if self.byte(b'}').is_some() {
            return Some(delta);
        }
        loop {
            let key = self.key()?;
            if key == "content" {
                seen.once(0)?;
                if self.null().is_none() {
                    delta.content = Some(Content::Text(Cow::Borrowed(self.string()?)));
                }
            } else if let Some(at) = DELTA_NULLABLE.iter().position(|k| *k == key) {
                seen.once(1 + at)?;
                self.null()?;
            } else {
                self.scalar()?;
            }
            if !self.next_member()? {
                return Some(delta);
            }
        }
    }
}

/// Panics when [`chunk`] reads `payload` and serde reads it otherwise (or not at all): the
/// `openai_bytes` fuzz target calls it on every frame. Not a stable API.
#[doc(hidden)]
pub fn check(payload: &[u8]) {
    let Ok(text) = std::str::from_utf8(payload.trim_ascii()) else {
        return;
    };
    if let Some(fast) = chunk(text) {
        let parsed: Chunk<'_, IgnoredAny> = serde_json::from_str(text).expect("serde reads what the fast read takes");
        assert_eq!(
            format!("{fast:?}"),
            format!("{parsed:?}"),
            "the fast read differs on {text:?}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_chunks_are_read_as_serde_reads_them() {
        let plain = [
            r#"{"id":"c","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#,
            r#"{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}"#,
            r#"{"id":"c","choices":[{"index":1,"delta":{},"finish_reason":"stop","native_finish_reason":"stop"}],"system_fingerprint":null}"#,
            r#"{"choices":[],"created":-1.5e3,"x":true,"y":false}"#,
            r#"{"choices":[{"delta":{"content":null,"reasoning":null}}]}"#,
        ];
        for payload in plain {
            assert!(chunk(payload).is_some(), "{payload}");
            check(payload.as_bytes());
        }
    }

    #[test]
    fn anything_else_is_left_to_serde() {
        let others = [
            r#"{"choices":[{"index":0,"delta":{"content":"a\nb"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"x"}}],"usage":{"prompt_tokens":1}}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[]}}]}"#,
            r#"{"choices":[{"index":01,"delta":{}}]}"#,
            r#"{"id":"a","id":"b","choices":[]}"#,
            r#"{"choices": []}"#,
            r#"{"choices":[],"provider":{"name":"x"}}"#,
            r#"{"choices":[]} "#,
            r#"{"choices":null}"#,
            r#"{"ch\u006fices":[]}"#,
        ];
        for payload in others {
            assert!(chunk(payload).is_none(), "{payload}");
            check(payload.as_bytes());
        }
    }
}
