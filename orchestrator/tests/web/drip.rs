//! `drip`: a provider that streams like a slow model and makes one tool call, holding before
//! it until the test lets it go (so the page can be seen showing a run in progress).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use patchbay::kit::MetricsRecorder;
use patchbay::{
    Capabilities, ContentBlock, Event, EventStream, ExecutedBy, FinishReason, Message, Provider, ProviderError,
    ProviderFactory, ProviderInfo, RequestContext, Signal, ToolSet, Usage, async_trait,
};
use patchbay_orchestrator::blueprint::Blueprint;
use serde_json::{Value, json};

use crate::common::{TestResult, scripted, within};

/// The factory to register.
pub(crate) const FACTORY: ProviderFactory = ProviderFactory::new(
    "drip",
    "streams text slowly, then reads notes.txt (option hold: wait there before the tool call)",
    build_drip,
);

/// A blueprint on `drip` with the `read` tool.
pub(crate) fn drip_blueprint(hold_name: &str) -> Blueprint {
    Blueprint {
        provider: "drip".to_owned(),
        model: "drip-1".to_owned(),
        tools: vec!["read".to_owned()],
        ..scripted("drip", json!({ "hold": hold_name }))
    }
}

/// Where `drip` runs wait before their tool call until the test lets them go.
#[derive(Debug)]
pub(crate) struct Hold {
    permits: tokio::sync::Semaphore,
    arrived: tokio::sync::watch::Sender<usize>,
}

/// The hold called `name` (providers are built from options, so they find it by name).
pub(crate) fn hold(name: &str) -> Arc<Hold> {
    static HOLDS: LazyLock<Mutex<HashMap<String, Arc<Hold>>>> = LazyLock::new(Default::default);
    let mut holds = HOLDS.lock().unwrap_or_else(|p| p.into_inner());
    holds
        .entry(name.to_owned())
        .or_insert_with(|| {
            Arc::new(Hold {
                permits: tokio::sync::Semaphore::new(0),
                arrived: tokio::sync::watch::Sender::new(0),
            })
        })
        .clone()
}

impl Hold {
    /// Let `n` more runs through.
    pub(crate) fn release(&self, n: usize) {
        self.permits.add_permits(n);
    }

    /// Wait until `n` runs in all have arrived.
    pub(crate) async fn arrived(&self, n: usize) -> TestResult {
        let mut arrived = self.arrived.subscribe();
        within(&format!("{n} runs at the hold"), arrived.wait_for(|k| *k >= n)).await??;
        Ok(())
    }

    async fn pass(&self, signal: &Signal) -> Result<(), ProviderError> {
        self.arrived.send_modify(|k| *k += 1);
        tokio::select! {
            permit = self.permits.acquire() => {
                permit.map_err(|_| ProviderError::cancelled())?.forget();
                Ok(())
            }
            () = signal.cancelled() => Err(ProviderError::cancelled()),
        }
    }
}

/// A provider that streams like a slow model: a prompt gets a thought, text word by word and,
/// once the hold (when one is set) lets it through, a `read` of `notes.txt`; a tool result
/// gets an answer quoting it.
struct Drip {
    info: ProviderInfo,
    hold: Option<Arc<Hold>>,
}

fn build_drip(options: &Value) -> Result<Arc<dyn Provider>, ProviderError> {
    Ok(Arc::new(Drip {
        info: ProviderInfo::new("drip", Capabilities::none().with_streaming().with_reasoning()),
        hold: options.get("hold").and_then(Value::as_str).map(hold),
    }))
}

#[async_trait]
impl Provider for Drip {
    fn info(&self) -> &ProviderInfo {
        &self.info
    }

    async fn create_response(
        &self,
        messages: &[Message],
        _tools: &ToolSet,
        model: &str,
        signal: &Signal,
        _context: Option<&RequestContext>,
    ) -> Result<EventStream, ProviderError> {
        let last = messages.last().ok_or_else(|| ProviderError::protocol("no messages"))?;
        let answered = last
            .content
            .iter()
            .any(|block| matches!(block, ContentBlock::ToolResult { .. }));
        let turn = if answered {
            let notes = if format!("{last:?}").contains("Sunny") {
                "sunny, with a light breeze"
            } else {
                "nothing"
            };
            DripTurn {
                thought: None,
                text: format!("The notes say it is {notes}."),
                hold: None,
            }
        } else {
            DripTurn {
                thought: Some("The answer is in the notes: read them first.".to_owned()),
                text: format!("Reading the notes for: {} ", last.text()),
                hold: self.hold.clone(),
            }
        };
        let (events, stream) = futures::channel::mpsc::unbounded();
        tokio::spawn(turn.play(model.to_owned(), signal.clone(), events));
        Ok(Box::pin(stream))
    }
}

/// One `drip` answer: played by a task into the stream's channel.
struct DripTurn {
    thought: Option<String>,
    text: String,
    /// Set for a turn ending in the tool call.
    hold: Option<Arc<Hold>>,
}

type Sender = futures::channel::mpsc::UnboundedSender<Result<Event, ProviderError>>;

impl DripTurn {
    async fn play(self, model: String, signal: Signal, out: Sender) {
        let mut recorder = MetricsRecorder::start();
        let mut send = |event: Event| {
            recorder.observe(&event);
            out.unbounded_send(Ok(event)).is_ok()
        };
        send(Event::Started {
            response_id: None,
            model,
            session_id: None,
            warnings: Vec::new(),
        });
        if let Some(thought) = &self.thought {
            send(Event::ReasoningDelta {
                index: 0,
                text: thought.clone(),
            });
        }
        for word in self.text.split_inclusive(' ') {
            tokio::time::sleep(Duration::from_millis(40)).await;
            if signal.is_cancelled()
                || !send(Event::TextDelta {
                    index: 1,
                    text: word.to_owned(),
                })
            {
                let _ = out.unbounded_send(Err(ProviderError::cancelled()));
                return;
            }
        }
        let calls = self.hold.is_some();
        if let Some(hold) = &self.hold
            && let Err(error) = hold.pass(&signal).await
        {
            let _ = out.unbounded_send(Err(error));
            return;
        }
        if calls {
            let input = json!({ "path": "notes.txt" });
            send(Event::ToolCallStart {
                id: "call-1".into(),
                name: "read".into(),
            });
            send(Event::ToolCallDelta {
                id: "call-1".into(),
                partial_json: input.to_string(),
            });
            send(Event::ToolCall {
                id: "call-1".into(),
                name: "read".into(),
                input,
                executed_by: ExecutedBy::Host,
                signature: None,
            });
        }
        let usage = Usage {
            input: Some(812),
            output: Some(64),
            ..Usage::default()
        };
        send(Event::Usage(usage));
        let reason = if calls {
            FinishReason::ToolUse
        } else {
            FinishReason::Stop
        };
        let metrics = recorder.finish();
        let _ = out.unbounded_send(Ok(Event::Finish { reason, usage, metrics }));
    }
}
