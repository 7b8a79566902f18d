//! Stream translation throughput of the Responses wire: three Responses SSE bodies (`POST
//! /responses`, `stream: true`) built here as OpenAI streams them, read by the provider (HTTP +
//! SSE framing + translation into events) and by a baseline that reads the same bytes with
//! reqwest, splits lines and parses each `data:` line once with serde_json into small typed
//! structs borrowing their strings. Both with the whole body in one server write and with one
//! SSE frame per write; then the translator alone (core's `Framer` and the `Translator`, no
//! HTTP) against the baseline's parse, on each body in 64 KiB pieces in memory.
//!
//! The bodies, every event with the members OpenAI prints (`type` and `sequence_number` first;
//! `item_id`, `output_index`, `content_index`, `logprobs: []` and `obfuscation` on the deltas;
//! the whole response object on `response.created`, `.in_progress` and `.completed`; the whole
//! text again in the `.done` events):
//!
//! - **text**: a 64 KiB answer in word-sized `response.output_text.delta` events (an escaped
//!   newline in one delta of a hundred, a non-ASCII character in another);
//! - **reasoning**: a 64 KiB reasoning summary in four parts
//!   (`response.reasoning_summary_text.delta` with `summary_index`), the reasoning item done
//!   with its `encrypted_content`, then a short answer;
//! - **function call**: a `write_file` call whose 64 KiB of arguments (JSON holding source code,
//!   so escaped quotes and newlines, escaped again in each event) come in token-sized
//!   `response.function_call_arguments.delta` events.
//!
//! Both readers do the same work: the answer's text, the reasoning text (parts joined by a blank
//! line), the signature (`encrypted_content`), the arguments joined and each finished call's
//! name and parsed arguments; the results are compared before anything is timed.
//!
//! `cargo bench -p patchbay-openai --bench translate`; the ratios (patchbay / baseline, minimum
//! of 15 interleaved runs, and the time per event) are printed after criterion's groups.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use futures::StreamExt;
use patchbay_conformance::mock::{Chunking, MockServer, Serve, WireFormat};
use patchbay_core::kit::{Framer, Wire};
use patchbay_core::{Event, Message, Provider, Signal, ToolSet};
use patchbay_openai::{OpenAiConfig, OpenAiProvider, Translator};
use serde::Deserialize;
use serde_json::Value;

/// The model every request asks for.
const MODEL: &str = "gpt-bench";
/// How large each body's streamed payload is (answer, summary, arguments).
const PAYLOAD: usize = 64 * 1024;

const RESPONSE_ID: &str = "resp_68af3c0e5b0c8190a1d7e2f4b6c8d0e20c1f2a3b4c5d6e7f";
const MESSAGE_ID: &str = "msg_68af3c0f1a2c8190b3e5d7f9a1c3e5070c1f2a3b4c5d6e7f";
const REASONING_ID: &str = "rs_68af3c0e9d7c81909f3b5e7a9c1d3f5b0c1f2a3b4c5d6e7f";
const CALL_ITEM_ID: &str = "fc_68af3c10a4b88190b6d8f0a2c4e6a8c00c1f2a3b4c5d6e7f";
const CALL_ID: &str = "call_Xk2mP9qR4vT7wY1zB3nD5fH8";

// ---------------------------------------------------------------------------------------------
// The bodies

/// `text` as a JSON string literal.
fn json(text: &str) -> String {
    serde_json::to_string(text).expect("a string serializes")
}

/// An SSE body being written: each event numbered on from 0.
#[derive(Default)]
struct Events {
    body: String,
    sequence: usize,
    count: usize,
}

impl Events {
    /// One frame: `event: {kind}`, then the event with `type` and `sequence_number` first.
    fn event(&mut self, kind: &str, rest: std::fmt::Arguments<'_>) {
        let _ = write!(
            self.body,
            "event: {kind}\ndata: {{\"type\":\"{kind}\",\"sequence_number\":{},{rest}}}\n\n",
            self.sequence
        );
        self.sequence += 1;
        self.count += 1;
    }

    /// `response.created` and `response.in_progress`.
    fn open(&mut self) {
        let response = response_object("in_progress", "", "null");
        self.event("response.created", format_args!("\"response\":{response}"));
        self.event("response.in_progress", format_args!("\"response\":{response}"));
    }

