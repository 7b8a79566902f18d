//! `ToolResult` <-> MCP `CallToolResult`, snapshotted for every content kind and status in the
//! conformance crate's snapshot folder (`conformance/snapshots/tool_results/`).

use patchbay_core::{ToolResult, tool::ToolContent, tool::ToolStatus};
use patchbay_mcp::{from_call_tool_result, to_call_tool_result};
use rmcp::model::CallToolResult;
use serde::Serialize;
use serde_json::{Value, json};

fn settings() -> insta::Settings {
    patchbay_conformance::settings_in("tool_results")
}

/// patchbay -> MCP -> patchbay.
#[derive(Serialize)]
struct Outbound {
    patchbay: ToolResult,
    mcp: Value,
    back: ToolResult,
    round_trips: bool,
}

/// MCP (as a foreign server sends it) -> patchbay.
#[derive(Serialize)]
struct Inbound {
    mcp: Value,
    patchbay: ToolResult,
}

fn outbound(result: ToolResult) -> Outbound {
    let mcp = to_call_tool_result(&result);
    let wire = serde_json::to_value(&mcp).expect("serializes");
    // Back through the wire format, as a client would receive it.
    let received: CallToolResult = serde_json::from_value(wire.clone()).expect("parses");
    let back = from_call_tool_result(received);
    Outbound {
        round_trips: back == result,
        patchbay: result,
        mcp: wire,
        back,
    }
}

fn inbound(wire: Value) -> Inbound {
    let received: CallToolResult = serde_json::from_value(wire.clone()).expect("parses");
    Inbound {
        mcp: wire,
        patchbay: from_call_tool_result(received),
    }
}

fn with(content: Vec<ToolContent>) -> ToolResult {
    ToolResult {
        content,
        status: ToolStatus::Completed,
        metadata: None,
    }
}

#[test]
fn tool_results_to_mcp_and_back() {
    let cases = [
        ("mcp__text", ToolResult::text("hello")),
        (
            "mcp__image",
            with(vec![ToolContent::Image {
                media_type: "image/png".into(),
                data: "iVBORw0KGgo=".into(),
            }]),
        ),
        (
            "mcp__resource_text",
            with(vec![ToolContent::Resource {
                uri: "file:///notes.txt".into(),
                mime_type: Some("text/plain".into()),
                text: Some("notes".into()),
                blob: None,
            }]),
        ),
        (
            "mcp__resource_blob",
            with(vec![ToolContent::Resource {
                uri: "file:///logo.png".into(),
                mime_type: Some("image/png".into()),
                text: None,
                blob: Some("iVBORw0KGgo=".into()),
            }]),
        ),
        (
            "mcp__json",
            with(vec![ToolContent::Json {
                value: json!({"rows": 3, "ok": true}),
            }]),
        ),
        (
            "mcp__mixed_with_metadata",
            with(vec![
                ToolContent::text("found 2"),
                ToolContent::Json { value: json!([1, 2]) },
            ])
            .with_metadata(json!({"documents": ["d1", "d2"], "artifact": {"id": "a1"}})),
        ),
        ("mcp__status_failed", ToolResult::error("no such file")),
        ("mcp__status_denied", ToolResult::denied("the user said no")),
        ("mcp__status_aborted", ToolResult::aborted()),
    ];
    settings().bind(|| {
        for (name, result) in cases {
            let outcome = outbound(result);
            assert!(outcome.round_trips, "{name} does not round-trip");
            insta::assert_json_snapshot!(name, outcome);
        }
    });
}

#[test]
fn foreign_call_tool_results_to_patchbay() {
    let cases = [
        (
            "mcp__in_structured_content",
            json!({"content": [{"type": "text", "text": "{\"temperature\":22}"}], "structuredContent": {"temperature": 22}}),
        ),
        (
            "mcp__in_is_error",
            json!({"content": [{"type": "text", "text": "boom"}], "isError": true}),
        ),
        (
            "mcp__in_resource_link",
            json!({"content": [{"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt", "mimeType": "text/plain"}]}),
        ),
        (
            "mcp__in_audio",
            json!({"content": [{"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}]}),
        ),
        ("mcp__in_empty", json!({"content": []})),
    ];
    settings().bind(|| {
        for (name, wire) in cases {
            insta::assert_json_snapshot!(name, inbound(wire));
        }
    });
}
