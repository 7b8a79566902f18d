//! Unit-level behaviour of the core contract through its public API.

mod drive;

use std::time::Duration;

use patchbay_core::kit::{ContentBuilder, check_conversation};
use patchbay_core::{
    CacheControl, ContentBlock, ErrorKind, Event, ExecutedBy, Message, ProviderError, RequestContext, RetryPolicy,
    Role, Source, ToolResult, Usage, context::McpServerConfig, context::McpTransport,
};
use serde_json::json;

#[test]
fn usage_sums_and_updates_field_by_field() {
    let a = Usage {
        input: Some(10),
        output: Some(5),
        ..Usage::default()
    };
    let b = Usage {
        input: Some(1),
        cache_read: Some(7),
        cost_usd: Some(0.5),
        ..Usage::default()
    };
    let sum = a.sum(&b);
    assert_eq!(
        (sum.input, sum.output, sum.cache_read, sum.cost_usd),
        (Some(11), Some(5), Some(7), Some(0.5))
    );
    let mut cumulative = a;
    cumulative.update(&Usage {
        output: Some(9),
        ..Usage::default()
    });
    assert_eq!((cumulative.input, cumulative.output), (Some(10), Some(9)));
}

#[test]
fn usage_sums_saturate_instead_of_overflowing() {
    let huge = Usage {
        input: Some(u64::MAX),
        output: Some(u64::MAX - 1),
        cache_read: Some(1),
        ..Usage::default()
    };
    let mut total = huge;
    total.accumulate(&huge);
    assert_eq!(total.input, Some(u64::MAX));
    assert_eq!(total.output, Some(u64::MAX));
    assert_eq!(total.cache_read, Some(2));
    assert_eq!(huge.sum(&huge).input, Some(u64::MAX));
}

#[test]
fn retry_delays_follow_kind_retry_after_and_backoff() {
    let policy = RetryPolicy::default()
        .with_max_retries(3)
        .with_backoff(Duration::from_millis(100), Duration::from_millis(250))
        .with_jitter(false);
    let overloaded = ProviderError::new(ErrorKind::Overloaded, "busy");
    assert_eq!(policy.delay(0, &overloaded), Some(Duration::from_millis(100)));
    assert_eq!(policy.delay(1, &overloaded), Some(Duration::from_millis(200)));
    assert_eq!(policy.delay(2, &overloaded), Some(Duration::from_millis(250)), "capped");
    assert_eq!(policy.delay(3, &overloaded), None, "limit reached");
    let limited = ProviderError::new(ErrorKind::RateLimited, "slow").with_retry_after(Duration::from_secs(3));
    assert_eq!(
        policy.delay(0, &limited),
        Some(Duration::from_secs(3)),
        "retry-after wins"
    );
    assert_eq!(
        policy.delay(0, &ProviderError::new(ErrorKind::InvalidRequest, "bad")),
        None
    );
    let jittered = RetryPolicy::default().with_backoff(Duration::from_millis(400), Duration::from_secs(1));
    let delay = jittered.delay(0, &overloaded).expect("retryable");
    assert!(
        delay >= Duration::from_millis(200) && delay <= Duration::from_millis(400),
        "{delay:?}"
    );
}

#[test]
fn conversations_are_checked_with_the_offending_index() {
    let call = Message::new(Role::Assistant, vec![ContentBlock::tool_use("t1", "echo", json!({}))]);
    let result = |id: &str| {
        Message::new(
            Role::User,
            vec![ContentBlock::ToolResult {
                tool_use_id: id.into(),
                content: vec![],
                is_error: false,
                cache_control: None,
            }],
        )
    };
    assert!(check_conversation(&[Message::user("hi"), call.clone(), result("t1")], true).is_ok());
    let error = check_conversation(&[Message::user("hi"), call.clone(), result("t2")], true).expect_err("wrong id");
    assert_eq!(error.facts().message_index, Some(2));
    let error = check_conversation(&[Message::user("hi"), call], true).expect_err("assistant last");
    assert_eq!(
        (error.kind(), error.facts().message_index),
        (ErrorKind::InvalidRequest, Some(1))
    );
    assert!(check_conversation(&[], false).is_err());
}

