//! Orphans: processes a run started that outlived the orchestrator running it.
//!
//! A run's own processes (a `bash` tool's shell, a claude-agent CLI) are started under
//! `setpriv --pdeathsig=KILL` (see patchbay-core's `kit::ParentDeathSignal`), so a `kill -9` of
//! the orchestrator kills them too. What *they* started (the shell's `sleep`, the CLI's own
//! tools) gets no such signal: it is orphaned and would go on, for an agent still editing
//! files, while its job is marked failed. So every process a run starts carries [`RUN_ENV`]
//! (in the run's `RequestContext` env and its tools' `Workspace` env, inherited by everything
//! they start), and the orchestrator kills the tagged processes of interrupted runs:
//!
//! - **At start-up, before the store marks interrupted jobs failed**
//!   ([`Store::recover_after_crash`]): on a store one process owns (SQLite), every tagged
//!   process whose job is this store's (no run of it can be alive: the data folder's lock);
//!   on a shared store (PostgreSQL), only those whose job is over (its worker died and its
//!   lease was settled, or it ended); then, after recovery, those whose lease recovery settled.
//! - **When leases are settled** ([`Store::expire_leases`], every third of a lease): the
//!   processes of the jobs just settled. The store decides which leases ran out, by the
//!   database's clock, in the transaction that settles them: guessing that set beforehand
//!   with this machine's clock could kill a live run's processes, so on a shared store the
//!   sweep follows the settling in the same step (milliseconds later).
//!
//! # Decisions
//! - **The tag is the job id** (`PATCHBAY_ORCHESTRATOR_RUN=<job id>`), a random UUID minted
//!   by the store, and **the store decides**: a sweep kills only processes whose job its own
//!   store holds, in a state that says the run is not alive. Two orchestrators on one machine
//!   (two data folders, or two tests in one process) never sweep each other's processes: the
//!   other's job ids are not in their store. No separate store id is kept (none to lose or to
//!   copy); a copied SQLite data folder started beside its original is the one case that would
//!   confuse the two.
//! - **Linux only**: processes are found by reading `/proc/<pid>/environ`; what cannot be read
//!   (another user's process, one that just exited) is skipped, and so is this process.
//!   Elsewhere the sweep does nothing (and `setpriv` is missing too: a killed orchestrator's
//!   runs go on there).
//! - **This machine only**: on PostgreSQL a sweep reaches the processes of its own machine; a
//!   dead worker's orphans on another machine wait for a worker started there.
//! - **SIGKILL, to each tagged process**, in rounds until a scan finds no new one (a process
//!   forking while it is swept); a pid reused between the scan and the kill is the narrow race
//!   left. The log says how many processes and runs, never what an environment holds.
//! - A process that clears its environment (or drops the variable) escapes the sweep.
//! - The tag differs per job, and so does a claude-agent launch's keep-alive fingerprint (it
//!   hashes the environment): nothing is lost, since a run builds its own provider and no
//!   kept-alive CLI outlives it.

use std::collections::{BTreeMap, BTreeSet};

use crate::store::Store;

/// The environment variable naming the job whose run started a process, set for every
/// process a run starts.
pub const RUN_ENV: &str = "PATCHBAY_ORCHESTRATOR_RUN";

/// At start-up, before [`Store::recover_after_crash`]: kills the processes left by this
/// store's runs that cannot be alive (see the module docs); returns how many were killed.
pub(crate) async fn sweep_at_start(store: &dyn Store) -> usize {
    let found = scan();
    if found.is_empty() {
        return 0;
    }
    let shared = store.is_shared();
    let mut orphaned = Vec::new();
    for job_id in found.keys() {
        match store.get_job(job_id).await {
            Ok(Some(job)) if !shared || job.status.is_terminal() => orphaned.push(job_id.clone()),
            Ok(_) => {}
            Err(error) => tracing::error!(%error, "cannot read a job to sweep the processes of its run"),
        }
    }
    kill_runs(&orphaned)
}

/// Kills every process tagged with one of `job_ids` (runs the store just settled); returns
/// how many.
pub(crate) fn kill_runs(job_ids: &[String]) -> usize {
    if job_ids.is_empty() {
        return 0;
    }
    let mut killed = BTreeSet::new();
    // A process forking while it is swept leaves a child the first scan missed.
    for _round in 0..4 {
        let mut new = 0;
        let found = scan();
        for pid in job_ids.iter().filter_map(|id| found.get(id)).flatten() {
            if killed.insert(*pid) {
                kill(*pid);
                new += 1;
            }
        }
        if new == 0 {
            break;
        }
    }
    if !killed.is_empty() {
        tracing::warn!(
            processes = killed.len(),
            runs = job_ids.len(),
            "killed processes left running by interrupted runs"
        );
    }
    killed.len()
}

/// The processes carrying [`RUN_ENV`], by job id (this process left out).
#[cfg(target_os = "linux")]
fn scan() -> BTreeMap<String, Vec<i32>> {
    let mut found: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    let me = std::process::id();
    let prefix = format!("{RUN_ENV}=");
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let tag = environ
            .split(|&byte| byte == 0)
            .find_map(|var| var.strip_prefix(prefix.as_bytes()));
        if let (Some(tag), Ok(pid)) = (tag, i32::try_from(pid)) {
            found
                .entry(String::from_utf8_lossy(tag).into_owned())
                .or_default()
                .push(pid);
        }
    }
    found
}

#[cfg(not(target_os = "linux"))]
fn scan() -> BTreeMap<String, Vec<i32>> {
    BTreeMap::new()
}

#[cfg(unix)]
fn kill(pid: i32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
}

#[cfg(not(unix))]
fn kill(_pid: i32) {}
