//! `patchbay-orchestrator`: `serve` (MCP endpoint and JSON API on loopback), `mcp` (MCP over
//! stdio) or `worker` (runs jobs of a shared PostgreSQL store, serves nothing). Runs until
//! Ctrl-C or SIGTERM (`mcp`: or until stdin closes), then cancels the runs in progress, marks
//! them cancelled and exits.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use patchbay_orchestrator::blueprint::Blueprints;
use patchbay_orchestrator::http::{HttpOptions, serve, serve_http, serve_stdio};
use patchbay_orchestrator::store::{SqliteStore, Store};
use patchbay_orchestrator::{DEFAULT_WORKERS, Orchestrator};

const USAGE: &str = "\
usage: patchbay-orchestrator <serve|mcp|worker> [options]

  serve   serve the MCP endpoint, the JSON API and the web view on 127.0.0.1 until Ctrl-C or
          SIGTERM; prints the MCP URL, the API URL, the bearer token, the data folder (or the
          database) and a one-time login link for the web view
  mcp     serve the MCP tools over stdin/stdout (for `claude mcp add ... -- patchbay-orchestrator mcp`);
          the caller's session name is AGENT_SESSION_NAME
  worker  only run jobs of a shared store (--database postgres://...): no MCP, no API;
          start any number, on any machine, beside one or more `serve`

options:
  --database URL       sqlite://DIR (a data folder holding orchestrator.db; the default) or
                       postgres://USER:PASSWORD@HOST:PORT/DATABASE (shared by several processes)
  --data DIR           the same as --database sqlite://DIR
                       (default: $XDG_DATA_HOME/patchbay-orchestrator or ~/.local/share/patchbay-orchestrator)
  --blueprints DIR     folder of blueprint *.toml files (default: only the built-in `default`)
  --workers N          runs at once in this process (default 4; `serve --workers 0` leaves runs
                       to worker processes)
  --lease SECONDS      how long a claimed job stays this process's without renewal; others
                       settle a dead process's jobs this long after its last renewal (default 30)
  --port N             port of 127.0.0.1 (default: any free port)
  --project-dir DIR    working folder of sessions started without one (default: current folder)
  --projects-root DIR  every session's folder must be inside it; a project_dir outside it (after
                       resolving `..` and symlinks) is refused (default: the folder serve started
                       in, or --project-dir when that is outside it)
  --sync-wait SECONDS  longest wait of a sync start or resume (default 600)
  --max-depth N        the most sessions in a chain of parents, the root included (default 8)
  --max-children N     the most children one session may start (default 100)
  --max-running-children N
                       the most children of one session pending or running at once (default 8)
  --run-timeout SECONDS
                       the longest one run may take; it is then cancelled (default 7200)
  --max-tree-tokens N  the most tokens a session tree (a root session and everything it started)
                       may spend; past it starts and resumes in the tree are refused and its
                       runs cancelled (default: no budget); a blueprint's [limits] override
                       these five
  --max-request-bytes N  the largest request over MCP or the JSON API, so the largest prompt
                       (default 1048576); MCP answers a larger one with a JSON-RPC error

environment:
  PATCHBAY_ORCHESTRATOR_TOKEN  the bearer token (default: a fresh random one)
  PATCHBAY_LOG                 log level on stderr: error, warn, info (default), debug, trace
";

#[derive(Debug, PartialEq)]
enum Mode {
    Serve,
    Mcp,
    Worker,
}

#[derive(Debug)]
struct Args {
    mode: Mode,
    blueprints: Option<PathBuf>,
    data: Option<PathBuf>,
    database: Option<String>,
    lease: Duration,
    workers: usize,
    port: u16,
    project_dir: Option<PathBuf>,
    projects_root: Option<PathBuf>,
    sync_wait: Duration,
    max_request_bytes: usize,
    limits: patchbay_orchestrator::limits::Limits,
}