    /// `response.completed` with the finished `output` items and the usage.
    fn complete(&mut self, output: &str, output_tokens: usize, reasoning_tokens: usize) {
        let usage = format!(
            r#"{{"input_tokens":812,"input_tokens_details":{{"cached_tokens":0}},"output_tokens":{output_tokens},"output_tokens_details":{{"reasoning_tokens":{reasoning_tokens}}},"total_tokens":{}}}"#,
            812 + output_tokens
        );
        let response = response_object("completed", output, &usage);
        self.event("response.completed", format_args!("\"response\":{response}"));
    }

    /// A message item at `output` streaming `deltas` as its one `output_text` part; returns the
    /// finished item.
    fn message(&mut self, output: usize, deltas: &[&str]) -> String {
        let whole = json(&deltas.concat());
        self.event(
            "response.output_item.added",
            format_args!(
                r#""output_index":{output},"item":{{"id":"{MESSAGE_ID}","type":"message","status":"in_progress","content":[],"role":"assistant"}}"#
            ),
        );
        let part = |text: &str| format!(r#"{{"type":"output_text","annotations":[],"logprobs":[],"text":{text}}}"#);
        let place = format!(r#""item_id":"{MESSAGE_ID}","output_index":{output},"content_index":0"#);
        self.event(
            "response.content_part.added",
            format_args!(r#"{place},"part":{}"#, part("\"\"")),
        );
        for (i, delta) in deltas.iter().enumerate() {
            self.event(
                "response.output_text.delta",
                format_args!(
                    r#"{place},"delta":{},"logprobs":[],"obfuscation":"{}""#,
                    json(delta),
                    obfuscation(i, delta)
                ),
            );
        }
        self.event(
            "response.output_text.done",
            format_args!(r#"{place},"text":{whole},"logprobs":[]"#),
        );
        self.event(
            "response.content_part.done",
            format_args!(r#"{place},"part":{}"#, part(&whole)),
        );
        let item = format!(
            r#"{{"id":"{MESSAGE_ID}","type":"message","status":"completed","content":[{}],"role":"assistant"}}"#,
            part(&whole)
        );
        self.event(
            "response.output_item.done",
            format_args!(r#""output_index":{output},"item":{item}"#),
        );
        item
    }
}

/// The response object of the lifecycle events, every member OpenAI prints, in its order.
fn response_object(status: &str, output: &str, usage: &str) -> String {
    format!(
        r#"{{"id":"{RESPONSE_ID}","object":"response","created_at":1756315662,"status":"{status}","background":false,"error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"max_tool_calls":null,"model":"gpt-bench-2026-01-01","output":[{output}],"parallel_tool_calls":true,"previous_response_id":null,"prompt_cache_key":null,"reasoning":{{"effort":"medium","summary":"detailed"}},"safety_identifier":null,"service_tier":"default","store":true,"temperature":1.0,"text":{{"format":{{"type":"text"}},"verbosity":"medium"}},"tool_choice":"auto","tools":[{{"type":"function","description":"Write a file.","name":"write_file","parameters":{{"type":"object","properties":{{"path":{{"type":"string"}},"content":{{"type":"string"}}}},"required":["path","content"],"additionalProperties":false}},"strict":true}}],"top_logprobs":0,"top_p":1.0,"truncation":"disabled","usage":{usage},"user":null,"metadata":{{}}}}"#
    )
}

/// The `obfuscation` of delta `i`: the random padding OpenAI puts on every delta event so a
/// delta's size does not tell its text; here 1 to 16 letters, deterministic.
fn obfuscation(i: usize, delta: &str) -> &'static str {
    const LETTERS: &str = "q3ZxT8vLpN2sKd7RwYb4HcJm9GfA1eUo6VhXn0QiBtC5yDrEgFaSlWjMkOzIuP";
    let len = 16 - delta.len() % 16;
    let from = (i * 7) % (LETTERS.len() - 16);
    &LETTERS[from..from + len]
}

/// Word-sized deltas (`{word}{i % 1000} `) until `bytes`; an escaped newline in one delta of a
/// hundred and a non-ASCII character in another.
fn words(word: &str, bytes: usize) -> Vec<String> {
    let mut deltas = Vec::new();
    let mut len = 0;
    while len < bytes {
        let i = deltas.len();
        let mut delta = format!("{word}{} ", i % 1000);
        if i % 100 == 7 {
            delta.push('\n');
        }
        if i % 100 == 42 {
            delta.push('é');
        }
        len += delta.len();
        deltas.push(delta);
    }
    deltas
}

fn refs(deltas: &[String]) -> Vec<&str> {
    deltas.iter().map(String::as_str).collect()
}

/// A 64 KiB answer in word-sized text deltas.
fn text_body() -> Events {
    let mut events = Events::default();
    events.open();
    let deltas = words("tok", PAYLOAD);
    let message = events.message(0, &refs(&deltas));
    events.complete(&message, deltas.len(), 0);
    events
}

/// A 64 KiB reasoning summary in four parts, the reasoning item done with its encrypted
/// content, then a short answer.
fn reasoning_body() -> Events {
    let mut events = Events::default();
    events.open();
    events.event(
        "response.output_item.added",
        format_args!(r#""output_index":0,"item":{{"id":"{REASONING_ID}","type":"reasoning","summary":[]}}"#),
    );
    let parts: Vec<Vec<String>> = (0..4).map(|_| words("step", PAYLOAD / 4)).collect();
    let place = |part: usize| format!(r#""item_id":"{REASONING_ID}","output_index":0,"summary_index":{part}"#);
    let summary_part = |text: &str| format!(r#"{{"type":"summary_text","text":{text}}}"#);
    let mut summary = Vec::new();
    for (n, deltas) in parts.iter().enumerate() {
        let place = place(n);
        let whole = json(&deltas.concat());
        events.event(
            "response.reasoning_summary_part.added",
            format_args!(r#"{place},"part":{}"#, summary_part("\"\"")),
        );
        for (i, delta) in deltas.iter().enumerate() {
            events.event(
                "response.reasoning_summary_text.delta",
                format_args!(
                    r#"{place},"delta":{},"obfuscation":"{}""#,
                    json(delta),
                    obfuscation(i, delta)
                ),
            );
        }
        events.event(
            "response.reasoning_summary_text.done",
            format_args!(r#"{place},"text":{whole}"#),
        );
        events.event(
            "response.reasoning_summary_part.done",
            format_args!(r#"{place},"part":{}"#, summary_part(&whole)),
        );
        summary.push(summary_part(&whole));
    }
    let reasoning = format!(
        r#"{{"id":"{REASONING_ID}","type":"reasoning","encrypted_content":"{}","summary":[{}]}}"#,
        encrypted_content(),
        summary.join(",")
    );
    events.event(
        "response.output_item.done",
        format_args!(r#""output_index":0,"item":{reasoning}"#),
    );
    let answer = words("tok", 300);
    let message = events.message(1, &refs(&answer));
    let summary_tokens: usize = parts.iter().map(Vec::len).sum();
    events.complete(
        &format!("{reasoning},{message}"),
        summary_tokens + answer.len(),
        summary_tokens,
    );
    events
}

/// What OpenAI sends as a reasoning item's `encrypted_content` (with `include:
/// ["reasoning.encrypted_content"]`): base64, a few KiB.
fn encrypted_content() -> String {
    const BASE64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut content = String::from("gAAAAABo");
    content.extend((0..6000).map(|i: usize| BASE64[(i * 37 + i / 64) % 64] as char));
    content.push_str("==");
    content
}

/// The source code a `write_file` call writes: 64 KiB of Rust-like lines, quotes and newlines.
fn source_code() -> String {
    let mut code = String::with_capacity(PAYLOAD + 64);
    let mut i = 0;
    while code.len() < PAYLOAD {
        let _ = writeln!(code, "    let value{i} = compute(\"tok{}\", {i});", i % 1000);
        i += 1;
    }
    code
}

/// Token-sized pieces of `text` (1 to 8 bytes, deterministic; `text` is ASCII).
fn tokens(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let len = (1 + (pieces.len() * 5) % 8).min(text.len() - at);
        pieces.push(&text[at..at + len]);
        at += len;
    }
    pieces
}

/// A function call whose 64 KiB of arguments come in token-sized deltas.
fn call_body() -> Events {
    let mut events = Events::default();
    events.open();
    let item = |status: &str, arguments: &str| {
        format!(
            r#"{{"id":"{CALL_ITEM_ID}","type":"function_call","status":"{status}","arguments":{arguments},"call_id":"{CALL_ID}","name":"write_file"}}"#
        )
    };
    events.event(
        "response.output_item.added",
        format_args!(r#""output_index":0,"item":{}"#, item("in_progress", "\"\"")),
    );
    let arguments = serde_json::json!({ "path": "src/generated.rs", "content": source_code() }).to_string();
    let pieces = tokens(&arguments);
    let place = format!(r#""item_id":"{CALL_ITEM_ID}","output_index":0"#);
    for (i, delta) in pieces.iter().enumerate() {
        events.event(
            "response.function_call_arguments.delta",
            format_args!(
                r#"{place},"delta":{},"obfuscation":"{}""#,
                json(delta),
                obfuscation(i, delta)
            ),
        );
    }
    let whole = json(&arguments);
    events.event(
        "response.function_call_arguments.done",
        format_args!(r#"{place},"arguments":{whole}"#),
    );
    let done = item("completed", &whole);
    events.event(
        "response.output_item.done",
        format_args!(r#""output_index":0,"item":{done}"#),
    );
    events.complete(&done, pieces.len(), 0);
    events
}

/// Every body: name, body, events in it.
fn bodies() -> Vec<(&'static str, String, usize)> {
    [
        ("text", text_body()),
        ("reasoning", reasoning_body()),
        ("function_call", call_body()),
    ]
    .into_iter()
    .map(|(name, events)| (name, events.body, events.count))
    .collect()
}

// ---------------------------------------------------------------------------------------------
// What a reader gives back

/// The work both readers do: everything a caller keeps of these responses.
#[derive(Debug, Default, PartialEq)]
struct Read {
    text: String,
    reasoning: String,
    signature: String,
    arguments: String,
    calls: Vec<(String, Value)>,
}

impl Read {
    /// Take one of patchbay's events.
    fn take(&mut self, event: Event) {
        match event {
            Event::TextDelta { text, .. } => self.text.push_str(&text),
            Event::ReasoningDelta { text, .. } => self.reasoning.push_str(&text),
            Event::ReasoningSignature { signature, .. } => self.signature = signature,
            Event::ToolCallDelta { partial_json, .. } => self.arguments.push_str(&partial_json),
            Event::ToolCall { name, input, .. } => self.calls.push((name, input)),
            _ => {}
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The baseline

#[derive(Deserialize)]
struct BaseEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    delta: Option<Cow<'a, str>>,
    #[serde(default)]
    summary_index: Option<u32>,
    #[serde(borrow, default)]
    item: Option<BaseItem<'a>>,
}

#[derive(Deserialize)]
struct BaseItem<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    encrypted_content: Option<Cow<'a, str>>,
}

/// The baseline's state over one body.
#[derive(Default)]
struct Baseline {
    read: Read,
    summary_part: Option<u32>,
}

impl Baseline {
    /// Parse one `data:` payload.
    fn line(&mut self, data: &[u8]) {
        let event: BaseEvent<'_> = serde_json::from_slice(data).expect("a valid event");
        let read = &mut self.read;
        match event.kind.as_ref() {
            "response.output_text.delta" => read.text.push_str(&event.delta.unwrap_or_default()),
            "response.reasoning_summary_text.delta" => {
                if self.summary_part != event.summary_index {
                    if !read.reasoning.is_empty() {
                        read.reasoning.push_str("\n\n");
                    }
                    self.summary_part = event.summary_index;
                }
                read.reasoning.push_str(&event.delta.unwrap_or_default());
            }
            "response.function_call_arguments.delta" => read.arguments.push_str(&event.delta.unwrap_or_default()),
            "response.output_item.done" => {
                let item = event.item.expect("an item");
                match item.kind.as_ref() {
                    "reasoning" => read.signature = item.encrypted_content.unwrap_or_default().into_owned(),
                    "function_call" => {
                        let input = serde_json::from_str(&read.arguments).expect("JSON arguments");
                        read.calls.push((item.name.unwrap_or_default().into_owned(), input));
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }

    /// Split the complete lines of `buf`, parse each `data:` line; drop what was read.
    fn lines(&mut self, buf: &mut Vec<u8>) {
        let mut start = 0;
        while let Some(offset) = newline(&buf[start..]) {
            let line = &buf[start..start + offset];
            start += offset + 1;
            if let Some(data) = line.strip_prefix(b"data: ") {
                self.line(data);
            }
        }
        buf.drain(..start);
    }
}

/// The first `\n` of `bytes`, eight bytes at a time (the crate has no `memchr` dependency and
/// std's is not public): a line split as cheap as the baseline needs.
fn newline(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    const NEWLINES: u64 = u64::from_ne_bytes([b'\n'; 8]);
    let mut at = 0;
    while let Some(word) = bytes.get(at..at + 8) {
        let word = u64::from_ne_bytes(word.try_into().expect("eight bytes")) ^ NEWLINES;
        if word.wrapping_sub(ONES) & !word & HIGHS != 0 {
            break;
        }
        at += 8;
    }
    bytes[at..].iter().position(|&b| b == b'\n').map(|i| at + i)
}

/// The baseline's parse over `chunks` (lines cut between chunks joined).
fn baseline_parse<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> Read {
    let mut baseline = Baseline::default();
    let mut buf: Vec<u8> = Vec::new();
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        baseline.lines(&mut buf);
    }
    baseline.read
}

/// The baseline: reqwest bytes, one buffer, lines split, each `data:` line parsed once.
async fn baseline(http: &reqwest::Client, url: &str) -> Read {
    let mut response = http
        .post(format!("{url}/v1/responses"))
        .header("content-type", "application/json")
        .body(r#"{"model":"gpt-bench","input":"bench","stream":true}"#)
        .send()
        .await
        .expect("sends");
    let mut baseline = Baseline::default();
    let mut buf: Vec<u8> = Vec::new();
    while let Some(chunk) = response.chunk().await.expect("reads") {
        buf.extend_from_slice(&chunk);
        baseline.lines(&mut buf);
    }
    baseline.read
}

// ---------------------------------------------------------------------------------------------
// patchbay

/// The provider: `create_response`, every event taken.
async fn patchbay(provider: &OpenAiProvider) -> Read {
    let messages = [Message::user("bench")];
    let mut stream = provider
        .create_response(&messages, &ToolSet::new(), MODEL, &Signal::new(), None)
        .await
        .expect("starts");
    let mut read = Read::default();
    while let Some(event) = stream.next().await {
        read.take(event.expect("an event"));
    }
    read
}

/// The translator alone: core's SSE framer and the `Translator` over chunks in memory, each
/// event taken as it comes (what the provider's driver does, without I/O or timers).
fn translate_only<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> Read {
    let mut wire = Translator::new(MODEL);
    let mut framer = Framer::new(wire.framing());
    let mut read = Read::default();
    let mut step = |data: &[u8]| {
        if !wire.is_done() {
            read.take_all(wire.frame(data)?, &mut wire);
        }
        Ok(())
    };
    for chunk in chunks {
        framer.push(chunk, &mut step).expect("translates");
    }
    framer.finish(&mut step).expect("translates");
    wire.end().expect("a complete response");
    read
}

impl Read {
    /// Take `first` and every event the wire has queued.
    fn take_all(&mut self, first: Option<Event>, wire: &mut Translator) {
        if let Some(event) = first {
            self.take(event);
        }
        while let Some(event) = wire.next_event() {
            self.take(event);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The harness

/// The mock's wire format: every answer here is a prepared body (`Serve::sse`), so it renders
/// nothing.
struct PreparedBodies;

impl WireFormat for PreparedBodies {
    fn name(&self) -> &'static str {
        "openai-responses"
    }

    fn render_response(&self, _: &patchbay_scripted::Response, _: &str) -> Vec<String> {
        Vec::new()
    }

    fn render_failure(&self, _: &patchbay_scripted::ScriptedError) -> (u16, Vec<(String, String)>, String) {
        (500, Vec::new(), String::new())
    }
}

/// A mock server answering every call with `body`, cut by `chunking`.
fn server(runtime: &tokio::runtime::Runtime, body: &str, chunking: Chunking) -> MockServer {
    runtime.block_on(async {
        MockServer::builder(PreparedBodies)
            .serve([Serve::sse(body.to_string())])
            .repeat_last()
            .chunking(chunking)
            .start()
            .await
            .expect("mock starts")
    })
}

fn provider(url: &str) -> OpenAiProvider {
    OpenAiProvider::new(OpenAiConfig::new(format!("{url}/v1")).with_api_key("bench")).expect("provider")
}

fn runtimes() -> (tokio::runtime::Runtime, tokio::runtime::Runtime) {
    // The servers run on their own thread; the client reads on a current-thread runtime.
    let server = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("server runtime");
    let client = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("client runtime");
    (server, client)
}

const MODES: [(&str, Chunking); 2] = [
    ("whole_body", Chunking::Whole),
    ("one_event_per_chunk", Chunking::PerFrame),
];

/// The body in 64 KiB pieces.
fn pieces(body: &str) -> std::slice::Chunks<'_, u8> {
    body.as_bytes().chunks(64 * 1024)
}

/// Both readers agree on `body`, and found what it carries.
fn check(name: &str, body: &str) -> Read {
    let expected = baseline_parse(pieces(body));
    assert_eq!(
        translate_only(pieces(body)),
        expected,
        "{name}: the translator reads what the baseline reads"
    );
    let carries = match name {
        "text" => !expected.text.is_empty() && expected.reasoning.is_empty(),
        "reasoning" => !expected.text.is_empty() && !expected.reasoning.is_empty() && !expected.signature.is_empty(),
        _ => expected.calls.len() == 1 && !expected.arguments.is_empty(),
    };
    assert!(carries, "{name}: the body's content read");
    expected
}

fn bench(c: &mut Criterion) {
    let (server_runtime, client_runtime) = runtimes();
    let mut group = c.benchmark_group("responses_http");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(4))
        .warm_up_time(Duration::from_secs(1));
    for (body_name, body, _) in bodies() {
        let expected = check(body_name, &body);
        for (mode, chunking) in MODES {
            let server = Arc::new(server(&server_runtime, &body, chunking));
            let url = server.url();
            let provider = provider(&url);
            let http = patchbay_http::client_builder().build().expect("client");
            assert_eq!(client_runtime.block_on(baseline(&http, &url)), expected, "baseline");
            assert_eq!(client_runtime.block_on(patchbay(&provider)), expected, "patchbay");
            group.bench_function(format!("{body_name}/{mode}/baseline"), |b| {
                b.to_async(&client_runtime).iter(|| baseline(&http, &url))
            });
            group.bench_function(format!("{body_name}/{mode}/patchbay"), |b| {
                b.to_async(&client_runtime).iter(|| patchbay(&provider))
            });
        }
    }
    group.finish();
    server_runtime.shutdown_timeout(Duration::from_secs(1));
}

fn bench_in_memory(c: &mut Criterion) {
    let mut group = c.benchmark_group("responses_in_memory");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1));
    for (name, body, _) in bodies() {
        check(name, &body);
        group.bench_function(format!("{name}/baseline"), |b| b.iter(|| baseline_parse(pieces(&body))));
        group.bench_function(format!("{name}/patchbay"), |b| b.iter(|| translate_only(pieces(&body))));
    }
    group.finish();
}

criterion_group!(benches, bench, bench_in_memory);

/// Minimum of interleaved runs: on a shared, loaded machine the minimum is the steadiest
/// estimate of what each reader costs. Prints one ratio per body and mode, and the time per
/// event of each reader.
fn min_ratios() {
    const ROUNDS: usize = 15;
    let (server_runtime, client_runtime) = runtimes();
    let time = |f: &mut dyn FnMut() -> Read, expected: &Read| {
        let started = Instant::now();
        let read = f();
        let elapsed = started.elapsed();
        assert!(read == *expected, "a reader's result changed");
        elapsed
    };
    let show = |name: &str, events: usize, base: Duration, ours: Duration| {
        let per_event = |d: Duration| d.as_secs_f64() * 1e9 / events as f64;
        println!(
            "min of {ROUNDS}: {name} ({events} events): baseline {base:?} ({:.0} ns/event), patchbay {ours:?} ({:.0} ns/event), ratio {:.2}",
            per_event(base),
            per_event(ours),
            ours.as_secs_f64() / base.as_secs_f64()
        );
    };
    for (body_name, body, events) in bodies() {
        let expected = check(body_name, &body);
        for (mode, chunking) in MODES {
            let server = server(&server_runtime, &body, chunking);
            let url = server.url();
            let provider = provider(&url);
            let http = patchbay_http::client_builder().build().expect("client");
            let (mut base, mut ours) = (Duration::MAX, Duration::MAX);
            for _ in 0..ROUNDS {
                base = base.min(time(&mut || client_runtime.block_on(baseline(&http, &url)), &expected));
                ours = ours.min(time(&mut || client_runtime.block_on(patchbay(&provider)), &expected));
            }
            show(&format!("{body_name}/{mode}"), events, base, ours);
        }
        let (mut base, mut ours) = (Duration::MAX, Duration::MAX);
        for _ in 0..ROUNDS {
            base = base.min(time(&mut || black_box(baseline_parse(pieces(&body))), &expected));
            ours = ours.min(time(&mut || black_box(translate_only(pieces(&body))), &expected));
        }
        show(&format!("{body_name}/in_memory_64k_pieces"), events, base, ours);
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--test" || a == "--list");
    benches();
    if !quick {
        min_ratios();
    }
    Criterion::default().configure_from_args().final_summary();
}
