//! Anthropic citations and server tool results as [`Source`]s.
//!
//! A citation (`citations_delta`, or `citations` already on a text block) becomes one source of
//! its text block; a `web_search_tool_result` gives one URL source per result, and a
//! `web_fetch_tool_result` one for the fetched page, each of the result's block. The wire object
//! rides along verbatim in [`Source::data`]. The agent-runtime provider uses the same functions
//! for the Claude Code CLI's messages.

use patchbay_core::{Source, source::Location, source::SourceTarget};
use serde_json::Value;

/// The source of one Anthropic citation of text block `index`.
pub fn citation_source(id: String, index: usize, citation: Value, provider: &str) -> Source {
    let str_of = |key: &str| citation.get(key).and_then(Value::as_str).map(str::to_owned);
    let num = |key: &str| citation.get(key).and_then(Value::as_u64);
    let range = |start: &str, end: &str| Some((num(start)?, num(end)?));
    let kind = citation.get("type").and_then(Value::as_str).unwrap_or_default();
    let location = match kind {
        "char_location" => {
            range("start_char_index", "end_char_index").map(|(start, end)| Location::Chars { start, end })
        }
        "page_location" => {
            range("start_page_number", "end_page_number").map(|(start, end)| Location::Pages { start, end })
        }
        _ => range("start_block_index", "end_block_index").map(|(start, end)| Location::Blocks { start, end }),
    };
    let (target, title) = match (kind, str_of("url"), str_of("source")) {
        ("search_result_location", _, Some(source)) => (
            SourceTarget::SearchResult {
                source,
                result_index: num("search_result_index"),
                location,
            },
            str_of("title"),
        ),
        (_, Some(url), _) => (SourceTarget::Url { url }, str_of("title")),
        _ => (
            SourceTarget::Document {
                document_index: num("document_index"),
                location,
            },
            str_of("document_title").or_else(|| str_of("title")),
        ),
    };
    Source {
        id,
        index,
        target,
        title,
        cited_text: str_of("cited_text"),
        supports: None,
        provider: provider.to_owned(),
        data: citation,
    }
}

/// The sources a server tool's result block returned (web search results, a fetched page);
/// none for other blocks or an error result. `next_id` numbers them.
pub fn result_sources(block: &Value, index: usize, provider: &str, mut next_id: impl FnMut() -> String) -> Vec<Source> {
    let content = block.get("content");
    let items: Vec<&Value> = match (block.get("type").and_then(Value::as_str), content) {
        (Some("web_search_tool_result"), Some(Value::Array(results))) => results
            .iter()
            .filter(|r| r.get("type").and_then(Value::as_str) == Some("web_search_result"))
            .collect(),
        (Some("web_fetch_tool_result"), Some(result))
            if result.get("type").and_then(Value::as_str) == Some("web_fetch_result") =>
        {
            vec![result]
        }
        _ => Vec::new(),
    };
    items
        .into_iter()
        .filter_map(|item| {
            let url = item.get("url").and_then(Value::as_str).filter(|u| !u.is_empty())?;
            let title = item
                .get("title")
                .or_else(|| item.get("content").and_then(|c| c.get("title")))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let mut source = Source::url(next_id(), index, url, provider);
            source.title = title;
            source.data = item.clone();
            Some(source)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_citation_kind_maps_to_its_target_and_location() {
        let char_loc = json!({"type": "char_location", "cited_text": "grass is green", "document_index": 0,
            "document_title": "Facts", "start_char_index": 0, "end_char_index": 20});
        let source = citation_source("1".into(), 3, char_loc.clone(), "anthropic");
        assert_eq!(
            source.target,
            SourceTarget::Document {
                document_index: Some(0),
                location: Some(Location::Chars { start: 0, end: 20 })
            }
        );
        assert_eq!(
            (source.title.as_deref(), source.cited_text.as_deref()),
            (Some("Facts"), Some("grass is green"))
        );
        assert_eq!((source.index, source.data), (3, char_loc));

        let pages = json!({"type": "page_location", "document_index": 1, "start_page_number": 2, "end_page_number": 3});
        let source = citation_source("2".into(), 0, pages, "anthropic");
        assert!(matches!(
            source.target,
            SourceTarget::Document {
                location: Some(Location::Pages { start: 2, end: 3 }),
                ..
            }
        ));

        let web = json!({"type": "web_search_result_location", "url": "https://example.com/a", "title": "A",
            "cited_text": "x", "encrypted_index": "Eo8B"});
        let source = citation_source("3".into(), 0, web, "anthropic");
        assert_eq!(source.as_url(), Some("https://example.com/a"));
        assert_eq!(source.title.as_deref(), Some("A"));

        let search = json!({"type": "search_result_location", "source": "kb://doc/7", "title": "Doc 7",
            "search_result_index": 4, "start_block_index": 0, "end_block_index": 2});
        let source = citation_source("4".into(), 0, search, "anthropic");
        assert_eq!(
            source.target,
            SourceTarget::SearchResult {
                source: "kb://doc/7".into(),
                result_index: Some(4),
                location: Some(Location::Blocks { start: 0, end: 2 })
            }
        );
    }

    #[test]
    fn web_search_and_fetch_results_are_url_sources_and_errors_are_none() {
        let mut n = 0;
        let mut next = || {
            n += 1;
            n.to_string()
        };
        let search = json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
            {"type": "web_search_result", "url": "https://a.example", "title": "A", "encrypted_content": "e", "page_age": null},
            {"type": "web_search_result", "url": "https://b.example", "title": "B", "encrypted_content": "e"}]});
        let sources = result_sources(&search, 2, "anthropic", &mut next);
        let urls: Vec<_> = sources
            .iter()
            .map(|s| (s.id.as_str(), s.as_url().unwrap_or_default(), s.index))
            .collect();
        assert_eq!(urls, vec![("1", "https://a.example", 2), ("2", "https://b.example", 2)]);

        let fetch = json!({"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_2", "content": {
            "type": "web_fetch_result", "url": "https://c.example", "retrieved_at": "2025-01-01",
            "content": {"type": "document", "title": "C", "source": {"type": "text", "media_type": "text/plain", "data": "c"}}}});
        let sources = result_sources(&fetch, 4, "anthropic", &mut next);
        assert_eq!((sources[0].id.as_str(), sources[0].title.as_deref()), ("3", Some("C")));

        let failed = json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_3",
            "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}});
        assert!(result_sources(&failed, 5, "anthropic", &mut next).is_empty());
    }
}
