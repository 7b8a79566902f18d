//! The queue across processes, and listing many sessions, measured (a bench binary, not a
//! timed test):
//!
//! 1. **Jobs per second on PostgreSQL** with 1, 2 and 4 `patchbay-orchestrator worker`
//!    processes (`--workers 4` each) on one throwaway server (`patchbay-pgtemp`: fsync and
//!    synchronous commit off), a fresh database per measurement. The processes start first
//!    and wait idle (their `worker:` line is read); then the bench enqueues N starts of the
//!    built-in `default` blueprint (scripted, answers at once) through [`PgStore`], from 4
//!    tasks at once. The time runs from the first enqueue to the last job's `finished_at`
//!    (stamped by the process that ended it, on this machine's clock); polling `list_jobs`
//!    every 50 ms (from the first job not seen ended) only tells the bench that everything
//!    ended. Beside jobs per second: CPU time per job (whole machine, worker processes, this
//!    process; from `/proc`), notifications one listening process hears per job, and
//!    transactions committed and rolled back per job (`pg_stat_database`). 3 rounds, the
//!    setups interleaved; the median is shown.
//! 2. **The same on SQLite in one process**: the in-process `Orchestrator` with 4 workers,
//!    the jobs enqueued through `Orchestrator::start_session` (async; a job written to SQLite
//!    behind the orchestrator's back would wake no worker), timed the same way.
//! 3. **Listing 10,000 sessions** page by page with `Store::find_sessions` (keyset paging, the
//!    total counted on each page, as the tool and the API list),
//!    pages of 100 and of 1000, on both backends: the whole listing and its first and last
//!    page (median of 5 listings after one warm-up); then again with a 4 KB conversation on
//!    every session, since a listed session carries its whole conversation.
//!
//! Run: `cargo bench -p patchbay-orchestrator --bench queue` (`-- --quick` for a smoke run).
//! Prints tables and ratios and writes `target/bench-queue.json`. Without PostgreSQL's
//! binaries only the SQLite parts run. Numbers are from one run on one machine; compare the
//! ratios.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use patchbay_orchestrator::blueprint::Blueprints;
use patchbay_orchestrator::store::{
    Job, JobKind, JobStatus, NewJob, NewSession, Page, PgStore, SessionUpdate, SqliteStore, Store, UnixMillis,
    now_millis,
};
use patchbay_orchestrator::{Orchestrator, StartRequest};
use patchbay_pgtemp::PgServer;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The orchestrator binary, built by cargo for this bench.
const BIN: &str = env!("CARGO_BIN_EXE_patchbay-orchestrator");
/// Worker processes on PostgreSQL.
const PROCESSES: [usize; 3] = [1, 2, 4];
/// Runs at once in each process (`--workers`).
const WORKERS: usize = 4;
/// Tasks enqueuing (or inserting) at once.
const WRITERS: usize = 4;
/// How often the bench looks whether every job ended.
const POLL: Duration = Duration::from_millis(50);
/// Measurements of each queue setup, interleaved (the table shows the median).
const QUEUE_ROUNDS: usize = 3;
/// Linux counts CPU time in ticks of 1/100 s (`USER_HZ`) in `/proc`.
const TICKS_PER_SECOND: f64 = 100.0;
/// Timed listings per page size (after one warm-up).
const LISTINGS: usize = 5;
const PAGE_SIZES: [u32; 2] = [100, 1000];
/// The conversation stored on every session in the second listing.
const CONVERSATION_BYTES: usize = 4096;

struct Sizes {
    jobs: usize,
    rounds: usize,
    sessions: usize,
}

