//! Answers of the MCP tools: response formats, truncation, markdown and JSON renders.
#![allow(clippy::unwrap_used)]

use patchbay_orchestrator::blueprint::{Blueprint, Blueprints};
use patchbay_orchestrator::format::{
    BlueprintSummary, JobAccepted, MAX_RESULT_CHARS, ResponseFormat, STARTED_IN_BACKGROUND, SessionReport,
    SessionSummary, render_blueprints, render_job_accepted, render_session, render_sessions, truncate_result,
};
use patchbay_orchestrator::store::UsageTotals;
use serde_json::{Value, json};

fn blueprints() -> Vec<BlueprintSummary> {
    vec![
        BlueprintSummary {
            name: "coder".into(),
            description: "Writes code.\nRuns the tests.".into(),
            provider: "claude-agent".into(),
            model: "sonnet".into(),
            status: "active".into(),
        },
        BlueprintSummary {
            name: "old".into(),
            description: "Kept.".into(),
            provider: "scripted".into(),
            model: "scripted".into(),
            status: "retired".into(),
        },
    ]
}

fn session(name: &str, parent: Option<&str>) -> SessionSummary {
    SessionSummary {
        session_name: name.into(),
        session_id: format!("id-{name}"),
        agent_name: "default".into(),
        status: "finished".into(),
        project_dir: Some("/tmp/work".into()),
        parent_session_name: parent.map(Into::into),
        created_at: "2025-01-02T03:04:05Z".into(),
        updated_at: "2025-01-02T03:04:06Z".into(),
        usage: UsageTotals::default(),
    }
}

fn report(result: Option<String>) -> SessionReport {
    SessionReport {
        session: session("child", Some("parent")),
        finished_at: Some("2025-01-02T03:04:07Z".into()),
        job_id: Some("job-1".into()),
        job_status: Some("completed".into()),
        error: None,
        result,
        run_usage: None,
        tree_root: None,
        tree_usage: None,
    }
}

#[test]
fn response_format_parses_markdown_and_json_and_defaults_to_markdown() {
    assert_eq!("markdown".parse(), Ok(ResponseFormat::Markdown));
    assert_eq!("json".parse(), Ok(ResponseFormat::Json));
    assert_eq!(ResponseFormat::default(), ResponseFormat::Markdown);
    assert_eq!(ResponseFormat::parse_optional(None), Ok(ResponseFormat::Markdown));
    assert_eq!(ResponseFormat::parse_optional(Some("json")), Ok(ResponseFormat::Json));
    let format: ResponseFormat = serde_json::from_value(json!("json")).unwrap();
    assert_eq!(format, ResponseFormat::Json);
}

#[test]
fn unknown_response_format_error_names_the_allowed_values() {
    for given in ["xml", "JSON", "", "md"] {
        let err = given.parse::<ResponseFormat>().unwrap_err();
        let message = err.to_string();
        assert!(message.contains(&format!("`{given}`")), "{message}");
        assert!(
            message.contains("`markdown`") && message.contains("`json`"),
            "{message}"
        );
    }
}

#[test]
fn result_of_exactly_25000_characters_is_unchanged() {
    let text = "a".repeat(MAX_RESULT_CHARS);
    assert_eq!(truncate_result(&text), text);
    assert_eq!(truncate_result(""), "");
}

#[test]
fn result_of_25001_characters_is_cut_with_a_truncation_line() {
    let text = "a".repeat(MAX_RESULT_CHARS + 1);
    let cut = truncate_result(&text);
    assert_eq!(
        cut,
        format!(
            "{}\n\n[truncated: the result had 25,001 characters; the first 25,000 are shown]",
            "a".repeat(MAX_RESULT_CHARS)
        )
    );
}

#[test]
fn truncation_counts_characters_and_cuts_at_a_char_boundary() {
    // 30,000 three-byte characters: 90,000 bytes.
    let text = "€".repeat(30_000);
    let cut = truncate_result(&text);
    let (kept, note) = cut.split_once("\n\n").unwrap();
    assert_eq!(kept, "€".repeat(MAX_RESULT_CHARS));
    assert_eq!(
        note,
        "[truncated: the result had 30,000 characters; the first 25,000 are shown]"
    );
    // Exactly 25,000 multi-byte characters (more than 25,000 bytes) stay whole.
    let text = "🦀".repeat(MAX_RESULT_CHARS);
    assert_eq!(truncate_result(&text), text);
    // Mixed widths: the cut lands after the 25,000th character.
    let text = format!("{}é{}", "a".repeat(MAX_RESULT_CHARS - 1), "b".repeat(10));
    let cut = truncate_result(&text);
    assert!(cut.starts_with(&format!("{}é\n\n[truncated", "a".repeat(MAX_RESULT_CHARS - 1))));
    assert!(cut.contains("had 25,010 characters"));
}