#[test]
fn content_builder_keeps_signatures_ids_and_opaque_blocks() {
    let mut builder = ContentBuilder::default();
    for event in [
        Event::ReasoningDelta {
            index: 0,
            text: "hmm ".into(),
        },
        Event::ReasoningDelta {
            index: 0,
            text: "ok".into(),
        },
        Event::ReasoningSignature {
            index: 0,
            signature: "sig".into(),
        },
        Event::TextDelta {
            index: 1,
            text: "Hi".into(),
        },
        Event::ToolCall {
            id: "t1".into(),
            name: "search".into(),
            input: json!({"q": 1}),
            executed_by: ExecutedBy::Provider,
            signature: None,
        },
        Event::ToolResult {
            id: "t1".into(),
            name: "search".into(),
            result: ToolResult::text("found"),
        },
        Event::Opaque {
            index: 3,
            provider: "anthropic".into(),
            data: json!({"type": "new_block"}),
        },
    ] {
        builder.push(&event);
    }
    let blocks = builder.finish();
    assert_eq!(
        blocks[0],
        ContentBlock::Thinking {
            text: "hmm ok".into(),
            signature: Some("sig".into())
        }
    );
    assert_eq!(blocks[1].as_text(), Some("Hi"));
    assert!(matches!(&blocks[2], ContentBlock::ToolUse { id, executed_by: ExecutedBy::Provider, .. } if id == "t1"));
    assert!(matches!(&blocks[3], ContentBlock::ToolResult { tool_use_id, .. } if tool_use_id == "t1"));
    assert!(matches!(&blocks[4], ContentBlock::Opaque { provider, .. } if provider == "anthropic"));
}

#[test]
fn content_builder_attaches_citations_to_their_text_block_even_when_they_come_first() {
    let cite = |index: usize, id: &str, data: serde_json::Value| {
        let mut source = Source::url(id, index, "https://example.com", "anthropic");
        source.data = data;
        Event::Source(source)
    };
    let mut builder = ContentBuilder::default();
    for event in [
        Event::TextDelta {
            index: 0,
            text: "Plain. ".into(),
        },
        // Anthropic sends a cited block's citation before its text.
        cite(1, "1", json!({"type": "char_location", "cited_text": "a"})),
        Event::TextDelta {
            index: 1,
            text: "Cited".into(),
        },
        cite(1, "2", json!({"type": "char_location", "cited_text": "b"})),
        Event::TextDelta {
            index: 1,
            text: " text.".into(),
        },
        // A source without a wire object, and one of a block that is not text.
        cite(1, "3", serde_json::Value::Null),
        cite(
            2,
            "4",
            json!({"type": "web_search_result", "url": "https://example.com"}),
        ),
        Event::Opaque {
            index: 2,
            provider: "anthropic".into(),
            data: json!({"type": "web_search_tool_result"}),
        },
    ] {
        builder.push(&event);
    }
    let blocks = builder.finish();
    assert_eq!(blocks.len(), 3, "{blocks:?}");
    let citations = |block: &ContentBlock| match block {
        ContentBlock::Text { citations, .. } => citations.clone(),
        other => panic!("not text: {other:?}"),
    };
    assert!(citations(&blocks[0]).is_empty());
    assert_eq!(
        citations(&blocks[1]),
        vec![
            json!({"type": "char_location", "cited_text": "a"}),
            json!({"type": "char_location", "cited_text": "b"})
        ]
    );
    assert_eq!(blocks[1].as_text(), Some("Cited text."));
}

#[test]
fn messages_round_trip_through_json_with_cache_markers() {
    let message = Message::new(
        Role::User,
        vec![
            ContentBlock::Text {
                text: "cached".into(),
                citations: vec![],
                cache_control: Some(CacheControl::ephemeral()),
                signature: None,
            },
            ContentBlock::RedactedThinking { data: "opaque".into() },
        ],
    );
    let json = serde_json::to_string(&message).expect("serializes");
    assert_eq!(serde_json::from_str::<Message>(&json).expect("parses"), message);
}

#[test]
fn secrets_stay_out_of_debug_output() {
    let context = RequestContext::new()
        .with_env("ANTHROPIC_API_KEY", "sk-secret-1")
        .with_mcp_server(McpServerConfig {
            name: "host".into(),
            transport: McpTransport::Http {
                url: "http://127.0.0.1:1/mcp".into(),
                headers: [("Authorization".to_string(), "Bearer sk-secret-2".to_string())].into(),
            },
        });
    let debug = format!("{context:?}");
    assert!(!debug.contains("sk-secret"), "{debug}");
    assert!(debug.contains("ANTHROPIC_API_KEY") && debug.contains("Authorization"));
}

