//! Shared test helpers: the scripted fake agent (`patchbay-acp-fake-agent`) as a provider.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::StreamExt;
use patchbay_acp::{AcpConfig, AcpProvider};
use patchbay_core::{Event, Message, Provider, ProviderError, RequestContext, Signal, ToolSet};
use serde_json::Value;

/// The fake agent's binary.
pub(crate) fn fake_agent() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_patchbay-acp-fake-agent"))
}

/// A folder with the script, the fake agent's log, and a working directory.
pub(crate) struct Fake {
    pub(crate) dir: tempfile::TempDir,
}

impl Fake {
    /// A fake agent playing `script`.
    pub(crate) fn new(script: &Value) -> Self {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("script.json"), script.to_string()).unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(dir.path().join("work")).unwrap_or_else(|e| panic!("{e}"));
        Self { dir }
    }

    /// The agent's working directory.
    pub(crate) fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// The configuration that starts it.
    pub(crate) fn config(&self) -> AcpConfig {
        AcpConfig::command(fake_agent(), Vec::<String>::new())
            .with_env(
                "PATCHBAY_ACP_FAKE_SCRIPT",
                self.dir.path().join("script.json").to_string_lossy(),
            )
            .with_env("PATCHBAY_ACP_FAKE_LOG", self.log_path().to_string_lossy())
    }

    /// A provider on [`Self::config`].
    pub(crate) fn provider(&self) -> Arc<AcpProvider> {
        Arc::new(AcpProvider::new(self.config()).unwrap_or_else(|e| panic!("{e}")))
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("log.jsonl")
    }

    /// What the agent received, one JSON object per message.
    pub(crate) fn log(&self) -> Vec<Value> {
        std::fs::read_to_string(self.log_path())
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }

    /// The received messages of `method`.
    pub(crate) fn received(&self, method: &str) -> Vec<Value> {
        self.log().into_iter().filter(|m| m["method"] == method).collect()
    }

    /// A context working in [`Self::work`].
    pub(crate) fn context(&self) -> RequestContext {
        RequestContext::new().with_working_dir(self.work())
    }
}

/// What a call produced: its events and the error that ended it.
#[derive(Debug, Default)]
pub(crate) struct Run {
    pub(crate) events: Vec<Event>,
    pub(crate) error: Option<ProviderError>,
}

impl Run {
    /// The joined text.
    pub(crate) fn text(&self) -> String {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::TextDelta { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The session id on `Started`.
    pub(crate) fn session(&self) -> Option<String> {
        self.events.iter().find_map(|e| match e {
            Event::Started { session_id, .. } => session_id.clone(),
            _ => None,
        })
    }

    /// The warnings' codes on `Started`.
    pub(crate) fn warnings(&self) -> Vec<String> {
        self.events
            .iter()
            .find_map(|e| match e {
                Event::Started { warnings, .. } => Some(warnings.iter().map(|w| w.code.clone()).collect()),
                _ => None,
            })
            .unwrap_or_default()
    }
}

/// One call, read to its end (the validator checks the lifecycle rules).
pub(crate) async fn call(
    provider: &dyn Provider,
    messages: &[Message],
    tools: &ToolSet,
    context: &RequestContext,
    signal: &Signal,
) -> Run {
    call_model(provider, messages, tools, "fake-model", context, signal).await
}

/// [`call`] with `model`.
pub(crate) async fn call_model(
    provider: &dyn Provider,
    messages: &[Message],
    tools: &ToolSet,
    model: &str,
    context: &RequestContext,
    signal: &Signal,
) -> Run {
    let mut run = Run::default();
    let mut stream = match provider
        .create_response(messages, tools, model, signal, Some(context))
        .await
    {
        Ok(stream) => stream,
        Err(error) => {
            run.error = Some(error);
            return run;
        }
    };
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => run.events.push(event),
            Err(error) => {
                run.error = Some(error);
                break;
            }
        }
    }
    run
}

/// Whether any process still runs with `needle` in its command line or environment.
pub(crate) fn running_with(needle: &Path) -> Vec<u32> {
    let needle = needle.to_string_lossy().into_owned();
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z'));
        if !zombie && String::from_utf8_lossy(&environ).contains(&needle) {
            found.push(pid);
        }
    }
    found
}

/// Wait up to 5 s for every process started with `needle` in its environment to go.
pub(crate) async fn none_left(needle: &Path) -> Vec<u32> {
    for _ in 0..100 {
        let left = running_with(needle);
        if left.is_empty() {
            return left;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    running_with(needle)
}
