//! A process killed with SIGKILL leaves no server behind (setpriv's parent-death signal).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use patchbay_pgtemp::PgServer;

use crate::support::{children, postgres_installed, running};

/// Set in the child process: [`holds_a_server_until_killed`] then starts a server.
const HOLD_SERVER: &str = "PATCHBAY_PGTEMP_HOLD_SERVER";
const POSTMASTER: &str = "postmaster pid ";

/// The child's part of [`killed_process_leaves_no_server`]; does nothing on its own.
pub(crate) fn holds_a_server_until_killed() {
    if std::env::var_os(HOLD_SERVER).is_none() {
        return;
    }
    let server = PgServer::shared().unwrap();
    println!("{POSTMASTER}{}", server.pid());
    loop {
        std::thread::sleep(Duration::from_secs(60));
    }
}

pub(crate) fn killed_process_leaves_no_server() {
    if !postgres_installed() {
        return;
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "pdeathsig::holds_a_server_until_killed", "--nocapture"])
        .env(HOLD_SERVER, "1")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(pid) = line.strip_prefix(POSTMASTER) {
                let _ = sender.send(pid.parse::<u32>().unwrap());
            }
        }
    });
    let postmaster = receiver.recv_timeout(Duration::from_secs(60));
    let Ok(postmaster) = postmaster else {
        let _ = child.kill();
        panic!("the child printed no postmaster pid: {:?}", child.wait());
    };
    assert!(running(postmaster));
    let mut processes = children(postmaster);
    assert!(
        !processes.is_empty(),
        "postmaster {postmaster} has no child processes yet"
    );
    processes.push(postmaster);

    child.kill().unwrap(); // SIGKILL: no destructor, no exit handler runs
    child.wait().unwrap();
    let killed = Instant::now();
    while processes.iter().any(|&pid| running(pid)) && killed.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left: Vec<u32> = processes.into_iter().filter(|&pid| running(pid)).collect();
    assert!(left.is_empty(), "still running 10 s after the kill: {left:?}");
    eprintln!("server processes gone {:?} after the kill", killed.elapsed());
}
