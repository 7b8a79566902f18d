//! `patchbay-orchestrator`: `serve` (MCP endpoint and JSON API on loopback) or `mcp` (MCP over
//! stdio). Runs until Ctrl-C or SIGTERM (`mcp`: or until stdin closes), then cancels the runs in
//! progress, marks them cancelled and exits.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use patchbay_orchestrator::blueprint::Blueprints;
use patchbay_orchestrator::http::{HttpOptions, serve_http, serve_stdio};
use patchbay_orchestrator::store::SqliteStore;
use patchbay_orchestrator::{DEFAULT_WORKERS, Orchestrator};

const USAGE: &str = "\
usage: patchbay-orchestrator <serve|mcp> [options]

  serve   serve the MCP endpoint and the JSON API on 127.0.0.1 until Ctrl-C or SIGTERM;
          prints the MCP URL, the API URL and the bearer token
  mcp     serve the MCP tools over stdin/stdout (for `claude mcp add ... -- patchbay-orchestrator mcp`);
          the caller's session name is AGENT_SESSION_NAME

options:
  --blueprints DIR     folder of blueprint *.toml files (default: only the built-in `default`)
  --data DIR           data folder holding orchestrator.db
                       (default: $XDG_DATA_HOME/patchbay-orchestrator or ~/.local/share/patchbay-orchestrator)
  --workers N          runs at once (default 4)
  --port N             port of 127.0.0.1 (default: any free port)
  --project-dir DIR    working folder of sessions started without one (default: current folder)
  --sync-wait SECONDS  longest wait of a sync start or resume (default 600)

environment:
  PATCHBAY_ORCHESTRATOR_TOKEN  the bearer token (default: a fresh random one)
  PATCHBAY_LOG                 log level on stderr: error, warn, info (default), debug, trace
";

#[derive(Debug, PartialEq)]
enum Mode {
    Serve,
    Mcp,
}

#[derive(Debug)]
struct Args {
    mode: Mode,
    blueprints: Option<PathBuf>,
    data: Option<PathBuf>,
    workers: usize,
    port: u16,
    project_dir: Option<PathBuf>,
    sync_wait: Duration,
}

fn parse_args() -> Result<Args, lexopt::Error> {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_env();
    let mut mode = None;
    let mut args = Args {
        mode: Mode::Serve,
        blueprints: None,
        data: None,
        workers: DEFAULT_WORKERS,
        port: 0,
        project_dir: None,
        sync_wait: patchbay_orchestrator::DEFAULT_SYNC_WAIT,
    };
    while let Some(arg) = parser.next()? {
        match arg {
            Value(value) if mode.is_none() => {
                mode = Some(match value.to_str() {
                    Some("serve") => Mode::Serve,
                    Some("mcp") => Mode::Mcp,
                    _ => return Err(format!("unknown command {value:?}: use serve or mcp").into()),
                });
            }
            Long("blueprints") => args.blueprints = Some(parser.value()?.into()),
            Long("data") => args.data = Some(parser.value()?.into()),
            Long("workers") => args.workers = parser.value()?.parse()?,
            Long("port") => args.port = parser.value()?.parse()?,
            Long("project-dir") => args.project_dir = Some(parser.value()?.into()),
            Long("sync-wait") => args.sync_wait = Duration::from_secs(parser.value()?.parse()?),
            Short('h') | Long("help") => {
                print!("{USAGE}");
                std::process::exit(0);
            }
            _ => return Err(arg.unexpected()),
        }
    }
    args.mode = mode.ok_or("missing command: serve or mcp")?;
    Ok(args)
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
    match runtime.block_on(run(args)) {
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
    let data = args.data.clone().unwrap_or_else(default_data_dir);
    std::fs::create_dir_all(&data).map_err(|e| format!("cannot create the data folder {}: {e}", data.display()))?;
    let _lock = patchbay_orchestrator::lock_data_dir(&data)?;
    let store = SqliteStore::open(&data).await?;
    let mut builder = Orchestrator::builder(Arc::new(store), blueprints)
        .workers(args.workers)
        .sync_wait_limit(args.sync_wait);
    if let Some(dir) = &args.project_dir {
        builder = builder.project_dir(dir);
    }
    let orchestrator = builder.start().await?;
    let options = HttpOptions {
        port: args.port,
        token: std::env::var("PATCHBAY_ORCHESTRATOR_TOKEN")
            .ok()
            .filter(|t| !t.is_empty()),
    };
    let server = serve_http(&orchestrator, options).await?;
    match args.mode {
        Mode::Serve => {
            let api = server.url().trim_end_matches("/mcp").to_owned();
            println!("mcp: {}", server.url());
            println!("api: {api}");
            println!("token: {}", server.token());
            println!("data: {}", data.display());
            tracing::info!(mcp = %server.url(), api = %api, workers = args.workers, "serving; Ctrl-C or SIGTERM stops");
            stop_signal().await;
        }
        Mode::Mcp => {
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
