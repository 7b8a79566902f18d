//! The run loop: stdout lines into the translator, control requests answered, stdin written,
//! the process stopped (or parked) at the end.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use futures::stream::{FuturesUnordered, StreamExt};
use patchbay_core::kit::run_tool;
use patchbay_core::{ErrorKind, EventStream, ProviderError, RequestContext, Signal, ToolResult, ToolSet};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tracing::Instrument;

use crate::control::{self, McpWork};
use crate::error::{Error, PROVIDER};
use crate::pool::Pool;
use crate::process::CliProcess;
use crate::translate::Translator;

pub(crate) struct Bridge {
    pub(crate) tools: ToolSet,
    pub(crate) context: RequestContext,
    pub(crate) signal: Signal,
    pub(crate) server: String,
}

type Handler = Pin<Box<dyn Future<Output = Handled> + Send>>;

struct Handled {
    line: String,
    record: Option<(String, ToolResult)>,
}

fn record_line(path: &std::path::Path, line: &[u8]) {
    use std::io::Write;
    let file = std::fs::OpenOptions::new().create(true).append(true).open(path);
    if let Ok(mut file) = file {
        let _ = file.write_all(line).and_then(|()| file.write_all(b"\n"));
    }
}

pub(crate) struct Start {
    pub(crate) reused: bool,
    pub(crate) park: Option<(Arc<Pool>, String, std::time::Duration)>,
    pub(crate) record: Option<PathBuf>,
    pub(crate) initialize: Value,
    pub(crate) user: String,
    pub(crate) init_timeout: std::time::Duration,
}

fn process_error(
    mut error: ProviderError,
    process: &CliProcess,
    status: Option<std::process::ExitStatus>,
) -> ProviderError {
    let tail = process.stderr_tail();
    if !tail.is_empty() && error.stderr_tail().is_none() {
        error = error.with_stderr_tail(tail);
    }
    if let Some(code) = status.and_then(|s| s.code()) {
        error = error.with_exit_code(code);
    }
    error
}

pub(crate) fn run(
    mut process: CliProcess,
    mut translator: Translator,
    bridge: Arc<Bridge>,
    start: Start,
    mut reports: mpsc::UnboundedReceiver<(String, Value, ToolResult)>,
    keep: Box<dyn std::any::Any + Send>,
) -> EventStream {
    let stream = async_stream::stream! {
        let keep = keep;
        let record = start.record.clone();
        let signal = bridge.signal.clone();
        let mut handlers: FuturesUnordered<Handler> = FuturesUnordered::new();
        let init_id = "patchbay_init";
        // A reused CLI was initialized by its first run: the user turn goes at once.
        process.set_in_turn(true);
        let first = if start.reused { &start.user } else { &control::request_line(init_id, start.initialize.clone()) };
        if let Err(error) = process.write_line(first).await {
            let status = process.stop().await;
            yield Err(process_error(ProviderError::from(error), &process, status));
            return;
        }
        let mut init_done = start.reused;
        let init_deadline = tokio::time::sleep(start.init_timeout);
        tokio::pin!(init_deadline);
        let mut reports_open = true;
        loop {
            let line = tokio::select! {
                biased;
                _ = signal.cancelled() => {
                    let turn = translator.step();
                    // Dropping the process stops it in the background (`interrupt`, stdin EOF,
                    // then SIGTERM and SIGKILL after `cancel_grace` each).
                    drop(process);
                    yield Err(ProviderError::cancelled().with_provider(PROVIDER).with_turn(turn));
                    return;
                }
                _ = &mut init_deadline, if !init_done => {
                    let status = process.stop().await;
                    let error = ProviderError::new(ErrorKind::Process, "the CLI did not answer `initialize` in time").with_provider(PROVIDER);
                    yield Err(process_error(error, &process, status));
                    return;
                }
                Some(done) = handlers.next(), if !handlers.is_empty() => {
                    if let Some((id, result)) = done.record {
                        translator.record_host_result(id, result);
                    }
                    if let Err(error) = process.write_line(&done.line).await {
                        tracing::debug!(%error, "cannot answer a control request");
                    }
                    continue;
                }
                report = reports.recv(), if reports_open => {
                    match report {
                        Some((name, input, result)) => translator.record_host_result_for(&name, input, result),
                        None => reports_open = false,
                    }
                    continue;
                }
                line = process.stdout.next_line() => match line {
                    Ok(Some(bytes)) => {
                        let trimmed = bytes.trim_ascii();
                        if trimmed.is_empty() {
                            continue;
                        }
                        if let Some(path) = &record {
                            record_line(path, trimmed);
                        }
                        if trimmed.first() != Some(&b'{') {
                            tracing::debug!(line = %String::from_utf8_lossy(&trimmed[..trimmed.len().min(200)]), "skipping a non-JSON stdout line");
                            continue;
                        }
                        serde_json::from_slice::<Value>(trimmed).map_err(|source| Error::BadLine {
                            head: String::from_utf8_lossy(&trimmed[..trimmed.len().min(80)]).into_owned(),
                            source,
                        })
                    }
                    Ok(None) => {
                        let status = process.stop().await;
                        let error = match translator.finish() {
                            Ok(()) => return,
                            Err(error) => error,
                        };
                        yield Err(process_error(error, &process, status));
                        return;
                    }
                    Err(error) => Err(error),
                },
            };
            let line = match line {
                Ok(line) => line,
                Err(error) => {
                    let status = process.stop().await;
                    let error = ProviderError::from(error).with_turn(translator.step());
                    yield Err(process_error(error, &process, status));
                    return;
                }
            };
            match line.get("type").and_then(Value::as_str) {
                Some("control_request") => {
                    let id = line.get("request_id").and_then(Value::as_str).unwrap_or("").to_string();
                    let request = line.get("request").cloned().unwrap_or(Value::Null);
                    match control_request(&bridge, &mut translator, &id, &request) {
                        Reply::Now(reply) => {
                            if let Err(error) = process.write_line(&reply).await {
                                tracing::debug!(%error, "cannot answer a control request");
                            }
                        }
                        Reply::Later(handler) => handlers.push(handler),
                    }
                }
                Some("control_response") => {
                    let response = line.get("response").unwrap_or(&Value::Null);
                    if response.get("request_id").and_then(Value::as_str) == Some(init_id) && !init_done {
                        init_done = true;
                        if response.get("subtype").and_then(Value::as_str) == Some("error") {
                            let message = response.get("error").and_then(Value::as_str).unwrap_or("unknown error");
                            let status = process.stop().await;
                            let error = ProviderError::new(ErrorKind::Process, format!("the CLI refused `initialize`: {message}")).with_provider(PROVIDER);
                            yield Err(process_error(error, &process, status));
                            return;
                        }
                        if let Err(error) = process.write_line(&start.user).await {
                            let status = process.stop().await;
                            yield Err(process_error(ProviderError::from(error), &process, status));
                            return;
                        }
                    }
                }
                Some("control_cancel_request") => tracing::debug!("the CLI cancelled a control request"),
                _ => {
                    let pushed = translator.push_value(&line);
                    let finished = pushed.is_ok() && translator.is_done();
                    if translator.is_done() {
                        // The turn has its `result`: stdin EOF alone ends the CLI now.
                        process.set_in_turn(false);
                    }
                    if finished
                        && let (Some((pool, fingerprint, idle)), Some(session)) = (&start.park, translator.session_id())
                    {
                        // Park before `Finish` reaches the caller: the next Resume finds it.
                        pool.park(session.to_string(), process, keep, fingerprint.clone(), *idle);
                        while let Some(event) = translator.next_event() {
                            yield Ok(event);
                        }
                        return;
                    }
                    while let Some(event) = translator.next_event() {
                        yield Ok(event);
                    }
                    if let Err(error) = pushed {
                        let status = process.stop().await;
                        yield Err(process_error(error, &process, status));
                        return;
                    }
                    if translator.is_done() {
                        let status = process.stop().await;
                        tracing::debug!(?status, "claude-agent run finished");
                        return;
                    }
                }
            }
        }
    };
    Box::pin(stream)
}

