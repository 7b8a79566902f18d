//! The chat example: offline on the scripted demo, and against the mock wire servers.

use std::path::Path;
use std::process::Command;

use patchbay::Event;
use patchbay_conformance::peers::Peer;

/// The chat example binary, built by `cargo test` next to this test's binary
/// (`target/<profile>/examples/chat`).
pub(crate) fn chat_binary() -> Peer {
    let exe = std::env::current_exe().unwrap_or_default();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap_or(Path::new("."));
    let path = profile_dir
        .join("examples")
        .join(format!("chat{}", std::env::consts::EXE_SUFFIX));
    Peer::at(
        "the chat example",
        path,
        "build it with `cargo build --example chat` (`cargo test` builds it)",
    )
}

/// patchbay-acp's scripted ACP agent, built by `cargo build -p patchbay-acp` (and by
/// `cargo test --workspace`, as every package's binaries are) into this test binary's target
/// folder (`target/<profile>/patchbay-acp-fake-agent`). Another package's binary has no
/// `CARGO_BIN_EXE_*` here, so it is found next to the `deps` folder this test runs from.
#[cfg(feature = "acp")]
pub(crate) fn acp_fake_agent() -> Peer {
    let exe = std::env::current_exe().unwrap_or_default();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap_or(Path::new("."));
    let path = profile_dir.join(format!("patchbay-acp-fake-agent{}", std::env::consts::EXE_SUFFIX));
    Peer::at(
        "patchbay-acp's fake agent",
        path,
        "build it with `cargo build -p patchbay-acp` (`cargo test --workspace` builds it)",
    )
}

fn run_chat(args: &[&str]) -> (String, String, bool) {
    let binary = chat_binary().path().to_path_buf();
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("notes.md"), "# notes\n").expect("write");
    std::fs::create_dir(dir.path().join("src")).expect("mkdir");
    let output = Command::new(binary)
        .args(args)
        .current_dir(dir.path())
        .output()
        .expect("chat runs");
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        output.status.success(),
    )
}

pub(crate) fn chat_json_prints_one_valid_event_per_line() {
    let (stdout, stderr, ok) = run_chat(&["--json", "what is in this folder?"]);
    assert!(ok, "{stderr}");
    let events: Vec<Event> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not an event: {line}: {e}")))
        .collect();
    patchbay::validate::validate(events.iter().map(Ok)).expect("the lifecycle validator accepts the run");
    let listing = events.iter().find_map(|e| match e {
        Event::ToolResult { name, result, .. } if name == "read" => Some(result.text_content()),
        _ => None,
    });
    let listing = listing.expect("a real tool result");
    assert!(listing.contains("notes.md") && listing.contains("src/"), "{listing}");
}

pub(crate) fn chat_streams_text_tools_and_a_usage_line_offline() {
    let (stdout, stderr, ok) = run_chat(&["what is in this folder?"]);
    assert!(ok, "{stderr}");
    assert!(stderr.contains("offline"), "{stderr}");
    assert!(stdout.contains("→ read"), "{stdout}");
    assert!(stdout.contains("notes.md"), "{stdout}");
    assert!(
        stdout.lines().last().is_some_and(|l| l.starts_with("[Stop | usage:")),
        "{stdout}"
    );
}

/// The example schema of the repository.
fn weather_schema() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/examples/weather.schema.json").to_string()
}

pub(crate) fn chat_schema_prints_growing_objects_then_the_validated_one() {
    let schema = weather_schema();
    let (stdout, stderr, ok) = run_chat(&["--schema", &schema, "weather in Paris?"]);
    assert!(ok, "{stderr}");
    let partials: Vec<serde_json::Value> = stdout
        .lines()
        .filter_map(|line| line.strip_prefix("\u{2026} "))
        .map(|json| serde_json::from_str(json).unwrap_or_else(|e| panic!("not JSON: {json}: {e}")))
        .collect();
    assert!(partials.len() >= 3, "{stdout}");
    assert_eq!(partials.first(), Some(&serde_json::json!({})));
    let (_, last) = stdout.split_once("valid object:").expect("the validated object");
    let object: serde_json::Value = serde_json::from_str(last).expect("pretty JSON");
    assert_eq!(
        object,
        serde_json::json!({"city": "Paris", "celsius": 21, "conditions": ["sunny"]})
    );
    let (json_out, stderr, ok) = run_chat(&["--json", "--schema", &schema, "weather?"]);
    assert!(ok, "{stderr}");
    assert_eq!(json_out.trim(), object.to_string());
}

pub(crate) fn chat_schema_reports_a_mismatch_with_the_raw_answer() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("count.schema.json");
    let schema = r#"{"type":"object","properties":{"n":{"type":"integer","minimum":5}},"required":["n"]}"#;
    std::fs::write(&path, schema).expect("write");
    let (_, stderr, ok) = run_chat(&["--schema", path.to_str().expect("UTF-8 path"), "n?"]);
    assert!(!ok);
    assert!(
        stderr.contains("does not match the output schema") && stderr.contains("/n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("raw text of the answer") && stderr.contains("\"n\": 1"),
        "{stderr}"
    );
}

