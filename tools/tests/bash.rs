use std::time::{Duration, Instant};

use patchbay_core::{Signal, ToolContext, tool::ToolStatus};
use patchbay_tools::Workspace;
use serde_json::json;

use crate::support::{Fixture, assert_processes_gone, assert_status, call, wait_for_pids};

fn bash(fx: &Fixture) -> Workspace {
    fx.workspace().with_bash(true)
}

#[tokio::test]
async fn runs_in_the_root_and_reports_the_exit_code() {
    let fx = Fixture::new();
    let result = fx.call(bash(&fx), "bash", json!({"command": "pwd; echo hi"})).await;
    assert_status(&result, ToolStatus::Completed);
    assert_eq!(
        result.text_content(),
        format!("{}\nhi\n[exit code 0]", fx.root.display())
    );
    assert_eq!(result.metadata.unwrap()["exit_code"], 0);
}

#[tokio::test]
async fn a_failing_command_shows_stderr_and_its_code() {
    let fx = Fixture::new();
    let result = fx
        .call(bash(&fx), "bash", json!({"command": "echo out; echo err >&2; exit 3"}))
        .await;
    assert_status(&result, ToolStatus::Failed);
    assert_eq!(result.text_content(), "out\n[stderr]\nerr\n[exit code 3]");
    assert_eq!(result.metadata.unwrap()["exit_code"], 3);
}

#[tokio::test]
async fn no_output_and_workspace_env() {
    let fx = Fixture::new();
    let workspace = bash(&fx).with_env("PATCHBAY_GREETING", "hello");
    let result = fx.call(workspace.clone(), "bash", json!({"command": "true"})).await;
    assert_eq!(result.text_content(), "(no output)\n[exit code 0]");
    let result = fx
        .call(workspace, "bash", json!({"command": "echo $PATCHBAY_GREETING"}))
        .await;
    assert_eq!(result.text_content(), "hello\n[exit code 0]");
}

#[tokio::test]
async fn long_output_keeps_head_and_tail_with_a_marker() {
    let fx = Fixture::new();
    let workspace = bash(&fx).with_output_limit(2_000);
    let command = "echo FIRST; for i in $(seq 1 20000); do echo line $i; done; echo LAST";
    let result = fx.call(workspace, "bash", json!({"command": command})).await;
    assert_status(&result, ToolStatus::Completed);
    let text = result.text_content();
    assert!(text.starts_with("FIRST\n"), "{}", &text[..100]);
    assert!(text.ends_with("LAST\n[exit code 0]"), "{}", &text[text.len() - 100..]);
    assert!(text.contains("characters cut from the middle"));
    assert!(text.chars().count() < 2_400);
}

#[tokio::test]
async fn timeout_kills_the_whole_process_group() {
    let fx = Fixture::new();
    let pids = fx.root.join("pids");
    // The shell and a background sleep both record their pid, then the shell waits.
    let command = "echo $$ > pids; sleep 60 & echo $! >> pids; wait";
    let started = Instant::now();
    let result = fx
        .call(bash(&fx), "bash", json!({"command": command, "timeout_secs": 1}))
        .await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_status(&result, ToolStatus::Failed);
    assert!(
        result
            .text_content()
            .ends_with("[timed out after 1 s: the command and its process group were killed]")
    );
    assert_eq!(result.metadata.unwrap()["timed_out"], true);
    let pids = wait_for_pids(&pids, 2).await;
    assert_processes_gone(&pids);
}

#[tokio::test]
async fn cancel_kills_the_whole_process_group() {
    let fx = Fixture::new();
    let signal = Signal::new();
    let cx = ToolContext::new().with_signal(signal.clone());
    let pid_file = fx.root.join("pids");
    let command = "echo $$ > pids; sleep 60 & echo $! >> pids; wait";
    let run = call(bash(&fx), "bash", json!({"command": command}), &cx);
    let cancel = async {
        let pids = wait_for_pids(&pid_file, 2).await;
        signal.cancel();
        pids
    };
    let (result, pids) = tokio::join!(run, cancel);
    assert_status(&result, ToolStatus::Aborted);
    assert_eq!(result.metadata.unwrap()["cancelled"], true);
    assert_processes_gone(&pids);
}

#[tokio::test]
async fn dropping_the_call_kills_the_whole_process_group() {
    // The agent loop drops a tool's future when the run is cancelled.
    let fx = Fixture::new();
    let pid_file = fx.root.join("pids");
    let command = "echo $$ > pids; sleep 60 & echo $! >> pids; wait";
    let workspace = bash(&fx);
    let cx = ToolContext::new();
    let run = call(workspace, "bash", json!({"command": command}), &cx);
    let pids = tokio::select! {
        _ = run => panic!("the command should not finish"),
        pids = async {
            let pids = wait_for_pids(&pid_file, 2).await;
            tokio::time::sleep(Duration::from_millis(50)).await;
            pids
        } => pids,
    };
    assert_processes_gone(&pids);
}

#[tokio::test]
async fn background_jobs_do_not_outlive_the_command() {
    let fx = Fixture::new();
    let result = fx
        .call(bash(&fx), "bash", json!({"command": "sleep 60 & echo $! > pids"}))
        .await;
    assert_status(&result, ToolStatus::Completed);
    let pids = wait_for_pids(&fx.root.join("pids"), 1).await;
    assert_processes_gone(&pids);
}

#[tokio::test]
async fn empty_commands_and_bad_input_fail() {
    let fx = Fixture::new();
    let result = fx.call(bash(&fx), "bash", json!({"command": "  "})).await;
    assert_status(&result, ToolStatus::Failed);
    let result = fx.call(bash(&fx), "bash", json!({"cmd": "ls"})).await;
    assert_status(&result, ToolStatus::Failed);
}

#[tokio::test]
async fn host_environment_can_be_withheld() {
    let fx = Fixture::new();
    // cargo sets CARGO_PKG_NAME for every test process.
    let command = "echo ${CARGO_PKG_NAME:-unset} ${PATH:+has-path} $EXTRA";
    let inherit = bash(&fx).with_env("EXTRA", "extra");
    let result = fx.call(inherit.clone(), "bash", json!({"command": command})).await;
    assert_eq!(result.text_content(), "patchbay-tools has-path extra\n[exit code 0]");
    let clean = inherit.with_inherited_env(false);
    let result = fx.call(clean, "bash", json!({"command": command})).await;
    assert_eq!(result.text_content(), "unset has-path extra\n[exit code 0]");
}
