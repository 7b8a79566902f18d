//! The real client: the AI SDK (`ai` 7.0.173, on Node) reads what the adapter writes, with its
//! own `parseJsonEventStream` + `uiMessageChunkSchema` (every chunk validated, as its default
//! chat transport does) and `readUIMessageStream` (the UI message it builds). Every shared
//! conformance scenario runs on the scripted provider through the agent loop; an approval round
//! trip goes from the paused run to the person's answer (the request `useChat` sends next) and
//! the resumed run.
//!
//! Without Node or the package (`.ci/peers/ai.sh`) each trial is ignored with the reason; under
//! `CI=true` it fails.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;

use futures::StreamExt;
use patchbay_conformance::peers::{self, Peer};
use patchbay_conformance::{Fixture, Recording, SCENARIO_MODEL, Scenario, Target, scenario_tools, scenarios};
use patchbay_core::context::{Approval, PauseFor};
use patchbay_core::{Agent, ErrorKind, Event, EventStream, Message, RequestContext, Signal, ToolResult};
use patchbay_scripted::{Part, Script, ScriptedProvider, Turn};
use patchbay_ui::{ChatRequest, UiStream};
use serde::Deserialize;
use serde_json::{Value, json};

const READER: &str = include_str!("peer/read-ui-stream.mjs");

fn main() {
    let ai = Peer::installed(
        "the AI SDK (`ai` 7.0.173)",
        "ai/node_modules/ai/package.json",
        ".ci/peers/ai.sh",
    );
    let node = node();
    let mut trials = Vec::new();
    for scenario in scenarios() {
        let name = format!("scenario_{}_reads_as_the_run", scenario.name);
        trials.push(peers::async_trial(name, &[&node, &ai], move || {
            scenario_reads_as_the_run(scenario)
        }));
    }
    trials.push(peers::async_trial(
        "approval_round_trip_approved",
        &[&node, &ai],
        || approval_round_trip(true),
    ));
    trials.push(peers::async_trial("approval_round_trip_denied", &[&node, &ai], || {
        approval_round_trip(false)
    }));
    peers::run(trials)
}

/// `node` on `PATH` (missing: `/usr/bin/node`, with the hint).
fn node() -> Peer {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .map(|dir| dir.join("node"))
        .find(|candidate| candidate.is_file());
    Peer::at(
        "Node.js",
        found.unwrap_or_else(|| PathBuf::from("/usr/bin/node")),
        "install Node 20 or later",
    )
}

/// What the AI SDK made of a stream.
#[derive(Debug, Deserialize)]
struct Read {
    /// The final UI message.
    message: Value,
    /// The chunk types, in order.
    chunks: Vec<String>,
    /// Chunks the schema refused.
    invalid: Vec<Value>,
    /// Errors the stream reported (`error` chunks, processing failures).
    errors: Vec<String>,
}

/// The reader script in a temporary folder beside a `node_modules` link to the installed
/// package (ESM resolves packages from the script's folder, never from `NODE_PATH`).
struct Reader {
    dir: tempfile::TempDir,
}

