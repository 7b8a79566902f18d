//! A small MCP client on patchbay's client set: connect to a streamable-HTTP server, list its
//! tools, call some, print what came back.
//!
//! ```text
//! cargo run --features mcp --example mcp-client -- [--protocol 2025-11-25] URL
//! ```
//!
//! Elicitation is answered with the form's defaults (`AcceptDefaults`); log messages and
//! notices are printed as they come. Which tools it calls: the ones the official conformance
//! suite's client scenario names (read from `MCP_CONFORMANCE_SCENARIO`, which the suite sets),
//! else every listed tool with arguments made from its input schema (defaults, else a sample
//! value per type). It exits 1 when it cannot connect, 2 on a usage error.
//!
//! Version negotiation: the client set proposes rmcp's newest revision (2026-07-28) and goes
//! on in whatever the server answers. `--protocol 2025-11-25` proposes that revision instead,
//! which the conformance suite (written for 2025-11-25) checks in its `initialize` scenario;
//! the CI test passes it (`tests/mcp_client.rs`).

use std::time::Duration;

use patchbay_core::ToolContext;
use patchbay_core::context::{McpServerConfig, McpTransport};
use patchbay_mcp::rmcp::model::ProtocolVersion;
use patchbay_mcp::{AcceptDefaults, McpClientSet};
use serde_json::{Map, Value, json};

/// The tools (and arguments) each client scenario of the conformance suite asks for.
fn scenario_calls(scenario: &str) -> Option<Vec<(String, Value)>> {
    let calls = match scenario {
        "initialize" => vec![],
        "tools_call" => vec![("add_numbers", json!({ "a": 5, "b": 3 }))],
        "elicitation-sep1034-client-defaults" => vec![("test_client_elicitation_defaults", json!({}))],
        "sse-retry" => vec![("test_reconnection", json!({}))],
        _ => return None,
    };
    Some(
        calls
            .into_iter()
            .map(|(name, input)| (name.to_owned(), input))
            .collect(),
    )
}

/// Arguments for a tool from its input schema: each property's default, else a sample value.
fn sample_arguments(schema: &Value) -> Value {
    let mut arguments = Map::new();
    if let Some(Value::Object(properties)) = schema.get("properties") {
        for (name, property) in properties {
            let value = property.get("default").cloned().unwrap_or_else(|| {
                match property.get("type").and_then(Value::as_str) {
                    Some("number" | "integer") => json!(1),
                    Some("boolean") => json!(false),
                    Some("array") => json!([]),
                    Some("object") => json!({}),
                    _ => property
                        .get("enum")
                        .and_then(|e| e.get(0))
                        .cloned()
                        .unwrap_or_else(|| json!("example")),
                }
            });
            arguments.insert(name.clone(), value);
        }
    }
    Value::Object(arguments)
}

fn usage() -> ! {
    eprintln!("usage: mcp-client [--protocol VERSION] URL");
    std::process::exit(2)
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let mut protocol = None;
    let mut url = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--protocol" => protocol = Some(args.next().unwrap_or_else(|| usage())),
            "-h" | "--help" => usage(),
            _ => url = Some(arg),
        }
    }
    let Some(url) = url else { usage() };
    let mut set = McpClientSet::new()
        .with_server(McpServerConfig {
            name: "server".into(),
            transport: McpTransport::Http {
                url,
                headers: Default::default(),
            },
        })
        .with_elicitation(AcceptDefaults)
        .with_connect_timeout(Duration::from_secs(15))
        .with_call_timeout(Duration::from_secs(30));
    if let Some(version) = protocol {
        match serde_json::from_value::<ProtocolVersion>(Value::String(version)) {
            Ok(version) => set = set.with_protocol_version(version),
            Err(_) => usage(),
        }
    }
    let connections = set.connect().await;
    let Some(client) = connections.client("server") else {
        for failure in connections.failed() {
            eprintln!("cannot connect: {}", failure.error);
        }
        std::process::exit(1);
    };
    println!(
        "connected (protocol {})",
        client.protocol_version().map(|v| v.to_string()).unwrap_or_default()
    );
    let specs = client.tool_specs().await;
    println!(
        "tools: {}",
        specs.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")
    );
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let calls = scenario_calls(&scenario).unwrap_or_else(|| {
        specs
            .iter()
            .map(|spec| (spec.name.clone(), sample_arguments(&spec.input_schema)))
            .collect()
    });
    for (name, input) in calls {
        let result = client.call_tool(&name, input, &ToolContext::new(), None).await;
        println!("{name}: {:?} {}", result.status, result.text_content());
        for event in connections.take_events() {
            println!("event: {}", serde_json::to_string(&event).unwrap_or_default());
        }
    }
    connections.close().await;
}
