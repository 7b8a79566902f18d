//! The validator catches broken providers, and the harness fails them.

use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use patchbay_conformance::{Baseline, Fixture, Recording, Target, TrialFailure, check, scenario, scenarios, trials};
use patchbay_core::{
    Capabilities, ErrorKind, Event, EventStream, ExecutedBy, FinishReason, Message, Metrics, Provider, ProviderError,
    ProviderInfo, RequestContext, Signal, ToolSet, Usage, validate::Rule, validate::validate,
};
use serde_json::json;

/// A provider that replays a fixed list of stream items, whatever it is asked.
struct Broken {
    info: ProviderInfo,
    items: Vec<Result<Event, ErrorKind>>,
}

impl Broken {
    fn new(items: Vec<Result<Event, ErrorKind>>) -> Self {
        Self {
            info: ProviderInfo::new("broken", Capabilities::none().with_streaming()),
            items,
        }
    }
}

#[async_trait]
impl Provider for Broken {
    fn info(&self) -> &ProviderInfo {
        &self.info
    }

    async fn create_response(
        &self,
        _messages: &[Message],
        _tools: &ToolSet,
        _model: &str,
        _signal: &Signal,
        _context: Option<&RequestContext>,
    ) -> Result<EventStream, ProviderError> {
        let items: Vec<Result<Event, ProviderError>> = self
            .items
            .iter()
            .map(|item| item.clone().map_err(|kind| ProviderError::new(kind, "injected")))
            .collect();
        Ok(Box::pin(futures::stream::iter(items)))
    }
}

fn started() -> Event {
    Event::Started {
        response_id: Some("r1".into()),
        model: "m".into(),
        session_id: None,
        warnings: vec![],
    }
}

fn text(index: usize, text: &str) -> Event {
    Event::TextDelta {
        index,
        text: text.into(),
    }
}

fn finish(reason: FinishReason) -> Event {
    Event::Finish {
        reason,
        usage: Usage::default(),
        metrics: Metrics::default(),
    }
}

/// Run the broken provider's raw stream through the validator and return the rules it broke.
async fn broken_rules(items: Vec<Result<Event, ErrorKind>>) -> Vec<Rule> {
    let provider = Broken::new(items);
    let stream = provider
        .create_response(&[Message::user("hi")], &ToolSet::new(), "m", &Signal::new(), None)
        .await
        .expect("the broken provider always starts");
    let items: Vec<_> = stream.collect().await;
    match validate(items.iter().map(|item| item.as_ref())) {
        Ok(()) => Vec::new(),
        Err(violations) => violations.into_iter().map(|v| v.rule).collect(),
    }
}

#[tokio::test]
async fn tool_call_emitted_before_its_input_ended_is_caught() {
    let rules = broken_rules(vec![
        Ok(started()),
        Ok(Event::ToolCallStart {
            id: "t1".into(),
            name: "get_weather".into(),
        }),
        Ok(Event::ToolCallDelta {
            id: "t1".into(),
            partial_json: r#"{"city":"Par"#.into(),
        }),
        // A provider that "repairs" partial JSON and emits the call early...
        Ok(Event::ToolCall {
            id: "t1".into(),
            name: "get_weather".into(),
            input: json!({"city": "Par"}),
            executed_by: ExecutedBy::Host,
            signature: None,
        }),
        // ...and then receives the rest of the input.
        Ok(Event::ToolCallDelta {
            id: "t1".into(),
            partial_json: r#"is"}"#.into(),
        }),
        Ok(finish(FinishReason::ToolUse)),
    ])
    .await;
    assert!(rules.contains(&Rule::ToolCallAfterInput), "{rules:?}");
}

#[tokio::test]
async fn tool_call_whose_input_differs_from_its_deltas_is_caught() {
    let rules = broken_rules(vec![
        Ok(started()),
        Ok(Event::ToolCallStart {
            id: "t1".into(),
            name: "get_weather".into(),
        }),
        Ok(Event::ToolCallDelta {
            id: "t1".into(),
            partial_json: r#"{"city":"Paris","days":"#.into(),
        }),
        Ok(Event::ToolCall {
            id: "t1".into(),
            name: "get_weather".into(),
            input: json!({"city": "Paris"}),
            executed_by: ExecutedBy::Host,
            signature: None,
        }),
        Ok(finish(FinishReason::ToolUse)),
    ])
    .await;
    assert_eq!(rules, vec![Rule::ToolCallAfterInput]);
}

