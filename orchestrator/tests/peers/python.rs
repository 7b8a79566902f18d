//! The Python MCP SDK's client (`mcp==1.30.0`, `streamablehttp_client`) drives all nine tools
//! of the served binary with `drive_tools.py`: blueprints, a sync start, an async start with a
//! callback to its parent, status with `wait_seconds`, result, resume, the events, cancel, the
//! refusals, sessions in JSON, delete all; and progress: a sync start of a child that naps in
//! `bash`, and a status wait on one, hand the SDK's `progress_callback` the child's activity
//! while they wait. The script prints what it saw; the checks are here.

use std::time::Duration;

use patchbay_orchestrator::store::{JobKind, JobStatus};
use serde_json::Value;

use crate::served::{Served, all_jobs, napping, open_store};

const HELLO: &str = "Hello from the scripted provider.";

/// The messages of the progress notifications a call got, after checking that `progress`
/// increased.
fn progress_lines(call: &Value) -> Vec<String> {
    let reports = call["progress"].as_array().cloned().unwrap_or_default();
    let values: Vec<f64> = reports.iter().filter_map(|r| r["progress"].as_f64()).collect();
    assert!(
        values.windows(2).all(|w| w[0] < w[1]),
        "progress must increase: {call:#}"
    );
    reports
        .iter()
        .filter_map(|r| r["message"].as_str().map(str::to_owned))
        .collect()
}
const SCRIPT_LIMIT: Duration = Duration::from_secs(150);

fn names(list: &Value, key: &str, field: &str) -> Vec<String> {
    list[key]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| item[field].as_str().map(str::to_owned))
        .collect()
}

fn refused(answer: &Value, says: &str) {
    assert_eq!(answer["is_error"], true, "{answer:#}");
    let text = answer["text"].as_str().unwrap_or_default();
    assert!(text.contains(says), "`{says}` not in {text}");
}

