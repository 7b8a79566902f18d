//! The `replay` command: normalized events as JSON lines, then the verdict; non-zero when invalid.

use std::process::Command;

fn replay(family: &str, file: &str) -> (bool, Vec<serde_json::Value>) {
    let output = Command::new(env!("CARGO_BIN_EXE_replay"))
        .arg("--family")
        .arg(family)
        .arg(patchbay_conformance::fixtures::root().join(file))
        .output()
        .expect("replay runs");
    let lines = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON: {line}: {e}")))
        .collect();
    (output.status.success(), lines)
}

#[test]
fn replay_prints_events_and_a_valid_verdict() {
    for (family, file) in [
        ("anthropic", "anthropic/ai/anthropic-text.chunks.txt"),
        (
            "openai",
            "openrouter/rig/openrouter__reasoning_tool_order_matrix__streaming_single.sse",
        ),
    ] {
        let (ok, lines) = replay(family, file);
        assert!(ok, "{family} {file}: {lines:?}");
        assert_eq!(
            lines.first().and_then(|l| l["type"].as_str()),
            Some("started"),
            "{lines:?}"
        );
        assert_eq!(
            lines.last().and_then(|l| l["verdict"].as_str()),
            Some("valid"),
            "{lines:?}"
        );
    }
}

#[test]
fn replay_fails_on_an_invalid_stream() {
    let (ok, lines) = replay("anthropic", "anthropic/ai/spliced-message-start.chunks.txt");
    assert!(!ok, "{lines:?}");
    assert_ne!(lines.last().and_then(|l| l["verdict"].as_str()), Some("valid"));
}
