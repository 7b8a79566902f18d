//! Serve example tools over MCP.
//!
//! ```text
//! cargo run --example mcp-serve --features mcp            # streamable HTTP on 127.0.0.1
//! cargo run --example mcp-serve --features mcp -- --stdio # stdin/stdout
//! cargo run --example mcp-serve --features mcp -- --conformance
//! ```
//!
//! `--conformance` serves the reference tools, resources and prompts of the official MCP
//! conformance suite instead (see `conformance.rs`), stateful and WITHOUT a bearer token (the
//! suite sends none; only in this mode), on loopback: run the suite's server scenarios at the
//! URL it prints (`conformance server --url URL`).
//!
//! Over HTTP it prints the URL, the bearer token and the headers of one registered request
//! context (project `demo`), then serves until Ctrl-C (SIGINT) or SIGTERM and shuts down
//! cleanly, so it runs in the background or under a supervisor with standard input closed. Over
//! stdio it serves until its client closes standard input, or a signal. Try it with the MCP
//! Inspector CLI (`mcp-inspector --cli <url> --transport http --header "..." --method tools/list`).

mod conformance;

use std::sync::Arc;

use patchbay_core::{RequestContext, Tool, ToolContext, ToolResult, ToolSet, ToolSpec, async_trait};
use patchbay_mcp::ToolServer;
use serde_json::{Value, json};
use tokio::signal::unix::{SignalKind, signal};

type Run = dyn Fn(&Value, &ToolContext) -> ToolResult + Send + Sync;

/// A tool from a spec and a plain function.
struct Example {
    spec: ToolSpec,
    run: Arc<Run>,
}

#[async_trait]
impl Tool for Example {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn execute(&self, input: Value, cx: &ToolContext) -> ToolResult {
        (self.run)(&input, cx)
    }
}

fn tool(
    name: &str,
    description: &str,
    schema: Value,
    run: impl Fn(&Value, &ToolContext) -> ToolResult + Send + Sync + 'static,
) -> Example {
    Example {
        spec: ToolSpec::new(name, description, schema),
        run: Arc::new(run),
    }
}

fn example_tools() -> ToolSet {
    ToolSet::new()
        .with(tool(
            "echo",
            "Echo the message back.",
            json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}),
            |input, _| match input["message"].as_str() {
                Some(message) => ToolResult::text(message),
                None => ToolResult::error("`message` must be a string"),
            },
        ))
        .with(tool(
            "add",
            "Add two numbers.",
            json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
            |input, _| match (input["a"].as_f64(), input["b"].as_f64()) {
                (Some(a), Some(b)) => ToolResult::text((a + b).to_string()),
                _ => ToolResult::error("`a` and `b` must be numbers"),
            },
        ))
        .with(tool(
            "whoami",
            "Show the request context this call runs under.",
            json!({"type": "object", "properties": {}}),
            |_, cx| ToolResult::text(format!("metadata: {:?}", cx.metadata)).with_metadata(json!({"metadata": cx.metadata})),
        ))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let context = RequestContext::new().with_metadata("project_id", "demo");
    if std::env::args().any(|arg| arg == "--stdio") {
        // stdout is the protocol: say nothing else there.
        tokio::select! {
            served = ToolServer::builder(example_tools()).serve_stdio(&context) => served?,
            signal = stop_signal() => eprintln!("mcp-serve: {}, stopping", signal?),
        }
        return Ok(());
    }

    if std::env::args().any(|arg| arg == "--conformance") {
        let server = conformance::builder().start().await?;
        println!("MCP tool server: {}", server.url());
        println!("conformance mode: no token, stateful sessions, loopback only");
        println!("Serving until Ctrl-C or SIGTERM.");
        let stopped_by = stop_signal().await?;
        eprintln!("mcp-serve: {stopped_by}, shutting down");
        server.shutdown().await;
        return Ok(());
    }

    let server = ToolServer::start(example_tools()).await?;
    let guard = server.register(&context);
    println!("MCP tool server: {}", server.url());
    println!("token: {}", server.token());
    println!("headers of the registered context (project `demo`):");
    for (name, value) in guard.headers() {
        println!("  {name}: {value}");
    }
    println!(
        "as an MCP server config: {}",
        serde_json::to_string(&guard.server_config("demo"))?
    );
    println!("Serving until Ctrl-C or SIGTERM.");
    let stopped_by = stop_signal().await?;
    eprintln!("mcp-serve: {stopped_by}, shutting down");
    drop(guard);
    server.shutdown().await;
    Ok(())
}

/// Wait for SIGINT (Ctrl-C) or SIGTERM; says which arrived.
async fn stop_signal() -> std::io::Result<&'static str> {
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    Ok(tokio::select! {
        _ = interrupt.recv() => "SIGINT",
        _ = terminate.recv() => "SIGTERM",
    })
}
