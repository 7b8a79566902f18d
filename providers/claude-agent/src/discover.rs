//! Where the CLI program is: the explicit path, else the usual places.

use std::path::{Path, PathBuf};

use crate::config::PEERS_ENV;
use crate::error::Error;

/// Find the CLI: the explicit path (an executable file, or an error naming it); without one,
/// `claude` on `PATH`, then `./node_modules/.bin/claude`, then
/// `$PATCHBAY_PEERS/node_modules/.bin/claude`. (`$PATCHBAY_CLAUDE_CLI` is read by
/// [`ClaudeAgentConfig::from_env`](crate::ClaudeAgentConfig::from_env) into the explicit path.)
pub fn find_cli(explicit: Option<&Path>) -> Result<PathBuf, Error> {
    let mut looked = Vec::new();
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(path) = explicit {
        candidates.push(path.to_path_buf());
    } else {
        if let Some(paths) = std::env::var_os("PATH") {
            candidates.extend(std::env::split_paths(&paths).map(|dir| dir.join("claude")));
        }
        if let Ok(dir) = std::env::current_dir() {
            candidates.push(dir.join("node_modules/.bin/claude"));
        }
        if let Some(peers) = std::env::var_os(PEERS_ENV).filter(|p| !p.is_empty()) {
            candidates.push(PathBuf::from(peers).join("node_modules/.bin/claude"));
        }
    }
    for candidate in candidates {
        if is_executable(&candidate) {
            return Ok(candidate);
        }
        looked.push(candidate.display().to_string());
    }
    Err(Error::CliNotFound {
        looked: if looked.len() > 6 {
            format!("{} and {} more", looked[..6].join(", "), looked.len() - 6)
        } else {
            looked.join(", ")
        },
    })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
