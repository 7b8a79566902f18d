//! The `patchbay-orchestrator` binary run as a user runs it: `serve` on a data folder, the lines
//! it prints (MCP URL, API URL, token), patchbay's MCP client against it with the caller header,
//! and a store opened beside it. The process is killed when dropped. Shared by `tests/binary.rs`
//! and the `peers` test binary.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use patchbay::mcp::{McpClientSet, McpConnections};
use patchbay::{ToolResult, ToolSet, context::McpServerConfig, context::McpTransport};
use patchbay_orchestrator::store::{Job, Page, SqliteStore, Store};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdout, Command};

/// The binary under test.
pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_patchbay-orchestrator");

/// How long the binary may take to print its lines or to exit when asked.
pub(crate) const START_LIMIT: Duration = Duration::from_secs(60);

/// A fresh database named `name` on the throwaway PostgreSQL server (`patchbay-pgtemp`), for
/// `serve` and `worker` processes to share; `None` when PostgreSQL's binaries are missing
/// outside CI (the test is skipped with a note), a failure in CI.
pub(crate) async fn fresh_pg_database(name: &'static str) -> Option<String> {
    if !patchbay_pgtemp::available() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "PostgreSQL's binaries are missing (CI installs them: apt-get install postgresql)"
        );
        eprintln!("skipped: PostgreSQL's binaries are missing (apt-get install postgresql)");
        return None;
    }
    let server = tokio::task::spawn_blocking(patchbay_pgtemp::PgServer::shared)
        .await
        .unwrap()
        .unwrap();
    let url = tokio::task::spawn_blocking(move || server.create_database(name))
        .await
        .unwrap()
        .unwrap();
    Some(url)
}

/// A running `patchbay-orchestrator serve`; SIGKILLed on drop.
pub(crate) struct Served {
    child: Child,
    _stdout: BufReader<ChildStdout>,
    log: PathBuf,
    /// The MCP endpoint.
    pub(crate) mcp: String,
    /// The JSON API base URL.
    pub(crate) api: String,
    /// The bearer token.
    pub(crate) token: String,
    /// The data folder, as printed (empty on PostgreSQL).
    pub(crate) data: String,
    /// The database URL, as printed (password hidden; empty on SQLite).
    pub(crate) database: String,
}

impl Served {
    /// Start `serve --data DATA [--blueprints DIR] EXTRA...`, its stderr written to `log`, and
    /// read the four lines it prints.
    pub(crate) async fn start(data: &Path, blueprints: Option<&Path>, extra: &[&str], log: &Path) -> Self {
        let mut command = Command::new(BIN);
        command.arg("serve").arg("--data").arg(data);
        if let Some(dir) = blueprints {
            command.arg("--blueprints").arg(dir);
        }
        Self::spawn(command, extra, log).await
    }

    /// Start `serve ARGS...` (a `--database` instead of `--data`, say), as [`Served::start`].
    pub(crate) async fn start_with_args(args: &[&str], log: &Path) -> Self {
        let mut command = Command::new(BIN);
        command.arg("serve");
        Self::spawn(command, args, log).await
    }