fn parse_args() -> Result<Args, lexopt::Error> {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_env();
    let mut mode = None;
    let mut args = Args {
        mode: Mode::Serve,
        blueprints: None,
        data: None,
        database: None,
        lease: patchbay_orchestrator::store::DEFAULT_LEASE,
        workers: DEFAULT_WORKERS,
        port: 0,
        project_dir: None,
        projects_root: None,
        sync_wait: patchbay_orchestrator::DEFAULT_SYNC_WAIT,
        max_request_bytes: patchbay_orchestrator::DEFAULT_MAX_REQUEST_BYTES,
        limits: patchbay_orchestrator::limits::Limits::default(),
    };
    while let Some(arg) = parser.next()? {
        match arg {
            Value(value) if mode.is_none() => {
                mode = Some(match value.to_str() {
                    Some("serve") => Mode::Serve,
                    Some("mcp") => Mode::Mcp,
                    Some("worker") => Mode::Worker,
                    _ => return Err(format!("unknown command {value:?}: use serve, mcp or worker").into()),
                });
            }
            Long("blueprints") => args.blueprints = Some(parser.value()?.into()),
            Long("data") => args.data = Some(parser.value()?.into()),
            Long("database") => {
                args.database = Some(parser.value()?.into_string().map_err(|_| "--database must be UTF-8")?)
            }
            Long("lease") => args.lease = Duration::from_secs(number(&mut parser, "--lease")?),
            Long("workers") => args.workers = number(&mut parser, "--workers")?,
            Long("port") => args.port = number(&mut parser, "--port")?,
            Long("project-dir") => args.project_dir = Some(parser.value()?.into()),
            Long("projects-root") => args.projects_root = Some(parser.value()?.into()),
            Long("max-depth") => args.limits.max_depth = number(&mut parser, "--max-depth")?,
            Long("max-children") => args.limits.max_children = number(&mut parser, "--max-children")?,
            Long("max-running-children") => {
                args.limits.max_running_children = number(&mut parser, "--max-running-children")?
            }
            Long("run-timeout") => args.limits.run_timeout = Duration::from_secs(number(&mut parser, "--run-timeout")?),
            Long("max-tree-tokens") => args.limits.max_tree_tokens = Some(number(&mut parser, "--max-tree-tokens")?),
            Long("max-request-bytes") => args.max_request_bytes = number(&mut parser, "--max-request-bytes")?,
            Long("sync-wait") => args.sync_wait = Duration::from_secs(number(&mut parser, "--sync-wait")?),
            Short('h') | Long("help") => {
                print!("{USAGE}");
                std::process::exit(0);
            }
            _ => return Err(arg.unexpected()),
        }
    }
    args.mode = mode.ok_or("missing command: serve, mcp or worker")?;
    if args.data.is_some() && args.database.is_some() {
        return Err("give --data or --database, not both".into());
    }
    Ok(args)
}

/// The value of `option` as a whole number; an error naming the option and the value.
fn number<T>(parser: &mut lexopt::Parser, option: &str) -> Result<T, lexopt::Error>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    let value = parser.value()?;
    let text = value.to_string_lossy();
    text.parse()
        .map_err(|e| format!("{option} takes a whole number, not {text:?} ({e})").into())
}

fn default_data_dir() -> PathBuf {
    let base = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("patchbay-orchestrator")
}

