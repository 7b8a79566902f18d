//! A scripted conversation drives `patchbay_core::Agent` with `coding_tools()`; the events
//! are snapshotted. (The lead may mirror this into the conformance crate.)

use std::sync::Arc;

use futures::StreamExt;
use patchbay_core::{Agent, ErrorKind, Event, Message, RequestContext, Signal, tool::ToolStatus};
use patchbay_scripted::{Part, Script, ScriptedProvider, Turn};
use patchbay_tools::{Workspace, coding_tools};
use serde_json::{Value, json};

use crate::support::{Fixture, assert_processes_gone, wait_for_pids};

fn script() -> Script {
    Script::new(vec![
        Turn::parts(vec![
            Part::text("Let me look at the folder."),
            Part::tool_call("call_1", "read", json!({"path": "."})),
            Part::tool_call("call_2", "glob", json!({"pattern": "**/*.rs"})),
        ]),
        Turn::parts(vec![
            Part::tool_call("call_3", "grep", json!({"pattern": "fn \\w+", "glob": "*.rs"})),
            Part::tool_call(
                "call_4",
                "read",
                json!({"path": "src/main.rs", "offset": 2, "limit": 1}),
            ),
        ]),
        Turn::parts(vec![
            Part::tool_call(
                "call_5",
                "edit",
                json!({"path": "src/main.rs", "old_string": "Hello", "new_string": "Goodbye"}),
            ),
            Part::tool_call(
                "call_6",
                "write",
                json!({"path": "notes/todo.md", "content": "- ship it\n"}),
            ),
            Part::tool_call("call_7", "read", json!({"path": "../outside/secret.txt"})),
            Part::tool_call("call_8", "bash", json!({"command": "ls"})),
        ]),
        Turn::text("A small Rust program; its greeting now says Goodbye."),
    ])
}

#[tokio::test]
async fn a_scripted_agent_lists_reads_greps_and_edits() {
    let fx = Fixture::new();
    fx.file("Cargo.toml", "[package]\nname = \"demo\"\n").file(
        "src/main.rs",
        "fn main() {\n    println!(\"Hello\");\n}\n\nfn helper() {}\n",
    );
    let provider = Arc::new(ScriptedProvider::new(script()));
    // The request's working directory is the root (the workspace's own root is not used).
    // bash is not enabled: the model's call to it is an unknown tool.
    let agent = Agent::new(provider, "scripted")
        .with_tools(coding_tools(Workspace::new(fx.outer.join("unused"))))
        .with_context(RequestContext::new().with_working_dir(&fx.root));
    let stream = agent.stream(vec![Message::user("what is in this folder?")], Signal::new());
    let items: Vec<_> = stream.collect().await;
    patchbay_core::validate::validate(items.iter().map(|item| item.as_ref())).unwrap();
    let events: Vec<Event> = items.into_iter().map(Result::unwrap).collect();

    assert_eq!(
        fx.read("src/main.rs"),
        "fn main() {\n    println!(\"Goodbye\");\n}\n\nfn helper() {}\n"
    );
    assert_eq!(fx.read("notes/todo.md"), "- ship it\n");

    insta::with_settings!({ sort_maps => true }, {
        insta::assert_json_snapshot!("agent_coding_session", normalize(&events, &fx), {
            ".**.metrics" => "[metrics]",
        });
    });
}

/// Events as JSON, with the root path replaced, streamed tool input left out and the text
/// deltas of a block joined (the snapshot is about the tools, not the chunking).
fn normalize(events: &[Event], fx: &Fixture) -> Vec<Value> {
    let root = fx.root.display().to_string();
    let mut out: Vec<Value> = Vec::new();
    for event in events {
        match event {
            Event::ToolCallStart { .. } | Event::ToolCallDelta { .. } => continue,
            Event::TextDelta { text, .. } => {
                if let Some(last) = out.last_mut().filter(|last| last["type"] == "text_delta") {
                    let joined = format!("{}{text}", last["text"].as_str().unwrap_or_default());
                    last["text"] = Value::String(joined);
                    continue;
                }
            }
            _ => {}
        }
        let text = serde_json::to_string(event).unwrap().replace(&root, "[root]");
        out.push(serde_json::from_str(&text).unwrap());
    }
    out
}

#[tokio::test]
async fn cancelling_a_run_during_bash_leaves_no_process() {
    let fx = Fixture::new();
    let command = "echo $$ > pids; sleep 60 & echo $! >> pids; wait";
    let script = Script::new(vec![
        Turn::parts(vec![Part::tool_call("call_1", "bash", json!({"command": command}))]),
        Turn::text("never reached"),
    ]);
    let provider = Arc::new(ScriptedProvider::new(script));
    let workspace = Workspace::new(&fx.root).with_bash(true);
    let agent = Agent::new(provider, "scripted").with_tools(coding_tools(workspace));
    let signal = Signal::new();
    let stream = agent.stream(vec![Message::user("run it")], signal.clone());
    let cancel = async {
        let pids = wait_for_pids(&fx.root.join("pids"), 2).await;
        signal.cancel();
        pids
    };
    let (items, pids) = tokio::join!(stream.collect::<Vec<_>>(), cancel);
    assert_processes_gone(&pids);
    let result = items.iter().find_map(|item| match item {
        Ok(Event::ToolResult { result, .. }) => Some(result.status),
        _ => None,
    });
    assert_eq!(result, Some(ToolStatus::Aborted));
    let last = items.last().unwrap().as_ref().unwrap_err();
    assert_eq!(last.kind(), ErrorKind::Cancelled);
}
