//! The blueprints of the API tests.

use patchbay_orchestrator::blueprint::Blueprint;
use serde_json::json;

/// A blueprint whose runs print "working" and then stall until cancelled.
pub(crate) fn stall_blueprint() -> Result<Blueprint, serde_json::Error> {
    serde_json::from_value(json!({
        "name": "stall",
        "description": "Stalls until cancelled.",
        "provider": "scripted",
        "model": "scripted",
        "tools": [],
        "provider_options": {"script": {"turns": [
            {"type": "respond", "parts": [{"type": "text", "text": "working on it"}], "end": {"type": "stall"}}
        ]}},
    }))
}

/// A blueprint with secrets in its options and MCP servers (never to be shown).
pub(crate) fn secret_blueprint() -> Result<Blueprint, serde_json::Error> {
    serde_json::from_value(json!({
        "name": "secretive",
        "description": "Has keys.",
        "provider": "anthropic",
        "model": "claude-test",
        "system": "Be brief.",
        "provider_options": {"api_key": "sk-SECRET-OPTION", "max_tokens": 100},
        "mcp_servers": [
            {"name": "web", "transport": {"type": "http", "url": "https://user:sk-SECRET-URL@example.invalid/mcp?key=sk-SECRET-QUERY",
                "headers": {"Authorization": "Bearer sk-SECRET-HEADER"}}},
            {"name": "local", "transport": {"type": "stdio", "command": "server", "args": ["--key", "sk-SECRET-ARG"],
                "env": {"API_KEY": "sk-SECRET-ENV"}}}
        ],
    }))
}

pub(crate) fn retired_blueprint() -> Result<Blueprint, serde_json::Error> {
    serde_json::from_value(json!({
        "name": "old", "provider": "scripted", "model": "scripted", "status": "retired",
    }))
}
