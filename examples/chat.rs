//! Stream a whole agent run to the terminal.
//!
//! ```text
//! cargo run --example chat -- "what is in this folder?"            # offline, scripted demo
//! cargo run --example chat -- --json "what is in this folder?"     # one JSON event per line
//! cargo run --example chat --features anthropic -- --provider anthropic "hi"
//! cargo run --example chat --features gemini -- --provider gemini "hi"
//! cargo run --example chat --features openai -- --provider openai "hi"
//! cargo run --example chat --features acp -- --provider acp --agent gemini "hi"   # or codex, claude
//! cargo run --example chat --features acp -- --provider acp --agent-command ./my-acp-agent "hi"
//! cargo run --example chat -- --schema examples/weather.schema.json "weather in Paris?"
//! OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 cargo run --features otel --example chat -- "hi"
//! ```
//!
//! Text is printed as it arrives, tool calls and their results as they happen, and a last line
//! with usage and metrics. The tools are patchbay-tools' coding tools, rooted at the current
//! directory (bash off).
//!
//! `--provider acp` runs an Agent Client Protocol agent as the model: `--agent gemini|codex|claude`
//! picks a preset (its program found on `PATH` or in `node_modules/.bin`), `--agent-command PATH`
//! any other ACP agent (both: the preset's settings with that program); neither reads
//! `PATCHBAY_ACP_AGENT` and `PATCHBAY_ACP_COMMAND`. `--agent` or `--agent-command` alone implies
//! `--provider acp`. The agent runs its own tools, and reaches the coding tools over MCP.
//!
//! With `--schema FILE` (a JSON Schema) the answer is a JSON object of that schema instead, asked
//! for with structured output (no tools): the object is printed each time it grows, then the
//! object validated against the schema (in `--json` mode only the final object). Offline, the
//! scripted model answers with a sample object it builds from the schema.
//!
//! Built with the `otel` feature, the run's spans and metrics go to the OTLP/HTTP collector that
//! `OTEL_EXPORTER_OTLP_ENDPOINT` names (message content only with
//! `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use futures::StreamExt;
use patchbay::object::{self, ObjectEvent, OutputSchema};
use patchbay::scripted::{Part, Response, Script, ScriptedProvider, Turn};
use patchbay::tools::{Workspace, coding_tools};
use patchbay::{Agent, Event, Message, Provider, ProviderError, Registry, Signal, ToolResult, source::SourceTarget};
use serde_json::{Value, json};

struct Args {
    provider: String,
    /// Whether `--provider` was given (`--agent` implies `acp` only when it was not).
    provider_given: bool,
    /// `--agent`: an ACP preset (`gemini`, `codex`, `claude`).
    agent: Option<String>,
    /// `--agent-command`: the ACP agent program.
    agent_command: Option<PathBuf>,
    model: Option<String>,
    json: bool,
    schema: Option<PathBuf>,
    prompt: String,
}

const USAGE: &str = "usage: chat [--provider NAME] [--agent gemini|codex|claude] [--agent-command PATH] \
                     [--model MODEL] [--json] [--schema FILE] PROMPT...\n  \
                     --provider NAME         scripted (default, offline), anthropic, openrouter, gemini, openai, \
                     claude-agent, acp\n  \
                     --agent NAME            with acp: the agent preset (gemini, codex, claude)\n  \
                     --agent-command PATH    with acp: any ACP agent program";

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        provider: "scripted".into(),
        provider_given: false,
        agent: None,
        agent_command: None,
        model: None,
        json: false,
        schema: None,
        prompt: String::new(),
    };
    let mut words = Vec::new();
    let mut iter = std::env::args().skip(1);
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--provider" => {
                args.provider = iter.next().ok_or("--provider needs a name")?;
                args.provider_given = true;
            }
            "--agent" => args.agent = Some(iter.next().ok_or("--agent needs a name (gemini, codex, claude)")?),
            "--agent-command" => {
                args.agent_command = Some(iter.next().ok_or("--agent-command needs a program")?.into())
            }
            "--model" => args.model = Some(iter.next().ok_or("--model needs a name")?),
            "--json" => args.json = true,
            "--schema" => args.schema = Some(iter.next().ok_or("--schema needs a JSON Schema file")?.into()),
            "-h" | "--help" => return Err(USAGE.into()),
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}\n{USAGE}")),
            _ => words.push(arg),
        }
    }
    if args.agent.is_some() || args.agent_command.is_some() {
        if !args.provider_given {
            args.provider = "acp".into();
        } else if args.provider != "acp" {
            return Err(format!(
                "--agent and --agent-command are for --provider acp, not {}\n{USAGE}",
                args.provider
            ));
        }
    }
    args.prompt = if words.is_empty() {
        "what is in this folder?".into()
    } else {
        words.join(" ")
    };
    Ok(args)
}

