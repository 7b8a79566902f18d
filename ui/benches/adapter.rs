//! What the UI message stream costs on top of the events: one long agent run (text in small
//! deltas, reasoning, tool calls with streamed input and results, sources, usage, steps)
//! translated and framed as SSE bytes by `UiStream`, against the baseline a host writes
//! without it, each event serialized as one JSON line (`serde_json::to_vec` + newline).
//!
//! `cargo bench -p patchbay-ui --bench adapter`; after criterion the median of interleaved rounds
//! and the ratio to the baseline are printed (`UI_BENCH_ROUNDS=N`, default 200).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use patchbay_core::source::Source;
use patchbay_core::{Event, ExecutedBy, FinishReason, Metrics, ToolResult, Usage};
use patchbay_ui::{UiStream, sse};
use serde_json::json;

/// A run of `steps` steps, each with 200 text deltas, 50 reasoning deltas, a tool call with its
/// streamed input and result, a source and a usage update.
fn run(steps: u32) -> Vec<Event> {
    let mut events = vec![Event::Started {
        response_id: Some("resp_1".into()),
        model: "model".into(),
        session_id: None,
        warnings: vec![],
    }];
    for step in 0..steps {
        for i in 0..50 {
            events.push(Event::ReasoningDelta {
                index: 0,
                text: format!("thinking {i} "),
            });
        }
        for i in 0..200 {
            events.push(Event::TextDelta {
                index: 1,
                text: format!("word{i} "),
            });
        }
        let id = format!("call_{step}");
        events.push(Event::ToolCallStart {
            id: id.clone(),
            name: "search".into(),
        });
        for piece in ["{\"query\":", "\"release ", "plan\"}"] {
            events.push(Event::ToolCallDelta {
                id: id.clone(),
                partial_json: piece.into(),
            });
        }
        events.push(Event::ToolCall {
            id: id.clone(),
            name: "search".into(),
            input: json!({ "query": "release plan" }),
            executed_by: ExecutedBy::Host,
            signature: None,
        });
        events.push(Event::ToolResult {
            id,
            name: "search".into(),
            result: ToolResult::text("two documents match").with_metadata(json!({ "documents": ["d1", "d2"] })),
        });
        events.push(Event::Source(Source::url(
            step.to_string(),
            1,
            "https://example.com/a",
            "bench",
        )));
        events.push(Event::Usage(Usage {
            input: Some(100 * u64::from(step + 1)),
            output: Some(50),
            ..Usage::default()
        }));
        events.push(Event::StepFinished {
            step,
            reason: FinishReason::ToolUse,
            usage: Usage::default(),
        });
    }
    events.push(Event::Finish {
        reason: FinishReason::Stop,
        usage: Usage::default(),
        metrics: Metrics::default(),
    });
    events
}

/// The UI message stream's bytes.
fn ui_bytes(events: &[Event]) -> usize {
    let mut ui = UiStream::new().with_message_id("msg_1");
    let mut bytes = 0;
    for event in events {
        for chunk in ui.push(event) {
            bytes += sse::encode(&chunk).len();
        }
    }
    bytes + sse::DONE.len()
}

/// The baseline: each event as one JSON line.
fn json_lines(events: &[Event]) -> usize {
    let mut bytes = 0;
    for event in events {
        let mut line = serde_json::to_vec(event).unwrap_or_default();
        line.push(b'\n');
        bytes += line.len();
    }
    bytes
}

fn main() {
    let events = run(20);
    let mut criterion = Criterion::default().configure_from_args();
    criterion.bench_function("ui_message_stream", |b| b.iter(|| ui_bytes(black_box(&events))));
    criterion.bench_function("json_lines_baseline", |b| b.iter(|| json_lines(black_box(&events))));
    criterion.final_summary();

    let rounds = std::env::var("UI_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(200);
    let (mut ui, mut base) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
    for _ in 0..rounds {
        let start = Instant::now();
        black_box(ui_bytes(black_box(&events)));
        ui.push(start.elapsed());
        let start = Instant::now();
        black_box(json_lines(black_box(&events)));
        base.push(start.elapsed());
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (ui, base) = (median(&mut ui), median(&mut base));
    println!(
        "{} events: UI message stream {ui:?}, JSON lines {base:?} (median of {rounds} interleaved rounds); ratio {:.2}x; bytes {} vs {}",
        events.len(),
        ui.as_secs_f64() / base.as_secs_f64(),
        ui_bytes(&events),
        json_lines(&events),
    );
}