/// `--provider acp --agent-command <fake agent>`: the agent, scripted by
/// `PATCHBAY_ACP_FAKE_SCRIPT` (inherited through the chat process), reads the folder with the
/// host's `read` tool over MCP, then answers; the run prints the call, its result and the text.
#[cfg(feature = "acp")]
pub(crate) fn chat_runs_on_acp_with_the_fake_agent() {
    let agent = acp_fake_agent().path().to_path_buf();
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("notes.md"), "# notes\n").expect("write");
    let script = serde_json::json!({ "prompts": [[
        { "call_tool": { "id": "t1", "server": patchbay::acp::DEFAULT_HOST_SERVER, "name": "read", "input": { "path": "." } } },
        { "update": { "sessionUpdate": "agent_message_chunk", "content": { "type": "text", "text": "Hello from the fake agent." } } },
        { "end": { "stop_reason": "end_turn" } },
    ]] });
    let script_path = dir.path().join("script.json");
    std::fs::write(&script_path, script.to_string()).expect("write the script");
    // The user's own acp settings stay out of it.
    let chat = |args: &[&std::ffi::OsStr]| {
        Command::new(chat_binary().path())
            .args(args)
            .current_dir(dir.path())
            .env_remove(patchbay::acp::AGENT_ENV)
            .env_remove(patchbay::acp::COMMAND_ENV)
            .env("PATCHBAY_ACP_FAKE_SCRIPT", &script_path)
            .output()
            .expect("chat runs")
    };
    let output = chat(&[
        "--provider".as_ref(),
        "acp".as_ref(),
        "--agent-command".as_ref(),
        agent.as_ref(),
        "what is here?".as_ref(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("→ read") && stdout.contains("notes.md"), "{stdout}");
    assert!(stdout.contains("Hello from the fake agent."), "{stdout}");
    assert!(
        stdout.lines().last().is_some_and(|l| l.starts_with("[Stop | usage:")),
        "{stdout}"
    );

    // Without an agent named: a clear error and the flags that name one.
    let output = chat(&["--provider".as_ref(), "acp".as_ref(), "hi".as_ref()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("--agent gemini|codex|claude"), "{stderr}");
    let output = chat(&[
        "--provider".as_ref(),
        "anthropic".as_ref(),
        "--agent".as_ref(),
        "gemini".as_ref(),
        "hi".as_ref(),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("for --provider acp"), "{stderr}");
}

pub(crate) fn chat_names_the_compiled_providers_for_an_unknown_one() {
    let (_, stderr, ok) = run_chat(&["--provider", "nope", "hi"]);
    assert!(!ok);
    assert!(
        stderr.contains("unknown provider `nope`") && stderr.contains("scripted"),
        "{stderr}"
    );
}

/// `--provider anthropic` / `--provider openrouter` against the conformance mock servers: the
/// same chat run, real wire, no network.
#[cfg(all(feature = "anthropic", feature = "openrouter"))]
pub(crate) mod against_mocks {
    use patchbay::scripted::{Part, Response, Script, Turn};
    use patchbay_conformance::mock::{MockServer, WireFormat, anthropic::AnthropicWire, openai::OpenAiWire};
    use serde_json::json;

    fn script() -> Script {
        Script::new(vec![
            Turn::Respond(
                Response::new(vec![
                    Part::text("Looking."),
                    Part::tool_call("call_1", "read", json!({"path": "."})),
                ])
                .with_usage(30, 10),
            ),
            Turn::Respond(Response::new(vec![Part::text("There is a notes file.")]).with_usage(60, 8)),
        ])
    }

    async fn chat_against(wire: impl WireFormat, provider: &'static str, env: &[(&'static str, String)]) {
        let server = MockServer::builder(wire)
            .script(&script())
            .start()
            .await
            .expect("mock starts");
        let mut vars: Vec<(&str, String)> = env.to_vec();
        for value in vars.iter_mut().map(|(_, v)| v) {
            *value = value.replace("{url}", &server.url());
        }
        let output = tokio::task::spawn_blocking(move || {
            let binary = super::chat_binary().path().to_path_buf();
            let dir = tempfile::tempdir().expect("temp dir");
            std::fs::write(dir.path().join("notes.md"), "# notes\n").expect("write");
            let mut command = std::process::Command::new(binary);
            command
                .args(["--provider", provider, "--model", "mock-model", "what is here?"])
                .current_dir(dir.path());
            for key in [
                "ANTHROPIC_API_KEY",
                "ANTHROPIC_BASE_URL",
                "OPENAI_API_KEY",
                "OPENAI_BASE_URL",
                "OPENROUTER_API_KEY",
                "OPENAI_ORG_ID",
                "OPENAI_PROJECT_ID",
                "GEMINI_API_KEY",
                "GOOGLE_API_KEY",
                "GOOGLE_GEMINI_BASE_URL",
                "GOOGLE_GENAI_USE_VERTEXAI",
            ] {
                command.env_remove(key);
            }
            command.envs(vars);
            command.output().expect("chat runs")
        })
        .await
        .expect("no panic");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stdout}\n{stderr}");
        assert!(stdout.contains("→ read") && stdout.contains("notes.md"), "{stdout}");
        assert!(stdout.contains("There is a notes file."), "{stdout}");
        assert!(stdout.contains("usage: 90 in, 18 out"), "{stdout}");
        assert_eq!(server.requests().len(), 2, "one request per step");
    }

    pub(crate) async fn chat_runs_on_anthropic_against_the_mock() {
        let env = [
            ("ANTHROPIC_API_KEY", "dummy".to_string()),
            ("ANTHROPIC_BASE_URL", "{url}".to_string()),
        ];
        chat_against(AnthropicWire, "anthropic", &env).await;
    }

    pub(crate) async fn chat_runs_on_openrouter_against_the_mock() {
        let env = [
            ("OPENAI_API_KEY", "dummy".to_string()),
            ("OPENAI_BASE_URL", "{url}/v1".to_string()),
        ];
        chat_against(OpenAiWire, "openrouter", &env).await;
    }

    /// The Gemini wire, reached the way Google's SDKs are pointed at another server.
    #[cfg(feature = "gemini")]
    pub(crate) async fn chat_runs_on_gemini_against_the_mock() {
        let env = [
            ("GEMINI_API_KEY", "dummy".to_string()),
            ("GOOGLE_GEMINI_BASE_URL", "{url}/v1beta".to_string()),
        ];
        chat_against(patchbay_conformance::mock::gemini::GeminiWire, "gemini", &env).await;
    }

    /// The Responses wire, reached the way OpenAI's SDKs are pointed at another server.
    #[cfg(feature = "openai")]
    pub(crate) async fn chat_runs_on_openai_against_the_mock() {
        let env = [
            ("OPENAI_API_KEY", "dummy".to_string()),
            ("OPENAI_BASE_URL", "{url}/v1".to_string()),
        ];
        let wire = patchbay_conformance::mock::openai_responses::ResponsesWire::new();
        chat_against(wire, "openai", &env).await;
    }
}