#[tokio::test]
async fn tool_call_start_without_its_call_is_caught() {
    let rules = broken_rules(vec![
        Ok(started()),
        Ok(Event::ToolCallStart {
            id: "t1".into(),
            name: "get_weather".into(),
        }),
        Ok(finish(FinishReason::ToolUse)),
    ])
    .await;
    assert_eq!(rules, vec![Rule::ToolCallStartClosed]);
}

fn tool_result(id: &str, status: patchbay_core::tool::ToolStatus) -> Event {
    Event::ToolResult {
        id: id.into(),
        name: "get_weather".into(),
        result: patchbay_core::ToolResult::with_status(status, "abandoned"),
    }
}

#[tokio::test]
async fn an_abandoned_tool_call_answered_as_aborted_is_closed() {
    // An agent runtime that restarts a model message inside a tool call answers the started
    // call with an `Aborted` result: no `ToolCall` can follow, and nothing is left open.
    let rules = broken_rules(vec![
        Ok(started()),
        Ok(Event::ToolCallStart {
            id: "c1".into(),
            name: "get_weather".into(),
        }),
        Ok(tool_result("c1", patchbay_core::tool::ToolStatus::Aborted)),
        Ok(finish(FinishReason::Stop)),
    ])
    .await;
    assert_eq!(rules, Vec::<Rule>::new());
}

#[tokio::test]
async fn a_completed_result_for_a_call_whose_input_never_ended_is_caught() {
    let rules = broken_rules(vec![
        Ok(started()),
        Ok(Event::ToolCallStart {
            id: "c1".into(),
            name: "get_weather".into(),
        }),
        Ok(tool_result("c1", patchbay_core::tool::ToolStatus::Completed)),
        Ok(finish(FinishReason::Stop)),
    ])
    .await;
    assert_eq!(rules, vec![Rule::ToolResultAfterCall, Rule::ToolCallStartClosed]);
}

#[tokio::test]
async fn text_emitted_twice_as_one_final_delta_is_caught() {
    // An agent runtime sending partial deltas and then the whole assistant message.
    let rules = broken_rules(vec![
        Ok(started()),
        Ok(text(0, "Hello there, ")),
        Ok(text(0, "how are you today?")),
        Ok(text(0, "Hello there, how are you today?")),
        Ok(finish(FinishReason::Stop)),
    ])
    .await;
    assert_eq!(rules, vec![Rule::TextNotDuplicated]);
}

#[tokio::test]
async fn text_emitted_twice_as_a_second_block_is_caught() {
    let rules = broken_rules(vec![
        Ok(started()),
        Ok(text(0, "Hello there, ")),
        Ok(text(0, "how are you today?")),
        Ok(text(1, "Hello there, how are you today?")),
        Ok(finish(FinishReason::Stop)),
    ])
    .await;
    assert_eq!(rules, vec![Rule::TextNotDuplicated]);
}

#[tokio::test]
async fn a_block_reopened_after_another_began_is_caught() {
    let rules = broken_rules(vec![
        Ok(started()),
        Ok(text(0, "First block.")),
        Ok(text(1, "Second block.")),
        Ok(text(0, " More of the first.")),
        Ok(finish(FinishReason::Stop)),
    ])
    .await;
    assert_eq!(rules, vec![Rule::TextNotDuplicated]);
}

#[tokio::test]
async fn short_repeated_text_is_not_a_duplicate() {
    let rules = broken_rules(vec![
        Ok(started()),
        Ok(text(0, "ha ")),
        Ok(text(0, "ha ")),
        Ok(finish(FinishReason::Stop)),
    ])
    .await;
    assert_eq!(rules, vec![]);
}

#[tokio::test]
async fn missing_finish_is_caught() {
    let rules = broken_rules(vec![Ok(started()), Ok(text(0, "Hello"))]).await;
    assert_eq!(rules, vec![Rule::FinishMissing]);
}

#[tokio::test]
async fn events_after_an_error_are_caught() {
    let rules = broken_rules(vec![
        Ok(started()),
        Err(ErrorKind::Overloaded),
        Ok(text(0, "still talking")),
    ])
    .await;
    assert_eq!(rules, vec![Rule::NothingAfterError]);
}

#[tokio::test]
async fn events_after_finish_and_a_late_started_are_caught() {
    let rules = broken_rules(vec![
        Ok(text(0, "too early")),
        Ok(started()),
        Ok(finish(FinishReason::Stop)),
        Ok(finish(FinishReason::Stop)),
    ])
    .await;
    assert_eq!(rules, vec![Rule::StartedFirst, Rule::StartedOnce, Rule::FinishLast]);
}

