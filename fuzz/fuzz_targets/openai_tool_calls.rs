//! The OpenAI tool-call assembler, structured: `arbitrary` builds a sequence of
//! chat-completions chunks full of tool-call fragments (indexes present or missing, ids new,
//! repeated or late, names whole or in pieces, arguments cut anywhere, several choices, usage,
//! finish reasons, `[DONE]` or not), rendered as SSE and as JSON lines. The translator must
//! keep the lifecycle rules it owns (unique ids included), emit a `ToolCall` only with input
//! equal to its streamed deltas, give the same events for both framings and for the SSE body
//! cut at a fuzzer-chosen point.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use patchbay_core::kit::Framing;
use patchbay_core::{Event, validate::Rule};
use patchbay_fuzz::{TRANSLATOR_RULES, check_lifecycle, outcome, split_at_selector};
use patchbay_openrouter::translate::Translator;
use serde_json::{Map, Value, json};

#[derive(Debug, Arbitrary)]
struct Script {
    chunks: Vec<Chunk>,
    done: bool,
    split: u8,
}

#[derive(Debug, Arbitrary)]
struct Chunk {
    /// Choice 0, or another one (collected as an extra choice).
    other_choice: bool,
    piece: Piece,
    finish: Option<Finish>,
    usage: Option<(u16, u16)>,
}

#[derive(Debug, Arbitrary)]
enum Piece {
    ToolCalls(Vec<Fragment>),
    Text(Word),
    Reasoning(Word),
    Refusal(Word),
    Nothing,
}

#[derive(Debug, Arbitrary)]
struct Fragment {
    index: Option<u8>,
    id: Option<Id>,
    name: Option<Name>,
    arguments: Option<Args>,
}

#[derive(Debug, Arbitrary)]
enum Id {
    Numbered(u8),
    Empty,
    Free(String),
}

#[derive(Debug, Arbitrary)]
enum Name {
    Weather,
    Search,
    Piece(u8),
    Empty,
    Free(String),
}

#[derive(Debug, Arbitrary)]
enum Args {
    Token(u8),
    Free(String),
}

#[derive(Debug, Arbitrary)]
enum Word {
    Hello,
    Free(String),
}

#[derive(Debug, Arbitrary)]
enum Finish {
    Stop,
    ToolCalls,
    Length,
    Null,
    Free(String),
}

/// Pieces of JSON objects, so that joined arguments are often (not always) complete JSON.
const TOKENS: &[&str] = &[
    "{",
    "}",
    "\"city\"",
    ":",
    "\"Paris\"",
    ",",
    "1",
    "[",
    "]",
    "\"",
    "{\"a\":1}",
    "{}",
    "null",
    "tr",
    "ue",
    " ",
    "\"\\u00e9\"",
    "-0.5e3",
];

impl Word {
    fn text(&self) -> &str {
        match self {
            Word::Hello => "Hello",
            Word::Free(text) => text,
        }
    }
}

fn fragment_json(fragment: &Fragment) -> Value {
    let mut call = Map::new();
    if let Some(index) = fragment.index {
        call.insert("index".into(), json!(index % 4));
    }
    if let Some(id) = &fragment.id {
        let id = match id {
            Id::Numbered(n) => format!("call_{}", n % 4),
            Id::Empty => String::new(),
            Id::Free(text) => text.clone(),
        };
        call.insert("id".into(), json!(id));
        call.insert("type".into(), json!("function"));
    }
    let mut function = Map::new();
    if let Some(name) = &fragment.name {
        let name = match name {
            Name::Weather => "get_weather".to_string(),
            Name::Search => "search".to_string(),
            Name::Piece(n) => ["get_", "weather", "sea", "rch"][usize::from(n % 4)].to_string(),
            Name::Empty => String::new(),
            Name::Free(text) => text.clone(),
        };
        function.insert("name".into(), json!(name));
    }
    if let Some(arguments) = &fragment.arguments {
        let arguments = match arguments {
            Args::Token(n) => TOKENS[usize::from(*n) % TOKENS.len()].to_string(),
            Args::Free(text) => text.clone(),
        };
        function.insert("arguments".into(), json!(arguments));
    }
    if !function.is_empty() {
        call.insert("function".into(), Value::Object(function));
    }
    Value::Object(call)
}

fn chunk_json(chunk: &Chunk) -> Value {
    let delta = match &chunk.piece {
        Piece::ToolCalls(fragments) => json!({"tool_calls": fragments.iter().map(fragment_json).collect::<Vec<_>>()}),
        Piece::Text(word) => json!({"content": word.text()}),
        Piece::Reasoning(word) => json!({"reasoning": word.text()}),
        Piece::Refusal(word) => json!({"refusal": word.text()}),
        Piece::Nothing => json!({}),
    };
    let mut choice = json!({"index": u8::from(chunk.other_choice), "delta": delta});
    if let Some(finish) = &chunk.finish {
        choice["finish_reason"] = match finish {
            Finish::Stop => json!("stop"),
            Finish::ToolCalls => json!("tool_calls"),
            Finish::Length => json!("length"),
            Finish::Null => Value::Null,
            Finish::Free(text) => json!(text),
        };
    }
    let mut payload = json!({"id": "gen-1", "model": "fuzz-model", "choices": [choice]});
    if let Some((prompt, completion)) = chunk.usage {
        payload["usage"] = json!({"prompt_tokens": prompt, "completion_tokens": completion});
    }
    payload
}

fn body(script: &Script, framing: Framing) -> Vec<u8> {
    let mut body = Vec::new();
    for chunk in &script.chunks {
        let payload = chunk_json(chunk).to_string();
        match framing {
            Framing::DataLines => body.extend_from_slice(format!("data: {payload}\n\n").as_bytes()),
            _ => body.extend_from_slice(format!("{payload}\n").as_bytes()),
        }
    }
    if script.done && framing == Framing::DataLines {
        body.extend_from_slice(b"data: [DONE]\n\n");
    }
    body
}

fuzz_target!(|script: Script| {
    let rules: Vec<Rule> = TRANSLATOR_RULES
        .iter()
        .copied()
        .chain([Rule::ToolCallIdUnique])
        .collect();
    let sse = body(&script, Framing::DataLines);
    let (events, error) = patchbay_core::kit::translate(Translator::new(Framing::DataLines), [&sse[..]]).into_parts();
    check_lifecycle(&events, error.as_ref(), &rules);
    for event in &events {
        if let Event::ToolCall { id, .. } = event {
            assert!(!id.is_empty(), "a tool call without an id");
        }
    }
    let whole = outcome(events, error.as_ref());

    let (events, error) = patchbay_core::kit::translate(
        Translator::new(Framing::DataLines),
        split_at_selector(&sse, script.split),
    )
    .into_parts();
    assert_eq!(whole, outcome(events, error.as_ref()), "cut at {}/255", script.split);

    if !script.done {
        let lines = body(&script, Framing::Lines);
        let (events, error) = patchbay_core::kit::translate(Translator::new(Framing::Lines), [&lines[..]]).into_parts();
        assert_eq!(whole, outcome(events, error.as_ref()), "as JSON lines");
    }
});