#[test]
fn blueprints_in_markdown_have_a_heading_each_and_field_lines() {
    assert_eq!(
        render_blueprints(&blueprints(), ResponseFormat::Markdown),
        "## coder\n\
         - description: Writes code. Runs the tests.\n\
         - provider: claude-agent\n\
         - model: sonnet\n\
         - status: active\n\
         \n\
         ## old\n\
         - description: Kept.\n\
         - provider: scripted\n\
         - model: scripted\n\
         - status: retired\n"
    );
}

#[test]
fn blueprints_in_json_are_a_list_under_blueprints() {
    let value: Value = serde_json::from_str(&render_blueprints(&blueprints(), ResponseFormat::Json)).unwrap();
    assert_eq!(
        value,
        json!({"total": 2, "blueprints": [
            {"name": "coder", "description": "Writes code.\nRuns the tests.", "provider": "claude-agent", "model": "sonnet", "status": "active"},
            {"name": "old", "description": "Kept.", "provider": "scripted", "model": "scripted", "status": "retired"},
        ]})
    );
}

#[test]
fn empty_lists_say_so() {
    assert_eq!(
        render_blueprints(&[], ResponseFormat::Markdown),
        "No agent blueprints found.\n"
    );
    assert_eq!(render_sessions(&[], ResponseFormat::Markdown), "No sessions found.\n");
    let value: Value = serde_json::from_str(&render_sessions(&[], ResponseFormat::Json)).unwrap();
    assert_eq!(value, json!({"total": 0, "sessions": []}));
}

#[test]
fn a_long_description_is_cut_in_listings() {
    let blueprint = Blueprint {
        description: "d".repeat(100_000),
        ..Blueprints::builtin_default()
    };
    let summary = BlueprintSummary::from(&blueprint);
    assert!(
        summary.description.chars().count() < 2_200,
        "{}",
        summary.description.len()
    );
    assert!(
        summary
            .description
            .contains("[truncated: the description had 100,000 characters")
    );
}

#[test]
fn blueprint_summary_comes_from_a_blueprint() {
    let summary = BlueprintSummary::from(&Blueprints::builtin_default());
    assert_eq!(summary.name, "default");
    assert_eq!(summary.provider, "scripted");
    assert_eq!(summary.status, "active");
}

#[test]
fn sessions_in_markdown_leave_out_fields_without_a_value() {
    let list = [session("parent", None), session("child", Some("parent"))];
    assert_eq!(
        render_sessions(&list, ResponseFormat::Markdown),
        "## parent\n\
         - session_id: id-parent\n\
         - agent_name: default\n\
         - status: finished\n\
         - project_dir: /tmp/work\n\
         - created_at: 2025-01-02T03:04:05Z\n\
         - updated_at: 2025-01-02T03:04:06Z\n\
         \n\
         ## child\n\
         - session_id: id-child\n\
         - agent_name: default\n\
         - status: finished\n\
         - project_dir: /tmp/work\n\
         - parent_session_name: parent\n\
         - created_at: 2025-01-02T03:04:05Z\n\
         - updated_at: 2025-01-02T03:04:06Z\n"
    );
}

