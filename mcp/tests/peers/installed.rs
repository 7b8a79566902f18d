//! The peers these tests run, installed by `.ci/peers/mcp.sh` under `$PATCHBAY_PEERS/mcp`, and
//! how to run one.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use patchbay_conformance::peers::Peer;

/// The server-everything program.
pub(crate) fn everything_peer() -> Peer {
    Peer::installed(
        "mcp-server-everything",
        "mcp/node_modules/.bin/mcp-server-everything",
        ".ci/peers/mcp.sh",
    )
}

/// Python with the `mcp<2` SDK.
pub(crate) fn python_peer() -> Peer {
    Peer::installed("Python with the mcp SDK", "mcp/venv/bin/python", ".ci/peers/mcp.sh")
}

/// The MCP Inspector CLI.
pub(crate) fn inspector_peer() -> Peer {
    Peer::installed(
        "the MCP Inspector CLI",
        "mcp/node_modules/.bin/mcp-inspector",
        ".ci/peers/mcp.sh",
    )
}

/// Tests that start Node or Python peers take one of these, so a 2-core machine does not
/// start a dozen interpreters at once and push honest connects past their timeouts.
static HEAVY: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(3);

pub(crate) type Heavy = tokio::sync::SemaphorePermit<'static>;

/// A peer's path and a permit to run it (the trial has checked that it is installed).
async fn heavy_peer(peer: Peer) -> (PathBuf, Heavy) {
    let permit = HEAVY.acquire().await.expect("never closed");
    (peer.path().to_path_buf(), permit)
}

pub(crate) async fn everything() -> (PathBuf, Heavy) {
    heavy_peer(everything_peer()).await
}

pub(crate) async fn python() -> (PathBuf, Heavy) {
    heavy_peer(python_peer()).await
}

pub(crate) async fn inspector() -> (PathBuf, Heavy) {
    heavy_peer(inspector_peer()).await
}

/// A peer server process run by a test, in its own process group, killed with it on drop.
pub(crate) struct PeerProcess {
    child: tokio::process::Child,
}

impl PeerProcess {
    /// Start `program args` with `env`, then wait until `port` accepts connections.
    pub(crate) async fn start(program: &std::path::Path, args: &[&str], env: &[(&str, String)], port: u16) -> Self {
        let mut command = tokio::process::Command::new(program);
        command
            .args(args)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .kill_on_drop(true);
        let child = command.spawn().expect("peer starts");
        let peer = Self { child };
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(20) {
            if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return peer;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("peer {} did not listen on {port}", program.display());
    }
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        if let Some(pid) = self.child.id() {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// A port that was free a moment ago.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free port")
}
