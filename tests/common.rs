use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use patchbay::scripted::{Part, Response, Script, ScriptedProvider, Turn};
use patchbay::{Event, EventStream, FnTool, ProviderError, ToolContext, ToolResult, ToolSet};
use patchbay_conformance::Recording;
use serde::Deserialize;

#[derive(Deserialize, schemars::JsonSchema)]
pub(crate) struct Echo {
    pub(crate) text: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub(crate) struct Empty {}

/// `echo {text}` and `slow {}` (sleeps 30 s unless cancelled), counting executions.
pub(crate) fn tools(count: Arc<AtomicUsize>) -> ToolSet {
    let echo_count = count.clone();
    let echo = FnTool::new("echo", "Echo the text.", move |input: Echo, _cx: ToolContext| {
        echo_count.fetch_add(1, Ordering::SeqCst);
        async move { ToolResult::text(input.text) }
    });
    let slow = FnTool::new(
        "slow",
        "Sleep for a long time.",
        move |_: Empty, cx: ToolContext| async move {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(30)) => ToolResult::text("slept"),
                _ = cx.signal.cancelled() => ToolResult::aborted(),
            }
        },
    );
    ToolSet::new().with(echo).with(slow)
}

pub(crate) fn echo_call(id: &str, text: &str) -> Part {
    Part::tool_call(id, "echo", serde_json::json!({ "text": text }))
}

pub(crate) fn provider(turns: Vec<Turn>) -> Arc<ScriptedProvider> {
    Arc::new(ScriptedProvider::new(Script::new(turns)))
}

pub(crate) fn respond(parts: Vec<Part>, input: u64, output: u64) -> Turn {
    Turn::Respond(Response::new(parts).with_usage(input, output))
}

/// A stream read to its end: its events and the error that ended it.
pub(crate) async fn collect(stream: EventStream) -> (Vec<Event>, Option<ProviderError>) {
    let Recording { events, error } = Recording::collect(stream).await;
    (events, error)
}

pub(crate) fn assert_valid(events: &[Event], error: Option<&ProviderError>) {
    if let Err(violations) = patchbay::validate::validate(events.iter().map(Ok).chain(error.map(Err))) {
        panic!("lifecycle violations: {violations:#?}\nevents: {events:#?}");
    }
}