enum Reply {
    Now(String),
    Later(Handler),
}

fn control_request(bridge: &Arc<Bridge>, translator: &mut Translator, id: &str, request: &Value) -> Reply {
    match request.get("subtype").and_then(Value::as_str).unwrap_or("") {
        "can_use_tool" => {
            let cli_name = request.get("tool_name").and_then(Value::as_str).unwrap_or("");
            let (name, _) = translator.map_tool_name(cli_name);
            let bridge = bridge.clone();
            let id = id.to_string();
            let request = request.clone();
            Reply::Later(Box::pin(async move {
                let mut cx = bridge.context.tool_context(&bridge.signal);
                if let Some(call) = request.get("tool_use_id").and_then(Value::as_str) {
                    cx = cx.with_tool_use_id(call);
                }
                let response = control::decide(bridge.context.approval.as_ref(), &request, name, &cx).await;
                Handled {
                    line: control::success_line(&id, response),
                    record: None,
                }
            }))
        }
        "mcp_message" => {
            let server = request.get("server_name").and_then(Value::as_str).unwrap_or("");
            let message = request.get("message").cloned().unwrap_or(Value::Null);
            if server != bridge.server {
                let reply = json!({
                    "jsonrpc": "2.0", "id": message.get("id"),
                    "error": { "code": -32601, "message": format!("server `{server}` not found") },
                });
                return Reply::Now(control::success_line(id, json!({ "mcp_response": reply })));
            }
            match control::route_mcp(&message, &bridge.tools, &bridge.server) {
                McpWork::Reply(reply) => {
                    let reply = reply.unwrap_or_else(|| json!({ "jsonrpc": "2.0", "result": {} }));
                    Reply::Now(control::success_line(id, json!({ "mcp_response": reply })))
                }
                McpWork::Call {
                    id: rpc_id,
                    name,
                    input,
                } => {
                    let Some(tool) = bridge.tools.get(&name).cloned() else {
                        let reply = control::unknown_tool_reply(rpc_id, &name);
                        return Reply::Now(control::success_line(id, json!({ "mcp_response": reply })));
                    };
                    // The CLI names the call in `_meta`; without it, match by name and input.
                    let call_id = match message
                        .pointer("/params/_meta/claudecode~1toolUseId")
                        .and_then(Value::as_str)
                    {
                        Some(call) => {
                            translator.forget_host_call(call);
                            Some(call.to_string())
                        }
                        None => translator.claim_host_call(&name, &input),
                    };
                    let bridge = bridge.clone();
                    let id = id.to_string();
                    let span = tracing::info_span!("patchbay.tool", tool = %name, call = ?call_id);
                    let work = async move {
                        let mut cx = bridge.context.tool_context(&bridge.signal);
                        if let Some(call) = &call_id {
                            cx = cx.with_tool_use_id(call.clone());
                        }
                        let result = run_tool(tool.as_ref(), input, &cx).await;
                        let reply = control::call_reply(rpc_id, &result);
                        Handled {
                            line: control::success_line(&id, json!({ "mcp_response": reply })),
                            record: call_id.map(|call| (call, result)),
                        }
                    };
                    Reply::Later(Box::pin(work.instrument(span)))
                }
            }
        }
        other => Reply::Now(control::error_line(
            id,
            &format!("unsupported control request `{other}`"),
        )),
    }
}