    async fn spawn(mut command: Command, extra: &[&str], log: &Path) -> Self {
        let stderr = std::fs::File::create(log).unwrap_or_else(|e| panic!("log file {}: {e}", log.display()));
        command
            .args(extra)
            .env_remove("AGENT_SESSION_NAME")
            .env_remove("PATCHBAY_ORCHESTRATOR_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .kill_on_drop(true);
        let mut child = command.spawn().unwrap_or_else(|e| panic!("cannot run {BIN}: {e}"));
        let stdout = child.stdout.take().unwrap_or_else(|| panic!("stdout piped"));
        let mut stdout = BufReader::new(stdout);
        let mut fields = BTreeMap::new();
        let read = async {
            let mut line = String::new();
            while fields.len() < 4 {
                line.clear();
                match stdout.read_line(&mut line).await {
                    Ok(0) | Err(_) => return false,
                    Ok(_) => {
                        if let Some((key, value)) = line.trim_end().split_once(": ") {
                            fields.insert(key.to_owned(), value.to_owned());
                        }
                    }
                }
            }
            true
        };
        let complete = tokio::time::timeout(START_LIMIT, read).await.unwrap_or(false);
        let log = log.to_path_buf();
        if !complete {
            let _ = child.start_kill();
            panic!(
                "serve did not print its four lines (got {fields:?}); stderr:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        let field = |key: &str| fields.get(key).cloned().unwrap_or_default();
        Self {
            mcp: field("mcp"),
            api: field("api"),
            token: field("token"),
            data: field("data"),
            database: field("database"),
            child,
            _stdout: stdout,
            log,
        }
    }

    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id().unwrap_or_else(|| panic!("the orchestrator has exited"))
    }

    /// Its stderr so far.
    pub(crate) fn stderr(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// kill -9, and wait for it to be gone.
    pub(crate) async fn kill9(mut self) {
        self.child.start_kill().unwrap_or_else(|e| panic!("SIGKILL: {e}"));
        let status = tokio::time::timeout(START_LIMIT, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("still running after SIGKILL"))
            .unwrap_or_else(|e| panic!("wait: {e}"));
        assert!(!status.success(), "{status:?}");
    }

    /// SIGTERM, then wait up to `limit` for the exit; `None` if it did not exit in time (it
    /// is then killed on drop).
    pub(crate) async fn terminate(mut self, limit: Duration) -> (Option<ExitStatus>, String) {
        let pid = rustix::process::Pid::from_raw(self.pid() as i32).unwrap_or_else(|| panic!("a pid"));
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap_or_else(|e| panic!("SIGTERM: {e}"));
        let status = tokio::time::timeout(limit, self.child.wait())
            .await
            .ok()
            .map(|s| s.unwrap_or_else(|e| panic!("wait: {e}")));
        (status, self.stderr())
    }

    /// `GET <api><path>` with the token: the status and the JSON body.
    pub(crate) async fn api_get(&self, path: &str) -> (u16, Value) {
        let client = patchbay_http::client_builder()
            .timeout(START_LIMIT)
            .build()
            .unwrap_or_else(|e| panic!("HTTP client: {e}"));
        let response = client
            .get(format!("{}{path}", self.api))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        let status = response.status().as_u16();
        let body = response
            .json()
            .await
            .unwrap_or_else(|e| panic!("GET {path}: no JSON: {e}"));
        (status, body)
    }

    /// `<method> <api><path>` with the token and, when given, a JSON body: the status and the
    /// JSON body (`Null` when there is none).
    pub(crate) async fn api_send(&self, method: reqwest::Method, path: &str, body: Option<&Value>) -> (u16, Value) {
        let client = patchbay_http::client_builder()
            .timeout(START_LIMIT)
            .build()
            .unwrap_or_else(|e| panic!("HTTP client: {e}"));
        let mut request = client
            .request(method.clone(), format!("{}{path}", self.api))
            .bearer_auth(&self.token);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = response.status().as_u16();
        let bytes = response
            .bytes()
            .await
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        (status, body)
    }

    /// Patchbay's MCP client connected to the endpoint with the token and, when given, the
    /// `X-Agent-Session-Name` header.
    pub(crate) async fn connect(&self, caller: Option<&str>) -> Mcp {
        if let Some(caller) = caller {
            // A caller is a session here (the orchestrator refuses names of no session).
            add_session(Path::new(&self.data), caller).await;
        }
        let mut headers = BTreeMap::from([("Authorization".to_owned(), format!("Bearer {}", self.token))]);
        if let Some(caller) = caller {
            headers.insert("X-Agent-Session-Name".to_owned(), caller.to_owned());
        }
        let config = McpServerConfig {
            name: "orchestrator".to_owned(),
            transport: McpTransport::Http {
                url: self.mcp.clone(),
                headers,
            },
        };
        Mcp::connect(config).await
    }
}

/// Every process whose parent is `pid` (from `/proc`).
pub(crate) fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in entries.flatten() {
        let Some(child) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pid) {
            out.push(child);
        }
    }
    out
}

/// A connected MCP client and the orchestrator's seven tools.
pub(crate) struct Mcp {
    connections: Option<McpConnections>,
    /// The tools, by their plain names.
    pub(crate) tools: ToolSet,
}

impl Mcp {
    /// Connect to `config` (within the client's connect timeout); panics if it fails.
    pub(crate) async fn connect(config: McpServerConfig) -> Self {
        let connections = McpClientSet::new()
            .with_call_timeout(Duration::from_secs(120))
            .with_server(config)
            .connect()
            .await;
        assert_eq!(connections.failed(), [], "{:?}", connections.warnings());
        let tools = connections.tools().await;
        Self {
            connections: Some(connections),
            tools,
        }
    }

