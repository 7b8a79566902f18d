//! The real Claude Code CLI as a parent agent. `claude -p` runs against a mock of the Messages
//! API whose model calls four of the orchestrator's tools, one per turn: a sync
//! `start_agent_session` of a child that naps 3 s in `bash`, an async start of a child that
//! would sleep 30 s, `get_agent_session_events` of the first child and `cancel_agent_session`
//! of the second; then it answers with the tool results it was sent. The CLI reaches the
//! orchestrator over MCP (through a recording proxy, [`McpRecorder`]) with the bearer token and
//! `X-Agent-Session-Name: cli-parent`. Each answer comes back to the mock, the orchestrator
//! recorded both children with their parent, and the second was cancelled.
//!
//! Progress: Claude Code (2.1.330) sends `_meta.progressToken` (its JSON-RPC request id, a
//! number) with every `tools/call`, over the per-request protocol metadata of MCP 2026-07-28
//! (seen through the proxy). So the sync start's answer is an event stream: the child's
//! activity (`tool bash: sleep 3; echo woke`...) as progress notifications, then the result,
//! which the CLI takes whole. The CLI shows none of them in `-p` output (`stream-json` has no
//! line for MCP progress): the trial checks them at the proxy.
//!
//! The mock is a small axum handler that picks each answer from the request (how many tool
//! results it carries) and renders it with the project's Anthropic mock wire format
//! ([`AnthropicWire`]).

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

use crate::recorder::McpRecorder;
use crate::served::{Served, napping};

/// The tools as the CLI names them: `mcp__<server>__<tool>`.
const START: &str = "mcp__orchestrator__start_agent_session";
const EVENTS: &str = "mcp__orchestrator__get_agent_session_events";
const CANCEL: &str = "mcp__orchestrator__cancel_agent_session";
/// What the napping child answers.
const RESTED: &str = "Rested.";
/// The napping child's activity while it naps.
const NAPPING: &str = "tool bash: sleep 3; echo woke";
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

/// The text of every `tool_result` block in the request's messages (its text parts joined).
fn tool_results(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for message in body["messages"].as_array().into_iter().flatten() {
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] != "tool_result" {
                continue;
            }
            match &block["content"] {
                Value::String(text) => out.push(text.clone()),
                // One result however many text parts it has, without the `<system-reminder>`
                // part the CLI adds to some (a token budget note).
                Value::Array(parts) => out.push(
                    parts
                        .iter()
                        .filter_map(|p| p["text"].as_str())
                        .filter(|text| !text.trim_start().starts_with("<system-reminder>"))
                        .collect::<Vec<_>>()
                        .join("\n"),
                ),
                _ => {}
            }
        }
    }
    out
}