pub(crate) async fn the_python_mcp_client_drives_all_nine_tools_and_gets_progress() {
    let python = patchbay_conformance::peers::peers_dir().join("mcp/venv/bin/python");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/peers/drive_tools.py");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let blueprints = dir.path().join("blueprints");
    std::fs::create_dir_all(&blueprints).unwrap();
    std::fs::write(blueprints.join("napper.toml"), napping("napper", 2)).unwrap();
    std::fs::write(blueprints.join("sleeper.toml"), napping("sleeper", 30)).unwrap();
    let served = Served::start(
        &data,
        Some(&blueprints),
        &["--project-dir", work.to_str().unwrap()],
        &dir.path().join("serve.log"),
    )
    .await;

    let mut command = tokio::process::Command::new(&python);
    command
        .arg(script)
        .env("URL", &served.mcp)
        .env("TOKEN", &served.token)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(SCRIPT_LIMIT, command.output())
        .await
        .unwrap_or_else(|_| panic!("the script did not finish within {SCRIPT_LIMIT:?}"))
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let context = || {
        format!(
            "stdout:\n{stdout}\nstderr:\n{}\norchestrator:\n{}",
            String::from_utf8_lossy(&output.stderr),
            served.stderr()
        )
    };
    assert!(output.status.success(), "{:?}\n{}", output.status, context());
    let out: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}\n{}", context()));

    assert_eq!(
        out["tools"],
        serde_json::json!([
            "cancel_agent_session",
            "delete_all_agent_sessions",
            "get_agent_session_events",
            "get_agent_session_result",
            "get_agent_session_status",
            "list_agent_blueprints",
            "list_agent_sessions",
            "resume_agent_session",
            "start_agent_session",
        ])
    );
    assert_eq!(
        names(&out["blueprints"], "blueprints", "name"),
        ["default", "napper", "sleeper"]
    );
    // The transcript, paged one event at a time, and in markdown; cancel with nothing to cancel.
    let types: Vec<&str> = out["child_event_types"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(types.first(), Some(&"started"), "{types:?}");
    assert!(types.contains(&"finish"), "{types:?}");
    let markdown = out["child_events_markdown"].as_str().unwrap_or_default();
    assert!(markdown.contains(&format!("text: {HELLO}")), "{markdown}");
    assert_eq!(out["cancel_settled"]["is_error"], true, "{:#}", out["cancel_settled"]);
    assert_eq!(
        out["status_of_unknown"]["status"], "not_existent",
        "{:#}",
        out["status_of_unknown"]
    );
    assert!(
        out["blueprints_markdown"]
            .as_str()
            .is_some_and(|m| m.starts_with("## default\n")),
        "{}",
        out["blueprints_markdown"]
    );

    // Sync start: the finished report with the result.
    let parent = &out["parent_start"];
    assert_eq!(parent["status"], "finished", "{parent:#}");
    assert_eq!(parent["job_status"], "completed", "{parent:#}");
    assert_eq!(parent["result"], HELLO, "{parent:#}");
    assert_eq!(parent["parent_session_name"], Value::Null, "{parent:#}");

    // Async start with a callback: accepted at once, to call back the header's session.
    let child = &out["child_start"];
    assert_eq!(child["session_name"], "py-child", "{child:#}");
    assert_eq!(child["status"], "running", "{child:#}");
    assert_eq!(child["job_status"], "pending", "{child:#}");
    assert!(
        child["message"]
            .as_str()
            .is_some_and(|m| m.contains("get_agent_session_status")),
        "{child:#}"
    );
    assert_eq!(child["callback_to"], "py-parent", "{child:#}");
    let statuses = out["child_statuses"].as_array().unwrap();
    assert!(
        statuses.len() <= 30 && statuses.last() == Some(&"completed".into()),
        "{statuses:?}"
    );
    let status = &out["child_status"];
    assert_eq!(status["status"], "finished", "{status:#}");
    assert_eq!(status["parent_session_name"], "py-parent", "{status:#}");
    assert_eq!(status["job_id"], child["job_id"], "{status:#}");
    assert_eq!(out["child_result"]["result"], HELLO);
    let markdown = out["child_result_markdown"].as_str().unwrap_or_default();
    assert!(
        markdown.starts_with("## py-child\n") && markdown.contains("### result\n\nHello from the scripted provider."),
        "{markdown}"
    );

    // The callback resumed the parent, which ran again.
    let called_back = &out["parent_after_callback"];
    assert_eq!(called_back["job_status"], "completed", "{called_back:#}");
    assert_eq!(called_back["status"], "finished", "{called_back:#}");

    // Resume (sync) continues the child.
    let resumed = &out["child_resume"];
    assert_eq!(resumed["status"], "finished", "{resumed:#}");
    assert_eq!(resumed["result"], HELLO, "{resumed:#}");
    assert_ne!(resumed["job_id"], child["job_id"], "{resumed:#}");

    // Progress: the sync start's callback got the child's tool call while it napped, well
    // before the answer, which is whole.
    let napper = &out["napper_start"];
    assert_eq!(napper["is_error"], false, "{napper:#}");
    assert_eq!(napper["answer"]["status"], "finished", "{napper:#}");
    assert_eq!(napper["answer"]["result"], "Rested.", "{napper:#}");
    let lines = progress_lines(napper);
    let nap = napper["progress"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["message"] == "tool bash: sleep 2; echo woke")
        .unwrap_or_else(|| panic!("no tool call among {lines:?}"));
    assert!(
        nap["before_answer"].as_f64().is_some_and(|s| s >= 0.5),
        "told only just before the answer: {napper:#}"
    );
    // The status wait told the sleeper's activity, and answered it still running; cancel
    // stopped it mid-nap, and its result is the cancellation (an error answer).
    let sleeper = &out["sleeper_status"];
    assert_eq!(sleeper["answer"]["status"], "running", "{sleeper:#}");
    let lines = progress_lines(sleeper);
    assert!(lines.iter().any(|l| l == "tool bash: sleep 30; echo woke"), "{lines:?}");
    let cancelled = &out["sleeper_cancel"];
    assert_eq!(cancelled["status"], "cancelled", "{cancelled:#}");
    assert_eq!(cancelled["job_status"], "cancelled", "{cancelled:#}");
    refused(&out["sleeper_result"], "cancelled");

    // Refusals are tool errors that say what is wrong.
    refused(&out["result_of_unknown"], "py-nobody");
    refused(&out["start_existing"], "py-child");
    refused(&out["start_bad_name"], "no spaces allowed");
    refused(&out["resume_missing"], "py-nobody");

    // Sessions in JSON, with their parents; then all deleted.
    let sessions = &out["sessions"];
    assert_eq!(
        names(sessions, "sessions", "session_name"),
        ["py-parent", "py-child", "py-napper", "py-sleeper"]
    );
    assert_eq!(
        names(sessions, "sessions", "parent_session_name"),
        ["py-parent", "py-parent", "py-parent"],
        "only the children have a parent: {sessions:#}"
    );
    let listed = out["sessions_markdown"].as_str().unwrap_or_default();
    assert!(
        listed.contains("## py-parent\n") && listed.contains("## py-child\n"),
        "{listed}"
    );
    assert_eq!(out["deleted"]["is_error"], false);
    assert_eq!(out["deleted"]["text"], "Deleted 4 sessions.");
    assert_eq!(out["sessions_after_delete"]["sessions"], serde_json::json!([]));

    // Jobs outlive their sessions: the parent's resume carried the child's result.
    let store = open_store(&data).await;
    let jobs = all_jobs(&store).await;
    let callback = jobs
        .iter()
        .find(|j| j.session_name == "py-parent" && j.kind == JobKind::ResumeSession)
        .unwrap_or_else(|| panic!("no callback resume: {jobs:#?}"));
    assert_eq!(callback.status, JobStatus::Completed);
    assert!(
        callback.prompt.contains("py-child") && callback.prompt.contains(HELLO),
        "{}",
        callback.prompt
    );
    store.close().await;
    let (status, log) = served.terminate(Duration::from_secs(30)).await;
    assert!(status.is_some_and(|s| s.success()), "{status:?}\n{log}");
}