/// The offline demo: look at the folder with real tools, then sum up.
fn demo_script() -> Script {
    let look = Response::new(vec![
        Part::text("I'll look at what is in this folder."),
        Part::tool_call("call_1", "read", json!({ "path": "." })),
        Part::tool_call("call_2", "glob", json!({ "pattern": "*.md" })),
    ]);
    let answer = Response::new(vec![Part::text(
        "Above are the entries of this folder and its Markdown files. \
         (This is patchbay's offline demo: a scripted model chose those tool calls; \
         pass --provider to ask a real model.)",
    )]);
    Script::new(vec![
        Turn::Respond(look.with_usage(412, 38)),
        Turn::Respond(answer.with_usage(690, 41)),
    ])
}

fn default_model(provider: &str) -> &'static str {
    match provider {
        "anthropic" => "claude-sonnet-4-5",
        "openrouter" => "openai/gpt-4o-mini",
        "claude-agent" => "sonnet",
        "gemini" => "gemini-2.5-flash",
        "openai" => "gpt-5-mini",
        // Never passed to the agent: it uses its own default model.
        "acp" => "default",
        _ => "scripted-demo",
    }
}

fn build_provider(args: &Args, schema: Option<&OutputSchema>) -> Result<Arc<dyn Provider>, patchbay::ProviderError> {
    let name = args.provider.as_str();
    #[cfg(feature = "acp")]
    if name == "acp" {
        return acp_provider(args);
    }
    if name == "scripted" {
        let script = match schema {
            Some(schema) => {
                let object = serde_json::to_string_pretty(&sample(&schema.schema)).unwrap_or_default();
                Script::new(vec![Turn::Respond(
                    Response::new(vec![Part::text(object)]).with_usage(120, 40),
                )])
            }
            None => demo_script(),
        };
        return Ok(Arc::new(ScriptedProvider::new(script)));
    }
    Registry::compiled().build(name, &serde_json::Value::Null)
}

/// `--provider acp`: the environment's settings (`PATCHBAY_ACP_AGENT`, `PATCHBAY_ACP_COMMAND`,
/// `PATCHBAY_RECORD_DIR`), then the preset of `--agent` and the program of `--agent-command`.
#[cfg(feature = "acp")]
fn acp_provider(args: &Args) -> Result<Arc<dyn Provider>, patchbay::ProviderError> {
    use patchbay::acp::{AcpConfig, AcpProvider, Preset};
    let mut config = AcpConfig::from_env()?;
    if let Some(agent) = &args.agent {
        let preset = Preset::from_name(agent).ok_or_else(|| {
            patchbay::ProviderError::config(format!("--agent {agent}: not an ACP preset (gemini, codex, claude)"))
        })?;
        config = config.with_preset(preset);
    }
    if let Some(program) = &args.agent_command {
        config = config.with_command(program);
    }
    Ok(Arc::new(AcpProvider::new(config)?))
}

fn preview(result: &ToolResult, lines: usize) -> String {
    let text = result.text_content();
    let total = text.lines().count();
    let mut out: Vec<&str> = text.lines().take(lines).collect();
    let more;
    if total > lines {
        more = format!("... ({} more lines)", total - lines);
        out.push(&more);
    }
    out.join("\n    ")
}