/// The chat example built with `otel` exports its run to the collector that
/// `OTEL_EXPORTER_OTLP_ENDPOINT` names (a loopback receiver here: protobuf bodies carry span
/// and metric names as plain bytes).
#[cfg(feature = "otel")]
pub(crate) fn chat_exports_spans_and_metrics_when_an_otlp_endpoint_is_set() {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;

    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
    let received = std::sync::Arc::new(std::sync::Mutex::new(Vec::<(String, Vec<u8>)>::new()));
    let sink = received.clone();
    std::thread::spawn(move || {
        // One connection at a time, requests read by their content-length, each answered 200.
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                let path = line.split_whitespace().nth(1).unwrap_or_default().to_string();
                let mut length = 0;
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                        break;
                    }
                    if let Some((name, value)) = header.split_once(':')
                        && name.eq_ignore_ascii_case("content-length")
                    {
                        length = value.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; length];
                if reader.read_exact(&mut body).is_err() {
                    break;
                }
                sink.lock().expect("lock").push((path, body));
                let reply = b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                if reader.get_mut().write_all(reply).is_err() {
                    break;
                }
            }
        }
    });
    let binary = chat_binary().path().to_path_buf();
    let dir = tempfile::tempdir().expect("temp dir");
    let output = Command::new(binary)
        .arg("what is in this folder?")
        .current_dir(dir.path())
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_SERVICE_NAME", "chat-example-test")
        .output()
        .expect("chat runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("export failed"), "{stderr}");
    let received = received.lock().expect("lock");
    let body_of = |path: &str| -> Vec<u8> {
        received
            .iter()
            .filter(|(p, _)| p == path)
            .flat_map(|(_, body)| body.clone())
            .collect()
    };
    let contains = |haystack: &[u8], needle: &str| haystack.windows(needle.len()).any(|w| w == needle.as_bytes());
    let traces = body_of("/v1/traces");
    for name in [
        "invoke_agent chat",
        "chat scripted-demo",
        "execute_tool read",
        "chat-example-test",
    ] {
        assert!(contains(&traces, name), "`{name}` in the exported spans");
    }
    let metrics = body_of("/v1/metrics");
    assert!(
        contains(&metrics, "gen_ai.client.operation.duration"),
        "the duration metric was exported"
    );
    assert!(
        !contains(&traces, "what is in this folder?"),
        "no message content unless asked for"
    );
}