#[derive(Debug, Serialize)]
struct QueueRun {
    backend: &'static str,
    processes: usize,
    workers_per_process: usize,
    jobs: usize,
    round: usize,
    seconds: f64,
    jobs_per_second: f64,
    enqueue_seconds: f64,
    /// Busy share of all cores from the first enqueue until every job ended.
    cpu_busy: f64,
    /// CPU time of the whole machine per job (every process: workers, PostgreSQL, the bench).
    cpu_ms_per_job: f64,
    /// CPU time of the processes running the jobs per job (SQLite: the bench process itself).
    worker_cpu_ms_per_job: f64,
    /// CPU time of the bench process per job (enqueuing and polling; SQLite: also the runs).
    bench_cpu_ms_per_job: f64,
    /// Jobs each process ran, most first.
    jobs_per_process: Vec<usize>,
    /// Notifications one listening process received per job (PostgreSQL).
    notifications_per_job: Option<f64>,
    /// Rolled-back transactions per job: claims that found nothing or lost a race (PostgreSQL).
    rollbacks_per_job: Option<f64>,
    /// Committed transactions per job, every process's (PostgreSQL).
    commits_per_job: Option<f64>,
}

#[derive(Debug, Serialize)]
struct ListingRun {
    backend: &'static str,
    sessions: usize,
    conversation_bytes: usize,
    page_size: u32,
    /// Queries of one listing, the empty one that ends it included.
    queries: usize,
    total_ms: f64,
    first_page_ms: f64,
    last_page_ms: f64,
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let sizes = match quick {
        true => Sizes {
            jobs: 100,
            rounds: 1,
            sessions: 1000,
        },
        false => Sizes {
            jobs: 1000,
            rounds: QUEUE_ROUNDS,
            sessions: 10_000,
        },
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let began = Instant::now();
    let (postgres, queue, listing) = runtime.block_on(measure(&sizes));
    let seconds = began.elapsed().as_secs_f64();
    print_queue(&queue);
    print_listing(&listing);
    let ratios = ratios(&queue, &listing);
    for (name, value) in &ratios {
        println!("ratio {name}: {value:.2}");
    }
    println!("{}; whole bench {seconds:.0} s", machine_line());
    let report = json!({
        "command": "cargo bench -p patchbay-orchestrator --bench queue",
        "quick": quick,
        "machine": machine(),
        "postgres": postgres,
        "queue_median": medians(&queue)
            .iter()
            .map(|(r, slowest, fastest)| json!({
                "backend": r.backend,
                "processes": r.processes,
                "jobs_per_second": r.jobs_per_second,
                "slowest": slowest,
                "fastest": fastest,
            }))
            .collect::<Vec<_>>(),
        "queue": queue,
        "listing": listing,
        "ratios": ratios,
        "bench_seconds": seconds,
    });
    let path = target_dir().join("bench-queue.json");
    let text = serde_json::to_string_pretty(&report).expect("the report encodes");
    match std::fs::write(&path, text + "\n") {
        Ok(()) => println!("wrote {}", path.display()),
        Err(error) => println!("could not write {}: {error}", path.display()),
    }
}

async fn measure(sizes: &Sizes) -> (bool, Vec<QueueRun>, Vec<ListingRun>) {
    let server = postgres().await;
    let mut queue = Vec::new();
    for round in 0..sizes.rounds {
        let mut run = sqlite_queue(sizes.jobs).await;
        run.round = round;
        queue.push(run);
        if let Some(server) = server {
            for processes in PROCESSES {
                let mut run = postgres_queue(server, processes, sizes.jobs).await;
                run.round = round;
                queue.push(run);
            }
        }
    }
    let dir = tempfile::tempdir().expect("a temp dir");
    let sqlite = SqliteStore::open(dir.path()).await.expect("the store opens");
    let mut listing = listings(Arc::new(sqlite), "SQLite", sizes.sessions).await;
    if let Some(server) = server {
        let store = PgStore::connect(&database(server, "listing").await)
            .await
            .expect("connects");
        listing.extend(listings(Arc::new(store), "PostgreSQL", sizes.sessions).await);
    }
    (server.is_some(), queue, listing)
}

/// The shared throwaway server, or `None` (said why) when PostgreSQL cannot run here.
async fn postgres() -> Option<&'static PgServer> {
    if !patchbay_pgtemp::available() {
        println!("PostgreSQL's binaries are missing (apt-get install postgresql): only the SQLite parts run.");
        return None;
    }
    match tokio::task::spawn_blocking(PgServer::shared).await.expect("joins") {
        Ok(server) => Some(server),
        Err(error) => {
            println!("PostgreSQL did not start ({error}): only the SQLite parts run.");
            None
        }
    }
}