impl Reader {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temporary folder");
        std::fs::write(dir.path().join("read-ui-stream.mjs"), READER).expect("the script written");
        let modules = peers::peers_dir().join("ai/node_modules");
        std::os::unix::fs::symlink(&modules, dir.path().join("node_modules")).expect("node_modules linked");
        Self { dir }
    }

    fn script(&self) -> PathBuf {
        self.dir.path().join("read-ui-stream.mjs")
    }

    /// Read `body`, continuing `previous` when given.
    fn read(&self, body: &[u8], previous: Option<&Value>) -> Read {
        let mut command = Command::new(node().path());
        command.arg(self.script());
        if let Some(previous) = previous {
            let path = self.dir.path().join("previous.json");
            std::fs::write(&path, previous.to_string()).expect("the previous message written");
            command.arg(path);
        }
        let mut child = command
            .current_dir(self.dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("node starts");
        let mut stdin = child.stdin.take().expect("stdin");
        let body = body.to_vec();
        let writer = std::thread::spawn(move || stdin.write_all(&body));
        let output = child.wait_with_output().expect("node runs");
        writer.join().expect("the writer").expect("the body written");
        assert!(
            output.status.success(),
            "node failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let read: Read = serde_json::from_slice(&output.stdout).expect("the reader's JSON");
        assert!(
            read.invalid.is_empty(),
            "chunks the schema refused: {:#?}",
            read.invalid
        );
        read
    }
}

/// The SSE body of these events and this error, through `ui`.
async fn body(ui: UiStream, events: &[Event], error: Option<patchbay_core::ProviderError>) -> Vec<u8> {
    let items: Vec<_> = events.iter().cloned().map(Ok).chain(error.map(Err)).collect();
    let stream: EventStream = Box::pin(futures::stream::iter(items));
    let frames: Vec<bytes::Bytes> = ui.sse(stream).collect().await;
    frames.concat()
}

async fn record(scenario: &Scenario) -> Recording {
    let target = Target::new("scripted", |case| {
        let provider = Arc::new(ScriptedProvider::new(case.scenario.script.clone()));
        async move { Ok(Fixture::new(provider)) }
    });
    target.record(scenario).await.expect("the scripted run")
}

fn parts<'a>(message: &'a Value, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    message["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(move |part| part["type"] == kind)
}

fn joined(message: &Value, kind: &str) -> String {
    parts(message, kind).filter_map(|part| part["text"].as_str()).collect()
}

async fn scenario_reads_as_the_run(scenario: Scenario) {
    let recording = record(&scenario).await;
    let text = recording.text();
    let (events, error) = recording.into_parts();
    let ended_by = error.as_ref().map(|error| (error.kind(), error.to_string()));
    let body = body(UiStream::new().with_message_id("msg-1"), &events, error).await;
    let read = Reader::new().read(&body, None);
    let message = &read.message;
    assert_eq!(message["id"], "msg-1");
    assert_eq!(message["role"], "assistant");
    assert_eq!(message["metadata"]["model"], SCENARIO_MODEL);

    // Text and reasoning, every part closed.
    assert_eq!(joined(message, "text"), text, "the run's text");
    let reasoning: String = events
        .iter()
        .filter_map(|event| match event {
            Event::ReasoningDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(joined(message, "reasoning"), reasoning, "the run's reasoning");
    for part in parts(message, "text").chain(parts(message, "reasoning")) {
        assert_eq!(part["state"], "done", "an open part: {part}");
    }
    for event in &events {
        match event {
            Event::ReasoningSignature { signature, .. } => {
                let signed = parts(message, "reasoning")
                    .any(|part| part["providerMetadata"]["patchbay"]["signature"] == signature.as_str());
                assert!(signed, "the signature {signature} on a reasoning part");
            }
            Event::ToolCall { id, name, input, .. } => {
                let part = tool_part(message, id);
                assert_eq!(part["type"], format!("tool-{name}"));
                assert_eq!(&part["input"], input);
            }
            Event::ToolResult { id, result, .. } => check_result(tool_part(message, id), result),
            Event::Source(source) => {
                let url = source.as_url().expect("the scenarios cite web pages");
                let part = parts(message, "source-url")
                    .find(|part| part["url"] == url)
                    .unwrap_or_else(|| panic!("a source-url part for {url}"));
                assert_eq!(part["title"].as_str(), source.title.as_deref());
            }
            _ => {}
        }
    }

    // Steps, and how the message ended.
    let steps = events
        .iter()
        .filter(|event| matches!(event, Event::StepFinished { .. }))
        .count();
    assert_eq!(
        parts(message, "step-start").count(),
        steps + 1,
        "one step-start per model call"
    );
    match (ended_by, events.last()) {
        (Some((ErrorKind::Cancelled, _)), _) => {
            assert_eq!(read.chunks.last().map(String::as_str), Some("abort"));
            assert!(read.errors.is_empty(), "{:?}", read.errors);
        }
        (Some((_, error)), _) => {
            assert_eq!(read.chunks.last().map(String::as_str), Some("error"));
            assert_eq!(read.errors, [error]);
        }
        (None, Some(Event::Finish { usage, .. })) => {
            assert_eq!(read.chunks.last().map(String::as_str), Some("finish"));
            assert!(read.errors.is_empty(), "{:?}", read.errors);
            assert_eq!(message["metadata"]["usage"], json!(usage));
            assert!(message["metadata"]["summary"].is_object());
        }
        (None, last) => panic!("the run ended without Finish or an error: {last:?}"),
    }
}

fn tool_part<'a>(message: &'a Value, id: &str) -> &'a Value {
    message["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|part| part["toolCallId"] == id)
        .unwrap_or_else(|| panic!("a tool part for {id} in {message:#}"))
}

fn check_result(part: &Value, result: &ToolResult) {
    if result.is_error() {
        assert_eq!(part["state"], "output-error");
        assert_eq!(part["errorText"], result.text_content());
    } else {
        assert_eq!(part["state"], "output-available");
        assert_eq!(part["output"], json!(result));
    }
}

/// The agent of the approval round trip: `get_weather` pauses for a person.
fn approval_agent() -> Agent {
    let script = Script::new(vec![
        Turn::parts(vec![Part::tool_call(
            "toolu_01",
            "get_weather",
            json!({ "city": "Paris" }),
        )]),
        Turn::text("It is sunny in Paris."),
    ]);
    let provider = Arc::new(ScriptedProvider::new(script));
    let context = RequestContext::new().with_approval(Arc::new(PauseFor::tools(["get_weather"])));
    Agent::new(provider, SCENARIO_MODEL)
        .with_tools(scenario_tools())
        .with_context(context)
}

async fn collect(stream: EventStream) -> Vec<Event> {
    stream.map(|item| item.expect("the run does not fail")).collect().await
}

async fn approval_round_trip(approved: bool) {
    let reader = Reader::new();
    let agent = approval_agent();
    let question = Message::user("What is the weather in Paris?");
    let (stream, transcript) = agent.stream_with_transcript(vec![question], Signal::new());
    let events = collect(stream).await;
    let paused = transcript.paused().expect("the run paused");

    // The paused run as the client shows it: the call waits for a person.
    let read = reader.read(
        &body(UiStream::new().with_message_id("msg-a"), &events, None).await,
        None,
    );
    let part = tool_part(&read.message, "toolu_01").clone();
    assert_eq!(part["state"], "approval-requested");
    assert_eq!(part["approval"]["id"], "toolu_01");
    assert_eq!(part["input"], json!({ "city": "Paris" }));
    assert!(read.chunks.ends_with(&["finish".to_owned()]));

    // The person answers as `addToolApprovalResponse` does, and `useChat` posts the chat.
    let mut answered = read.message.clone();
    for part in answered["parts"].as_array_mut().into_iter().flatten() {
        if part["toolCallId"] == "toolu_01" {
            part["state"] = json!("approval-responded");
            part["approval"]["approved"] = json!(approved);
            if !approved {
                part["approval"]["reason"] = json!("Not today.");
            }
        }
    }
    let user =
        json!({ "id": "u1", "role": "user", "parts": [{ "type": "text", "text": "What is the weather in Paris?" }] });
    let body_json = json!({ "id": "chat-1", "messages": [user, answered.clone()], "trigger": "submit-message" });
    let request = ChatRequest::from_json(body_json.to_string().as_bytes()).expect("the request");
    let decisions = request.decisions();
    let expected = if approved {
        Approval::Allow
    } else {
        Approval::deny("Not today.")
    };
    assert_eq!(decisions.get("toolu_01"), Some(&expected));
    let continued = request.last_assistant().expect("the client continues its message");
    assert_eq!(continued.id, "msg-a");

    // The resumed run continues the same message on the client.
    let (stream, _) = agent.resume_stream(paused, decisions, Signal::new());
    let events = collect(stream).await;
    let ui = UiStream::new().continuing(continued);
    let read = reader.read(&body(ui, &events, None).await, Some(&answered));
    assert_eq!(read.message["id"], "msg-a");
    let part = tool_part(&read.message, "toolu_01");
    let context = format!(
        "events {events:#?}\nchunks {:?}\nmessage {:#}",
        read.chunks, read.message
    );
    if approved {
        assert_eq!(part["state"], "output-available", "{context}");
        assert_eq!(part["output"]["content"][0]["text"], "Sunny, 21°C in Paris.");
        assert_eq!(part["approval"]["approved"], true);
    } else {
        assert_eq!(part["state"], "output-denied", "{context}");
        assert_eq!(part["approval"]["reason"], "Not today.");
    }
    assert!(joined(&read.message, "text").ends_with("It is sunny in Paris."));
    let tool_parts = read.message["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|part| part["toolCallId"] == "toolu_01")
        .count();
    assert_eq!(tool_parts, 1, "the call stays one part");
}
