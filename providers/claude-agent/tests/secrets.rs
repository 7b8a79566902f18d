//! No secret reaches `Debug`, `Display` or a log line of this crate: a recognisable key in the
//! environment, in MCP header values, in a base URL's credentials and in command-line values.

use std::collections::BTreeMap;

use patchbay_claude_agent::{ClaudeAgentConfig, ClaudeAgentProvider, HostTools};
use patchbay_conformance::Recording;
use patchbay_conformance::logs::LogCapture;
use patchbay_core::{
    FnTool, Message, ProviderError, RequestContext, Signal, ToolContext, ToolResult, ToolSet, context::McpServerConfig,
    context::McpTransport,
};
use serde_json::{Value, json};

use crate::support;

const CANARY: &str = "sk-SECRET-CANARY-123";

fn assert_clean(what: &str, text: &str) {
    assert!(!text.contains(CANARY), "{what} shows the secret:\n{text}");
}

/// `{:?}` and `{:#?}` of `value`, both checked.
fn assert_debug_clean(what: &str, value: &impl std::fmt::Debug) {
    assert_clean(what, &format!("{value:?}"));
    assert_clean(what, &format!("{value:#?}"));
}

fn config_with_secrets(home: &std::path::Path) -> ClaudeAgentConfig {
    let config = ClaudeAgentConfig::new()
        .with_cli_path(support::fake_cli())
        .offline(&format!("http://patchbay:{CANARY}@127.0.0.1:9"), home)
        .with_env("ANTHROPIC_API_KEY", CANARY)
        .with_env("ANTHROPIC_AUTH_TOKEN", format!("Bearer {CANARY}"));
    let mcp = json!({ "mcpServers": { "docs": { "type": "http", "url": "http://127.0.0.1:9/mcp",
        "headers": { "Authorization": format!("Bearer {CANARY}") } } } });
    config.with_extra_args([
        "--mcp-config".into(),
        mcp.to_string(),
        format!("--settings={{\"apiKeyHelper\":\"echo {CANARY}\"}}"),
    ])
}

#[test]
fn debug_of_config_options_and_provider_hides_secrets() {
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let config = config_with_secrets(home.path());
    assert_debug_clean("ClaudeAgentConfig", &config);
    let shown = format!("{config:?}");
    assert!(
        shown.contains("ANTHROPIC_API_KEY") && shown.contains("--mcp-config") && shown.contains("<redacted>"),
        "names and flags stay: {shown}"
    );
    assert_debug_clean(
        "ClaudeAgentProvider",
        &ClaudeAgentProvider::new(config).unwrap_or_else(|e| panic!("{e}")),
    );

    let options = json!({
        "cli_path": support::fake_cli(),
        "env": { "ANTHROPIC_API_KEY": CANARY, "ANTHROPIC_BASE_URL": format!("https://u:{CANARY}@example.com") },
        "extra_args": ["--api-key", CANARY],
    });
    let config = ClaudeAgentConfig::from_options(&options).unwrap_or_else(|e| panic!("{e}"));
    assert_debug_clean("ClaudeAgentConfig from options", &config);
    let provider = ClaudeAgentProvider::new(config).unwrap_or_else(|e| panic!("{e}"));
    assert_debug_clean("ClaudeAgentProvider from options", &provider);
}

#[test]
fn option_errors_hide_the_values_they_quote() {
    for (key, bad) in [
        ("env", json!({ "env": format!("ANTHROPIC_API_KEY={CANARY}") })),
        ("env", json!({ "env": { "ANTHROPIC_API_KEY": [CANARY] } })),
        ("stop_grace_ms", json!({ "stop_grace_ms": CANARY })),
        ("host_tools", json!({ "host_tools": CANARY })),
        ("extra_args", json!({ "max_turns": 2, "extra_args": CANARY })),
    ] {
        let error = match ClaudeAgentConfig::from_options(&bad) {
            Err(error) => error,
            Ok(config) => panic!("{bad} was accepted: {config:?}"),
        };
        assert_clean("Error (Display)", &error.to_string());
        assert_debug_clean("Error", &error);
        let error = match patchbay_claude_agent::factory().build(&bad) {
            Err(error) => error,
            Ok(_) => panic!("{bad} was accepted"),
        };
        let shown = error.to_string();
        assert!(
            shown.contains(&format!("invalid claude-agent options: option `{key}`")),
            "{error}"
        );
        assert_clean("ProviderError (Display)", &shown);
        assert_debug_clean("ProviderError", &error);
    }
}

