//! A candidate's grounding, URL context and citation metadata as [`Source`]s.
//!
//! - `groundingMetadata.groundingChunks`: one source per chunk (`web`, `retrievedContext` or
//!   `maps`, whichever it holds), id its position from 1, `supports` the first answer segment
//!   that cites it (`groundingSupports[].segment`, byte offsets as the wire counts them), `data`
//!   the chunk with every support that cites it (`{"groundingChunk": .., "groundingSupports": [..]}`).
//! - `urlContextMetadata.urlMetadata`: one source per URL the model fetched, `data` the entry
//!   (its `urlRetrievalStatus` included).
//! - `citationMetadata.citations` (Vertex) or `.citationSources` (Gemini API): one source per
//!   citation with a URI, `supports` its `startIndex`..`endIndex`.

use patchbay_core::source::{Source, SourceTarget, Span};
use serde_json::{Value, json};

use crate::NAME;

fn str_of<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

fn span_of(value: &Value) -> Option<Span> {
    let end = value.get("endIndex").and_then(Value::as_u64)?;
    let start = value.get("startIndex").and_then(Value::as_u64).unwrap_or(0);
    Some(Span { start, end })
}

/// Counts source ids within one response.
#[derive(Debug, Default)]
pub(crate) struct SourceIds(u64);

impl SourceIds {
    fn next(&mut self) -> String {
        self.0 += 1;
        self.0.to_string()
    }
}

fn source(
    ids: &mut SourceIds,
    index: usize,
    url: &str,
    title: Option<&str>,
    supports: Option<Span>,
    data: Value,
) -> Source {
    Source {
        id: ids.next(),
        index,
        target: SourceTarget::Url { url: url.to_string() },
        title: title.map(str::to_string),
        cited_text: None,
        supports,
        provider: NAME.to_string(),
        data,
    }
}

/// The sources of a `groundingMetadata` object, for text block `index`.
pub(crate) fn grounding(metadata: &Value, index: usize, ids: &mut SourceIds, out: &mut Vec<Source>) {
    let empty = Vec::new();
    let chunks = metadata
        .get("groundingChunks")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let supports = metadata
        .get("groundingSupports")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    for (position, chunk) in chunks.iter().enumerate() {
        let Some(target) = ["web", "retrievedContext", "maps"]
            .iter()
            .find_map(|key| chunk.get(*key))
        else {
            continue;
        };
        let Some(url) = str_of(target, "uri") else {
            continue;
        };
        let citing: Vec<&Value> = supports
            .iter()
            .filter(|support| {
                support
                    .get("groundingChunkIndices")
                    .and_then(Value::as_array)
                    .is_some_and(|indices| indices.iter().any(|i| i.as_u64() == Some(position as u64)))
            })
            .collect();
        let span = citing
            .first()
            .and_then(|support| support.get("segment"))
            .and_then(span_of);
        let data = json!({ "groundingChunk": chunk, "groundingSupports": citing });
        let mut source = source(ids, index, url, str_of(target, "title"), span, data);
        // The passage of the source: a retrieved context's text (a support's `segment.text` is
        // the answer's own words, not the source's).
        source.cited_text = str_of(target, "text").map(str::to_string);
        out.push(source);
    }
}

/// The sources of a `urlContextMetadata` object.
pub(crate) fn url_context(metadata: &Value, index: usize, ids: &mut SourceIds, out: &mut Vec<Source>) {
    for entry in metadata
        .get("urlMetadata")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(url) = str_of(entry, "retrievedUrl") {
            out.push(source(ids, index, url, None, None, entry.clone()));
        }
    }
}

/// The sources of a `citationMetadata` object.
pub(crate) fn citations(metadata: &Value, index: usize, ids: &mut SourceIds, out: &mut Vec<Source>) {
    let list = metadata.get("citations").or_else(|| metadata.get("citationSources"));
    for citation in list.and_then(Value::as_array).into_iter().flatten() {
        if let Some(url) = str_of(citation, "uri") {
            out.push(source(
                ids,
                index,
                url,
                str_of(citation, "title"),
                span_of(citation),
                citation.clone(),
            ));
        }
    }
}
