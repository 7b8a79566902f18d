//! A host killed with SIGKILL leaves no `bash` tool shell behind (setpriv's parent-death
//! signal), and without `setpriv` on `PATH` the shell still runs, directly.
//!
//! Each test re-runs this test binary as the host (a child process running one `#[test]`
//! below, selected by an environment variable) so the host can be killed.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use patchbay_core::kit::{ParentDeathSignal, find_program};
use patchbay_core::{ToolContext, tool::ToolStatus};
use patchbay_tools::Workspace;
use serde_json::json;

use crate::support::{Fixture, call, process_gone};

/// Set in the host process: its workspace root.
const HOST_ROOT: &str = "PATCHBAY_TOOLS_TEST_HOST_ROOT";
/// What the host prints once the shell wrote its pid.
const SHELL: &str = "shell pid ";

/// The host's part of [`killed_host_leaves_no_shell`]: a `bash` call that runs on a runtime
/// worker thread (as a host's calls do) until the process is killed. Does nothing on its own.
#[test]
fn host_holds_a_bash_call_until_killed() {
    let Some(root) = std::env::var_os(HOST_ROOT) else {
        return;
    };
    let root = Path::new(&root).to_path_buf();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // `sleep 30; echo`: bash forks the sleep (it would exec a last command).
    let command = "echo $$ > pid; sleep 30.25; echo after";
    let workspace = Workspace::new(&root).with_bash(true);
    let _call =
        runtime.spawn(async move { call(workspace, "bash", json!({"command": command}), &ToolContext::new()).await });
    let pid_file = root.join("pid");
    let deadline = Instant::now() + Duration::from_secs(30);
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok())
        {
            break pid;
        }
        assert!(Instant::now() < deadline, "the shell never wrote its pid");
        std::thread::sleep(Duration::from_millis(20));
    };
    println!("{SHELL}{pid}");
    loop {
        std::thread::sleep(Duration::from_secs(60));
    }
}

#[test]
fn killed_host_leaves_no_shell() {
    if ParentDeathSignal::detect().setpriv().is_none() {
        eprintln!("skipped: no setpriv on PATH (the fallback is tested on its own)");
        return;
    }
    let fx = Fixture::new();
    let mut host = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "pdeathsig::host_holds_a_bash_call_until_killed",
            "--nocapture",
        ])
        .env(HOST_ROOT, &fx.root)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = host.stdout.take().unwrap();
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(pid) = line.strip_prefix(SHELL) {
                let _ = sender.send(pid.parse::<u32>().unwrap());
            }
        }
    });
    let Ok(shell) = receiver.recv_timeout(Duration::from_secs(60)) else {
        let _ = host.kill();
        panic!("the host printed no shell pid: {:?}", host.wait());
    };
    assert!(!process_gone(shell));

    host.kill().unwrap(); // SIGKILL: no destructor, no kill_on_drop runs
    host.wait().unwrap();
    let killed = Instant::now();
    while !process_gone(shell) && killed.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let shell_gone = process_gone(shell);
    // The shell's `sleep` is orphaned, not killed (the signal is not inherited): clean up its
    // process group (the shell's pid) either way.
    if let Some(group) = i32::try_from(shell).ok().and_then(rustix::process::Pid::from_raw) {
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
    assert!(
        shell_gone,
        "the shell {shell} still runs 10 s after its host was killed"
    );
}

/// The host's part of [`without_setpriv_the_shell_runs_directly`], run with a `PATH` holding
/// only `bash`. Does nothing on its own.
#[test]
fn host_runs_bash_without_setpriv() {
    let Some(root) = std::env::var_os(HOST_ROOT) else {
        return;
    };
    assert_eq!(ParentDeathSignal::detect().setpriv(), None);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let workspace = Workspace::new(root).with_bash(true);
    let result = runtime.block_on(call(
        workspace,
        "bash",
        json!({"command": "echo $0 ran"}),
        &ToolContext::new(),
    ));
    assert_eq!(result.status, ToolStatus::Completed, "{}", result.text_content());
    assert!(
        result.text_content().ends_with("bash ran\n[exit code 0]"),
        "{}",
        result.text_content()
    );
}

#[test]
fn without_setpriv_the_shell_runs_directly() {
    let fx = Fixture::new();
    let bash = find_program("bash", std::env::var_os("PATH").as_deref()).expect("bash on PATH");
    let bin = fx.root.join("bin-without-setpriv");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(&bash, bin.join("bash")).unwrap();
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "pdeathsig::host_runs_bash_without_setpriv", "--nocapture"])
        .env(HOST_ROOT, &fx.root)
        .env("PATH", &bin)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    assert!(text.contains("1 passed"), "{text}");
}