fn tools() -> ToolSet {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Input {
        city: String,
    }
    ToolSet::new().with(FnTool::new(
        "get_weather",
        "Weather.",
        |input: Input, _cx: ToolContext| async move { ToolResult::text(format!("Sunny in {}.", input.city)) },
    ))
}

/// A context carrying the secret everywhere a caller may put one.
fn context_with_secrets() -> RequestContext {
    let headers = BTreeMap::from([("Authorization".to_string(), format!("Bearer {CANARY}"))]);
    let env = BTreeMap::from([("DOCS_TOKEN".to_string(), CANARY.to_string())]);
    RequestContext::new()
        .with_env("GITHUB_TOKEN", CANARY)
        .with_mcp_server(McpServerConfig {
            name: "docs".into(),
            transport: McpTransport::Http {
                url: "http://127.0.0.1:9/mcp".into(),
                headers,
            },
        })
        .with_mcp_server(McpServerConfig {
            name: "local".into(),
            transport: McpTransport::Stdio {
                command: "docs-server".into(),
                args: Vec::new(),
                env,
            },
        })
        .with_provider_options("claude-agent", json!({ "env": { "OTHER_KEY": CANARY } }))
}

/// One call, read to its end: the error that ended it.
async fn run(provider: &ClaudeAgentProvider, context: &RequestContext) -> Option<ProviderError> {
    Recording::call(
        provider,
        &[Message::user("hi")],
        &tools(),
        "m",
        &Signal::new(),
        Some(context),
    )
    .await
    .error
}

#[tokio::test]
async fn no_log_line_at_trace_shows_a_secret() {
    // Process-wide: a thread-scoped subscriber misses events whose callsite interest another
    // test thread cached first, and those of the MCP tool server's own threads. It captures
    // the other tests' lines too, which carry no secret either.
    let capture = LogCapture::new();
    tracing::subscriber::set_global_default(capture.subscriber()).unwrap_or_else(|e| panic!("{e}"));

    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let state = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let fake = |transcript: &str| {
        config_with_secrets(home.path())
            .with_env(
                "FAKE_CLAUDE_TRANSCRIPT",
                support::transcript(transcript).display().to_string(),
            )
            .with_env("FAKE_CLAUDE_STATE", state.path().display().to_string())
    };
    let context = context_with_secrets();
    // A tool call answered in-process, then the same over patchbay-mcp's HTTP tool server.
    for host_tools in [HostTools::InProcess, HostTools::Http] {
        let provider = ClaudeAgentProvider::new(fake("one_tool_call").with_host_tools(host_tools))
            .unwrap_or_else(|e| panic!("{e}"));
        let error = run(&provider, &context).await;
        assert!(error.is_none(), "{host_tools:?}: {error:?}");
    }
    // A failing CLI: the error carries its stderr tail and exit code.
    let provider = ClaudeAgentProvider::new(fake("text_only").with_env("FAKE_CLAUDE_EXIT_AFTER", "9"))
        .unwrap_or_else(|e| panic!("{e}"));
    let error = run(&provider, &context)
        .await
        .unwrap_or_else(|| panic!("the CLI was to fail"));
    assert_clean("a process error (Display)", &error.to_string());
    assert_debug_clean("a process error", &error);

    let logs = capture.text();
    assert!(
        logs.contains("claude-agent run started") && logs.contains("TRACE"),
        "the capture works at TRACE:\n{logs}"
    );
    assert_clean("the log", &logs);
    // Planning and spawning, and the stream's polls, run inside the request span.
    for line in ["claude-agent run started", "claude-agent run finished"] {
        assert!(
            logs.lines().any(|l| l.contains(line)
                && l.contains("chat{")
                && l.contains("gen_ai.provider.name=claude-agent gen_ai.request.model=m")),
            "`{line}` in the request span:\n{logs}"
        );
    }
    // The secret did reach the CLI: the test would notice a run that never carried it.
    let argv: Vec<Value> = std::fs::read_dir(state.path())
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("argv-"))
        .filter_map(|e| serde_json::from_str(&std::fs::read_to_string(e.path()).ok()?).ok())
        .collect();
    assert!(
        argv.iter().any(|a| a["env"]["ANTHROPIC_API_KEY"] == CANARY),
        "the CLI got the key"
    );
}
