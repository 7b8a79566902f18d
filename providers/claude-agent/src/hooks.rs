//! The host's [`Hooks`](patchbay_core::hooks::Hooks) over the control protocol: registered
//! with `initialize` (one callback id per hook event), called on the CLI's `hook_callback`
//! requests, their decisions turned into the CLI's hook output.
//!
//! | CLI event | Host hook | Output |
//! |---|---|---|
//! | `PreToolUse` | `before_tool` | `Continue`: `{}`; `Deny`: `permissionDecision: "deny"` with the message; `Rewrite`: `updatedInput` |
//! | `PostToolUse` | `after_tool` | `None`: `{}`; `Some` for a host tool: `updatedMCPToolOutput`; for the CLI's own tools: observed only |
//! | `UserPromptSubmit` | `on_prompt` | `Block`: `decision: "block"`; `AddContext`: `additionalContext` |
//! | `Stop` | `on_stop` | `Continue`: `decision: "block"` with the prompt as reason (the CLI goes on) |

use patchbay_core::hooks::{BeforeTool, OnPrompt, StopDecision, StopInfo, ToolInvocation};
use patchbay_core::{ExecutedBy, FinishReason, ToolResult, Usage, tool::ToolContent, tool::ToolStatus};
use patchbay_mcp::to_call_tool_result;
use serde_json::{Map, Value, json};

use crate::blocks::result_of;

/// The hook events registered when a call has hooks, with their callback ids.
pub(crate) const CALLBACKS: [(&str, &str); 4] = [
    ("PreToolUse", "patchbay_pre_tool_use"),
    ("PostToolUse", "patchbay_post_tool_use"),
    ("UserPromptSubmit", "patchbay_user_prompt_submit"),
    ("Stop", "patchbay_stop"),
];

/// The `hooks` of the `initialize` request: every event of [`CALLBACKS`], for every tool (no
/// matcher), or `null` without hooks.
pub(crate) fn registration(on: bool) -> Value {
    if !on {
        return Value::Null;
    }
    let mut hooks = Map::new();
    for (event, id) in CALLBACKS {
        hooks.insert(event.into(), json!([{ "matcher": null, "hookCallbackIds": [id] }]));
    }
    Value::Object(hooks)
}

/// The hook event a `hook_callback` request is for: the input's `hook_event_name`, else the
/// event its callback id was registered for.
pub(crate) fn event_of(request: &Value) -> &str {
    let input = request.get("input").unwrap_or(&Value::Null);
    if let Some(event) = input.get("hook_event_name").and_then(Value::as_str) {
        return event;
    }
    let id = request.get("callback_id").and_then(Value::as_str).unwrap_or("");
    CALLBACKS
        .iter()
        .find(|(_, callback)| *callback == id)
        .map_or("", |(event, _)| event)
}

/// The tool call of a `PreToolUse` / `PostToolUse` input, its name already the host's.
pub(crate) fn invocation(input: &Value, name: String, executed_by: ExecutedBy) -> ToolInvocation {
    let id = input
        .get("tool_use_id")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    ToolInvocation {
        tool_use_id: id,
        tool_name: name,
        input: input.get("tool_input").cloned().unwrap_or_else(|| json!({})),
        executed_by,
    }
}

/// The hook output of a `before_tool` decision.
pub(crate) fn before_tool_output(decision: BeforeTool) -> Value {
    match decision {
        BeforeTool::Continue => json!({}),
        BeforeTool::Deny { message } => json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": message,
            },
        }),
        BeforeTool::Rewrite(input) => json!({
            "hookSpecificOutput": { "hookEventName": "PreToolUse", "updatedInput": input },
        }),
    }
}

/// A CLI tool's `tool_response` as a [`ToolResult`] (for `after_tool` to observe): a string is
/// text, a list of content blocks (an MCP tool's) is read like a `tool_result`, anything else
/// (the CLI's own tools answer with objects) is one JSON item.
pub(crate) fn response_result(response: &Value) -> ToolResult {
    match response {
        Value::String(_) | Value::Array(_) => result_of(&json!({ "content": response })),
        Value::Object(map) if map.get("content").is_some_and(Value::is_array) => {
            let is_error = map.get("isError").and_then(Value::as_bool).unwrap_or(false);
            result_of(&json!({ "content": map["content"], "is_error": is_error }))
        }
        Value::Null => completed(Vec::new()),
        other => completed(vec![ToolContent::Json { value: other.clone() }]),
    }
}

fn completed(content: Vec<ToolContent>) -> ToolResult {
    ToolResult {
        content,
        status: ToolStatus::Completed,
        metadata: None,
    }
}

