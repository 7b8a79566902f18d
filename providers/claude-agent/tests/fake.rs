//! The process layer and control protocol on the fake CLI (no real CLI needed): command line
//! and environment, typed failures, cancel and drop leave no process, approvals, host tools.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use patchbay_claude_agent::{ClaudeAgentConfig, ClaudeAgentProvider};
use patchbay_conformance::Recording;
use patchbay_core::{
    ErrorKind, Event, FnTool, Message, Provider, ProviderError, RequestContext, Signal, ToolContext, ToolResult,
    ToolSet, async_trait, context::Approval, context::ApprovalHandler, context::ApprovalRequest, context::Session,
};
use serde_json::{Value, json};

use crate::support;

struct Fake {
    state: tempfile::TempDir,
    config: ClaudeAgentConfig,
}

fn fake(transcript: &str) -> Fake {
    let state = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let path = if transcript.ends_with(".jsonl") {
        PathBuf::from(transcript)
    } else {
        support::transcript(transcript)
    };
    let config = ClaudeAgentConfig::new()
        .with_cli_path(support::fake_cli())
        .with_env("FAKE_CLAUDE_TRANSCRIPT", path.display().to_string())
        .with_env("FAKE_CLAUDE_STATE", state.path().display().to_string())
        .with_stop_grace(Duration::from_millis(300));
    Fake { state, config }
}

impl Fake {
    fn provider(&self) -> ClaudeAgentProvider {
        ClaudeAgentProvider::new(self.config.clone()).unwrap_or_else(|e| panic!("{e}"))
    }

