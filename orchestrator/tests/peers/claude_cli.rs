//! The real Claude Code CLI as a parent agent. `claude -p` runs against a mock of the Messages
//! API whose model first calls `mcp__orchestrator__start_agent_session`, then answers with the
//! tool result it was sent; the CLI reaches the orchestrator over MCP with the bearer token and
//! `X-Agent-Session-Name: cli-parent`. The CLI's final answer carries the child's result, and the
//! orchestrator recorded the child with its parent.
//!
//! The mock is a small axum handler that picks each answer from the request (the tool result
//! arrives only in the second request) and renders it with the project's Anthropic mock wire
//! format ([`AnthropicWire`]).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::response::IntoResponse;
use patchbay::scripted::{Part, Response};
use patchbay_conformance::mock::WireFormat;
use patchbay_conformance::mock::anthropic::AnthropicWire;
use patchbay_conformance::peers::claude_code_offline_env;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::served::Served;

/// The tool as the CLI names it: `mcp__<server>__<tool>`.
const TOOL: &str = "mcp__orchestrator__start_agent_session";
/// What the child answers (the built-in `default` blueprint).
const HELLO: &str = "Hello from the scripted provider.";
/// The CLI's whole run, start to exit.
const CLI_LIMIT: Duration = Duration::from_secs(180);

type Seen = Arc<Mutex<Vec<Value>>>;

/// The mock of the Messages API on loopback; stops when dropped.
struct MockModel {
    url: String,
    seen: Seen,
    stop: CancellationToken,
}

impl MockModel {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Seen::default();
        let stop = CancellationToken::new();
        let app = Router::new().fallback(answer).with_state(seen.clone());
        let stopped = stop.clone();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move { stopped.cancelled().await })
                .await;
        });
        Self { url, seen, stop }
    }

    fn requests(&self) -> Vec<Value> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl Drop for MockModel {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The text of every `tool_result` block in the request's messages.
fn tool_results(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for message in body["messages"].as_array().into_iter().flatten() {
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] != "tool_result" {
                continue;
            }
            match &block["content"] {
                Value::String(text) => out.push(text.clone()),
                Value::Array(parts) => out.extend(parts.iter().filter_map(|p| p["text"].as_str().map(str::to_owned))),
                _ => {}
            }
        }
    }
    out
}

