//! Connect to an MCP server behind OAuth, list its tools and call each one.
//!
//! ```sh
//! cargo run -p patchbay-mcp --example oauth-client -- https://mcp.example.com/mcp
//! ```
//!
//! The authorization URL is printed and opened in the browser; the redirect comes back to a
//! loopback listener. With `--headless` (or under the official conformance suite, which sets
//! `MCP_CONFORMANCE_SCENARIO`) the URL is fetched instead of opened, following the redirects
//! of an authorization server that approves at once, as the suite's does. The suite's
//! `MCP_CONFORMANCE_CONTEXT` may carry a pre-registered `client_id` and `client_secret`.
//! Options: `--client-metadata-url URL` (a client ID metadata document), `--token-file PATH`
//! (keep tokens between runs).

use std::process::ExitCode;

use patchbay_core::ToolContext;
use patchbay_core::context::{McpServerConfig, McpTransport};
use patchbay_mcp::McpClientSet;
use patchbay_mcp::oauth::{AuthorizationPrompt, FileTokenStore, LoopbackRedirect, OAuthClient, OAuthError};
use serde_json::{Value, json};

struct Args {
    url: String,
    headless: bool,
    client_metadata_url: Option<String>,
    token_file: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let mut parsed = Args {
        url: String::new(),
        headless: std::env::var_os("MCP_CONFORMANCE_SCENARIO").is_some(),
        client_metadata_url: None,
        token_file: None,
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--headless" => parsed.headless = true,
            "--client-metadata-url" => parsed.client_metadata_url = args.next(),
            "--token-file" => parsed.token_file = args.next(),
            _ if arg.starts_with("--") => return Err(format!("unknown option {arg}")),
            _ => parsed.url = arg,
        }
    }
    if parsed.url.is_empty() {
        return Err("usage: oauth-client [--headless] [--client-metadata-url URL] [--token-file PATH] URL".into());
    }
    Ok(parsed)
}

/// The whole OAuth setup, one call.
fn oauth_client(args: &Args) -> Result<OAuthClient, OAuthError> {
    let redirect = LoopbackRedirect::bind()?;
    let redirect = if args.headless {
        redirect.with_opener(follow_redirects)
    } else {
        redirect.with_browser()
    };
    let mut oauth = OAuthClient::new(redirect).with_client_name("patchbay oauth-client example");
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

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let oauth = match oauth_client(&args) {
        Ok(oauth) => oauth,
        Err(error) => {
            eprintln!("OAuth setup failed: {error}");
            return ExitCode::FAILURE;
        }
    };
    let server = McpServerConfig {
        name: "server".into(),
        transport: McpTransport::Http {
            url: args.url.clone(),
            headers: Default::default(),
        },
    };
    let connections = McpClientSet::new()
        .with_server(server)
        .with_oauth("server", oauth)
        .connect()
        .await;
    let Some(client) = connections.client("server") else {
        for failure in connections.failed() {
            eprintln!("{}: {}", failure.name, failure.error);
        }
        return ExitCode::FAILURE;
    };
    let mut failed = false;
    for spec in client.tool_specs().await {
        let result = client.call_tool(&spec.name, json!({}), &ToolContext::new(), None).await;
        println!("{}: {}", spec.name, serde_json::to_string(&result).unwrap_or_default());
        failed |= result.is_error();
    }
    connections.close().await;
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}