/// The tool call of each turn of the parent: (tool, input).
fn turns() -> [(&'static str, Value); 4] {
    [
        (
            START,
            json!({"session_name": "cli-child", "prompt": "Nap, then say so.", "agent_blueprint_name": "napper"}),
        ),
        (
            START,
            json!({"session_name": "cli-sleeper", "prompt": "Sleep.", "agent_blueprint_name": "sleeper",
                   "async_mode": true}),
        ),
        (EVENTS, json!({"session_name": "cli-child", "response_format": "json"})),
        (
            CANCEL,
            json!({"session_name": "cli-sleeper", "response_format": "json"}),
        ),
    ]
}

/// The model's answer to a request: the next tool call while the orchestrator's tools are
/// offered and turns are left (one turn per tool result so far); then a text echoing every
/// tool result; a short text for any side request of the CLI.
fn model_answer(body: &Value) -> Response {
    let results = tool_results(body);
    let offered = body["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["name"] == START));
    if !offered {
        return Response::new(vec![Part::text("ok")]).with_usage(5, 1);
    }
    match turns().into_iter().nth(results.len()) {
        Some((tool, input)) => {
            let id = format!("toolu_orchestrator_{}", results.len() + 1);
            Response::new(vec![Part::tool_call(&id, tool, input)]).with_usage(20, 10)
        }
        None => {
            let text = format!("The children answered:\n{}", results.join("\n---\n"));
            Response::new(vec![Part::text(text)]).with_usage(20, 10)
        }
    }
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

pub(crate) async fn the_cli_as_a_parent_starts_reads_events_and_cancels_over_mcp() {
    let cli = patchbay_conformance::peers::claude_code_cli().path().to_path_buf();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let work = dir.path().join("work");
    let blueprints = dir.path().join("blueprints");
    for folder in [&home, &work, &blueprints] {
        std::fs::create_dir_all(folder).unwrap();
    }
    std::fs::write(blueprints.join("napper.toml"), napping("napper", 3)).unwrap();
    std::fs::write(blueprints.join("sleeper.toml"), napping("sleeper", 30)).unwrap();
    let served = Served::start(
        &dir.path().join("data"),
        Some(&blueprints),
        &["--project-dir", work.to_str().unwrap()],
        &dir.path().join("serve.log"),
    )
    .await;
    let model = MockModel::start().await;
    let proxy = McpRecorder::start(&served.mcp).await;
    // The CLI names itself `cli-parent`: a session here, as a run of this orchestrator is.
    crate::served::add_session(&dir.path().join("data"), "cli-parent").await;
    let mcp_config = json!({"mcpServers": {"orchestrator": {
        "type": "http",
        "url": proxy.url,
        "headers": {
            "Authorization": format!("Bearer {}", served.token),
            "X-Agent-Session-Name": "cli-parent",
        },
    }}});

    let mut command = tokio::process::Command::new(&cli);
    command
        .args([
            "-p",
            "Have a child nap, start another, read the first one's events, cancel the second.",
        ])
        .args(["--output-format", "stream-json", "--verbose"])
        .args(["--model", "claude-sonnet-4-5"])
        .arg("--mcp-config")
        .arg(mcp_config.to_string())
        .arg("--strict-mcp-config")
        .args(["--allowedTools", &[START, EVENTS, CANCEL].join(",")])
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
            "stdout:\n{stdout}\nstderr:\n{stderr}\nmock saw {} requests\nMCP exchanges: {:#?}\norchestrator:\n{}",
            model.requests().len(),
            proxy.exchanges(),
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

    // Each of the four answers reached the model as a tool result, in order.
    let sent = model
        .requests()
        .iter()
        .map(tool_results)
        .max_by_key(Vec::len)
        .unwrap_or_default();
    assert_eq!(sent.len(), 4, "{sent:#?}\n{}", context());
    assert!(sent[0].contains(RESTED) && sent[0].contains("cli-child"), "{}", sent[0]);
    assert!(sent[1].contains("cli-sleeper"), "{}", sent[1]);
    let events: Value = serde_json::from_str(&sent[2]).unwrap_or_else(|e| panic!("events in JSON ({e}): {}", sent[2]));
    assert_eq!(events["session_name"], "cli-child", "{events:#}");
    let types: Vec<&str> = events["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["event"]["type"].as_str())
        .collect();
    assert!(
        types.first() == Some(&"started") && types.contains(&"tool_call") && types.contains(&"finish"),
        "{types:?}"
    );
    let cancelled: Value =
        serde_json::from_str(&sent[3]).unwrap_or_else(|e| panic!("cancel in JSON ({e}): {}", sent[3]));
    assert_eq!(cancelled["session_name"], "cli-sleeper", "{cancelled:#}");
    assert_eq!(cancelled["status"], "cancelled", "{cancelled:#}");
    let answer = result["result"].as_str().unwrap_or_default();
    assert!(answer.contains(RESTED), "{answer}\n{}", context());

    // Progress: what the CLI sent with the sync start, and what it got back.
    let exchanges = proxy.exchanges();
    let called: Vec<&str> = exchanges
        .iter()
        .filter(|e| e.request["method"] == "tools/call")
        .filter_map(|e| e.request["params"]["name"].as_str())
        .collect();
    assert_eq!(
        called,
        [
            "start_agent_session",
            "start_agent_session",
            "get_agent_session_events",
            "cancel_agent_session"
        ],
        "{}",
        context()
    );
    let sync_start = exchanges
        .iter()
        .find(|e| e.calls("start_agent_session"))
        .unwrap_or_else(|| panic!("no start\n{}", context()));
    assert!(sync_start.result_text().contains(RESTED), "{sync_start:#?}");
    let token = sync_start
        .progress_token()
        .cloned()
        .unwrap_or_else(|| panic!("the CLI sent no progressToken with its sync start (2.1.330 did): {sync_start:#?}"));
    assert!(
        sync_start.content_type.starts_with("text/event-stream"),
        "{sync_start:#?}"
    );
    let (last, before) = sync_start
        .answer
        .split_last()
        .unwrap_or_else(|| panic!("{sync_start:#?}"));
    assert!(last.get("result").is_some(), "the result comes last: {sync_start:#?}");
    for message in before {
        assert_eq!(message["method"], "notifications/progress", "{sync_start:#?}");
        assert_eq!(message["params"]["progressToken"], token, "{sync_start:#?}");
    }
    let progress = sync_start.progress();
    assert!(progress.iter().any(|l| l == NAPPING), "{progress:?}\n{sync_start:#?}");

    // The orchestrator recorded both children with the CLI's session as their parent.
    let mcp = served.connect(None).await;
    let child = mcp.status("cli-child", 0).await;
    assert_eq!(child["status"], "finished", "{child:#}");
    assert_eq!(child["parent_session_name"], "cli-parent", "{child:#}");
    assert_eq!(child["result"], RESTED, "{child:#}");
    let sleeper = mcp.status("cli-sleeper", 0).await;
    assert_eq!(sleeper["status"], "cancelled", "{sleeper:#}");
    assert_eq!(sleeper["parent_session_name"], "cli-parent", "{sleeper:#}");
    let sessions = mcp
        .json("list_agent_sessions", json!({"response_format": "json"}))
        .await;
    let names: Vec<&str> = sessions["sessions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["session_name"].as_str())
        .collect();
    // The CLI's own session (added above: callers are sessions here) and its children.
    assert_eq!(names, ["cli-parent", "cli-child", "cli-sleeper"], "{sessions:#}");
    mcp.close().await;
    let (status, log) = served.terminate(Duration::from_secs(30)).await;
    assert!(status.is_some_and(|s| s.success()), "{status:?}\n{log}");
}
