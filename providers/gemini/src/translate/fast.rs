//! The parser-free read of the common chunk: one candidate whose content is one text part (its
//! escapes decoded as serde does, an escaped surrogate left to serde), its role, index and finish reason, the usage counts, the model version and the
//! response id, in any order, with JSON whitespace anywhere (the API prints a space after every
//! colon). It gives exactly the [`Chunk`] serde gives or `None`, and serde reads anything else:
//! an unknown or repeated key, an escape outside the text, a number that is not a plain count, a
//! second part.
//! Values it does not keep (`totalTokenCount`, `promptTokensDetails`...) are checked as JSON, not
//! parsed. The `gemini` fuzz target compares it with serde on every frame it takes.

use std::borrow::Cow;

use patchbay_core::kit::JsonCursor as Cursor;

use super::chunk::{Candidate, Chunk, Content, Part, UsageMetadata};

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
    let mut cursor = Cursor::new(payload);
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
    cursor.at_end().then_some(chunk)
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
        cursor.bump();
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
