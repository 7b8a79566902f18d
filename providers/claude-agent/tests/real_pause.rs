//! The real Claude Code CLI pausing on a permission a person answers from a later request,
//! driven by `patchbay_core::Agent` (`run` gives `paused`, `resume` brings the decision).

use std::sync::Arc;

use patchbay_claude_agent::ClaudeAgentProvider;
use patchbay_conformance::{Recording, text_of};
use patchbay_core::agent::Decisions;
use patchbay_core::context::{Approval, PauseFor};
use patchbay_core::{Agent, Event, FinishReason, Message, RequestContext, Signal};
use serde_json::json;

use crate::real::{Real, real, text, tool};

/// Pause on `Write`, then resume with `decision`; returns the resumed answer's text, whether
/// the file was written, and the last request's messages.
async fn pause_then(decision: Approval) -> (String, bool, String) {
    let workdir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let file = workdir.path().join("note.txt");
    let input = json!({ "file_path": file.display().to_string(), "content": "hi" });
    let Real {
        server,
        home: _home,
        config,
    } = real(vec![tool("toolu_p1", "Write", input.clone()), text("Done.")]).await;
    let provider = ClaudeAgentProvider::new(config).unwrap_or_else(|e| panic!("{e}"));
    let provider = Arc::new(provider);
    let context = RequestContext::new()
        .with_working_dir(workdir.path())
        .with_approval(Arc::new(PauseFor::tools(["Write"])));
    let agent = Agent::new(provider.clone(), "claude-test").with_context(context);
    let outcome = agent
        .run(vec![Message::user("write a note")], Signal::new())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let paused = outcome
        .paused
        .unwrap_or_else(|| panic!("not paused: {:?}", outcome.response));
    assert_eq!(paused.pending.len(), 1);
    assert_eq!(paused.pending[0].tool_name, "Write");
    assert_eq!(paused.pending[0].input, input);
    assert!(paused.session_id.is_some());
    assert!(!file.exists(), "nothing written while paused");
    assert_eq!(provider.paused_processes(), 1);
    let posts = || server.requests().into_iter().filter(|r| r.method == "POST").count();
    assert_eq!(posts(), 1);

    let id = paused.pending[0].tool_use_id.clone();
    let decisions: Decisions = [(id, decision)].into();
    let (stream, _transcript) = agent.resume_stream(paused, decisions, Signal::new());
    let Recording { events, error } = Recording::collect(stream).await;
    assert!(error.is_none(), "{error:?}");
    assert!(matches!(events.first(), Some(Event::Started { .. })), "{events:?}");
    assert!(
        matches!(
            events.last(),
            Some(Event::Finish {
                reason: FinishReason::Stop,
                ..
            })
        ),
        "{events:?}"
    );
    assert_eq!(provider.paused_processes(), 0);
    let last = server
        .requests()
        .into_iter()
        .rev()
        .find(|r| r.method == "POST")
        .map(|r| r.body["messages"].to_string())
        .unwrap_or_default();
    (text_of(&events), file.exists(), last)
}

pub(crate) async fn a_paused_write_runs_after_the_person_allows_it() {
    let (text, written, _) = pause_then(Approval::Allow).await;
    assert_eq!(text, "Done.");
    assert!(written, "the CLI ran the tool once allowed");
}

pub(crate) async fn a_paused_write_denied_later_reaches_the_model_as_a_denial() {
    let (text, written, last) = pause_then(Approval::deny("a person said no")).await;
    assert_eq!(text, "Done.");
    assert!(!written);
    assert!(last.contains("a person said no"), "{last}");
}
