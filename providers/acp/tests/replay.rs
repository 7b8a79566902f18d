//! Recorded ACP transcripts (`{"dir": "send"|"recv", "msg": ...}` lines, as `record_dir`
//! writes them) turned back into the fake agent's script: what the agent sent is replayed to
//! the provider, so a transcript of a real agent runs without it.

use serde_json::{Value, json};

/// The fake agent's script that replays the agent's side of `transcript`: its `session/update`
/// notifications as `update` steps, its permission requests as `permission` steps, and each
/// `session/prompt` answer (or error) as the prompt's `end` (or `error`).
pub(crate) fn script_of(transcript: &str) -> Value {
    let lines: Vec<Value> = transcript
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let prompt_ids: Vec<Value> = lines
        .iter()
        .filter(|l| l["dir"] == "send" && l["msg"]["method"] == "session/prompt")
        .map(|l| l["msg"]["id"].clone())
        .collect();
    let load = lines
        .iter()
        .any(|l| l["dir"] == "recv" && l["msg"]["result"]["agentCapabilities"]["loadSession"] == true);
    let mut prompts = Vec::new();
    let mut steps = Vec::new();
    let mut in_prompt = false;
    for line in &lines {
        let msg = &line["msg"];
        if line["dir"] == "send" {
            if msg["method"] == "session/prompt" {
                in_prompt = true;
            }
            continue;
        }
        if !in_prompt {
            continue;
        }
        if msg["method"] == "session/update" {
            steps.push(json!({ "update": msg["params"]["update"] }));
        } else if msg["method"] == "session/request_permission" {
            let params = &msg["params"];
            steps.push(json!({ "permission": {
                "tool_call_id": params["toolCall"]["toolCallId"],
                "title": params["toolCall"]["title"],
                "options": params["options"],
            } }));
        } else if msg.get("id").is_some_and(|id| prompt_ids.contains(id)) && msg.get("method").is_none() {
            if let Some(error) = msg.get("error") {
                steps.push(json!({ "error": error }));
            } else {
                let result = &msg["result"];
                let mut end = json!({ "stop_reason": result["stopReason"] });
                if let Some(usage) = result.get("usage").filter(|u| !u.is_null()) {
                    end["usage"] = usage.clone();
                }
                steps.push(json!({ "end": end }));
            }
            prompts.push(std::mem::take(&mut steps));
            in_prompt = false;
        }
    }
    if !steps.is_empty() {
        prompts.push(steps);
    }
    json!({ "load_session": load, "prompts": prompts })
}