    /// The connections (the stdio server's pid, say).
    pub(crate) fn connections(&self) -> &McpConnections {
        self.connections.as_ref().unwrap_or_else(|| panic!("connected"))
    }

    /// Call tool `name` with `input`.
    pub(crate) async fn call(&self, name: &str, input: Value) -> ToolResult {
        let tool = self.tools.get(name).unwrap_or_else(|| panic!("tool {name} not listed"));
        tool.execute(input, &Default::default()).await
    }

    /// Call tool `name` and parse its text as JSON; panics on a tool error.
    pub(crate) async fn json(&self, name: &str, input: Value) -> Value {
        let result = self.call(name, input).await;
        let text = result.text_content();
        assert!(!result.is_error(), "{name} failed: {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name} answered no JSON ({e}): {text}"))
    }

    /// `get_agent_session_status` in JSON, waiting up to `wait_seconds` for a change.
    pub(crate) async fn status(&self, session: &str, wait_seconds: u64) -> Value {
        let input = serde_json::json!({
            "session_name": session,
            "wait_seconds": wait_seconds,
            "response_format": "json",
        });
        self.json("get_agent_session_status", input).await
    }

    /// Wait (with `wait_seconds`, no sleeping) until the session's report satisfies `done`;
    /// panics with the last report after `limit`.
    pub(crate) async fn wait_until(&self, session: &str, limit: Duration, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + limit;
        // A status wait waits for the next change: look first.
        let mut report = self.status(session, 0).await;
        loop {
            if done(&report) {
                return report;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "session {session} did not get there within {limit:?}: {report:#}"
            );
            report = self.status(session, 2).await;
        }
    }

    /// Close the connections (a stdio server gets its stdin closed).
    pub(crate) async fn close(mut self) {
        if let Some(connections) = self.connections.take() {
            connections.close().await;
        }
    }
}

/// A blueprint `name` whose run calls `bash` with `sleep <seconds>; echo woke`, then answers
/// `Rested.`.
pub(crate) fn napping(name: &str, seconds: u32) -> String {
    format!(
        r#"
name = "{name}"
description = "Naps in bash for {seconds} s, then answers."
provider = "scripted"
model = "scripted"
tools = ["bash"]

[provider_options.script]
turns = [
  {{ type = "respond", parts = [{{ type = "tool_call", id = "nap", name = "bash", input = {{ command = "sleep {seconds}; echo woke" }} }}], end = {{ type = "finish", reason = "tool_use" }} }},
  {{ type = "respond", parts = [{{ type = "text", text = "Rested." }}] }},
]
"#
    )
}

/// Every job in the store, in queue order.
pub(crate) async fn all_jobs(store: &SqliteStore) -> Vec<Job> {
    store
        .list_jobs(None, Page::first(1000))
        .await
        .unwrap_or_else(|e| panic!("list jobs: {e}"))
}

/// Open the store of a data folder (while the orchestrator runs too: SQLite WAL allows it).
/// Create the session `name` (no job: a caller to name) in the SQLite store in `data`, unless
/// it exists.
pub(crate) async fn add_session(data: &Path, name: &str) {
    use patchbay_orchestrator::store::{NewSession, StoreError};
    let store = open_store(data).await;
    let new = NewSession {
        session_name: name.to_owned(),
        agent_name: "default".to_owned(),
        project_dir: ".".to_owned(),
        parent_session_name: None,
    };
    match store.create_session(new).await {
        Ok(_) | Err(StoreError::SessionExists(_)) => {}
        Err(e) => panic!("cannot add the session {name}: {e}"),
    }
    store.close().await;
}

pub(crate) async fn open_store(data: &Path) -> SqliteStore {
    SqliteStore::open(data)
        .await
        .unwrap_or_else(|e| panic!("open the store in {}: {e}", data.display()))
}
