//! What happens while a run goes on: a host tool's progress reports stream as
//! `ToolProgress` events while it runs, and a tool source's live side (`LiveTools`) adds log
//! events and changes the tool list of the next model call.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use patchbay::agent::{AttachedTools, LiveTools};
use patchbay::scripted::Part;
use patchbay::{
    Agent, Event, FnTool, Message, RequestContext, Signal, ToolContext, ToolResult, ToolSet, ToolSource,
    tool::ProgressUpdate,
};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::Notify;

use crate::common::{assert_valid, collect, provider, respond};

#[derive(Deserialize, schemars::JsonSchema)]
struct Empty {}

/// A tool that reports, then waits until the test saw the report.
fn reporting_tool(release: Arc<Notify>) -> ToolSet {
    ToolSet::new().with(FnTool::new(
        "work",
        "Reports progress, then waits to be released.",
        move |_: Empty, cx: ToolContext| {
            let release = release.clone();
            async move {
                cx.progress
                    .report(ProgressUpdate::message("halfway").with_progress(1.0, Some(2.0)));
                release.notified().await;
                ToolResult::text("done")
            }
        },
    ))
}

#[tokio::test]
async fn a_tool_reporting_faster_than_the_host_reads_keeps_a_bounded_backlog() {
    // 10,000 reports before the tool returns, none read meanwhile: before the bound, every
    // one was kept (and came out), so a chatty tool grew the run's memory without limit.
    let tools = ToolSet::new().with(FnTool::new(
        "chatty",
        "Reports progress many times, then answers.",
        |_: Empty, cx: ToolContext| async move {
            for step in 0..10_000u32 {
                cx.progress
                    .report(ProgressUpdate::message("tick").with_progress(f64::from(step), None));
            }
            ToolResult::text("done")
        },
    ));
    let agent = Agent::new(
        provider(vec![
            respond(vec![Part::tool_call("c1", "chatty", json!({}))], 1, 1),
            respond(vec![Part::text("ok")], 1, 1),
        ]),
        "m",
    )
    .with_tools(tools);
    let (events, error) = collect(agent.stream(vec![Message::user("go")], Signal::new())).await;
    assert!(error.is_none(), "{error:?}");
    let progress = events
        .iter()
        .filter(|e| matches!(e, Event::ToolProgress { .. }))
        .count();
    assert!(progress > 0, "no progress at all");
    assert!(
        progress <= patchbay::agent::PROGRESS_BACKLOG,
        "{progress} progress events kept for a host that read none"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ToolResult { result, .. } if result.text_content() == "done")),
        "the call's result still arrives"
    );
    assert_valid(&events, None);
}

#[tokio::test]
async fn tool_progress_streams_while_the_tool_runs() {
    let release = Arc::new(Notify::new());
    let agent = Agent::new(
        provider(vec![
            respond(vec![Part::tool_call("c1", "work", json!({}))], 1, 1),
            respond(vec![Part::text("ok")], 1, 1),
        ]),
        "m",
    )
    .with_tools(reporting_tool(release.clone()));
    let mut stream = agent.stream(vec![Message::user("go")], Signal::new());
    let mut events = Vec::new();
    // The tool finishes only once its progress event came out: before, the agent ran the
    // calls to their end before yielding anything, so this waited forever.
    let progress = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(item) = stream.next().await {
            let event = item.expect("no error");
            let is_progress = matches!(event, Event::ToolProgress { .. });
            events.push(event);
            if is_progress {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(progress, Ok(true), "no ToolProgress while the tool ran: {events:#?}");
    release.notify_one();
    while let Some(item) = stream.next().await {
        events.push(item.expect("no error"));
    }
    assert_valid(&events, None);
    let progress = events.iter().position(|e| matches!(e, Event::ToolProgress { .. }));
    let result = events.iter().position(|e| matches!(e, Event::ToolResult { .. }));
    assert!(progress < result, "{events:#?}");
    assert!(
        events.iter().any(
            |e| matches!(e, Event::ToolProgress { id, message: Some(m), progress: Some(p), total: Some(t) }
            if id == "c1" && m == "halfway" && *p == 1.0 && *t == 2.0)
        ),
        "{events:#?}"
    );
}

/// A source whose tools change after the first step, and that logs while tools run.
#[derive(Default)]
struct Changing {
    changed: AtomicBool,
    events: Mutex<Vec<Event>>,
    ready: Notify,
}

impl Changing {
    fn log(&self, text: &str) {
        self.events.lock().expect("not poisoned").push(Event::Log {
            source: "fake".into(),
            level: "info".into(),
            logger: None,
            data: json!(text),
        });
        self.ready.notify_one();
    }
}

fn named(name: &'static str) -> ToolSet {
    ToolSet::new().with(FnTool::new(name, "A tool.", |_: Empty, _cx: ToolContext| async move {
        ToolResult::text("ran")
    }))
}

#[async_trait]
impl LiveTools for Changing {
    fn take_events(&self) -> Vec<Event> {
        std::mem::take(&mut *self.events.lock().expect("not poisoned"))
    }

    async fn events_ready(&self) {
        self.ready.notified().await;
    }

    async fn changed_tools(&self) -> Option<ToolSet> {
        self.changed.swap(false, Ordering::SeqCst).then(|| named("second"))
    }
}

struct Source(Arc<Changing>);

#[async_trait]
impl ToolSource for Source {
    async fn attach(&self, _context: &RequestContext, _signal: &Signal) -> AttachedTools {
        AttachedTools {
            tools: named("first"),
            connected: vec!["fake".into()],
            live: Some(self.0.clone()),
            ..AttachedTools::default()
        }
    }
}

#[tokio::test]
async fn a_live_source_logs_and_its_changed_tools_reach_the_next_model_call() {
    let live = Arc::new(Changing::default());
    let trigger = live.clone();
    let tools = ToolSet::new().with(FnTool::new(
        "change",
        "Changes the source's tools and logs.",
        move |_: Empty, _cx: ToolContext| {
            let trigger = trigger.clone();
            async move {
                trigger.changed.store(true, Ordering::SeqCst);
                trigger.log("tools changed");
                ToolResult::text("changed")
            }
        },
    ));
    let scripted = provider(vec![
        respond(vec![Part::tool_call("c1", "change", json!({}))], 1, 1),
        respond(vec![Part::text("ok")], 1, 1),
    ]);
    let agent = Agent::new(scripted.clone(), "m")
        .with_tools(tools)
        .with_tool_source(Arc::new(Source(live)));
    let (events, error) = collect(agent.stream(vec![Message::user("go")], Signal::new())).await;
    assert!(error.is_none(), "{error:?}");
    assert_valid(&events, None);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Log { source, data, .. } if source == "fake" && data == "tools changed")),
        "{events:#?}"
    );
    let names = |i: usize| -> Vec<String> {
        let mut names: Vec<String> = scripted.requests()[i].tools.clone();
        names.sort();
        names
    };
    assert_eq!(names(0), ["change", "first"]);
    assert_eq!(names(1), ["change", "second"], "the second call sees the changed tools");
}
