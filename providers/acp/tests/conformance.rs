//! The shared conformance scenarios on the scripted fake agent (`acp-fake::*`): each scenario's
//! script becomes one ACP prompt turn (the agent runs its own loop): text and thinking as
//! message and thought chunks, tool calls announced together and then run through the host's
//! MCP tool server, the last turn's end as the stop reason, the turns' usage summed on the
//! prompt's answer. ACP reports usage per turn, so step usage is not compared
//! (`without_step_usage`); what ACP cannot carry at all is in the baseline with the reason.
//!
//! The real agents' suites (`.ci/peers/acp.sh`) are in `real.rs`, run from here.

#[path = "support.rs"]
#[allow(dead_code, unreachable_pub)]
mod support;

mod real;

use std::sync::Arc;

use patchbay_acp::AcpProvider;
use patchbay_conformance::{Fixture, Target, trials};
use patchbay_core::{FinishReason, ProviderError};
use patchbay_scripted::{End, Part, Script, Turn};
use serde_json::{Value, json};

const BASELINE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance-baseline.toml");

/// The fake agent's script for a scenario's model script.
fn fake_script(script: &Script) -> Value {
    let mut steps = Vec::new();
    let (mut input, mut output) = (0u64, 0u64);
    let mut stop = "end_turn";
    for turn in &script.turns {
        let Turn::Respond(response) = turn else {
            // A failed model call is the agent's to retry; the agent's turn goes on.
            continue;
        };
        input += response.usage.input.unwrap_or(0);
        output += response.usage.output.unwrap_or(0);
        let mut calls = Vec::new();
        for part in &response.parts {
            match part {
                Part::Text { text } | Part::Cited { text, .. } => steps.push(chunk("agent_message_chunk", text)),
                Part::Thinking { text, .. } => steps.push(chunk("agent_thought_chunk", text)),
                Part::ToolCall { id, name, input } => {
                    steps.push(json!({ "update": {
                        "sessionUpdate": "tool_call", "toolCallId": id, "title": name, "kind": "other",
                        "status": "pending", "rawInput": input,
                    } }));
                    calls.push(json!({ "call_tool": { "id": id, "server": "host", "name": name, "input": input } }));
                }
            }
        }
        steps.extend(calls);
        match &response.end {
            End::Finish { reason } => {
                stop = match reason {
                    FinishReason::Length => "max_tokens",
                    FinishReason::Refusal => "refusal",
                    _ => "end_turn",
                };
            }
            End::Error(error) => {
                steps.push(json!({ "error": { "code": -32603, "message": error.message } }));
                return json!({ "prompts": [steps] });
            }
            End::Truncate => {
                steps.push(json!({ "exit": 1 }));
                return json!({ "prompts": [steps] });
            }
            End::Stall => steps.push(json!({ "sleep_ms": 60_000 })),
        }
    }
    steps.push(json!({ "end": { "stop_reason": stop, "usage": {
        "inputTokens": input, "outputTokens": output, "totalTokens": input + output,
    } } }));
    json!({ "prompts": [steps] })
}

fn chunk(kind: &str, text: &str) -> Value {
    json!({ "update": { "sessionUpdate": kind, "content": { "type": "text", "text": text } } })
}

fn fake_target() -> Target {
    Target::new("acp-fake", |case| async move {
        let fake = support::Fake::new(&fake_script(&case.scenario.script));
        let provider = Arc::new(AcpProvider::new(fake.config()).map_err(ProviderError::from)?);
        Ok(Fixture::new(provider).with_guard(fake))
    })
    .without_step_usage()
    .with_baseline_file(BASELINE)
}

fn main() {
    let mut all = trials(&fake_target());
    all.extend(real::trials());
    patchbay_conformance::peers::run(all)
}
