//! Sources on the chat-completions wire, as [`Source`]s.
//!
//! - `annotations` of a delta (OpenAI search models, OpenRouter's web plugin): each
//!   `url_citation` is a URL source of the text block it annotates, with its
//!   `start_index`/`end_index` as the span it supports and its `content` as the cited text;
//!   another annotation type is a source only if it names a `url`.
//! - Perplexity's top-level `citations` (URLs) and `search_results` (title, URL, snippet, dates),
//!   repeated in every chunk: each position is announced once, when it first appears, with the
//!   id the text's `[n]` markers use (`n`, counting from 1). A search result and a citation at
//!   the same position are one source (the result's details, the citation's URL when the
//!   result has none).
//!
//! Sources are announced once: an annotation sent again (some servers repeat the final list)
//! is recognised by its URL and span.

use std::collections::HashSet;

use patchbay_core::{Source, source::Span};
use serde_json::Value;

use crate::NAME;

/// What was announced so far.
#[derive(Debug, Default)]
pub(super) struct Sources {
    /// Sources announced, for the next id.
    count: u64,
    /// Perplexity positions announced.
    positions: usize,
    /// Annotations announced, by (URL, start, end).
    annotations: HashSet<(String, Option<u64>, Option<u64>)>,
}

impl Sources {
    /// The sources of one delta's `annotations`, for text block `index`.
    pub(super) fn annotations(&mut self, annotations: &[Value], index: usize) -> Vec<Source> {
        let mut out = Vec::new();
        for annotation in annotations {
            let inner = annotation
                .get("url_citation")
                .filter(|v| v.is_object())
                .unwrap_or(annotation);
            let str_of = |key: &str| inner.get(key).and_then(Value::as_str).map(str::to_owned);
            let Some(url) = str_of("url").filter(|u| !u.trim().is_empty()) else {
                continue;
            };
            let start = inner.get("start_index").and_then(Value::as_u64);
            let end = inner.get("end_index").and_then(Value::as_u64);
            if !self.annotations.insert((url.clone(), start, end)) {
                continue;
            }
            self.count += 1;
            let mut source = Source::url(self.count.to_string(), index, url, NAME);
            source.title = str_of("title").filter(|t| !t.is_empty());
            source.cited_text = str_of("content").filter(|t| !t.is_empty());
            source.supports = start.zip(end).map(|(start, end)| Span { start, end });
            source.data = annotation.clone();
            out.push(source);
        }
        out
    }

    /// The new sources of a chunk's Perplexity `citations` and `search_results`, for text
    /// block `index`.
    pub(super) fn perplexity(&mut self, citations: &[Value], results: &[Value], index: usize) -> Vec<Source> {
        let mut out = Vec::new();
        let known = citations.len().max(results.len());
        while self.positions < known {
            let position = self.positions;
            self.positions += 1;
            let citation = citations
                .get(position)
                .and_then(Value::as_str)
                .filter(|u| !u.trim().is_empty());
            let result = results.get(position).filter(|r| r.is_object());
            let result_url = result
                .and_then(|r| r.get("url"))
                .and_then(Value::as_str)
                .filter(|u| !u.trim().is_empty());
            let Some(url) = result_url.or(citation) else {
                continue;
            };
            let str_of = |key: &str| {
                result
                    .and_then(|r| r.get(key))
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                    .map(str::to_owned)
            };
            self.count = self.count.max(position as u64 + 1);
            let mut source = Source::url((position + 1).to_string(), index, url, NAME);
            source.title = str_of("title");
            source.cited_text = str_of("snippet");
            source.data = match (result, citation) {
                (Some(result), _) => result.clone(),
                (None, Some(citation)) => Value::String(citation.to_owned()),
                (None, None) => Value::Null,
            };
            out.push(source);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn url_citations_carry_their_span_and_are_announced_once() {
        let mut sources = Sources::default();
        let annotation = json!({"type": "url_citation", "url_citation": {"url": "https://a.example", "title": "A",
            "start_index": 10, "end_index": 42, "content": "quoted"}});
        let first = sources.annotations(
            &[annotation.clone(), json!({"type": "file_citation", "file_id": "f"})],
            0,
        );
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].supports, Some(Span { start: 10, end: 42 }));
        assert_eq!(
            (first[0].title.as_deref(), first[0].cited_text.as_deref()),
            (Some("A"), Some("quoted"))
        );
        assert_eq!(first[0].data, annotation);
        assert!(
            sources.annotations(&[annotation], 0).is_empty(),
            "a repeated annotation is not new"
        );
    }

    #[test]
    fn perplexity_positions_are_numbered_like_the_markers_and_merged() {
        let mut sources = Sources::default();
        let citations = [json!("https://a.example"), json!("https://b.example")];
        let results = [json!({"title": "A", "url": "https://a.example", "snippet": "about a", "date": null})];
        let first = sources.perplexity(&citations[..1], &results, 0);
        assert_eq!(first.len(), 1);
        assert_eq!((first[0].id.as_str(), first[0].title.as_deref()), ("1", Some("A")));
        assert_eq!(first[0].cited_text.as_deref(), Some("about a"));
        let second = sources.perplexity(&citations, &results, 0);
        assert_eq!(second.len(), 1, "only the new position");
        assert_eq!(
            (second[0].id.as_str(), second[0].as_url()),
            ("2", Some("https://b.example"))
        );
        assert_eq!(second[0].data, json!("https://b.example"));
        assert!(sources.perplexity(&citations, &results, 0).is_empty());
    }
}