#[tokio::test]
async fn a_tool_result_without_its_call_is_caught() {
    let rules = broken_rules(vec![
        Ok(started()),
        Ok(Event::ToolResult {
            id: "nope".into(),
            name: "x".into(),
            result: patchbay_core::ToolResult::text("?"),
        }),
        Ok(finish(FinishReason::Stop)),
    ])
    .await;
    assert_eq!(rules, vec![Rule::ToolResultAfterCall]);
}

#[tokio::test]
async fn an_error_alone_is_a_valid_stream() {
    let rules = broken_rules(vec![Err(ErrorKind::RateLimited)]).await;
    assert_eq!(rules, vec![]);
}

fn source(id: &str, url: &str) -> Event {
    Event::Source(patchbay_core::Source::url(id, 0, url, "broken"))
}

#[tokio::test]
async fn a_source_announced_twice_in_one_step_is_caught() {
    let rules = broken_rules(vec![
        Ok(started()),
        Ok(text(0, "Paris is in France.")),
        Ok(source("1", "https://example.com/a")),
        Ok(source("1", "https://example.com/a")),
        Ok(finish(FinishReason::Stop)),
    ])
    .await;
    assert_eq!(rules, vec![Rule::SourceWellFormed]);
}

#[tokio::test]
async fn a_source_without_url_or_with_a_backwards_range_is_caught() {
    let mut backwards = patchbay_core::Source::url("2", 0, "https://example.com", "broken");
    backwards.supports = Some(patchbay_core::source::Span { start: 9, end: 3 });
    let rules = broken_rules(vec![
        Ok(started()),
        Ok(text(0, "Paris is in France.")),
        Ok(source("1", " ")),
        Ok(Event::Source(backwards)),
        Ok(finish(FinishReason::Stop)),
    ])
    .await;
    assert_eq!(rules, vec![Rule::SourceWellFormed, Rule::SourceWellFormed]);
}

#[tokio::test]
async fn source_ids_start_again_in_the_next_step_and_do_not_close_text() {
    let rules = broken_rules(vec![
        Ok(started()),
        Ok(text(0, "Paris is ")),
        Ok(source("1", "https://example.com/a")),
        Ok(text(0, "in France.")),
        Ok(Event::StepFinished {
            step: 0,
            reason: FinishReason::ToolUse,
            usage: Usage::default(),
        }),
        Ok(source("1", "https://example.com/b")),
        Ok(finish(FinishReason::Stop)),
    ])
    .await;
    assert_eq!(rules, vec![]);
}

/// A target whose provider answers `text_only` right but sends its text twice.
fn duplicated_text_target() -> Target {
    let broken = Arc::new(Broken::new(vec![
        Ok(started()),
        Ok(text(0, "Hello! How can I help you today?")),
        Ok(text(0, "Hello! How can I help you today?")),
        Ok(finish(FinishReason::Stop)),
    ]));
    Target::new("broken", move |_| {
        let provider = broken.clone();
        async move { Ok(Fixture::new(provider)) }
    })
}

/// The harness itself fails a provider that breaks the rules, even when its events would
/// otherwise look right.
#[tokio::test]
async fn the_harness_fails_a_broken_provider() {
    let scenario = scenario("text_only").expect("text_only exists");
    let target = duplicated_text_target();
    let recording: Recording = target.record(&scenario).await.expect("the run completes");
    let verdict = check(&scenario, &recording);
    let failure = verdict.expect_err("a duplicated text must fail the scenario");
    assert!(matches!(failure, TrialFailure::Lifecycle(_)), "{failure:?}");
    assert!(failure.to_string().contains("TextNotDuplicated"), "{failure}");
}

/// Runs the one trial `name` of `target` through libtest-mimic, as `run_suite` would, with
/// its report in a log file (so this test's output shows no inner "FAILED").
fn run_one(target: &Target, name: &str) -> libtest_mimic::Conclusion {
    let log = tempfile::NamedTempFile::new().expect("a log file");
    let args = libtest_mimic::Arguments {
        filter: Some(name.into()),
        exact: true,
        test_threads: Some(1),
        logfile: Some(log.path().display().to_string()),
        ..Default::default()
    };
    libtest_mimic::run(&args, trials(target))
}

fn text_only_gap() -> Baseline {
    Baseline::parse("[[gap]]\nscenario = \"text_only\"\nreason = \"listed for this test\"\n").expect("a valid baseline")
}