/// The hook output replacing a host (MCP) tool's output with `result`, in the shape of the
/// `tool_response` the CLI sent: a list of content blocks, or a whole `CallToolResult`.
pub(crate) fn after_tool_output(replacement: &ToolResult, response: &Value) -> Value {
    let call = serde_json::to_value(to_call_tool_result(replacement)).unwrap_or(Value::Null);
    let output = if response.is_array() {
        call.get("content").cloned().unwrap_or_else(|| json!([]))
    } else {
        call
    };
    json!({ "hookSpecificOutput": { "hookEventName": "PostToolUse", "updatedMCPToolOutput": output } })
}

/// The hook output of an `on_prompt` decision.
pub(crate) fn prompt_output(decision: OnPrompt) -> Value {
    match decision {
        OnPrompt::Continue => json!({}),
        OnPrompt::Block { reason } => json!({ "decision": "block", "reason": reason }),
        OnPrompt::AddContext(text) => json!({
            "hookSpecificOutput": { "hookEventName": "UserPromptSubmit", "additionalContext": text },
        }),
    }
}

/// What the model said when it stopped, from a `Stop` input (the CLI's
/// `last_assistant_message` when it sends one, else the text the translator saw).
pub(crate) fn stop_info(input: &Value, text: &str, usage: Usage) -> StopInfo {
    let text = input
        .get("last_assistant_message")
        .and_then(Value::as_str)
        .unwrap_or(text);
    let mut stop = StopInfo::new(FinishReason::Stop, text);
    stop.usage = usage;
    stop.continued = input.get("stop_hook_active").and_then(Value::as_bool).unwrap_or(false);
    stop
}

/// The hook output of an `on_stop` decision.
pub(crate) fn stop_output(decision: StopDecision) -> Value {
    match decision {
        StopDecision::Stop => json!({}),
        StopDecision::Continue { prompt } => json!({ "decision": "block", "reason": prompt }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_is_registered_with_its_callback_and_none_without_hooks() {
        let hooks = registration(true);
        assert_eq!(
            hooks["PreToolUse"],
            json!([{ "matcher": null, "hookCallbackIds": ["patchbay_pre_tool_use"] }])
        );
        assert_eq!(hooks.as_object().map(Map::len), Some(4));
        assert_eq!(registration(false), Value::Null);
        let request = json!({ "subtype": "hook_callback", "callback_id": "patchbay_stop", "input": {} });
        assert_eq!(event_of(&request), "Stop");
    }

    #[test]
    fn decisions_become_the_clis_hook_output() {
        assert_eq!(before_tool_output(BeforeTool::Continue), json!({}));
        let deny = before_tool_output(BeforeTool::deny("no"));
        assert_eq!(deny["hookSpecificOutput"]["permissionDecision"], "deny");
        assert_eq!(deny["hookSpecificOutput"]["permissionDecisionReason"], "no");
        let rewrite = before_tool_output(BeforeTool::Rewrite(json!({ "a": 1 })));
        assert_eq!(rewrite["hookSpecificOutput"]["updatedInput"], json!({ "a": 1 }));
        assert_eq!(
            prompt_output(OnPrompt::Block { reason: "r".into() }),
            json!({ "decision": "block", "reason": "r" })
        );
        let context = prompt_output(OnPrompt::AddContext("c".into()));
        assert_eq!(context["hookSpecificOutput"]["additionalContext"], "c");
        assert_eq!(
            stop_output(StopDecision::Continue { prompt: "more".into() }),
            json!({ "decision": "block", "reason": "more" })
        );
    }

    #[test]
    fn a_replaced_host_result_takes_the_shape_of_the_response() {
        let replacement = ToolResult::text("redacted");
        let blocks = after_tool_output(&replacement, &json!([{ "type": "text", "text": "secret" }]));
        assert_eq!(
            blocks["hookSpecificOutput"]["updatedMCPToolOutput"],
            json!([{ "type": "text", "text": "redacted" }])
        );
        let whole = after_tool_output(&replacement, &json!({ "content": [] }));
        assert_eq!(
            whole["hookSpecificOutput"]["updatedMCPToolOutput"]["content"][0]["text"],
            "redacted"
        );
        assert_eq!(
            response_result(&json!([{ "type": "text", "text": "x" }])).text_content(),
            "x"
        );
        assert_eq!(
            response_result(&json!({ "stdout": "hi" })).content,
            vec![ToolContent::Json {
                value: json!({ "stdout": "hi" })
            }]
        );
    }
}