async fn database(server: &'static PgServer, prefix: &'static str) -> String {
    tokio::task::spawn_blocking(move || server.create_database(prefix))
        .await
        .expect("joins")
        .expect("a fresh database")
}

/// Runs `f(0..n)` on `WRITERS` tasks at once.
async fn in_parallel<F, Fut>(n: usize, f: F)
where
    F: Fn(usize) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let tasks: Vec<_> = (0..WRITERS)
        .map(|first| {
            let f = f.clone();
            tokio::spawn(async move {
                for i in (first..n).step_by(WRITERS) {
                    f(i).await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("a writing task panicked");
    }
}

fn session_name(i: usize) -> String {
    format!("s{i:05}")
}

fn new_session(i: usize, project_dir: &str) -> NewSession {
    NewSession {
        session_name: session_name(i),
        agent_name: "default".into(),
        project_dir: project_dir.to_owned(),
        parent_session_name: None,
    }
}

fn new_job(i: usize, project_dir: &str) -> NewJob {
    NewJob {
        kind: JobKind::StartSession,
        session_name: session_name(i),
        agent_name: "default".into(),
        prompt: "answer at once".into(),
        project_dir: project_dir.to_owned(),
        parent_session_name: None,
        callback: false,
    }
}

async fn all_jobs(store: &dyn Store) -> Vec<Job> {
    let mut all = Vec::new();
    let mut page = Page::first(1000);
    loop {
        let batch = store.list_jobs(None, page).await.expect("lists jobs");
        let done = batch.len() < page.limit as usize;
        all.extend(batch);
        if done {
            return all;
        }
        page.offset += u64::from(page.limit);
    }
}

/// Polls until all `n` jobs ended; returns them. A poll reads from the first job not seen
/// ended yet (jobs end about in queue order), so it reads a page or so, not all `n`.
async fn wait_all(store: &dyn Store, n: usize) -> Vec<Job> {
    let began = Instant::now();
    let mut ended = 0;
    while ended < n {
        let page = Page {
            limit: 100,
            offset: ended as u64,
        };
        let batch = store.list_jobs(None, page).await.expect("lists jobs");
        let done = batch.iter().take_while(|j| j.status.is_terminal()).count();
        ended += done;
        if batch.is_empty() || done < batch.len() {
            assert!(
                began.elapsed() < Duration::from_secs(600),
                "{} of {n} jobs did not end",
                n - ended
            );
            tokio::time::sleep(POLL).await;
        }
    }
    all_jobs(store).await
}

/// CPU time counters over a measurement.
struct Cpu {
    /// Busy and total ticks of all cores together.
    machine: (u64, u64),
    /// Ticks of the processes running the jobs.
    workers: u64,
    /// Ticks of this process (enqueuing and polling; on SQLite also running the jobs).
    bench: u64,
}

impl Cpu {
    fn read(pids: &[u32]) -> Cpu {
        Cpu {
            machine: machine_ticks(),
            workers: pids.iter().map(|&pid| process_ticks(pid)).sum(),
            bench: process_ticks(std::process::id()),
        }
    }
}

/// Busy and total ticks of all cores (the first line of `/proc/stat`; zeros elsewhere).
fn machine_ticks() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let ticks: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .filter_map(|t| t.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal ...: idle and iowait are not busy.
    let total: u64 = ticks.iter().take(8).sum();
    let idle = ticks.get(3).copied().unwrap_or(0) + ticks.get(4).copied().unwrap_or(0);
    (total - idle, total)
}

/// User and system ticks a process used so far (`/proc/PID/stat`, fields 14 and 15).
fn process_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    field(14) + field(15)
}

/// Checks every job completed and times them from `start` to the last `finished_at`.
fn queue_run(
    backend: &'static str,
    processes: usize,
    start: UnixMillis,
    enqueue: Duration,
    cpu: (Cpu, Cpu),
    jobs: &[Job],
) -> QueueRun {
    if let Some(job) = jobs.iter().find(|j| j.status != JobStatus::Completed) {
        panic!("job {} ended {}: {:?}", job.job_id, job.status, job.error);
    }
    let end = jobs.iter().filter_map(|j| j.finished_at).max().unwrap_or(start);
    let seconds = (end - start).max(1) as f64 / 1000.0;
    let mut by_process: BTreeMap<&str, usize> = BTreeMap::new();
    for job in jobs {
        *by_process.entry(job.claimed_by.as_deref().unwrap_or("?")).or_default() += 1;
    }
    let mut jobs_per_process: Vec<usize> = by_process.into_values().collect();
    jobs_per_process.sort_unstable_by(|a, b| b.cmp(a));
    let (before, after) = cpu;
    let busy = after.machine.0.saturating_sub(before.machine.0) as f64;
    let total = after.machine.1.saturating_sub(before.machine.1).max(1) as f64;
    let ms_per_job = |ticks: f64| ticks / TICKS_PER_SECOND * 1000.0 / jobs.len() as f64;
    QueueRun {
        backend,
        processes,
        workers_per_process: WORKERS,
        jobs: jobs.len(),
        round: 0,
        seconds,
        jobs_per_second: jobs.len() as f64 / seconds,
        enqueue_seconds: enqueue.as_secs_f64(),
        cpu_busy: busy / total,
        cpu_ms_per_job: ms_per_job(busy),
        worker_cpu_ms_per_job: ms_per_job(after.workers.saturating_sub(before.workers) as f64),
        bench_cpu_ms_per_job: ms_per_job(after.bench.saturating_sub(before.bench) as f64),
        jobs_per_process,
        notifications_per_job: None,
        rollbacks_per_job: None,
        commits_per_job: None,
    }
}

async fn sqlite_queue(n: usize) -> QueueRun {
    let dir = tempfile::tempdir().expect("a temp dir");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path()).await.expect("the store opens"));
    let orchestrator = Orchestrator::builder(store.clone(), Blueprints::new())
        .workers(WORKERS)
        .project_dir(dir.path())
        .start()
        .await
        .expect("starts");
    let me = [std::process::id()];
    let cpu_before = Cpu::read(&me);
    let start = now_millis();
    let began = Instant::now();
    let queuer = orchestrator.clone();
    in_parallel(n, move |i| {
        let orchestrator = queuer.clone();
        async move {
            let request = StartRequest {
                session_name: session_name(i),
                prompt: "answer at once".into(),
                async_mode: true,
                ..StartRequest::default()
            };
            orchestrator.start_session(request).await.expect("queued");
        }
    })
    .await;
    let enqueue = began.elapsed();
    let jobs = wait_all(store.as_ref(), n).await;
    let cpu = (cpu_before, Cpu::read(&me));
    orchestrator.shutdown().await;
    queue_run("SQLite (in-process)", 1, start, enqueue, cpu, &jobs)
}

