//! The MCP conversions of `patchbay_mcp`, both ways, on values built from arbitrary JSON with
//! serde: an rmcp `CallToolResult` (what a foreign server sends) and a patchbay `ToolResult`
//! (what a host tool returns), an rmcp `Tool` and a patchbay `ToolSpec`. No panic; what the
//! conversion gives survives a second round trip unchanged (the mapping is stable once applied),
//! keeps the status and the number of content pieces, and what patchbay sends serializes to JSON
//! that reads back as the same MCP value.
//!
//! Input: byte 0 picks the type; the rest is its JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;
use patchbay_core::{ToolResult, ToolSpec};
use patchbay_mcp::rmcp::model::{CallToolResult, Tool};
use patchbay_mcp::{from_call_tool_result, spec_from_mcp, spec_to_mcp, to_call_tool_result};

/// What patchbay sends, through the wire and back: the same MCP value.
fn sent(result: &ToolResult) -> CallToolResult {
    let mcp = to_call_tool_result(result);
    let json = serde_json::to_string(&mcp).expect("a CallToolResult serializes");
    let back: CallToolResult = serde_json::from_str(&json).expect("what we send reads back");
    assert_eq!(
        from_call_tool_result(back),
        from_call_tool_result(mcp.clone()),
        "changed on the wire: {json}"
    );
    mcp
}

/// One round trip from patchbay's side: the status and the pieces are kept, and a second trip
/// changes nothing more.
fn stable(result: &ToolResult) {
    let once = from_call_tool_result(sent(result));
    assert_eq!(once.status, result.status, "status changed");
    assert_eq!(once.content.len(), result.content.len(), "content pieces added or lost");
    let twice = from_call_tool_result(sent(&once));
    assert_eq!(once, twice, "a second round trip changed the result");
}

fn stable_spec(spec: &ToolSpec) {
    let once = spec_from_mcp(&spec_to_mcp(spec), spec.name.clone());
    assert_eq!(once.name, spec.name);
    let twice = spec_from_mcp(&spec_to_mcp(&once), once.name.clone());
    assert_eq!(once, twice, "a second round trip changed the spec");
}

fuzz_target!(|data: &[u8]| {
    let [kind, json @ ..] = data else {
        return;
    };
    match kind % 4 {
        0 => {
            if let Ok(result) = serde_json::from_slice::<CallToolResult>(json) {
                let received = from_call_tool_result(result.clone());
                assert_eq!(
                    received.content.len(),
                    result.content.len(),
                    "content pieces added or lost"
                );
                if result.is_error == Some(true) {
                    assert!(received.is_error(), "an MCP error became a success");
                }
                stable(&received);
            }
        }
        1 => {
            if let Ok(result) = serde_json::from_slice::<ToolResult>(json) {
                stable(&result);
            }
        }
        2 => {
            if let Ok(tool) = serde_json::from_slice::<Tool>(json) {
                let spec = spec_from_mcp(&tool, tool.name.to_string());
                stable_spec(&spec);
            }
        }
        _ => {
            if let Ok(spec) = serde_json::from_slice::<ToolSpec>(json) {
                stable_spec(&spec);
            }
        }
    }
});