#[tokio::main]
async fn main() -> ExitCode {
    let telemetry = match start_telemetry() {
        Ok(telemetry) => telemetry,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let code = chat().await;
    stop_telemetry(telemetry).await;
    code
}

/// With the `otel` feature and `OTEL_EXPORTER_OTLP_ENDPOINT` (or another `OTEL_*` endpoint
/// variable) set: export the run's spans and metrics over OTLP/HTTP.
#[cfg(feature = "otel")]
fn start_telemetry() -> Result<Option<patchbay::otel::Telemetry>, String> {
    patchbay::otel::init_from_env().map_err(|e| format!("OpenTelemetry: {e}"))
}

/// Built without the `otel` feature: say how to get it when an endpoint is set.
#[cfg(not(feature = "otel"))]
fn start_telemetry() -> Result<Option<()>, String> {
    if std::env::var_os("OTEL_EXPORTER_OTLP_ENDPOINT").is_some() {
        eprintln!(
            "(OTEL_EXPORTER_OTLP_ENDPOINT is set, but this build has no OpenTelemetry: cargo run --features otel --example chat -- ...)"
        );
    }
    Ok(None)
}

/// Send what is left (the exporters block, so off the runtime's threads); a collector that is
/// down is a warning, never a failed chat.
#[cfg(feature = "otel")]
async fn stop_telemetry(telemetry: Option<patchbay::otel::Telemetry>) {
    let Some(telemetry) = telemetry else {
        return;
    };
    match tokio::task::spawn_blocking(move || telemetry.shutdown()).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => eprintln!("(OpenTelemetry export failed: {error})"),
        Err(error) => eprintln!("(OpenTelemetry export stopped: {error})"),
    }
}

#[cfg(not(feature = "otel"))]
async fn stop_telemetry(_telemetry: Option<()>) {}

