//! What the `replay` command's tests share.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// What `replay --family FAMILY FILE` prints, one JSON value per line, and whether it exited 0.
pub(crate) fn replay(family: &str, file: &Path) -> (bool, Vec<Value>) {
    let output = Command::new(env!("CARGO_BIN_EXE_replay"))
        .arg("--family")
        .arg(family)
        .arg(file)
        .output()
        .expect("replay runs");
    let lines = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON: {line}: {e}")))
        .collect();
    (output.status.success(), lines)
}