/// The model's answer to a request: echo a tool result once one arrived; else call the
/// orchestrator's tool when it is offered; else a short text (any side request of the CLI).
fn model_answer(body: &Value) -> Response {
    let results = tool_results(body);
    if !results.is_empty() {
        let text = format!("The child agent answered: {}", results.join("\n"));
        return Response::new(vec![Part::text(text)]).with_usage(20, 10);
    }
    let offered = body["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["name"] == TOOL));
    if offered {
        let input = json!({"session_name": "cli-child", "prompt": "Say hello to your parent."});
        return Response::new(vec![Part::tool_call("toolu_orchestrator_1", TOOL, input)]).with_usage(20, 10);
    }
    Response::new(vec![Part::text("ok")]).with_usage(5, 1)
}

async fn answer(State(seen): State<Seen>, request: Request) -> axum::response::Response {
    if request.method() != Method::POST {
        return StatusCode::OK.into_response();
    }
    if request.uri().path().contains("count_tokens") {
        return axum::Json(json!({"input_tokens": 10})).into_response();
    }
    let bytes = axum::body::to_bytes(request.into_body(), 256 << 20)
        .await
        .unwrap_or_default();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let model = body["model"].as_str().unwrap_or("claude-mock").to_owned();
    let response = model_answer(&body);
    if let Ok(mut seen) = seen.lock() {
        seen.push(body);
    }
    let frames = AnthropicWire.render_response(&response, &model).concat();
    ([(header::CONTENT_TYPE, "text/event-stream")], Body::from(frames)).into_response()
}

pub(crate) async fn the_cli_as_a_parent_gets_the_child_result_and_is_recorded_as_parent() {
    let cli = patchbay_conformance::peers::claude_code_cli().path().to_path_buf();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let work = dir.path().join("work");
    for folder in [&home, &work] {
        std::fs::create_dir_all(folder).unwrap();
    }
    let served = Served::start(
        &dir.path().join("data"),
        None,
        &["--project-dir", work.to_str().unwrap()],
        &dir.path().join("serve.log"),
    )
    .await;
    let model = MockModel::start().await;
    // The CLI names itself `cli-parent`: a session here, as a run of this orchestrator is.
    crate::served::add_session(&dir.path().join("data"), "cli-parent").await;
    let mcp_config = json!({"mcpServers": {"orchestrator": {
        "type": "http",
        "url": served.mcp,
        "headers": {
            "Authorization": format!("Bearer {}", served.token),
            "X-Agent-Session-Name": "cli-parent",
        },
    }}});

    let mut command = tokio::process::Command::new(&cli);
    command
        .args(["-p", "Ask a child agent to say hello, then tell me what it said."])
        .args(["--output-format", "stream-json", "--verbose"])
        .args(["--model", "claude-sonnet-4-5"])
        .arg("--mcp-config")
        .arg(mcp_config.to_string())
        .arg("--strict-mcp-config")
        .args(["--allowedTools", TOOL])
        .current_dir(&work)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(claude_code_offline_env(&model.url, &home))
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(CLI_LIMIT, command.output())
        .await
        .unwrap_or_else(|_| panic!("the CLI did not finish within {CLI_LIMIT:?}"))
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", cli.display()));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let context = || {
        format!(
            "stdout:\n{stdout}\nstderr:\n{stderr}\nmock saw {} requests\norchestrator:\n{}",
            model.requests().len(),
            served.stderr()
        )
    };
    let lines: Vec<Value> = stdout
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let init = lines
        .iter()
        .find(|l| l["type"] == "system" && l["subtype"] == "init")
        .unwrap_or_else(|| panic!("no init line\n{}", context()));
    let connected = init["mcp_servers"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|s| s["name"] == "orchestrator" && s["status"] == "connected");
    assert!(connected, "{}\n{}", init["mcp_servers"], context());
    let result = lines
        .iter()
        .rev()
        .find(|l| l["type"] == "result")
        .unwrap_or_else(|| panic!("no result line\n{}", context()));
    assert_eq!(result["is_error"], false, "{result:#}\n{}", context());
    assert!(output.status.success(), "{:?}\n{}", output.status, context());

    // The final answer carries the child's result, which reached the model as the tool result.
    let answer = result["result"].as_str().unwrap_or_default();
    assert!(answer.contains("The child agent answered:"), "{answer}\n{}", context());
    assert!(answer.contains(HELLO), "{answer}\n{}", context());
    let echoed = model
        .requests()
        .iter()
        .flat_map(tool_results)
        .any(|text| text.contains(HELLO) && text.contains("cli-child"));
    assert!(echoed, "the model was sent the child's report\n{}", context());

    // The orchestrator recorded the child, finished, with the CLI's session as its parent.
    let mcp = served.connect(None).await;
    let child = mcp.status("cli-child", 0).await;
    assert_eq!(child["status"], "finished", "{child:#}");
    assert_eq!(child["parent_session_name"], "cli-parent", "{child:#}");
    assert_eq!(child["result"], HELLO, "{child:#}");
    let sessions = mcp
        .json("list_agent_sessions", json!({"response_format": "json"}))
        .await;
    let names: Vec<&str> = sessions["sessions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["session_name"].as_str())
        .collect();
    // The CLI's own session (added above: callers are sessions here) and its child.
    assert_eq!(names, ["cli-parent", "cli-child"], "{sessions:#}");
    mcp.close().await;
    let (status, log) = served.terminate(Duration::from_secs(30)).await;
    assert!(status.is_some_and(|s| s.success()), "{status:?}\n{log}");
}