struct WorkerProcess {
    child: Child,
    log: PathBuf,
}

/// Starts `patchbay-orchestrator worker` and waits for its `worker: <id>` line.
async fn start_worker(url: &str, dir: &Path, n: usize) -> WorkerProcess {
    let log = dir.join(format!("worker-{n}.log"));
    let stderr = std::fs::File::create(&log).expect("a log file");
    let mut child = Command::new(BIN)
        .args([
            "worker",
            "--database",
            url,
            "--workers",
            &WORKERS.to_string(),
            "--project-dir",
        ])
        .arg(dir)
        .env("PATCHBAY_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {BIN}: {e}"));
    let mut lines = BufReader::new(child.stdout.take().expect("stdout is piped")).lines();
    let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .ok()
        .and_then(|line| line.ok().flatten())
        .unwrap_or_default();
    assert!(
        line.starts_with("worker: "),
        "the worker did not start ({line:?}); stderr:\n{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    // Keep stdout open: a closed pipe would fail its later prints.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    WorkerProcess { child, log }
}

/// SIGTERM, then waits for a clean exit.
async fn stop_worker(mut worker: WorkerProcess) {
    let pid = worker
        .child
        .id()
        .and_then(|id| rustix::process::Pid::from_raw(id as i32));
    if let Some(pid) = pid {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    }
    let status = tokio::time::timeout(Duration::from_secs(30), worker.child.wait()).await;
    let log = std::fs::read_to_string(&worker.log).unwrap_or_default();
    assert!(
        matches!(status, Ok(Ok(s)) if s.success()),
        "the worker did not stop cleanly: {status:?}\n{log}"
    );
}

