//! Sources and citations: what [`Event::Source`](crate::Event::Source) carries.
//!
//! One shape for every wire: Anthropic citations (`char_location`, `page_location`,
//! `content_block_location`, `search_result_location`, `web_search_result_location`) and its
//! web search / web fetch results, OpenAI and OpenRouter `url_citation` annotations, and
//! Perplexity's `citations` and `search_results`. The typed fields say what a host shows; `data`
//! keeps the wire's object verbatim, so an answer goes back to its API unchanged.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A URL source or a document citation the model used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Source {
    /// Unique within one response: the wire's own number where it has one (Perplexity's `[1]`
    /// is id `1`), else the order of arrival, counting from 1.
    pub id: String,
    /// The content block it belongs to: the text it supports, or the tool result that
    /// returned it (a web search result).
    pub index: usize,
    /// What it points at.
    pub target: SourceTarget,
    /// The page or document title, when the wire gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The passage of the source the text relies on (or the search snippet), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cited_text: Option<String>,
    /// The part of block `index`'s text this source supports, when the wire says
    /// (OpenAI annotations' `start_index`/`end_index`, counted as the wire counts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supports: Option<Span>,
    /// The wire `data` comes from (`anthropic` for the Claude Code CLI too: its messages are
    /// the Messages API's).
    pub provider: String,
    /// The wire's object as sent (a bare URL string for Perplexity's `citations`); `null` when a
    /// source has none (a scripted one).
    pub data: Value,
}

/// What a [`Source`] points at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum SourceTarget {
    /// A web page.
    Url {
        /// Its URL.
        url: String,
    },
    /// A document of the request (Anthropic `document` blocks).
    Document {
        /// Its position among the request's documents, when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        document_index: Option<u64>,
        /// Where in the document, when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        location: Option<Location>,
    },
    /// A file the provider holds (OpenAI's `file_citation`, `container_file_citation` and
    /// `file_path` annotations, file search results).
    File {
        /// The provider's file id (`file-...`, `cfile_...`).
        file_id: String,
        /// The file's name, when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        filename: Option<String>,
    },
    /// A search result the host passed in (Anthropic `search_result` blocks).
    SearchResult {
        /// The result's `source` (a URL or any identifier the host chose).
        source: String,
        /// Its position among the request's search results, when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result_index: Option<u64>,
        /// Which of its content blocks, when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        location: Option<Location>,
    },
}

/// A range inside a cited document, in the unit the wire uses. Ranges are as the wire
/// sends them (Anthropic: characters and blocks end-exclusive, pages end-exclusive too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "unit", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Location {
    /// Characters of a plain-text document.
    Chars {
        /// First character.
        start: u64,
        /// End character.
        end: u64,
    },
    /// Pages of a PDF.
    Pages {
        /// First page.
        start: u64,
        /// End page.
        end: u64,
    },
    /// Content blocks of a custom-content document or a search result.
    Blocks {
        /// First block.
        start: u64,
        /// End block.
        end: u64,
    },
}

/// A range of the answer's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    /// Start offset.
    pub start: u64,
    /// End offset.
    pub end: u64,
}

impl Source {
    /// A URL source with no wire object of its own (`data` is `null`).
    pub fn url(id: impl Into<String>, index: usize, url: impl Into<String>, provider: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            index,
            target: SourceTarget::Url { url: url.into() },
            title: None,
            cited_text: None,
            supports: None,
            provider: provider.into(),
            data: Value::Null,
        }
    }

    /// The URL, for a URL source.
    pub fn as_url(&self) -> Option<&str> {
        match &self.target {
            SourceTarget::Url { url } => Some(url),
            _ => None,
        }
    }
}
