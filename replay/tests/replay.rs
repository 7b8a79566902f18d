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