/// Transactions committed and rolled back in this database so far (by every connection).
async fn transactions(store: &PgStore) -> (i64, i64) {
    use sqlx::Row as _;
    let row = sqlx::query("SELECT xact_commit, xact_rollback FROM pg_stat_database WHERE datname = current_database()")
        .fetch_one(store.pool())
        .await
        .expect("reads the statistics");
    let count = |column: &str| row.try_get::<i64, _>(column).expect("a count");
    (count("xact_commit"), count("xact_rollback"))
}

async fn postgres_queue(server: &'static PgServer, processes: usize, n: usize) -> QueueRun {
    let url = database(server, "queue").await;
    let store = Arc::new(PgStore::connect(&url).await.expect("connects"));
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut workers = Vec::new();
    for p in 0..processes {
        workers.push(start_worker(&url, dir.path(), p).await);
    }
    let before = transactions(&store).await;
    let heard = Arc::new(AtomicU64::new(0));
    let listener = tokio::spawn(count_changes(store.clone(), heard.clone()));

    let pids: Vec<u32> = workers.iter().filter_map(|w| w.child.id()).collect();
    let cpu_before = Cpu::read(&pids);
    let start = now_millis();
    let began = Instant::now();
    let project = dir.path().to_string_lossy().into_owned();
    let queuer = store.clone();
    in_parallel(n, move |i| {
        let (store, project) = (queuer.clone(), project.clone());
        async move {
            let (session, job) = (new_session(i, &project), new_job(i, &project));
            store.create_session_with_job(session, job).await.expect("queued");
        }
    })
    .await;
    let enqueue = began.elapsed();
    let jobs = wait_all(store.as_ref(), n).await;
    let cpu = (cpu_before, Cpu::read(&pids));
    listener.abort();
    for worker in workers {
        stop_worker(worker).await;
    }
    // A backend reports its counters when its connection closes.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = transactions(&store).await;
    store.close().await;
    let mut run = queue_run("PostgreSQL", processes, start, enqueue, cpu, &jobs);
    run.notifications_per_job = Some(heard.load(Ordering::Relaxed) as f64 / n as f64);
    run.commits_per_job = Some((after.0 - before.0) as f64 / n as f64);
    run.rollbacks_per_job = Some((after.1 - before.1) as f64 / n as f64);
    run
}

/// Counts the notifications this process hears (every process sharing the store hears all).
async fn count_changes(store: Arc<PgStore>, heard: Arc<AtomicU64>) {
    use tokio::sync::broadcast::error::RecvError;
    let Some(mut changes) = store.changes() else {
        return;
    };
    drop(store);
    loop {
        match changes.recv().await {
            Ok(_) => heard.fetch_add(1, Ordering::Relaxed),
            Err(RecvError::Lagged(missed)) => heard.fetch_add(missed, Ordering::Relaxed),
            Err(RecvError::Closed) => return,
        };
    }
}