#[test]
fn errors_display_their_facts() {
    let error = ProviderError::new(ErrorKind::Process, "the CLI exited")
        .with_exit_code(3)
        .with_turn(2)
        .with_tool("Bash")
        .with_stderr_tail("boom");
    let text = error.to_string();
    for part in [
        "Process: the CLI exited",
        "[turn 2]",
        "[tool Bash]",
        "[exit code 3]",
        "boom",
    ] {
        assert!(text.contains(part), "{text}");
    }
}

/// Inputs the `partial_json` fuzz target (fuzz/) crashed on, kept as files and checked as the
/// target checks them: what `parse_partial_json` returns is JSON serde_json reads back the same,
/// and complete JSON comes back as the value serde_json reads (numbers compared as f64).
#[test]
fn partial_json_fuzz_inputs_give_what_serde_json_reads() {
    fn same(a: &serde_json::Value, b: &serde_json::Value) -> bool {
        use serde_json::Value;
        match (a, b) {
            (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
            (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y)),
            (Value::Object(x), Value::Object(y)) => {
                x.len() == y.len() && x.iter().all(|(key, x)| y.get(key).is_some_and(|y| same(x, y)))
            }
            _ => a == b,
        }
    }
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/regressions/partial_json");
    let mut replayed = 0;
    for entry in std::fs::read_dir(&folder).expect("the regressions folder") {
        let path = entry.expect("a regression file").path();
        let text = std::fs::read_to_string(&path).expect("a UTF-8 regression file");
        let partial = patchbay_core::object::parse_partial_json(&text);
        if let Some(value) = &partial {
            let back = serde_json::from_str(&value.to_string());
            assert!(
                back.as_ref().is_ok_and(|back| same(back, value)),
                "{}: returned JSON that serde_json reads as {back:?}",
                path.display()
            );
        }
        if let Ok(complete) = serde_json::from_str::<serde_json::Value>(&text) {
            assert!(
                partial.as_ref().is_some_and(|partial| same(partial, &complete)),
                "{}: complete JSON gave {partial:?}",
                path.display()
            );
        }
        replayed += 1;
    }
    assert!(
        replayed > 1,
        "the regression files are missing from {}",
        folder.display()
    );
}

#[test]
fn approval_requested_must_end_the_run_and_name_calls_of_it() {
    use patchbay_core::context::ApprovalRequest;
    use patchbay_core::validate::{Rule, validate};
    use patchbay_core::{FinishReason, Metrics};
    let started = Event::Started {
        response_id: None,
        model: "m".into(),
        session_id: None,
        warnings: vec![],
    };
    let call = Event::ToolCall {
        id: "c1".into(),
        name: "t".into(),
        input: json!({}),
        executed_by: ExecutedBy::Host,
        signature: None,
    };
    let asked = |id: &str| Event::ApprovalRequested {
        calls: vec![ApprovalRequest {
            tool_use_id: id.into(),
            tool_name: "t".into(),
            input: json!({}),
        }],
    };
    let finish = |reason| Event::Finish {
        reason,
        usage: Usage::default(),
        metrics: Metrics::default(),
    };
    let rules = |events: Vec<Event>| -> Vec<Rule> {
        match validate(events.iter().map(Ok)) {
            Ok(()) => vec![],
            Err(violations) => violations.into_iter().map(|v| v.rule).collect(),
        }
    };
    let good = vec![
        started.clone(),
        call.clone(),
        asked("c1"),
        finish(FinishReason::ToolUse),
    ];
    assert_eq!(rules(good), []);
    let text_after = vec![
        started.clone(),
        call.clone(),
        asked("c1"),
        Event::TextDelta {
            index: 0,
            text: "more".into(),
        },
        finish(FinishReason::ToolUse),
    ];
    assert_eq!(rules(text_after), [Rule::ApprovalEndsRun]);
    let wrong_reason = vec![started.clone(), call.clone(), asked("c1"), finish(FinishReason::Stop)];
    assert_eq!(rules(wrong_reason), [Rule::ApprovalEndsRun]);
    let unknown = vec![started, call, asked("c9"), finish(FinishReason::ToolUse)];
    assert_eq!(rules(unknown), [Rule::ApprovalEndsRun]);
}
