//! The script: what the fake agent answers, read once from `PATCHBAY_ACP_FAKE_SCRIPT`.

use serde::Deserialize;
use serde_json::Value;

/// The whole script (see the crate doc for the format).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Script {
    #[serde(default)]
    pub(crate) agent_info: Option<Value>,
    #[serde(default)]
    pub(crate) load_session: bool,
    #[serde(default)]
    pub(crate) auth_methods: Vec<Value>,
    #[serde(default = "yes")]
    pub(crate) mcp_http: bool,
    #[serde(default)]
    pub(crate) prompts: Vec<Vec<Step>>,
}

fn yes() -> bool {
    true
}

impl Script {
    /// The script named by `PATCHBAY_ACP_FAKE_SCRIPT`, or the empty script (every prompt ends
    /// the turn at once) when the variable is unset.
    pub(crate) fn from_env() -> Result<Self, String> {
        let Some(path) = std::env::var_os("PATCHBAY_ACP_FAKE_SCRIPT") else {
            return Ok(Self {
                mcp_http: true,
                ..Self::default()
            });
        };
        let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read script {}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("invalid script {}: {e}", path.display()))
    }
}

/// One step of a prompt turn.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum Step {
    /// A `session/update` notification: the `SessionUpdate` as on the wire.
    Update(Value),
    /// A tool call on one of the session's MCP servers.
    CallTool(CallTool),
    /// A `session/request_permission` request.
    Permission(Permission),
    /// An `fs/read_text_file` request.
    ReadFile(ReadFile),
    /// An `fs/write_text_file` request.
    WriteFile(WriteFile),
    /// A pause, cut short by `session/cancel`.
    SleepMs(u64),
    /// Answer the prompt.
    End(End),
    /// Answer the prompt with a JSON-RPC error.
    Error(RpcError),
    /// Exit the process with this code.
    Exit(i32),
    /// Write this text and a newline to stdout, bypassing the protocol.
    Raw(String),
    /// Write one line of `count` copies of `byte` to stdout, bypassing the protocol.
    RawRepeat(RawRepeat),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CallTool {
    pub(crate) id: String,
    pub(crate) server: String,
    pub(crate) name: String,
    #[serde(default = "empty_object")]
    pub(crate) input: Value,
    #[serde(default)]
    pub(crate) title: Option<String>,
    #[serde(default = "other")]
    pub(crate) kind: String,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

fn other() -> String {
    "other".to_owned()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Permission {
    pub(crate) tool_call_id: String,
    #[serde(default)]
    pub(crate) title: Option<String>,
    /// `PermissionOption`s as on the wire (`optionId`, `name`, `kind`).
    pub(crate) options: Vec<Value>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadFile {
    pub(crate) path: String,
    #[serde(default)]
    pub(crate) line: Option<u32>,
    #[serde(default)]
    pub(crate) limit: Option<u32>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WriteFile {
    pub(crate) path: String,
    pub(crate) content: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct End {
    /// `end_turn`, `max_tokens`, `max_turn_requests`, `refusal` or `cancelled`.
    pub(crate) stop_reason: Value,
    /// A `Usage` as on the wire (camelCase).
    #[serde(default)]
    pub(crate) usage: Option<Value>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RpcError {
    pub(crate) code: i32,
    pub(crate) message: String,
    #[serde(default)]
    pub(crate) data: Option<Value>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRepeat {
    pub(crate) byte: String,
    pub(crate) count: u64,
}

/// A protocol value from its wire JSON (the scripts write them so).
pub(crate) fn from_json<T: serde::de::DeserializeOwned>(
    value: serde_json::Value,
) -> Result<T, agent_client_protocol::Error> {
    serde_json::from_value(value)
        .map_err(|e| agent_client_protocol::Error::internal_error().data(format!("fake agent script: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_step() {
        let script: Script = serde_json::from_value(serde_json::json!({
            "load_session": true,
            "prompts": [[
                {"update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hi"}}},
                {"call_tool": {"id": "c", "server": "s", "name": "t"}},
                {"permission": {"tool_call_id": "c", "options": []}},
                {"read_file": {"path": "/a", "line": null, "limit": 2}},
                {"write_file": {"path": "/a", "content": "x"}},
                {"sleep_ms": 5},
                {"raw": "x"},
                {"raw_repeat": {"byte": "x", "count": 3}},
                {"error": {"code": -32603, "message": "m"}},
                {"exit": 3},
                {"end": {"stop_reason": "end_turn", "usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}}}
            ]]
        }))
        .expect("script");
        assert!(script.mcp_http);
        assert_eq!(script.prompts[0].len(), 11);
    }
}