/// Inserts `n` sessions, times listing them, then again with a conversation on each.
async fn listings(store: Arc<dyn Store>, backend: &'static str, n: usize) -> Vec<ListingRun> {
    let inserter = store.clone();
    in_parallel(n, move |i| {
        let store = inserter.clone();
        async move {
            store.create_session(new_session(i, "/tmp")).await.expect("inserted");
        }
    })
    .await;
    let mut runs = Vec::new();
    for page_size in PAGE_SIZES {
        runs.push(time_listings(store.as_ref(), backend, 0, page_size, n).await);
    }
    let ids: Vec<String> = list_all(store.as_ref(), 1000, n)
        .await
        .0
        .into_iter()
        .map(|s| s.session_id)
        .collect();
    let ids = Arc::new(ids);
    let (updater, conversation) = (store.clone(), Arc::new(conversation()));
    in_parallel(n, move |i| {
        let (store, ids, conversation) = (updater.clone(), ids.clone(), conversation.clone());
        async move {
            let update = SessionUpdate {
                conversation: Some(Value::clone(&conversation)),
                ..SessionUpdate::default()
            };
            store.update_session(&ids[i], update).await.expect("updated");
        }
    })
    .await;
    for page_size in PAGE_SIZES {
        runs.push(time_listings(store.as_ref(), backend, CONVERSATION_BYTES, page_size, n).await);
    }
    runs
}

/// Two messages of pseudo-random words (little to compress), `CONVERSATION_BYTES` in all.
fn conversation() -> Value {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut text = String::with_capacity(CONVERSATION_BYTES);
    while text.len() < CONVERSATION_BYTES / 2 - 64 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let letter = (b'a' + (state % 27) as u8) as char;
        text.push(if letter > 'z' { ' ' } else { letter });
    }
    json!([
        {"role": "user", "content": [{"type": "text", "text": text}]},
        {"role": "assistant", "content": [{"type": "text", "text": text}]},
    ])
}

/// Every session, page by page: the sessions and each query's time.
async fn list_all(
    store: &dyn Store,
    page_size: u32,
    n: usize,
) -> (Vec<patchbay_orchestrator::store::Session>, Vec<Duration>) {
    // Keyset pages, as `list_agent_sessions` and `GET /sessions?after=` list (the total counted
    // on every page, as they count it).
    let mut after: Option<patchbay_orchestrator::store::SessionCursor> = None;
    let (mut all, mut times) = (Vec::with_capacity(n), Vec::new());
    let filter = patchbay_orchestrator::store::SessionFilter::default();
    loop {
        let began = Instant::now();
        let (batch, _total) = store
            .find_sessions(&filter, after.as_ref(), page_size)
            .await
            .expect("lists sessions");
        times.push(began.elapsed());
        let done = batch.len() < page_size as usize;
        after = batch.last().map(patchbay_orchestrator::store::SessionCursor::after);
        all.extend(batch);
        if done {
            assert_eq!(all.len(), n, "listed every session once");
            return (all, times);
        }
    }
}

fn median(mut values: Vec<Duration>) -> f64 {
    values.sort();
    values[values.len() / 2].as_secs_f64() * 1000.0
}

async fn time_listings(
    store: &dyn Store,
    backend: &'static str,
    conversation_bytes: usize,
    page_size: u32,
    n: usize,
) -> ListingRun {
    let (mut totals, mut firsts, mut lasts, mut queries) = (Vec::new(), Vec::new(), Vec::new(), 0);
    // The last page with sessions (an empty query ends a listing whose pages are all full).
    let last = n.div_ceil(page_size as usize).max(1) - 1;
    for round in 0..=LISTINGS {
        let began = Instant::now();
        let (_, times) = list_all(store, page_size, n).await;
        if round == 0 {
            continue;
        }
        totals.push(began.elapsed());
        firsts.push(times[0]);
        lasts.push(times[last]);
        queries = times.len();
    }
    ListingRun {
        backend,
        sessions: n,
        conversation_bytes,
        page_size,
        queries,
        total_ms: median(totals),
        first_page_ms: median(firsts),
        last_page_ms: median(lasts),
    }
}

