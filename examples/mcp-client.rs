//! A small MCP client on patchbay's client set: connect to a streamable-HTTP server (signing
//! in with OAuth when it asks), list its tools, call some, print what came back.
//!
//! ```text
//! cargo run --features mcp --example mcp-client -- [--protocol 2025-11-25] [--headless]
//!     [--client-metadata-url URL] [--token-file PATH] URL
//! ```
//!
//! Elicitation is answered with the form's defaults (`AcceptDefaults`); log messages and
//! notices are printed as they come. Which tools it calls: the ones the official conformance
//! suite's client scenario names (read from `MCP_CONFORMANCE_SCENARIO`, which the suite sets),
//! else every listed tool with arguments made from its input schema (defaults, else a sample
//! value per type). It exits 1 when it cannot connect or a call fails, 2 on a usage error.
//!
//! Authorization: a server that answers `401` (or `403 insufficient_scope`) gets the OAuth
//! flow of `patchbay_mcp::oauth`. The authorization URL is printed and opened in the browser,
//! and the redirect comes back to a loopback listener. With `--headless` (or under the
//! conformance suite) the URL is fetched instead of opened, following the redirects of an
//! authorization server that approves at once, as the suite's does. The suite's
//! `MCP_CONFORMANCE_CONTEXT` may carry a pre-registered `client_id` and `client_secret`.
//! `--client-metadata-url` names a client ID metadata document; `--token-file` keeps the
//! tokens between runs (JSON, `0600`).
//!
//! Version negotiation: the client set proposes rmcp's newest revision (2026-07-28) and goes
//! on in whatever the server answers. `--protocol 2025-11-25` proposes that revision instead,
//! which the conformance suite (written for 2025-11-25) checks in its `initialize` scenario;
//! the CI test passes it (`tests/mcp_client.rs`).

use std::process::ExitCode;
use std::time::Duration;

use patchbay_core::ToolContext;
use patchbay_core::context::{McpServerConfig, McpTransport};
use patchbay_mcp::oauth::{AuthorizationPrompt, FileTokenStore, LoopbackRedirect, OAuthClient, OAuthError};
use patchbay_mcp::rmcp::model::ProtocolVersion;
use patchbay_mcp::{AcceptDefaults, McpClientSet};
use serde_json::{Map, Value, json};

/// The command line.
struct Args {
    url: String,
    protocol: Option<ProtocolVersion>,
    headless: bool,
    client_metadata_url: Option<String>,
    token_file: Option<String>,
}

const USAGE: &str =
    "usage: mcp-client [--protocol VERSION] [--headless] [--client-metadata-url URL] [--token-file PATH] URL";

fn parse_args() -> Option<Args> {
    let mut args = std::env::args().skip(1);
    let mut parsed = Args {
        url: String::new(),
        protocol: None,
        headless: std::env::var_os("MCP_CONFORMANCE_SCENARIO").is_some(),
        client_metadata_url: None,
        token_file: None,
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--protocol" => {
                let version = args.next()?;
                parsed.protocol = Some(serde_json::from_value(Value::String(version)).ok()?);
            }
            "--headless" => parsed.headless = true,
            "--client-metadata-url" => parsed.client_metadata_url = Some(args.next()?),
            "--token-file" => parsed.token_file = Some(args.next()?),
            _ if arg.starts_with('-') => return None,
            _ => parsed.url = arg,
        }
    }
    (!parsed.url.is_empty()).then_some(parsed)
}

/// The OAuth setup, used only if the server asks for authorization.
fn oauth_client(args: &Args) -> Result<OAuthClient, OAuthError> {
    let redirect = LoopbackRedirect::bind()?;
    let redirect = if args.headless {
        redirect.with_opener(follow_redirects)
    } else {
        redirect.with_browser()
    };
    let mut oauth = OAuthClient::new(redirect).with_client_name("patchbay mcp-client example");
    if let Some(url) = &args.client_metadata_url {
        oauth = oauth.with_client_metadata_url(url);
    }
    if let Some(path) = &args.token_file {
        oauth = oauth.with_store(FileTokenStore::new(path));
    }
    // The conformance suite's pre-registered client.
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default();
    if let Some(id) = context["client_id"].as_str() {
        oauth = oauth.with_client_id(id);
        if let Some(secret) = context["client_secret"].as_str() {
            oauth = oauth.with_client_secret(secret);
        }
    }
    Ok(oauth)
}

/// "Open" the URL by fetching it and following the redirects back to the loopback listener.
fn follow_redirects(prompt: &AuthorizationPrompt) -> Result<(), OAuthError> {
    let url = prompt.url().to_owned();
    let client = patchbay_http::client_builder()
        .redirect(reqwest::redirect::Policy::limited(5))
        .build()
        .map_err(|error| OAuthError::authorization(format!("cannot build an HTTP client: {error}")))?;
    tokio::spawn(async move {
        if let Err(error) = client.get(url).send().await {
            eprintln!("fetching the authorization URL failed: {error}");
        }
    });
    Ok(())
}

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

#[tokio::main]
async fn main() -> ExitCode {
    let Some(args) = parse_args() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let oauth = match oauth_client(&args) {
        Ok(oauth) => oauth,
        Err(error) => {
            eprintln!("OAuth setup failed: {error}");
            return ExitCode::FAILURE;
        }
    };
    let mut set = McpClientSet::new()
        .with_server(McpServerConfig {
            name: "server".into(),
            transport: McpTransport::Http {
                url: args.url.clone(),
                headers: Default::default(),
            },
        })
        .with_oauth("server", oauth)
        .with_elicitation(AcceptDefaults)
        .with_connect_timeout(Duration::from_secs(15))
        .with_call_timeout(Duration::from_secs(30));
    if let Some(version) = args.protocol {
        set = set.with_protocol_version(version);
    }
    let connections = set.connect().await;
    let Some(client) = connections.client("server") else {
        for failure in connections.failed() {
            eprintln!("cannot connect: {}", failure.error);
        }
        return ExitCode::FAILURE;
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
    let mut failed = false;
    for (name, input) in calls {
        let result = client.call_tool(&name, input, &ToolContext::new(), None).await;
        println!("{name}: {:?} {}", result.status, result.text_content());
        failed |= result.is_error();
        for event in connections.take_events() {
            println!("event: {}", serde_json::to_string(&event).unwrap_or_default());
        }
    }
    connections.close().await;
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}
