//! The `replay` command: normalized events as JSON lines, then the verdict; non-zero when invalid.

mod support;

/// `replay` of a shipped fixture (a path below the fixtures folder).
fn replay(family: &str, file: &str) -> (bool, Vec<serde_json::Value>) {
    support::replay(family, &patchbay_conformance::fixtures::root().join(file))
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

#[test]
fn replay_reads_claude_agent_transcripts_through_the_same_replay() {
    let transcripts =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../providers/claude-agent/tests/transcripts");
    for (file, tool_calls) in [("one_tool_call.jsonl", 1), ("parallel_tool_calls.jsonl", 2)] {
        let (ok, lines) = support::replay("claude-agent", &transcripts.join(file));
        assert!(ok, "{file}: {lines:?}");
        assert_eq!(
            lines.first().and_then(|l| l["type"].as_str()),
            Some("started"),
            "{file}: {lines:?}"
        );
        let calls = lines.iter().filter(|l| l["type"] == "tool_call").count();
        assert!(calls >= tool_calls, "{file}: {calls} tool calls in {lines:?}");
        assert_eq!(
            lines.last().and_then(|l| l["verdict"].as_str()),
            Some("valid"),
            "{file}: {lines:?}"
        );
    }
    // A line that is not JSON is the wire's `Protocol` error: an invalid stream.
    let dir = tempfile::tempdir().expect("a temp dir");
    let broken = dir.path().join("broken.jsonl");
    std::fs::write(
        &broken,
        b"{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\"}\nnot json\n",
    )
    .expect("written");
    let (ok, lines) = support::replay("claude-agent", &broken);
    assert!(!ok, "{lines:?}");
}
