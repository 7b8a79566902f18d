//! Our tool server called by other MCP clients: the Python SDK (`mcp<2`) and the MCP Inspector
//! CLI, with custom headers. Tools are listed, a tool sees its registered context, a wrong
//! token and an unknown context id are refused.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use patchbay_core::RequestContext;
use patchbay_mcp::{ContextGuard, ToolServer};
use serde_json::Value;

use crate::common::{Db, tools};
use crate::installed::{inspector, python};

const PEER_TIMEOUT: Duration = Duration::from_secs(30);

async fn run(program: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = tokio::process::Command::new(program);
    command.args(args).envs(env.iter().copied()).kill_on_drop(true);
    tokio::time::timeout(PEER_TIMEOUT, command.output())
        .await
        .expect("peer finished in time")
        .expect("peer ran")
}

const PY_CLIENT: &str = r#"
import asyncio, json, os, sys
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client

async def main():
    headers = json.loads(os.environ["HEADERS"])
    async with streamablehttp_client(os.environ["URL"], headers=headers) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            result = await session.call_tool("whoami", {})
            print(json.dumps({
                "tools": [tool.name for tool in listed.tools],
                "text": result.content[0].text,
                "is_error": result.isError,
                "meta": result.meta,
            }))

def flatten(error):
    inner = getattr(error, "exceptions", None)
    if inner:
        return " | ".join(flatten(e) for e in inner)
    return f"{type(error).__name__}: {error}"

try:
    asyncio.run(asyncio.wait_for(main(), 20))
except BaseException as error:
    print("ERROR", flatten(error))
    sys.exit(1)
"#;

async fn python_client(py: &Path, url: &str, headers: &serde_json::Map<String, Value>) -> Result<Value, String> {
    let script = tempfile::NamedTempFile::with_suffix(".py").expect("temp file");
    std::fs::write(script.path(), PY_CLIENT).expect("written");
    let headers = Value::Object(headers.clone()).to_string();
    let path = script.path().display().to_string();
    let output = run(py, &[&path], &[("URL", url), ("HEADERS", &headers)]).await;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if output.status.success() {
        serde_json::from_str(stdout.trim()).map_err(|e| format!("{e}: {stdout}"))
    } else {
        Err(format!("{stdout}{}", String::from_utf8_lossy(&output.stderr)))
    }
}

fn header_map(guard: &ContextGuard) -> serde_json::Map<String, Value> {
    guard
        .headers()
        .iter()
        .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
        .collect()
}

pub(crate) async fn the_python_sdk_client_uses_our_server() {
    let (py, _heavy) = python().await;
    let server = ToolServer::start(tools()).await.expect("server");
    let guard = server.register(
        &RequestContext::new()
            .with_metadata("project_id", "py-proj")
            .with_extension(Db("pg")),
    );

    let ok = python_client(&py, server.url(), &header_map(&guard))
        .await
        .expect("python client works");
    assert_eq!(ok["tools"], serde_json::json!(["echo", "whoami", "fail", "rich"]));
    assert_eq!(ok["text"], r#"project=Some("py-proj") db=pg"#);
    assert_eq!(ok["is_error"], false);
    assert_eq!(ok["meta"]["patchbay/metadata"]["metadata"]["project_id"], "py-proj");

    let mut wrong_token = header_map(&guard);
    wrong_token.insert("Authorization".into(), Value::from("Bearer wrong"));
    let refused = python_client(&py, server.url(), &wrong_token)
        .await
        .expect_err("wrong token refused");
    assert!(refused.contains("401"), "{refused}");

    let mut unknown = header_map(&guard);
    unknown.insert("x-patchbay-context".into(), Value::from("f".repeat(64)));
    let refused = python_client(&py, server.url(), &unknown)
        .await
        .expect_err("unknown context refused");
    assert!(refused.contains("unknown or expired patchbay context id"), "{refused}");
    server.shutdown().await;
}

async fn inspector_cli(bin: &Path, url: &str, headers: &[(String, String)], method: &[&str]) -> Output {
    let mut args: Vec<String> = vec![url.into(), "--cli".into(), "--transport".into(), "http".into()];
    for (name, value) in headers {
        args.push("--header".into());
        args.push(format!("{name}: {value}"));
    }
    args.extend(method.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run(bin, &args, &[]).await
}

pub(crate) async fn the_mcp_inspector_cli_uses_our_server() {
    let (bin, _heavy) = inspector().await;
    let server = ToolServer::start(tools()).await.expect("server");
    let guard = server.register(&RequestContext::new().with_metadata("project_id", "insp"));
    let headers: Vec<(String, String)> = guard.headers().iter().map(|(k, v)| (k.clone(), v.clone())).collect();

    let listed = inspector_cli(&bin, server.url(), &headers, &["--method", "tools/list"]).await;
    assert!(listed.status.success(), "{}", String::from_utf8_lossy(&listed.stderr));
    let listed: Value = serde_json::from_slice(&listed.stdout).expect("json");
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["echo", "whoami", "fail", "rich"]);

    let called = inspector_cli(
        &bin,
        server.url(),
        &headers,
        &["--method", "tools/call", "--tool-name", "whoami"],
    )
    .await;
    assert!(called.status.success(), "{}", String::from_utf8_lossy(&called.stderr));
    let called: Value = serde_json::from_slice(&called.stdout).expect("json");
    assert_eq!(called["content"][0]["text"], r#"project=Some("insp") db=none"#);

    let wrong: Vec<(String, String)> = headers
        .iter()
        .map(|(k, v)| {
            if k == "Authorization" {
                (k.clone(), "Bearer wrong".into())
            } else {
                (k.clone(), v.clone())
            }
        })
        .collect();
    let refused = inspector_cli(&bin, server.url(), &wrong, &["--method", "tools/list"]).await;
    assert!(!refused.status.success(), "wrong token accepted");

    let unknown: Vec<(String, String)> = headers
        .iter()
        .map(|(k, v)| {
            if k == "x-patchbay-context" {
                (k.clone(), "0".repeat(64))
            } else {
                (k.clone(), v.clone())
            }
        })
        .collect();
    let refused = inspector_cli(&bin, server.url(), &unknown, &["--method", "tools/list"]).await;
    assert!(!refused.status.success(), "unknown context accepted");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&refused.stdout),
        String::from_utf8_lossy(&refused.stderr)
    );
    assert!(said.contains("unknown or expired"), "{said}");
    server.shutdown().await;
}
