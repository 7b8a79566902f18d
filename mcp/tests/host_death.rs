//! A host killed with SIGKILL while a stdio server runs leaves no server behind (setpriv's
//! parent-death signal). The host is this test binary run again (one `#[test]` below,
//! selected by an environment variable), so it can be killed.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use patchbay_core::kit::ParentDeathSignal;
use patchbay_mcp::McpClientSet;

use crate::common::stdio;

/// Set in the host process: a folder for the server's pid file.
const HOST_DIR: &str = "PATCHBAY_MCP_TEST_HOST_DIR";
/// What the host prints once the server wrote its pid.
const SERVER: &str = "server pid ";

/// Whether a process is gone (absent, or a zombie waiting to be reaped).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next());
            matches!(state, Some("Z" | "X"))
        }
    }
}

/// The host's part of [`killed_host_leaves_no_stdio_server`]: a connect to a server that never
/// speaks, pending on a runtime worker thread until the process is killed. Does nothing on
/// its own.
#[test]
fn host_connects_until_killed() {
    let Some(dir) = std::env::var_os(HOST_DIR) else {
        return;
    };
    let pid_file = Path::new(&dir).join("pid");
    // `exec`: the shell becomes the sleep, the process setpriv started.
    let script = format!("echo $$ > {}; exec sleep 300", pid_file.display());
    let set = McpClientSet::new()
        .with_connect_timeout(Duration::from_secs(600))
        .with_server(stdio("mute", Path::new("sh"), &["-c", &script]));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let _connect = runtime.spawn(async move { set.connect().await });
    let deadline = Instant::now() + Duration::from_secs(60);
    let pid = loop {
        let written = std::fs::read_to_string(&pid_file).ok();
        if let Some(pid) = written.and_then(|text| text.trim().parse::<i32>().ok()) {
            break pid;
        }
        assert!(Instant::now() < deadline, "the server never wrote its pid");
        std::thread::sleep(Duration::from_millis(20));
    };
    println!("{SERVER}{pid}");
    loop {
        std::thread::sleep(Duration::from_secs(60));
    }
}

#[test]
fn killed_host_leaves_no_stdio_server() {
    if ParentDeathSignal::detect().setpriv().is_none() {
        eprintln!("skipped: no setpriv on PATH (servers are then started directly)");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let mut host = Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", "host_death::host_connects_until_killed", "--nocapture"])
        .env(HOST_DIR, dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .expect("host started");
    let stdout = host.stdout.take().expect("stdout piped");
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(pid) = line.strip_prefix(SERVER).and_then(|pid| pid.parse::<i32>().ok()) {
                let _ = sender.send(pid);
            }
        }
    });
    let Ok(server) = receiver.recv_timeout(Duration::from_secs(60)) else {
        let _ = host.kill();
        panic!("the host printed no server pid: {:?}", host.wait());
    };
    assert!(!gone(server));

    host.kill().expect("SIGKILL"); // no Drop kills the server's group
    let _ = host.wait();
    let killed = Instant::now();
    while !gone(server) && killed.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let server_gone = gone(server);
    // Clean up either way (the server leads its own process group).
    let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(server), nix::sys::signal::Signal::SIGKILL);
    assert!(
        server_gone,
        "the server {server} still runs 10 s after its host was killed"
    );
}