async fn chat() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let schema = match args.schema.as_deref().map(read_schema).transpose() {
        Ok(schema) => schema,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let provider = match provider_or_hint(&args, schema.as_ref()) {
        Ok(provider) => provider,
        Err(code) => return code,
    };
    if args.provider == "scripted" && !args.json {
        eprintln!("(offline: scripted demo provider, no network; pass --provider NAME for a real model)");
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let model = args
        .model
        .clone()
        .unwrap_or_else(|| default_model(&args.provider).into());
    if let Some(schema) = schema {
        return structured(provider.as_ref(), &model, &args, schema).await;
    }
    let agent = Agent::new(provider, model)
        .with_name("chat")
        .with_tools(coding_tools(Workspace::new(cwd)));
    let signal = Signal::new();
    cancel_on_ctrl_c(&signal);

    let mut events = agent.stream(vec![Message::user(args.prompt.clone())], signal);
    let mut printer = Printer::new(args.json);
    while let Some(item) = events.next().await {
        match item {
            Ok(event) => printer.event(&event),
            Err(error) => {
                printer.error(&error);
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

/// The output schema in a JSON Schema file, named after the file (`weather.schema.json`:
/// `weather`).
fn read_schema(path: &Path) -> Result<OutputSchema, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let schema: Value = serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
    let file = path.file_name().and_then(|n| n.to_str()).unwrap_or("output");
    let name = file.split('.').next().unwrap_or(file);
    let description = schema.get("description").and_then(Value::as_str).map(str::to_string);
    let mut output = OutputSchema::new(name, schema);
    if let Some(description) = description {
        output = output.with_description(description);
    }
    Ok(output)
}

/// A value matching `schema` for the offline demo: its `const`, `default`, first example or
/// first `enum` value when it has one, else one of its type (every property of an object, one
/// item of an array). `$ref`s and combinators are not followed.
fn sample(schema: &Value) -> Value {
    let given = schema
        .get("const")
        .or_else(|| schema.get("default"))
        .or_else(|| schema.pointer("/examples/0"))
        .or_else(|| schema.pointer("/enum/0"));
    if let Some(value) = given {
        return value.clone();
    }
    let kind = match schema.get("type") {
        Some(Value::String(kind)) => kind.as_str(),
        Some(Value::Array(kinds)) => kinds
            .iter()
            .filter_map(Value::as_str)
            .find(|k| *k != "null")
            .unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => "null",
    };
    match kind {
        "object" => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let fields = properties
                .into_iter()
                .flatten()
                .map(|(key, sub)| (key.clone(), sample(sub)));
            Value::Object(fields.collect())
        }
        "array" => Value::Array(vec![sample(schema.get("items").unwrap_or(&Value::Null))]),
        "string" => json!("example"),
        "integer" => json!(1),
        "number" => json!(1.5),
        "boolean" => json!(true),
        _ => Value::Null,
    }
}

/// The `--schema` run: the object as it grows, then the validated object (or what was wrong,
/// with the raw text).
async fn structured(provider: &dyn Provider, model: &str, args: &Args, schema: OutputSchema) -> ExitCode {
    let messages = vec![Message::user(args.prompt.clone())];
    let signal = Signal::new();
    cancel_on_ctrl_c(&signal);
    let mut stream = object::stream_object_with::<Value, _>(provider, &messages, model, &signal, None, schema);
    let mut out = std::io::stdout();
    while let Some(item) = stream.next().await {
        match item {
            Ok(ObjectEvent::Partial(value)) if !args.json => {
                let _ = writeln!(out, "\u{2026} {value}");
            }
            Ok(ObjectEvent::Complete(value)) if args.json => {
                let _ = writeln!(out, "{value}");
            }
            Ok(ObjectEvent::Complete(value)) => {
                let pretty = serde_json::to_string_pretty(&value).unwrap_or_default();
                let _ = writeln!(out, "\nvalid object:\n{pretty}");
            }
            Ok(_) => {}
            Err(error) => {
                eprintln!("error: {error}");
                if let Some(raw) = error.raw_text() {
                    eprintln!("raw text of the answer:\n{raw}");
                }
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

/// The provider asked for; when it cannot be built, the error (and the feature that would
/// compile it in) is printed and the exit code returned instead.
fn provider_or_hint(args: &Args, schema: Option<&OutputSchema>) -> Result<Arc<dyn Provider>, ExitCode> {
    build_provider(args, schema).map_err(|error| {
        eprintln!("chat: {error}");
        let compiled = Registry::compiled().names().contains(&args.provider.as_str());
        if let (false, Some(feature)) = (compiled, Registry::feature_for(&args.provider)) {
            let mut agent = String::new();
            if let Some(name) = &args.agent {
                agent.push_str(&format!(" --agent {name}"));
            }
            if let Some(program) = &args.agent_command {
                agent.push_str(&format!(" --agent-command {}", program.display()));
            }
            eprintln!(
                "chat: to use it, build the example with that feature:\n  \
                 cargo run --features {feature} --example chat -- --provider {}{agent} \"{}\"",
                args.provider, args.prompt
            );
        } else if compiled && args.provider == "acp" && args.agent.is_none() && args.agent_command.is_none() {
            eprintln!("chat: name the agent: --agent gemini|codex|claude, or --agent-command PATH");
        }
        ExitCode::from(2)
    })
}

/// Cancel the run on Ctrl-C.
fn cancel_on_ctrl_c(signal: &Signal) {
    let ctrl_c = signal.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            ctrl_c.cancel();
        }
    });
}

/// Prints the run's events: one JSON line each, or for people as they happen.
struct Printer {
    stdout: std::io::StdoutLock<'static>,
    json: bool,
    steps: u32,
    /// Whether the cursor is at the start of a line (text does not end lines).
    line_start: bool,
    /// Sources of the current step, listed when it ends (they may arrive mid-text).
    sources: Vec<String>,
}

impl Printer {
    fn new(json: bool) -> Self {
        Self {
            stdout: std::io::stdout().lock(),
            json,
            steps: 1,
            line_start: true,
            sources: Vec::new(),
        }
    }

    /// Print one event.
    fn event(&mut self, event: &Event) {
        if self.json {
            match serde_json::to_string(event) {
                Ok(line) => {
                    let _ = writeln!(self.stdout, "{line}");
                }
                Err(error) => eprintln!("chat: cannot serialize an event: {error}"),
            }
            return;
        }
        self.human(event);
        let _ = self.stdout.flush();
    }

    /// Print the error that ended the run (on stdout as JSON in `--json` mode, always on stderr).
    fn error(&mut self, error: &ProviderError) {
        if self.json {
            let line = json!({"type": "error", "kind": error.kind().as_str(), "message": error.to_string()});
            let _ = writeln!(self.stdout, "{line}");
        } else {
            let _ = writeln!(self.stdout);
        }
        eprintln!("chat: {error}");
    }

    /// Print one event for people: text as it streams, tool calls and results on their own
    /// lines, a summary line at the end.
    fn human(&mut self, event: &Event) {
        let is_text = matches!(event, Event::TextDelta { .. } | Event::ReasoningDelta { .. });
        if !is_text
            && !self.line_start
            && matches!(
                event,
                Event::ToolCall { .. } | Event::ToolResult { .. } | Event::Finish { .. } | Event::StepFinished { .. }
            )
        {
            let _ = writeln!(self.stdout);
            self.line_start = true;
        }
        if matches!(event, Event::StepFinished { .. } | Event::Finish { .. }) {
            for source in self.sources.drain(..) {
                let _ = writeln!(self.stdout, "{source}");
            }
        }
        let stdout = &mut self.stdout;
        match event {
            Event::Source(source) => {
                let target = match &source.target {
                    SourceTarget::Url { url } => url.clone(),
                    SourceTarget::Document { document_index, .. } => {
                        format!("document {}", document_index.map_or("?".into(), |i| i.to_string()))
                    }
                    SourceTarget::SearchResult { source, .. } => source.clone(),
                    SourceTarget::File { file_id, filename, .. } => filename.clone().unwrap_or_else(|| file_id.clone()),
                    _ => "?".into(),
                };
                let title = source.title.as_deref().map(|t| format!("{t} ")).unwrap_or_default();
                self.sources.push(format!("[{}] {title}<{target}>", source.id));
            }
            Event::TextDelta { text, .. } => {
                let _ = write!(stdout, "{text}");
                self.line_start = text.ends_with('\n');
            }
            Event::ReasoningDelta { text, .. } => {
                let _ = write!(stdout, "\x1b[2m{text}\x1b[0m");
                self.line_start = text.ends_with('\n');
            }
            Event::ToolCall { name, input, .. } => {
                let _ = writeln!(stdout, "→ {name} {input}");
            }
            Event::ToolResult { name, result, .. } => {
                let status = format!("{:?}", result.status).to_lowercase();
                let _ = writeln!(stdout, "← {name} ({status}):\n    {}", preview(result, 20));
            }
            Event::McpConnected { servers, failed } => {
                let _ = writeln!(stdout, "[mcp: {} connected, {} failed]", servers.len(), failed.len());
            }
            Event::StepFinished { .. } => self.steps += 1,
            Event::Finish { reason, usage, metrics } => {
                let tokens = |n: Option<u64>| n.map_or("?".to_string(), |n| n.to_string());
                let _ = writeln!(
                    stdout,
                    "[{reason:?} | usage: {} in, {} out | steps {} | first text {} ms | total {} ms | {} events, {} text chars]",
                    tokens(usage.input),
                    tokens(usage.output),
                    self.steps,
                    metrics.first_text_ms.map_or("-".into(), |ms| ms.to_string()),
                    metrics.total_ms,
                    metrics.events,
                    metrics.text_chars,
                );
            }
            _ => {}
        }
    }
}
