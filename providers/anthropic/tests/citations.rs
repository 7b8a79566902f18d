//! Citations in recorded answers: each arrives as a `Source` of its text block, and the answer
//! built from the events goes back to the Messages API with the same text blocks and the same
//! citations the wire sent.

use crate::common::replay;
use patchbay_anthropic::build_request;
use patchbay_conformance::fixtures;
use patchbay_core::kit::{ContentBuilder, Framer, Framing};
use patchbay_core::{ContentBlock, Event, Message, Role, ToolSet};
use serde_json::{Value, json};

/// The text blocks of the first message of a recording, straight from the wire: text and the
/// citations it carries (on the block's start or as `citations_delta`s).
fn wire_text_blocks(body: &[u8]) -> Vec<Value> {
    let mut frames: Vec<Value> = Vec::new();
    let mut framer = Framer::new(Framing::SseOrJsonLines);
    let mut keep = |data: &[u8]| {
        if let Ok(value) = serde_json::from_slice::<Value>(data) {
            frames.push(value);
        }
        Ok(())
    };
    framer.push(body, &mut keep).expect("the recording frames");
    framer.finish(&mut keep).expect("the recording frames");
    let mut blocks: Vec<Option<(String, Vec<Value>)>> = Vec::new();
    for frame in frames.iter().take_while(|f| f["type"] != "message_stop") {
        let index = frame["index"].as_u64().unwrap_or(0) as usize;
        if blocks.len() <= index {
            blocks.resize(index + 1, None);
        }
        match (
            frame["type"].as_str(),
            frame["content_block"]["type"].as_str(),
            frame["delta"]["type"].as_str(),
        ) {
            (Some("content_block_start"), Some("text"), _) => {
                let block = &frame["content_block"];
                let citations = block["citations"].as_array().cloned().unwrap_or_default();
                blocks[index] = Some((block["text"].as_str().unwrap_or_default().to_owned(), citations));
            }
            (Some("content_block_delta"), _, Some("text_delta")) => {
                if let Some((text, _)) = &mut blocks[index] {
                    text.push_str(frame["delta"]["text"].as_str().unwrap_or_default());
                }
            }
            (Some("content_block_delta"), _, Some("citations_delta")) => {
                if let Some((_, citations)) = &mut blocks[index] {
                    citations.push(frame["delta"]["citation"].clone());
                }
            }
            _ => {}
        }
    }
    blocks
        .into_iter()
        .flatten()
        .filter(|(text, _)| !text.is_empty())
        .map(|(text, citations)| text_json(text, citations))
        .collect()
}

fn text_json(text: String, citations: Vec<Value>) -> Value {
    if citations.is_empty() {
        json!({"type": "text", "text": text})
    } else {
        json!({"type": "text", "text": text, "citations": citations})
    }
}

#[test]
fn recorded_citations_are_sources_and_go_back_to_the_api_unchanged() {
    let mut checked = Vec::new();
    for path in fixtures::files("anthropic") {
        let body = std::fs::read(&path).expect("fixture reads");
        let wire = wire_text_blocks(&body);
        let cited: usize = wire.iter().map(|b| b["citations"].as_array().map_or(0, Vec::len)).sum();
        if cited == 0 {
            continue;
        }
        let name = fixtures::relative_name(&path);
        let first = replay(&body).into_iter().next().expect("one message");
        let sources: Vec<_> = first
            .events
            .iter()
            .filter_map(|e| match e {
                Event::Source(source) => Some(source),
                _ => None,
            })
            .collect();
        let citation_sources = sources.iter().filter(|s| s.data.get("cited_text").is_some()).count();
        assert_eq!(citation_sources, cited, "{name}: one Source per citation");
        assert!(
            first
                .events
                .iter()
                .all(|e| !matches!(e, Event::Opaque { data, .. } if data["type"] == "text_citations")),
            "{name}: citations are no longer opaque"
        );

        let mut builder = ContentBuilder::default();
        first.events.iter().for_each(|e| builder.push(e));
        let answer = Message::new(Role::Assistant, builder.finish());
        let messages = [Message::user("Search, please."), answer, Message::user("Thanks.")];
        let request =
            build_request(&messages, &ToolSet::new(), "claude-sonnet-4-5", None, 1024).expect("request builds");
        let sent: Vec<Value> = request.body["messages"][1]["content"]
            .as_array()
            .expect("assistant content")
            .iter()
            .filter(|b| b["type"] == "text")
            .cloned()
            .collect();
        assert_eq!(
            sent, wire,
            "{name}: the text blocks and citations go back as the wire sent them"
        );
        checked.push(name);
    }
    assert!(checked.len() >= 3, "recordings with citations: {checked:?}");
}

#[test]
fn other_wires_citations_are_not_sent_to_the_messages_api() {
    let answer = Message::new(
        Role::Assistant,
        vec![ContentBlock::Text {
            text: "Paris [1].".into(),
            citations: vec![
                json!("https://en.wikipedia.org/wiki/Paris"),
                json!({"type": "url_citation", "url_citation": {"url": "https://example.com"}}),
                json!({"type": "web_search_result_location", "url": "https://example.com", "cited_text": "x"}),
            ],
            cache_control: None,
            signature: None,
        }],
    );
    let messages = [Message::user("Where?"), answer, Message::user("Thanks.")];
    let request = build_request(&messages, &ToolSet::new(), "claude-sonnet-4-5", None, 1024).expect("request builds");
    assert_eq!(
        request.body["messages"][1]["content"][0]["citations"],
        json!([{"type": "web_search_result_location", "url": "https://example.com", "cited_text": "x"}])
    );
}
