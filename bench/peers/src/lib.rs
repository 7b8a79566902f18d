//! patchbay beside its peers on the same loopback streams (issue 16): the readers
//! ([`consumers`]), the server that feeds them ([`server`]), the bodies ([`wire`]) and the
//! arithmetic of the tables ([`stats`]). The three benchmarks are the binaries `translate`,
//! `many` and `first_event`; README.md has the commands.

pub mod consumers;
pub mod server;
pub mod stats;
pub mod wire;

/// The machine, for the header of every table: core count and CPU model.
pub fn machine() -> String {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split_once(':'))
                .map(|(_, model)| model.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    format!("{cores} cores, {model}")
}

/// A field of `/proc/self/status` in KiB (`VmRSS`, `VmHWM`).
pub fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
}