fn init_logging() {
    let level = match std::env::var("PATCHBAY_LOG")
        .as_deref()
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Ok("error") => tracing::Level::ERROR,
        Ok("warn") => tracing::Level::WARN,
        Ok("debug") => tracing::Level::DEBUG,
        Ok("trace") => tracing::Level::TRACE,
        _ => tracing::Level::INFO,
    };
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    // rmcp logs every stateless request at info: keep its warnings only.
    let filter = tracing_subscriber::filter::Targets::new()
        .with_default(level)
        .with_target("rmcp", tracing::Level::WARN.min(level));
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false);
    tracing_subscriber::registry()
        .with(tracing_subscriber::Layer::with_filter(layer, filter))
        .init();
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(error) => {
            eprintln!("patchbay-orchestrator: {error}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    init_logging();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("patchbay-orchestrator: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(run(args));
    // Tasks still waiting on a store that does not answer must not hold the exit.
    runtime.shutdown_timeout(Duration::from_secs(1));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("patchbay-orchestrator: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let blueprints = match &args.blueprints {
        Some(dir) => Blueprints::load_dir(dir)?,
        None => Blueprints::new(),
    };
    let database = match &args.database {
        Some(url) => url.clone(),
        None => format!(
            "sqlite://{}",
            args.data.clone().unwrap_or_else(default_data_dir).display()
        ),
    };
    // SQLite: one process owns the data folder (its lock); PostgreSQL is shared.
    let mut _lock = None;
    let store: Arc<dyn Store> = match database.strip_prefix("sqlite://") {
        Some(dir) => {
            let data = PathBuf::from(dir);
            std::fs::create_dir_all(&data)
                .map_err(|e| format!("cannot create the data folder {}: {e}", data.display()))?;
            _lock = Some(patchbay_orchestrator::lock_data_dir(&data)?);
            Arc::new(SqliteStore::open(&data).await?)
        }
        None => patchbay_orchestrator::store::open(&database).await?,
    };
    if args.mode == Mode::Worker && !store.is_shared() {
        return Err("`worker` needs a shared store: --database postgres://...".into());
    }
    if args.workers == 0 && !store.is_shared() {
        return Err(
            "--workers 0 leaves the runs to `worker` processes, which need a shared store: --database postgres://..."
                .into(),
        );
    }
    let mut builder = Orchestrator::builder(store, blueprints)
        .workers(args.workers)
        .lease(args.lease)
        .sync_wait_limit(args.sync_wait)
        .max_request_bytes(args.max_request_bytes)
        .limits(args.limits);
    if let Some(dir) = &args.project_dir {
        builder = builder.project_dir(dir);
    }
    builder = builder.projects_root(projects_root(&args)?);
    let orchestrator = builder.start().await?;
    if args.mode == Mode::Worker {
        return work(&orchestrator, &args).await;
    }
    let options = HttpOptions {
        port: args.port,
        token: std::env::var("PATCHBAY_ORCHESTRATOR_TOKEN")
            .ok()
            .filter(|t| !t.is_empty()),
        ..HttpOptions::default()
    };
    let serving = serve(&orchestrator, options).await?;
    let server = serving.server;
    match args.mode {
        Mode::Serve => {
            let api = server.url().trim_end_matches("/mcp").to_owned();
            println!("mcp: {}", server.url());
            println!("api: {api}");
            println!("token: {}", server.token());
            match database.strip_prefix("sqlite://") {
                Some(dir) => println!("data: {dir}"),
                None => println!("database: {}", redact_password(&database)),
            }
            // A one-time link: opening it logs the browser in to the web view.
            println!("web: {}", serving.web.login_url());
            tracing::info!(mcp = %server.url(), api = %api, workers = args.workers, "serving; Ctrl-C or SIGTERM stops");
            stop_signal().await;
        }
        Mode::Mcp | Mode::Worker => {
            tokio::select! {
                served = serve_stdio(&orchestrator) => served?,
                () = stop_signal() => {}
            }
        }
    }
    tracing::info!("stopping: cancelling runs in progress");
    orchestrator.shutdown().await;
    server.shutdown().await;
    Ok(())
}

/// `--projects-root`, else the current folder, else (when `--project-dir` is outside the
/// current folder) `--project-dir`.
fn projects_root(args: &Args) -> Result<PathBuf, Box<dyn std::error::Error>> {
    if let Some(root) = &args.projects_root {
        return Ok(root.clone());
    }
    let cwd = std::env::current_dir()
        .and_then(std::fs::canonicalize)
        .map_err(|e| format!("no current folder: {e}"))?;
    let inside = |dir: &PathBuf| std::fs::canonicalize(dir).is_ok_and(|dir| dir.starts_with(&cwd));
    Ok(match &args.project_dir {
        Some(dir) if !inside(dir) => dir.clone(),
        _ => cwd,
    })
}

/// `worker`: run jobs until Ctrl-C or SIGTERM. Runs of blueprints with `orchestrator_tools`
/// reach this process's own MCP endpoint, served on loopback: its bearer token is fresh and
/// never printed nor handed out, and each run gets a scoped token of its own session, issued
/// and checked by this process (see `patchbay_orchestrator::scope`).
async fn work(orchestrator: &Orchestrator, args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let needs_endpoint = orchestrator.blueprints().active().any(|b| b.orchestrator_tools);
    let server = match needs_endpoint {
        true => Some(serve_http(orchestrator, HttpOptions::default()).await?),
        false => None,
    };
    println!("worker: {}", orchestrator.worker_id());
    tracing::info!(worker = %orchestrator.worker_id(), workers = args.workers, "running jobs; Ctrl-C or SIGTERM stops");
    stop_signal().await;
    tracing::info!("stopping: cancelling runs in progress");
    orchestrator.shutdown().await;
    if let Some(server) = server {
        server.shutdown().await;
    }
    Ok(())
}

/// The URL with its password replaced by `***` (printed at start; the password is a secret).
fn redact_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((user_info, host)) => match user_info.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}{path}"),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

/// Ctrl-C or SIGTERM.
async fn stop_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(error) => {
            tracing::warn!(%error, "cannot listen for SIGTERM; Ctrl-C still stops");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