#[test]
fn sessions_in_json_keep_null_fields() {
    let list = [session("parent", None)];
    let value: Value = serde_json::from_str(&render_sessions(&list, ResponseFormat::Json)).unwrap();
    assert_eq!(
        value,
        json!({"total": 1, "sessions": [{
            "session_name": "parent",
            "session_id": "id-parent",
            "agent_name": "default",
            "status": "finished",
            "project_dir": "/tmp/work",
            "parent_session_name": null,
            "created_at": "2025-01-02T03:04:05Z",
            "updated_at": "2025-01-02T03:04:06Z",
            "usage": {"total_tokens": 0, "input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0, "reasoning_tokens": 0},
        }]})
    );
}

#[test]
fn session_report_in_markdown_ends_with_the_result() {
    assert_eq!(
        render_session(&report(Some("Done.\nAll tests pass.".into())), ResponseFormat::Markdown),
        "## child\n\
         - session_id: id-child\n\
         - agent_name: default\n\
         - status: finished\n\
         - project_dir: /tmp/work\n\
         - parent_session_name: parent\n\
         - created_at: 2025-01-02T03:04:05Z\n\
         - updated_at: 2025-01-02T03:04:06Z\n\
         - finished_at: 2025-01-02T03:04:07Z\n\
         - job_id: job-1\n\
         - job_status: completed\n\
         \n\
         ### result\n\
         \n\
         Done.\n\
         All tests pass.\n"
    );
}

#[test]
fn session_report_in_json_is_flat() {
    let value: Value =
        serde_json::from_str(&render_session(&report(Some("Done.".into())), ResponseFormat::Json)).unwrap();
    assert_eq!(
        value,
        json!({
            "session_name": "child",
            "session_id": "id-child",
            "agent_name": "default",
            "status": "finished",
            "project_dir": "/tmp/work",
            "parent_session_name": "parent",
            "created_at": "2025-01-02T03:04:05Z",
            "updated_at": "2025-01-02T03:04:06Z",
            "finished_at": "2025-01-02T03:04:07Z",
            "job_id": "job-1",
            "job_status": "completed",
            "error": null,
            "result": "Done.",
            "usage": {"total_tokens": 0, "input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0, "reasoning_tokens": 0},
        })
    );
}

#[test]
fn session_report_truncates_a_long_result_in_both_formats() {
    let long = "x".repeat(MAX_RESULT_CHARS + 5);
    let markdown = render_session(&report(Some(long.clone())), ResponseFormat::Markdown);
    assert!(markdown.ends_with("\n\n[truncated: the result had 25,005 characters; the first 25,000 are shown]\n"));
    let value: Value = serde_json::from_str(&render_session(&report(Some(long)), ResponseFormat::Json)).unwrap();
    let result = value["result"].as_str().unwrap();
    assert_eq!(result, truncate_result(&"x".repeat(MAX_RESULT_CHARS + 5)));
}

#[test]
fn failed_session_report_shows_the_error() {
    let mut failed = report(None);
    failed.session.status = "failed".into();
    failed.error = Some("interrupted: the orchestrator stopped during the run".into());
    let markdown = render_session(&failed, ResponseFormat::Markdown);
    assert!(markdown.contains("- error: interrupted: the orchestrator stopped during the run\n"));
    assert!(!markdown.contains("### result"));
}

#[test]
fn job_accepted_in_both_formats() {
    let accepted = JobAccepted {
        session_name: "child".into(),
        status: "running".into(),
        message: STARTED_IN_BACKGROUND.into(),
        job_id: "job-1".into(),
        job_status: "pending".into(),
        callback_to: Some("parent".into()),
    };
    assert_eq!(
        render_job_accepted(&accepted, ResponseFormat::Markdown),
        "## child\n- status: running\n- job_id: job-1\n- job_status: pending\n- callback_to: parent\n\n\
         Agent started in background. Use get_agent_session_status to poll for completion.\n"
    );
    let value: Value = serde_json::from_str(&render_job_accepted(&accepted, ResponseFormat::Json)).unwrap();
    assert_eq!(
        value,
        json!({"session_name": "child", "status": "running", "message": STARTED_IN_BACKGROUND,
               "job_id": "job-1", "job_status": "pending", "callback_to": "parent"})
    );
    let without = JobAccepted {
        callback_to: None,
        ..accepted
    };
    let value: Value = serde_json::from_str(&render_job_accepted(&without, ResponseFormat::Json)).unwrap();
    assert!(value.get("callback_to").is_none());
}

#[test]
fn usage_shows_in_both_formats_when_something_was_spent() {
    let spent = UsageTotals {
        input_tokens: 1000,
        output_tokens: 234,
        cache_read_tokens: 50,
        cost_usd: Some(0.0123),
        ..UsageTotals::default()
    };
    let mut report = report(Some("Done.".into()));
    report.session.usage = spent;
    report.run_usage = Some(spent);
    report.tree_root = Some("parent".into());
    report.tree_usage = Some(spent);
    let markdown = render_session(&report, ResponseFormat::Markdown);
    let line = "1284 tokens (input 1000, output 234, cache read 50, cache write 0), $0.0123";
    assert!(markdown.contains(&format!("- usage: {line}\n")), "{markdown}");
    assert!(markdown.contains(&format!("- run_usage: {line}\n")), "{markdown}");
    assert!(
        markdown.contains(&format!("- tree_usage: {line} (the tree of `parent`)\n")),
        "{markdown}"
    );
    let value: Value = serde_json::from_str(&render_session(&report, ResponseFormat::Json)).unwrap();
    assert_eq!(value["usage"]["total_tokens"], 1284);
    assert_eq!(value["run_usage"]["cost_usd"], 0.0123);
    assert_eq!(value["tree_root"], "parent");
    assert_eq!(value["tree_usage"]["input_tokens"], 1000);
}
