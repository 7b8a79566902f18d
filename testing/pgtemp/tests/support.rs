//! What the tests share: skipping without PostgreSQL, running `psql`, looking at processes.

use std::process::Command;

use patchbay_pgtemp::PgServer;

/// Whether the test can run: false (after a note) when PostgreSQL is not installed, a panic
/// instead when `CI=true`.
pub(crate) fn postgres_installed() -> bool {
    if patchbay_pgtemp::available() {
        return true;
    }
    assert_ne!(
        std::env::var("CI").as_deref(),
        Ok("true"),
        "PostgreSQL binaries not found: CI must install them (apt-get install postgresql)"
    );
    eprintln!("note: PostgreSQL binaries not found (apt-get install postgresql); test skipped");
    false
}

/// `psql URL -c SQL`, unaligned and tuples only: the output, trimmed, or a panic.
pub(crate) fn psql(server: &PgServer, url: &str, sql: &str) -> String {
    let output = Command::new(server.bin_dir().join("psql"))
        .args([url, "-X", "-tA", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "psql {url} -c {sql:?} failed: {stderr}");
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// Whether process `pid` exists and is not a zombie (an orphan nobody reaped is dead).
pub(crate) fn running(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next());
    !matches!(state, Some('Z' | 'X') | None)
}

/// The running processes whose parent is `parent`.
pub(crate) fn children(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // `pid (comm) state ppid ...`
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1));
            ppid == Some(parent.to_string().as_str()) && running(pid)
        })
        .collect()
}
