//! The real CLI's runs are isolated from the machine's own settings: a user settings file whose
//! hook would write a marker, and a project `CLAUDE.md` whose text would reach the model, take
//! no effect by default and both do when the sources are turned on.

use std::path::Path;

use patchbay_claude_agent::{ClaudeAgentConfig, ClaudeAgentProvider, SettingSource};
use patchbay_conformance::Recording;
use patchbay_conformance::mock::anthropic::AnthropicWire;
use patchbay_conformance::mock::{MockServer, Serve};
use patchbay_core::{Message, RequestContext, Signal, ToolSet};
use patchbay_scripted::{Part, Response, Turn};
use serde_json::json;

use crate::support;

/// Text of the project's `CLAUDE.md`: found in a request only if the CLI read it.
const MEMORY: &str = "PROJECT-MEMORY-7f3a: answer in French.";

/// One turn of the real CLI in `project` reading settings from `sources`; whether the hook's marker
/// was written and whether any request to the model carried the project memory.
async fn run(project: &Path, sources: &[SettingSource]) -> (bool, bool) {
    let cli = support::real_cli().path().to_path_buf();
    let answer = Serve::Turn(Turn::Respond(
        Response::new(vec![Part::text("Bonjour.")]).with_usage(10, 5),
    ));
    let server = MockServer::builder(AnthropicWire)
        .serve([answer])
        .repeat_last()
        .start()
        .await
        .unwrap_or_else(|e| panic!("mock: {e}"));
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let marker = home.path().join("hook-ran");
    // The user's settings (CLAUDE_CONFIG_DIR is `home` in the offline environment): a hook on
    // every prompt that writes the marker.
    let hook = json!({ "type": "command", "command": format!("touch '{}'", marker.display()) });
    let settings = json!({ "hooks": { "UserPromptSubmit": [ { "hooks": [hook] } ] } });
    std::fs::write(home.path().join("settings.json"), settings.to_string()).unwrap_or_else(|e| panic!("settings: {e}"));
    let config: ClaudeAgentConfig = support::offline(&cli, &server.url(), home.path())
        .with_session_markers(false)
        .with_setting_sources(sources.iter().copied());
    let provider = ClaudeAgentProvider::new(config).unwrap_or_else(|e| panic!("provider: {e}"));
    let context = RequestContext::new().with_working_dir(project);
    let messages = [Message::user("Say hello.")];
    let recording = Recording::call(
        &provider,
        &messages,
        &ToolSet::new(),
        "claude-test",
        &Signal::new(),
        Some(&context),
    )
    .await;
    assert!(recording.error.is_none(), "{:?}", recording.error);
    assert_eq!(recording.text(), "Bonjour.");
    let memory_sent = server
        .requests()
        .iter()
        .any(|r| r.body.to_string().contains("PROJECT-MEMORY-7f3a"));
    (marker.exists(), memory_sent)
}

pub(crate) async fn the_machines_settings_and_claude_md_apply_only_when_asked() {
    let project = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    std::fs::write(project.path().join("CLAUDE.md"), MEMORY).unwrap_or_else(|e| panic!("CLAUDE.md: {e}"));
    let (hook, memory) = run(project.path(), &[]).await;
    assert!(!hook, "by default the user's hook must not run");
    assert!(!memory, "by default the project's CLAUDE.md must not reach the model");
    let (hook, memory) = run(project.path(), &[SettingSource::User, SettingSource::Project]).await;
    assert!(hook, "with the user source on, the user's hook runs");
    assert!(memory, "with the project source on, CLAUDE.md reaches the model");
}