/// The median round of each setup (by jobs per second), with the slowest and fastest rates.
fn medians(runs: &[QueueRun]) -> Vec<(&QueueRun, f64, f64)> {
    let mut setups: Vec<(&str, usize)> = runs.iter().map(|r| (r.backend, r.processes)).collect();
    setups.sort_by_key(|&(backend, processes)| (backend.starts_with("PostgreSQL"), processes));
    setups.dedup();
    setups
        .into_iter()
        .map(|(backend, processes)| {
            let mut rounds: Vec<&QueueRun> = runs
                .iter()
                .filter(|r| r.backend == backend && r.processes == processes)
                .collect();
            rounds.sort_by(|a, b| a.jobs_per_second.total_cmp(&b.jobs_per_second));
            let (slowest, fastest) = (rounds[0].jobs_per_second, rounds[rounds.len() - 1].jobs_per_second);
            (rounds[rounds.len() / 2], slowest, fastest)
        })
        .collect()
}

/// One table line: the first cell left-aligned in `widths[0]`, the others right-aligned.
fn line(widths: &[usize], cells: &[String]) -> String {
    let mut out = String::new();
    for (i, (width, cell)) in widths.iter().zip(cells).enumerate() {
        match i {
            0 => out.push_str(&format!("{cell:<width$}")),
            _ => out.push_str(&format!(" {cell:>width$}")),
        }
    }
    out
}

fn print_queue(runs: &[QueueRun]) {
    let jobs = runs.first().map_or(0, |r| r.jobs);
    let rounds = runs.iter().map(|r| r.round + 1).max().unwrap_or(0);
    println!(
        "\nqueue: {jobs} jobs of the built-in `default` blueprint (scripted, answers at once), \
         {WORKERS} workers per process; median of {rounds} rounds"
    );
    let widths = [19, 5, 7, 6, 9, 7, 5, 6, 7, 6, 6, 6, 7, 9, 15];
    let header = |cells: [&str; 15]| line(&widths, &cells.map(str::to_owned));
    println!(
        "{}",
        header([
            "backend",
            "procs",
            "seconds",
            "jobs/s",
            "range",
            "enqueue",
            "busy",
            "cpu",
            "workers",
            "bench",
            "rest",
            "notif.",
            "commits",
            "rollbacks",
            "jobs per"
        ])
    );
    println!(
        "{}",
        header([
            "", "", "", "", "jobs/s", "s", "cores", "ms/job", "ms/job", "ms/job", "ms/job", "/job", "/job", "/job",
            "process"
        ])
    );
    let two = |v: f64| format!("{v:.2}");
    let optional = |v: Option<f64>| v.map_or("-".to_owned(), two);
    for (r, slowest, fastest) in medians(runs) {
        let postgres = r.backend.starts_with("PostgreSQL");
        // SQLite: the workers run in this process, so `workers` is `bench`.
        let (bench, rest) = match postgres {
            true => (
                two(r.bench_cpu_ms_per_job),
                r.cpu_ms_per_job - r.worker_cpu_ms_per_job - r.bench_cpu_ms_per_job,
            ),
            false => ("=".to_owned(), r.cpu_ms_per_job - r.bench_cpu_ms_per_job),
        };
        let share: Vec<String> = r.jobs_per_process.iter().map(usize::to_string).collect();
        let cells = [
            r.backend.to_owned(),
            r.processes.to_string(),
            two(r.seconds),
            format!("{:.0}", r.jobs_per_second),
            format!("{slowest:.0}-{fastest:.0}"),
            two(r.enqueue_seconds),
            format!("{:.0}%", r.cpu_busy * 100.0),
            two(r.cpu_ms_per_job),
            two(r.worker_cpu_ms_per_job),
            bench,
            // Ticks are 10 ms: a small remainder can come out below zero.
            two(rest.max(0.0)),
            optional(r.notifications_per_job),
            optional(r.commits_per_job),
            optional(r.rollbacks_per_job),
            share.join("/"),
        ];
        println!("{}", line(&widths, &cells));
    }
    println!(
        "range: slowest-fastest round; busy: share of all cores in use; cpu: CPU time of the whole machine per \
         job, of it: workers (the worker processes; SQLite: this process, which runs them), bench (enqueuing \
         and polling), rest (PostgreSQL's processes and anything else); notif.: notifications one listening \
         process hears per job; commits, rollbacks: transactions per job, all processes together (a rollback: \
         a claim that found nothing or lost a race)"
    );
}

