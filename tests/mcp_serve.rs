//! The `mcp-serve` example runs as a server: it stays up with standard input closed (started
//! in the background or by a supervisor) and shuts down cleanly on SIGTERM or Ctrl-C.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use patchbay_conformance::peers::Peer;

/// The example binary, built by `cargo test --features mcp` next to this test's binary.
pub(crate) fn mcp_serve_binary() -> Peer {
    let exe = std::env::current_exe().unwrap_or_default();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap_or(Path::new("."));
    Peer::at(
        "the mcp-serve example",
        profile_dir.join("examples/mcp-serve"),
        "build it with `cargo build --features mcp --example mcp-serve` (`cargo test --all-features` builds it)",
    )
}

/// Start `mcp-serve ARGS...` with stdin at /dev/null and stdout drained (so the server never
/// blocks on a full pipe); returns it and the URL it prints.
pub(crate) fn start_mcp_serve(args: &[&str], stderr: Stdio) -> (Child, String) {
    let mut child = Command::new(mcp_serve_binary().path())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("mcp-serve starts");
    let stdout = child.stdout.take().expect("stdout piped");
    let mut lines = BufReader::new(stdout).lines();
    let url = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("MCP tool server: ").map(str::to_string))
        .expect("the server prints its URL");
    std::thread::spawn(move || lines.for_each(drop));
    (child, url)
}

/// Start the server with its stderr piped; returns it and its `host:port`.
fn start() -> (Child, String) {
    let (child, url) = start_mcp_serve(&[], Stdio::piped());
    let address = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap_or_default()
        .to_string();
    (child, address)
}

/// An HTTP answer from `address` (any status): the server is serving.
fn answers(address: &str) -> bool {
    let Ok(mut stream) = TcpStream::connect(address) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let request = format!("GET /mcp HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.1 ")
}

fn wait_for_exit(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

fn stays_up_then_stops_on(signal: &str) {
    let (mut child, address) = start();
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        matches!(child.try_wait(), Ok(None)),
        "the server exited with its standard input closed"
    );
    assert!(answers(&address), "the server answers HTTP on {address}");

    let sent = Command::new("kill")
        .args([format!("-{signal}"), child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    let status = wait_for_exit(&mut child, Duration::from_secs(10));
    if status.is_none() {
        let _ = child.kill();
    }
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    let status = status.expect("the server stops within 10 s of the signal");
    assert!(status.success(), "a clean shutdown exits 0: {status:?}\n{stderr}");
    assert!(stderr.contains(&format!("SIG{signal}, shutting down")), "{stderr}");
    assert!(!answers(&address), "the port is closed after shutdown");
}

pub(crate) fn mcp_serve_stays_up_without_stdin_and_stops_on_sigterm() {
    stays_up_then_stops_on("TERM");
}

pub(crate) fn mcp_serve_stops_cleanly_on_ctrl_c() {
    stays_up_then_stops_on("INT");
}
