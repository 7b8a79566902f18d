//! How the translator scales with the number of tool calls: streams of 1,000, 10,000 and
//! 100,000 calls, one chunk per fragment and three fragments per call (id and name, then the
//! arguments in two pieces), translated in memory without HTTP. Criterion reports each stream
//! as `calls/s` (throughput in elements = calls); a summary at the end prints the time per
//! call (best of three runs), which stays flat when translation is linear.
//!
//! Run: `cargo bench -p patchbay-openrouter --bench scaling`
//! (one size only: `cargo bench -p patchbay-openrouter --bench scaling -- '/10000$'`).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};
use patchbay_core::Event;
use patchbay_openrouter::translate::Translator;

const SIZES: [usize; 3] = [1_000, 10_000, 100_000];

fn chunk(delta: &str, finish: &str) -> String {
    format!(
        "data: {{\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"model\":\"bench\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
    )
}

/// An SSE body with `calls` tool calls, each in three chunks, then the finish and usage.
fn body(calls: usize) -> Vec<u8> {
    let mut body = String::with_capacity(calls * 3 * 200);
    for i in 0..calls {
        body.push_str(&chunk(
            &format!(
                "{{\"tool_calls\":[{{\"index\":{i},\"id\":\"call_{i}\",\"type\":\"function\",\"function\":{{\"name\":\"lookup\",\"arguments\":\"\"}}}}]}}"
            ),
            "null",
        ));
        body.push_str(&chunk(
            &format!("{{\"tool_calls\":[{{\"index\":{i},\"function\":{{\"arguments\":\"{{\\\"n\\\": \"}}}}]}}"),
            "null",
        ));
        body.push_str(&chunk(
            &format!("{{\"tool_calls\":[{{\"index\":{i},\"function\":{{\"arguments\":\"{i}}}\"}}}}]}}"),
            "null",
        ));
    }
    body.push_str(&chunk("{}", "\"tool_calls\""));
    body.push_str(
        "data: {\"id\":\"chatcmpl-bench\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":5}}\n\n",
    );
    body.push_str("data: [DONE]\n\n");
    body.into_bytes()
}

/// Translate the body fed in 16 KiB pieces; returns the number of `ToolCall` events.
fn translate(body: &[u8]) -> usize {
    let recording = patchbay_core::kit::translate(Translator::default(), body.chunks(16 * 1024));
    assert!(recording.error.is_none(), "valid");
    recording
        .events
        .iter()
        .filter(|e| matches!(e, Event::ToolCall { .. }))
        .count()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("openai_tool_calls");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    for calls in SIZES {
        let body = body(calls);
        assert_eq!(translate(&body), calls, "every call comes out");
        group.throughput(Throughput::Elements(calls as u64));
        group.bench_with_input(BenchmarkId::from_parameter(calls), &body, |b, body| {
            b.iter(|| black_box(translate(body)))
        });
    }
    group.finish();
}

/// Time per call for each size, best of three runs (the least disturbed by other load).
fn per_call(filter: Option<&str>) {
    for calls in SIZES {
        if let Some(filter) = filter
            && !matches(filter, &format!("openai_tool_calls/{calls}"))
        {
            continue;
        }
        let body = body(calls);
        let best = (0..3)
            .map(|_| {
                let t = Instant::now();
                black_box(translate(&body));
                t.elapsed()
            })
            .min()
            .unwrap_or_default();
        println!(
            "{calls:>7} tool calls: {best:>12.3?} in all, {:>8.3} µs per call",
            best.as_secs_f64() * 1e6 / calls as f64
        );
    }
}

/// Criterion's name filter for the summary, in its two common forms: a substring, or a
/// suffix anchored with `$`.
fn matches(filter: &str, id: &str) -> bool {
    match filter.strip_suffix('$') {
        Some(suffix) => id.ends_with(suffix),
        None => id.contains(filter),
    }
}

criterion_group!(benches, bench);

fn main() {
    benches();
    // The first free argument is criterion's name filter; the summary honours it too.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    per_call(filter.as_deref());
    Criterion::default().configure_from_args().final_summary();
}