    fn files(&self, prefix: &str) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(self.state.path())
            .map(|dir| dir.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        files.retain(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        });
        files.sort();
        files
    }

    fn argv(&self) -> Value {
        let file = self.files("argv-").into_iter().next().unwrap_or_default();
        std::fs::read_to_string(file)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null)
    }

    fn pid(&self) -> Option<i32> {
        self.files("argv-")
            .first()
            .and_then(|p| p.file_stem()?.to_str()?.strip_prefix("argv-")?.parse().ok())
    }

    fn stdin(&self) -> Vec<Value> {
        let file = self.files("stdin-").into_iter().next().unwrap_or_default();
        std::fs::read_to_string(file)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

fn user_turn(fake: &Fake) -> Value {
    fake.stdin()
        .into_iter()
        .find(|m| m["type"] == "user")
        .unwrap_or_default()
}

fn alive(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

fn gone_within(pid: i32, wait: Duration) -> bool {
    let deadline = Instant::now() + wait;
    while Instant::now() < deadline {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    !alive(pid)
}

/// One call with model `m`, collected.
async fn collect(
    provider: &dyn Provider,
    messages: &[Message],
    tools: &ToolSet,
    context: Option<&RequestContext>,
) -> (Vec<Event>, Option<ProviderError>) {
    let Recording { events, error } = Recording::call(provider, messages, tools, "m", &Signal::new(), context).await;
    (events, error)
}

fn weather_tools() -> ToolSet {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Input {
        city: String,
    }
    ToolSet::new().with(FnTool::new(
        "get_weather",
        "Weather.",
        |input: Input, cx: ToolContext| async move {
            ToolResult::text(format!("Sunny in {}.", input.city)).with_metadata(json!({
                "documents": ["forecast.pdf"],
                "tool_use_id": cx.tool_use_id,
                "project": cx.metadata.get("project_id"),
            }))
        },
    ))
}

#[tokio::test]
async fn a_missing_cli_is_a_config_error() {
    // An explicit path is checked when the provider is built...
    let error = match ClaudeAgentProvider::new(ClaudeAgentConfig::new().with_cli_path("/nonexistent/claude")) {
        Err(error) => error,
        Ok(_) => panic!("a missing CLI was accepted"),
    };
    assert_eq!(error.kind(), ErrorKind::Config);
    assert!(error.to_string().contains("/nonexistent/claude"), "{error}");
    // ...and one named by a call's options when the call starts.
    let fake = fake("text_only");
    let context =
        RequestContext::new().with_provider_options("claude-agent", json!({ "cli_path": "/nonexistent/claude" }));
    let (_, error) = collect(
        &fake.provider(),
        &[Message::user("hi")],
        &ToolSet::new(),
        Some(&context),
    )
    .await;
    let error = error.unwrap_or_else(|| panic!("no error"));
    assert_eq!(error.kind(), ErrorKind::Config);
    assert!(error.to_string().contains("/nonexistent/claude"), "{error}");
    assert!(fake.pid().is_none(), "nothing was started");
}

#[tokio::test]
async fn an_invalid_conversation_fails_before_spawning() {
    let fake = fake("text_only");
    let (_, error) = collect(&fake.provider(), &[Message::assistant("hi")], &ToolSet::new(), None).await;
    assert_eq!(error.map(|e| e.kind()), Some(ErrorKind::InvalidRequest));
    assert!(fake.pid().is_none(), "nothing was started");
}

#[tokio::test]
async fn a_cli_that_exits_early_is_a_process_error_with_exit_code_and_stderr() {
    let mut fake = fake("text_only");
    fake.config = fake.config.clone().with_env("FAKE_CLAUDE_EXIT_AFTER", "9");
    let (events, error) = collect(&fake.provider(), &[Message::user("hi")], &ToolSet::new(), None).await;
    let error = error.unwrap_or_else(|| panic!("no error"));
    assert_eq!(error.kind(), ErrorKind::Process, "{error}");
    assert_eq!(error.facts().exit_code, Some(3));
    assert!(
        error.stderr_tail().is_some_and(|t| t.contains("simulated crash")),
        "{error}"
    );
    assert!(matches!(events.first(), Some(Event::Started { .. })));
}

#[tokio::test]
async fn a_line_past_the_limit_is_a_protocol_error() {
    let mut fake = fake("text_only");
    fake.config = fake.config.clone().with_max_line_bytes(1024);
    let (_, error) = collect(&fake.provider(), &[Message::user("hi")], &ToolSet::new(), None).await;
    assert_eq!(error.map(|e| e.kind()), Some(ErrorKind::Protocol));
    if let Some(pid) = fake.pid() {
        assert!(gone_within(pid, Duration::from_secs(5)), "the CLI was stopped");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_mid_turn_ends_promptly_and_leaves_no_process() {
    let mut fake = fake("cancelled_mid_stream");
    fake.config = fake
        .config
        .clone()
        .with_env("FAKE_CLAUDE_HANG", "1")
        .with_env("FAKE_CLAUDE_IGNORE_TERM", "1");
    let provider = fake.provider();
    let signal = Signal::new();
    let mut stream = provider
        .create_response(&[Message::user("think")], &ToolSet::new(), "m", &signal, None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut text = String::new();
    let mut ended = None;
    while let Some(item) = stream.next().await {
        match item {
            Ok(Event::TextDelta { text: delta, .. }) => {
                text.push_str(&delta);
                if text == "Let me think about that" {
                    signal.cancel();
                }
            }
            Ok(_) => {}
            Err(error) => {
                ended = Some((error, Instant::now()));
                break;
            }
        }
    }
    let (error, at) = ended.unwrap_or_else(|| panic!("no error"));
    assert_eq!(error.kind(), ErrorKind::Cancelled);
    assert!(stream.next().await.is_none(), "nothing after the error");
    let pid = fake.pid().unwrap_or_else(|| panic!("no pid"));
    // The interrupt, stdin EOF and SIGTERM are ignored: SIGKILL after two `cancel_grace`
    // periods (250 ms each).
    assert!(gone_within(pid, Duration::from_secs(5)), "pid {pid} still alive");
    assert!(at.elapsed() < Duration::from_secs(5));
    assert!(
        fake.stdin().iter().any(|m| m["request"]["subtype"] == "interrupt"),
        "interrupt sent"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_stream_stops_the_cli() {
    let mut fake = fake("cancelled_mid_stream");
    fake.config = fake.config.clone().with_env("FAKE_CLAUDE_HANG", "1");
    let provider = fake.provider();
    let mut stream = provider
        .create_response(&[Message::user("think")], &ToolSet::new(), "m", &Signal::new(), None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let first = stream.next().await;
    assert!(matches!(first, Some(Ok(Event::Started { .. }))));
    drop(stream);
    let pid = fake.pid().unwrap_or_else(|| panic!("no pid"));
    assert!(gone_within(pid, Duration::from_secs(5)), "pid {pid} still alive");
}

#[tokio::test]
async fn command_line_and_environment_follow_the_agent_sdk() {
    let fake = fake("text_only");
    let workdir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let config = fake
        .config
        .clone()
        .with_env("CLAUDECODE", "1")
        .with_permission_mode("acceptEdits");
    let provider = ClaudeAgentProvider::new(config).unwrap_or_else(|e| panic!("{e}"));
    let context = RequestContext::new()
        .with_system("Be terse. ".repeat(20_000))
        .with_working_dir(workdir.path())
        .with_env("PATCHBAY_TEST_VAR", "x")
        .with_session(Session::New {
            id: Some("11111111-2222-3333-4444-555555555555".into()),
        })
        .with_mcp_server(patchbay_core::context::McpServerConfig {
            name: "docs".into(),
            transport: patchbay_core::context::McpTransport::Http {
                url: "http://127.0.0.1:1/mcp".into(),
                headers: [("X-Project-ID".to_string(), "p1".to_string())].into(),
            },
        });
    let mut context = context.with_max_tokens(100);
    context.sampling.temperature = Some(0.2);
    let (events, error) = collect(&provider, &[Message::user("hi")], &weather_tools(), Some(&context)).await;
    assert!(error.is_none(), "{error:?}");
    let argv = fake.argv();
    let args: Vec<&str> = argv["argv"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    for expected in [
        "--output-format",
        "stream-json",
        "--verbose",
        "--input-format",
        "--include-partial-messages",
        "--system-prompt-file",
        "--session-id=11111111-2222-3333-4444-555555555555",
        "--permission-mode",
        "acceptEdits",
        "--mcp-config",
        "--allowedTools",
        "mcp__host__get_weather",
    ] {
        assert!(args.contains(&expected), "{expected} missing from {args:?}");
    }
    assert!(
        !args.contains(&"--permission-prompt-tool"),
        "no approval handler, no prompt tool"
    );
    let env = &argv["env"];
    assert!(env.get("CLAUDECODE").is_none(), "CLAUDECODE dropped");
    assert_eq!(env["CLAUDE_CODE_ENTRYPOINT"], "sdk-rust");
    assert_eq!(env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"], "100");
    assert_eq!(
        argv["cwd"].as_str().map(Path::new),
        workdir.path().canonicalize().ok().as_deref()
    );
    let Some(Event::Started { warnings, .. }) = events.first() else {
        panic!("no Started");
    };
    assert!(
        warnings
            .iter()
            .any(|w| w.code == "unsupported_option" && w.message.contains("temperature"))
    );
    // The first stdin line is `initialize`, the user turn follows its answer.
    let stdin = fake.stdin();
    assert_eq!(stdin[0]["request"]["subtype"], "initialize");
    let user = user_turn(&fake);
    assert_eq!(user["message"]["content"][0]["text"], "hi");
}

#[test]
fn offline_sets_the_environment_tests_start_the_cli_with() {
    let home = Path::new("/tmp/claude-home");
    let config = ClaudeAgentConfig::new().offline("http://127.0.0.1:9", home);
    assert_eq!(
        *config.env(),
        patchbay_conformance::peers::claude_code_offline_env("http://127.0.0.1:9", home)
    );
    assert!(!config.inherit_env(), "nothing else of the test's environment");
}

#[tokio::test]
async fn session_flags_for_resume_fork_and_a_marked_history() {
    for (session, expected) in [
        (Some(Session::Resume { id: "abc".into() }), vec!["--resume=abc"]),
        (
            Some(Session::Fork { from: "abc".into() }),
            vec!["--resume=abc", "--fork-session"],
        ),
    ] {
        let fake = fake("text_only");
        let mut context = RequestContext::new();
        context.session = session;
        let (_, error) = collect(
            &fake.provider(),
            &[Message::user("hi")],
            &ToolSet::new(),
            Some(&context),
        )
        .await;
        assert!(error.is_none());
        let argv = fake.argv();
        let args: Vec<&str> = argv["argv"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        for flag in expected {
            assert!(args.contains(&flag), "{flag} missing from {args:?}");
        }
    }

    // A history that ends with a marked answer forks that session and sends only the new turn.
    let fake = fake("text_only");
    let provider = fake.provider();
    let (first, _) = collect(&provider, &[Message::user("hi")], &ToolSet::new(), None).await;
    let mut builder = patchbay_core::kit::ContentBuilder::default();
    for event in &first {
        builder.push(event);
    }
    let answer = Message::new(patchbay_core::Role::Assistant, builder.finish());
    let session = patchbay_claude_agent::session::marker(&answer).map(|(id, _)| id);
    assert!(session.is_some(), "the answer carries a session marker");
    let fake2 = self::fake("text_only");
    let history = [Message::user("hi"), answer, Message::user("again")];
    let (_, error) = collect(&fake2.provider(), &history, &ToolSet::new(), None).await;
    assert!(error.is_none());
    let argv = fake2.argv();
    let args: Vec<&str> = argv["argv"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let resume = format!("--resume={}", session.unwrap_or_default());
    assert!(
        args.contains(&resume.as_str()) && args.contains(&"--fork-session"),
        "{args:?}"
    );
    assert_eq!(user_turn(&fake2)["message"]["content"][0]["text"], "again");

    // A history the CLI never saw is flattened into a new session, with a warning.
    let fake3 = self::fake("text_only");
    let history = [Message::user("hi"), Message::assistant("hello"), Message::user("again")];
    let (events, _) = collect(&fake3.provider(), &history, &ToolSet::new(), None).await;
    assert!(
        matches!(events.first(), Some(Event::Started { warnings, .. }) if warnings.iter().any(|w| w.code == "history_flattened"))
    );
    let text = user_turn(&fake3)["message"]["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(text.contains("Assistant: hello"), "{text}");
}

struct Decide(Approval);

#[async_trait]
impl ApprovalHandler for Decide {
    async fn approve(&self, request: &ApprovalRequest, _cx: &ToolContext) -> Approval {
        assert_eq!(request.tool_name, "Write");
        assert_eq!(request.tool_use_id, "t1");
        self.0.clone()
    }
}

#[tokio::test]
async fn can_use_tool_is_answered_by_the_approval_handler() {
    let transcript = support::transcript("approval_synthetic");
    for (approval, expected) in [
        (
            Approval::Allow,
            json!({"behavior": "allow", "updatedInput": {"file_path": "a.txt", "content": "hi"}}),
        ),
        (
            Approval::AllowWithInput(json!({"file_path": "b.txt", "content": "edited"})),
            json!({"behavior": "allow", "updatedInput": {"file_path": "b.txt", "content": "edited"}}),
        ),
        (
            Approval::Deny {
                message: "not here".into(),
            },
            json!({"behavior": "deny", "message": "not here"}),
        ),
    ] {
        let fake = fake(&transcript.display().to_string());
        let context = RequestContext::new().with_approval(Arc::new(Decide(approval)));
        let (events, error) = collect(
            &fake.provider(),
            &[Message::user("write")],
            &ToolSet::new(),
            Some(&context),
        )
        .await;
        assert!(error.is_none(), "{error:?}");
        assert!(matches!(events.last(), Some(Event::Finish { .. })));
        let args = fake.argv()["argv"].clone();
        assert!(
            args.as_array()
                .into_iter()
                .flatten()
                .any(|a| a == "--permission-prompt-tool")
        );
        let answer = fake
            .stdin()
            .into_iter()
            .find(|m| m["response"]["request_id"] == "perm-1")
            .unwrap_or_default();
        assert_eq!(answer["response"]["response"], expected);
    }
}

#[tokio::test]
async fn in_process_host_tools_get_the_context_and_keep_their_metadata() {
    let fake = fake("one_tool_call");
    let context = RequestContext::new().with_metadata("project_id", "p1");
    let (events, error) = collect(
        &fake.provider(),
        &[Message::user("weather?")],
        &weather_tools(),
        Some(&context),
    )
    .await;
    assert!(error.is_none(), "{error:?}");
    let result = events
        .iter()
        .find_map(|e| match e {
            Event::ToolResult { name, result, .. } if name == "get_weather" => Some(result.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no tool result"));
    assert_eq!(result.text_content(), "Sunny in Paris.");
    assert_eq!(
        result.metadata,
        Some(json!({"documents": ["forecast.pdf"], "tool_use_id": "toolu_01", "project": "p1"}))
    );
    // The CLI got rmcp-shaped answers: initialize, tools/list, tools/call.
    let replies: Vec<Value> = fake
        .stdin()
        .into_iter()
        .filter_map(|m| m["response"]["response"].get("mcp_response").cloned())
        .collect();
    assert!(replies.iter().any(|r| r["result"]["tools"][0]["name"] == "get_weather"));
    assert!(
        replies
            .iter()
            .any(|r| r["result"]["content"][0]["text"] == "Sunny in Paris.")
    );
}

#[tokio::test]
async fn per_call_options_set_permissions_agents_and_the_preset_prompt() {
    let fake = fake("text_only");
    let agents = json!({ "reviewer": { "description": "Reviews code.", "prompt": "You review.", "tools": ["Read"] } });
    let context = RequestContext::new()
        .with_system("Also be brief.")
        .with_provider_options(
            "claude-agent",
            json!({
                "permission_mode": "plan",
                "allowed_tools": ["Bash(echo:*)"],
                "disallowed_tools": ["WebFetch"],
                "agents": agents,
                "system_prompt": { "type": "preset" },
                "max_turns": 3
            }),
        );
    let (_, error) = collect(
        &fake.provider(),
        &[Message::user("hi")],
        &ToolSet::new(),
        Some(&context),
    )
    .await;
    assert!(error.is_none(), "{error:?}");
    let argv = fake.argv();
    let args: Vec<&str> = argv["argv"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let after = |flag: &str| {
        args.iter()
            .position(|a| *a == flag)
            .and_then(|i| args.get(i + 1))
            .copied()
    };
    assert_eq!(after("--permission-mode"), Some("plan"));
    assert_eq!(after("--allowedTools"), Some("Bash(echo:*)"));
    assert_eq!(after("--disallowedTools"), Some("WebFetch"));
    assert_eq!(after("--append-system-prompt"), Some("Also be brief."));
    assert_eq!(after("--max-turns"), Some("3"));
    assert!(
        !args.contains(&"--system-prompt"),
        "the preset keeps the CLI's own prompt"
    );
    assert_eq!(fake.stdin()[0]["request"]["agents"], agents);

    let bad = RequestContext::new().with_provider_options("claude-agent", json!({ "permision_mode": "plan" }));
    let (_, error) = collect(&fake.provider(), &[Message::user("hi")], &ToolSet::new(), Some(&bad)).await;
    // A bad call option is the request's fault (as in every provider crate), a bad registry
    // option the configuration's.
    assert_eq!(error.map(|e| e.kind()), Some(ErrorKind::InvalidRequest));
    let factory = patchbay_claude_agent::factory();
    let built = factory.build(&json!({ "cli_path": support::fake_cli(), "keep_alive_ms": 500 }));
    assert!(built.is_ok(), "{:?}", built.err());
    let refused = factory.build(&json!({ "nope": 1 })).err().map(|e| e.to_string());
    assert!(
        refused.is_some_and(|e| e.contains("`nope`")),
        "an unknown key is refused by name"
    );
    let missing = factory
        .build(&json!({ "cli_path": "/x/claude" }))
        .err()
        .map(|e| e.kind());
    assert_eq!(
        missing,
        Some(ErrorKind::Config),
        "an explicit CLI path is checked at build time"
    );
}