fn print_listing(runs: &[ListingRun]) {
    let sessions = runs.first().map_or(0, |r| r.sessions);
    println!("\nlisting {sessions} sessions page by page (keyset, with the total), median of {LISTINGS} listings");
    println!(
        "{:<12} {:>13} {:>5} {:>8} {:>10} {:>14} {:>13} {:>11}",
        "backend", "conversation", "page", "queries", "total ms", "first page ms", "last page ms", "last/first"
    );
    for r in runs {
        println!(
            "{:<12} {:>11} B {:>5} {:>8} {:>10.1} {:>14.2} {:>13.2} {:>11.1}",
            r.backend,
            r.conversation_bytes,
            r.page_size,
            r.queries,
            r.total_ms,
            r.first_page_ms,
            r.last_page_ms,
            r.last_page_ms / r.first_page_ms
        );
    }
    println!();
}

/// Ratios between measurements of this run.
fn ratios(queue: &[QueueRun], listing: &[ListingRun]) -> BTreeMap<String, f64> {
    let medians = medians(queue);
    let rate = |backend: &str, processes| {
        medians
            .iter()
            .find(|(r, _, _)| r.backend.starts_with(backend) && r.processes == processes)
            .map(|(r, _, _)| r.jobs_per_second)
    };
    let total = |backend: &str, conversation, page| {
        listing
            .iter()
            .find(|r| r.backend == backend && r.conversation_bytes == conversation && r.page_size == page)
            .map(|r| r.total_ms)
    };
    let mut ratios = BTreeMap::new();
    let mut put = |name: String, a: Option<f64>, b: Option<f64>| {
        if let (Some(a), Some(b)) = (a, b) {
            ratios.insert(name, a / b);
        }
    };
    put(
        "jobs/s PostgreSQL 2 processes / 1".into(),
        rate("PostgreSQL", 2),
        rate("PostgreSQL", 1),
    );
    put(
        "jobs/s PostgreSQL 4 processes / 1".into(),
        rate("PostgreSQL", 4),
        rate("PostgreSQL", 1),
    );
    put(
        "jobs/s PostgreSQL 1 process / SQLite".into(),
        rate("PostgreSQL", 1),
        rate("SQLite", 1),
    );
    for page in PAGE_SIZES {
        put(
            format!("listing ms PostgreSQL / SQLite, page {page}"),
            total("PostgreSQL", 0, page),
            total("SQLite", 0, page),
        );
        for backend in ["SQLite", "PostgreSQL"] {
            put(
                format!("listing ms {backend} with / without {CONVERSATION_BYTES} B conversations, page {page}"),
                total(backend, CONVERSATION_BYTES, page),
                total(backend, 0, page),
            );
        }
    }
    ratios
}

fn machine() -> Value {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_owned())
        })
        .unwrap_or_default();
    json!({"cpus": cpus, "cpu_model": model, "os": std::env::consts::OS})
}

fn machine_line() -> String {
    let m = machine();
    format!(
        "machine: {} cores ({}, {})",
        m["cpus"],
        m["cpu_model"].as_str().unwrap_or(""),
        m["os"].as_str().unwrap_or("")
    )
}

/// The `target` folder: three levels above this bench executable (`target/release/deps/queue-*`,
/// wherever `CARGO_TARGET_DIR` puts it).
fn target_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.parent()?.to_path_buf()))
        .unwrap_or_else(|| PathBuf::from("target"))
}
