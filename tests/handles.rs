//! The handle of a started run (`RunHandle`: cancel, session id) and the sink callbacks
//! `sinks.rs` does not cover: reasoning, the session id, the error that ended the stream, and
//! the error as broadcast subscribers see it.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant};

use futures::StreamExt;
use patchbay::scripted::{End, Part, Response, ScriptedError, Turn};
use patchbay::{
    Agent, ErrorKind, Event, EventStream, Message, Provider, ProviderError, ProviderInfo, RequestContext, Signal,
    ToolResult, ToolSet, async_trait, sink::Broadcast, sink::EventBroadcast, sink::EventSink, sink::RunHandle,
    tool::ToolStatus,
};
use serde_json::{Value, json};

use crate::common::{echo_call, provider, respond, tools};

/// Far below the 30 s of the `slow` tool, far above any honest cancel.
const PROMPTLY: Duration = Duration::from_secs(5);

/// A provider whose `Started` carries a session id, as an agent runtime's does.
struct WithSession {
    inner: Arc<dyn Provider>,
    session: &'static str,
}

#[async_trait]
impl Provider for WithSession {
    fn info(&self) -> &ProviderInfo {
        self.inner.info()
    }

    async fn create_response(
        &self,
        messages: &[Message],
        tools: &ToolSet,
        model: &str,
        signal: &Signal,
        context: Option<&RequestContext>,
    ) -> Result<EventStream, ProviderError> {
        let stream = self
            .inner
            .create_response(messages, tools, model, signal, context)
            .await?;
        let session = self.session.to_string();
        Ok(Box::pin(stream.map(move |item| match item {
            Ok(Event::Started {
                response_id,
                model,
                warnings,
                ..
            }) => Ok(Event::Started {
                response_id,
                model,
                session_id: Some(session.clone()),
                warnings,
            }),
            other => other,
        })))
    }
}

fn with_session(turns: Vec<Turn>) -> Arc<dyn Provider> {
    Arc::new(WithSession {
        inner: provider(turns),
        session: "sess-1",
    })
}