/// A known gap forgives a difference from the golden, never a lifecycle violation.
#[test]
fn a_known_gap_does_not_forgive_a_lifecycle_violation() {
    let target = duplicated_text_target().with_baseline(text_only_gap());
    let conclusion = run_one(&target, "broken::text_only");
    assert_eq!((conclusion.num_passed, conclusion.num_failed), (0, 1));
}

/// A known gap that passes fails the run, so the baseline only ever shrinks.
#[test]
fn a_known_gap_that_passes_fails_the_run() {
    let target = Target::new("scripted", |case| {
        let provider = Arc::new(patchbay_scripted::ScriptedProvider::new(case.scenario.script.clone()));
        async move { Ok(Fixture::new(provider)) }
    });
    assert_eq!(run_one(&target, "scripted::text_only").num_passed, 1);
    let conclusion = run_one(&target.with_baseline(text_only_gap()), "scripted::text_only");
    assert_eq!((conclusion.num_passed, conclusion.num_failed), (0, 1));
}

/// A baseline path that does not exist is an error, never an empty baseline that forgives
/// nothing by accident.
#[test]
fn a_missing_baseline_file_is_an_error() {
    let error = Baseline::load("/nonexistent/conformance-baseline.toml").expect_err("a missing file");
    assert!(error.contains("cannot read the baseline"), "{error}");
}

/// Capabilities come from the provider's `info()`: a provider without reasoning gets the
/// reasoning scenarios ignored, and one with it runs them.
#[test]
fn capabilities_are_read_from_the_provider() {
    let without = duplicated_text_target();
    let ignored: Vec<String> = trials(&without)
        .iter()
        .filter(|t| t.has_ignored_flag())
        .map(|t| t.name().to_owned())
        .collect();
    assert!(ignored.iter().any(|n| n.contains("thinking")), "{ignored:?}");
    let with = Target::new("scripted", |case| {
        let provider = Arc::new(patchbay_scripted::ScriptedProvider::new(case.scenario.script.clone()));
        async move { Ok(Fixture::new(provider)) }
    });
    assert!(trials(&with).iter().all(|t| !t.has_ignored_flag()));
}

/// `with_chunkings` runs every scenario once per chunking, named by one rule.
#[test]
fn chunkings_multiply_the_trials_with_one_naming_rule() {
    use patchbay_conformance::mock::Chunking;
    let target = duplicated_text_target().with_chunkings([
        Chunking::PerFrame,
        Chunking::Whole,
        Chunking::Random { seed: 1, max: 9 },
    ]);
    let names: Vec<String> = trials(&target).iter().map(|t| t.name().to_owned()).collect();
    let count = scenarios().len();
    assert_eq!(names.len(), 3 * count);
    for prefix in ["broken::", "broken-whole::", "broken-random-chunks::"] {
        assert_eq!(
            names.iter().filter(|n| n.starts_with(prefix)).count(),
            count,
            "{prefix}"
        );
    }
}

#[test]
fn finish_metrics_that_disagree_with_the_events_fail_every_target() {
    // What the metrics recorder would have counted: three events, eleven characters of text.
    let good = Metrics {
        first_event_ms: Some(1),
        first_text_ms: Some(2),
        total_ms: 3,
        events: 3,
        text_chars: 11,
        reasoning_chars: 0,
    };
    let events = |metrics: Metrics| {
        vec![
            started(),
            text(0, "Hello wörld"),
            Event::Finish {
                reason: FinishReason::Stop,
                usage: Usage::default(),
                metrics,
            },
        ]
    };
    patchbay_conformance::metrics::check_metrics(&events(good)).expect("counted right");
    for (wrong, what) in [
        (Metrics { events: 2, ..good }, "events"),
        (Metrics { text_chars: 12, ..good }, "text characters (bytes, not chars)"),
        (
            Metrics {
                first_text_ms: None,
                ..good
            },
            "no first text time",
        ),
        (
            Metrics {
                first_event_ms: None,
                ..good
            },
            "no first event time",
        ),
        (Metrics { total_ms: 1, ..good }, "total before the first text"),
    ] {
        let recording = Recording {
            events: events(wrong),
            error: None,
        };
        let text_only = scenario("text_only").expect("a shared scenario");
        let failure = check(&text_only, &recording).expect_err(what);
        assert!(matches!(failure, TrialFailure::Metrics(_)), "{what}: {failure}");
    }
}