/// The rest of a handle's stream: its events and the error that ended it.
async fn rest(handle: &mut RunHandle) -> (Vec<Event>, Option<ProviderError>) {
    let mut events = Vec::new();
    while let Some(item) = handle.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(error) => {
                assert!(handle.next().await.is_none(), "nothing follows the error");
                return (events, Some(error));
            }
        }
    }
    (events, None)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_handle_cancel_stops_a_running_tool_and_ends_with_cancelled() {
    let agent = Agent::new(
        provider(vec![respond(vec![Part::tool_call("c1", "slow", json!({}))], 1, 1)]),
        "m",
    )
    .with_tools(tools(Arc::new(AtomicUsize::new(0))));
    let mut handle = agent.start(vec![Message::user("go")]);
    let mut seen = Vec::new();
    while !seen.iter().any(|e| matches!(e, Event::ToolCall { .. })) {
        match handle.next().await {
            Some(Ok(event)) => seen.push(event),
            other => panic!("the run ended before its tool call: {other:?}"),
        }
    }
    // Poll on until the run goes quiet: the 30 s tool is running.
    while let Ok(item) = tokio::time::timeout(Duration::from_millis(300), handle.next()).await {
        match item {
            Some(Ok(event)) => seen.push(event),
            other => panic!("the run ended while its tool should run: {other:?}"),
        }
    }

    let cancelled = Instant::now();
    handle.cancel();
    let (events, error) = rest(&mut handle).await;
    assert!(cancelled.elapsed() < PROMPTLY, "{:?}", cancelled.elapsed());
    assert_eq!(error.as_ref().map(ProviderError::kind), Some(ErrorKind::Cancelled));
    assert!(handle.signal().is_cancelled());
    let aborted = events
        .iter()
        .any(|e| matches!(e, Event::ToolResult { result, .. } if result.status == ToolStatus::Aborted));
    assert!(aborted, "the tool saw the cancel: {events:#?}");
    assert!(!events.iter().any(|e| matches!(e, Event::Finish { .. })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_handle_cancel_ends_a_stalled_model_stream() {
    let stalled = Response::new(vec![Part::text("half an answer")]).with_end(End::Stall);
    let agent = Agent::new(provider(vec![Turn::Respond(stalled)]), "m");
    let mut handle = agent.start(vec![Message::user("go")]);
    let mut text = String::new();
    while text != "half an answer" {
        match handle.next().await {
            Some(Ok(Event::TextDelta { text: delta, .. })) => text.push_str(&delta),
            Some(Ok(_)) => {}
            other => panic!("the stream ended before its text: {other:?}"),
        }
    }
    let cancelled = Instant::now();
    handle.cancel();
    let (events, error) = rest(&mut handle).await;
    assert!(cancelled.elapsed() < PROMPTLY, "{:?}", cancelled.elapsed());
    assert_eq!(error.map(|e| e.kind()), Some(ErrorKind::Cancelled));
    assert!(!events.iter().any(|e| matches!(e, Event::Finish { .. })), "{events:#?}");
}

#[tokio::test]
async fn a_run_cancelled_before_its_first_poll_yields_only_cancelled() {
    let scripted = provider(vec![respond(vec![Part::text("never")], 1, 1)]);
    let agent = Agent::new(scripted.clone(), "m");
    let mut handle = agent.start(vec![Message::user("go")]);
    handle.cancel();
    let (events, error) = rest(&mut handle).await;
    assert!(events.is_empty(), "{events:#?}");
    assert_eq!(error.map(|e| e.kind()), Some(ErrorKind::Cancelled));
    assert!(scripted.requests().is_empty(), "no model call was made");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_id_is_known_once_started_carries_it() {
    let agent = Agent::new(with_session(vec![respond(vec![Part::text("hi")], 1, 1)]), "m");
    let mut handle = agent.start(vec![Message::user("go")]);
    assert_eq!(handle.session_id(), None, "unknown before the run starts");
    let mut watch = handle.session_watch();
    let watcher = tokio::spawn(async move {
        watch
            .wait_for(Option::is_some)
            .await
            .map(|id| id.clone())
            .ok()
            .flatten()
    });

    let first = handle.next().await;
    assert!(matches!(first, Some(Ok(Event::Started { .. }))), "{first:?}");
    assert_eq!(
        handle.session_id().as_deref(),
        Some("sess-1"),
        "known right after `Started`"
    );
    let watched = tokio::time::timeout(PROMPTLY, watcher)
        .await
        .expect("the watcher woke")
        .expect("the watcher did not panic");
    assert_eq!(watched.as_deref(), Some("sess-1"));

    let (_, error) = rest(&mut handle).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(handle.session_id().as_deref(), Some("sess-1"));
}

#[tokio::test]
async fn session_id_stays_unknown_when_started_has_none() {
    let agent = Agent::new(provider(vec![respond(vec![Part::text("hi")], 1, 1)]), "m");
    let mut handle = agent.start(vec![Message::user("go")]);
    let watch = handle.session_watch();
    let (events, error) = rest(&mut handle).await;
    assert!(error.is_none() && !events.is_empty());
    assert_eq!(handle.session_id(), None);
    assert_eq!(*watch.borrow(), None);
}

/// Records every callback, in order.
#[derive(Default)]
struct Calls {
    log: Vec<String>,
    reasoning: Vec<(usize, String)>,
    sessions: Vec<String>,
    errors: Vec<(ErrorKind, String)>,
    events: Vec<Event>,
}

impl EventSink for Calls {
    fn on_text(&mut self, index: usize, text: &str) {
        self.log.push(format!("text {index} {text}"));
    }
    fn on_reasoning(&mut self, index: usize, text: &str) {
        self.log.push(format!("reasoning {index} {text}"));
        self.reasoning.push((index, text.to_string()));
    }
    fn on_tool_call(&mut self, id: &str, name: &str, _input: &Value) {
        self.log.push(format!("tool_call {id} {name}"));
    }
    fn on_tool_result(&mut self, id: &str, _name: &str, result: &ToolResult) {
        self.log.push(format!("tool_result {id} {}", result.text_content()));
    }
    fn on_session_id(&mut self, session_id: &str) {
        self.log.push(format!("session {session_id}"));
        self.sessions.push(session_id.to_string());
    }
    fn on_event(&mut self, event: &Event) {
        self.log.push("event".into());
        self.events.push(event.clone());
    }
    fn on_error(&mut self, error: &ProviderError) {
        self.log.push(format!("error {:?}", error.kind()));
        self.errors.push((error.kind(), error.to_string()));
    }
}

#[tokio::test]
async fn a_sink_gets_reasoning_in_order_and_the_session_id_once() {
    // Two model calls, both starting with the session id; the run reports it once.
    let agent = Agent::new(
        with_session(vec![
            respond(
                vec![Part::thinking("first I look it up", "sig-1"), echo_call("c1", "ping")],
                1,
                1,
            ),
            respond(vec![Part::thinking("then I answer", "sig-2"), Part::text("pong")], 1, 1),
        ]),
        "m",
    )
    .with_tools(tools(Arc::new(AtomicUsize::new(0))));
    let mut sink = Calls::default();
    let response = patchbay::sink::drive(agent.stream(vec![Message::user("go")], Signal::new()), &mut sink)
        .await
        .expect("the run succeeds");

    assert_eq!(sink.sessions, ["sess-1"]);
    assert_eq!(response.session_id.as_deref(), Some("sess-1"));
    let thought: String = sink.reasoning.iter().map(|(_, text)| text.as_str()).collect();
    assert_eq!(thought, "first I look it upthen I answer");
    let from_events: Vec<(usize, String)> = sink
        .events
        .iter()
        .filter_map(|e| match e {
            Event::ReasoningDelta { index, text } => Some((*index, text.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(sink.reasoning, from_events, "one call per delta, in stream order");
    assert!(sink.reasoning.len() > 2, "word-sized deltas: {:?}", sink.reasoning);

    // The specific callback comes right before `on_event` for the same event.
    let first = |prefix: &str| sink.log.iter().position(|l| l.starts_with(prefix));
    let session = first("session ").expect("on_session_id");
    assert_eq!(sink.log[session + 1], "event", "{:#?}", sink.log);
    assert_eq!(
        session, 0,
        "the session id comes with `Started`, first: {:#?}",
        sink.log
    );
    let (call, result, text) = (
        first("tool_call c1 echo"),
        first("tool_result c1 ping"),
        first("text 1 pong"),
    );
    assert!(call < result && result < text, "{:#?}", sink.log);
    assert!(sink.errors.is_empty());
}

#[tokio::test]
async fn a_sink_gets_the_error_that_ended_the_stream_with_its_kind() {
    let failing = Response::new(vec![Part::text("partial")]).with_end(End::Error(ScriptedError::new(
        ErrorKind::Overloaded,
        "the model is busy",
    )));
    let agent = Agent::new(provider(vec![Turn::Respond(failing)]), "m");
    let broadcast = EventBroadcast::new(64);
    let mut subscriber = broadcast.subscribe();
    let stream = broadcast.tap(agent.stream(vec![Message::user("go")], Signal::new()));
    let mut sink = Calls::default();
    let error = patchbay::sink::drive(stream, &mut sink)
        .await
        .expect_err("the run fails");

    assert_eq!(error.kind(), ErrorKind::Overloaded);
    assert_eq!(sink.errors.len(), 1, "{:?}", sink.errors);
    assert_eq!(sink.errors[0].0, ErrorKind::Overloaded);
    assert!(sink.errors[0].1.contains("the model is busy"), "{:?}", sink.errors);
    assert_eq!(
        sink.log.last().map(String::as_str),
        Some("error Overloaded"),
        "the error is the last callback: {:#?}",
        sink.log
    );
    assert!(sink.log.iter().any(|l| l == "text 0 partial"));

    let mut last = None;
    while let Ok(message) = subscriber.try_recv() {
        last = Some(message);
    }
    match last {
        Some(Broadcast::Error { kind, message }) => {
            assert_eq!(kind, ErrorKind::Overloaded);
            assert!(message.contains("the model is busy"), "{message}");
        }
        other => panic!("subscribers get the error last: {other:?}"),
    }
}

#[tokio::test]
async fn a_call_that_fails_before_any_event_reaches_on_error_alone() {
    let agent = Agent::new(
        provider(vec![Turn::Fail(ScriptedError::new(
            ErrorKind::RateLimited,
            "slow down",
        ))]),
        "m",
    );
    let mut sink = Calls::default();
    let error = patchbay::sink::drive(agent.stream(vec![Message::user("go")], Signal::new()), &mut sink)
        .await
        .expect_err("the call fails");
    assert_eq!(error.kind(), ErrorKind::RateLimited);
    assert_eq!(sink.log, ["error RateLimited"]);
}
