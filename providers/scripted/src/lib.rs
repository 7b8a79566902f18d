#![doc = include_str!("../README.md")]

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use patchbay_core::kit::{MetricsRecorder, check_conversation, in_span, record_error, request_span_for};
use patchbay_core::{
    Capabilities, ErrorKind, Event, EventStream, ExecutedBy, FinishReason, Message, OutputSchema, Provider,
    ProviderError, ProviderInfo, RequestContext, Signal, Source, ToolSet, Usage, Warning,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A script: the turns a [`ScriptedProvider`] plays, one per call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Script {
    /// The turns, in order.
    pub turns: Vec<Turn>,
    /// Answer every call past the end with the last turn instead of failing.
    #[serde(default)]
    pub repeat_last: bool,
}

impl Script {
    /// A script of these turns.
    pub fn new(turns: Vec<Turn>) -> Self {
        Self {
            turns,
            repeat_last: false,
        }
    }

    /// Repeat the last turn forever.
    pub fn repeating(mut self) -> Self {
        self.repeat_last = true;
        self
    }

    /// Parse a script from JSON.
    pub fn from_json(json: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(json)
    }
}

/// One model call's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Turn {
    /// A streamed response.
    Respond(Response),
    /// The call fails before any event (as an HTTP error status would).
    Fail(ScriptedError),
}

impl Turn {
    /// A response with one text part that ends with `Stop`.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Respond(Response::new(vec![Part::text(text)]))
    }

    /// A response of these parts: `ToolUse` if any part is a tool call, else `Stop`.
    pub fn parts(parts: Vec<Part>) -> Self {
        Self::Respond(Response::new(parts))
    }
}

/// A streamed response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// The response id (`Started.response_id`); a default is made up when absent.
    #[serde(default)]
    pub id: Option<String>,
    /// The content, in order.
    pub parts: Vec<Part>,
    /// How the stream ends.
    #[serde(default)]
    pub end: End,
    /// Usage reported at the end.
    #[serde(default)]
    pub usage: Usage,
}

impl Response {
    /// A response of these parts: it ends with `ToolUse` if any part is a tool call, else `Stop`.
    pub fn new(parts: Vec<Part>) -> Self {
        let reason = if parts.iter().any(|p| matches!(p, Part::ToolCall { .. })) {
            FinishReason::ToolUse
        } else {
            FinishReason::Stop
        };
        Self {
            id: None,
            parts,
            end: End::Finish { reason },
            usage: Usage::default(),
        }
    }

    /// Set how it ends.
    pub fn with_end(mut self, end: End) -> Self {
        self.end = end;
        self
    }

    /// Set the usage.
    pub fn with_usage(mut self, input: u64, output: u64) -> Self {
        self.usage = Usage {
            input: Some(input),
            output: Some(output),
            ..Usage::default()
        };
        self
    }
}

/// One content block of a response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    /// Text, streamed in word-sized deltas.
    Text {
        /// The text.
        text: String,
    },
    /// Reasoning with a signature.
    Thinking {
        /// The reasoning text.
        text: String,
        /// Its signature.
        #[serde(default)]
        signature: Option<String>,
    },
    /// Text that cites web pages: its text as [`Part::Text`], then one `Source` per citation
    /// (ids counting from 1 through the response).
    Cited {
        /// The text.
        text: String,
        /// What it cites.
        sources: Vec<Citation>,
    },
    /// A host tool call, its input streamed in two fragments.
    ToolCall {
        /// The call id.
        id: String,
        /// The tool name.
        name: String,
        /// The input.
        input: Value,
    },
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// A text part citing `sources`.
    pub fn cited(text: impl Into<String>, sources: Vec<Citation>) -> Self {
        Self::Cited {
            text: text.into(),
            sources,
        }
    }

    /// A thinking part.
    pub fn thinking(text: impl Into<String>, signature: impl Into<String>) -> Self {
        Self::Thinking {
            text: text.into(),
            signature: Some(signature.into()),
        }
    }

    /// A tool call part.
    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self::ToolCall {
            id: id.into(),
            name: name.into(),
            input,
        }
    }
}

/// A web page a [`Part::Cited`] text cites.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Citation {
    /// The page's URL.
    pub url: String,
    /// Its title.
    pub title: String,
    /// The passage the text relies on.
    pub cited_text: String,
}

impl Citation {
    /// A citation of `url`.
    pub fn new(url: impl Into<String>, title: impl Into<String>, cited_text: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            title: title.into(),
            cited_text: cited_text.into(),
        }
    }
}

/// How a response stream ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum End {
    /// `Finish` with this reason.
    Finish {
        /// The reason.
        reason: FinishReason,
    },
    /// An error event in the middle of the stream.
    Error(ScriptedError),
    /// The stream just stops, without a finish: a `Protocol` error.
    Truncate,
    /// The stream stalls until the call is cancelled.
    Stall,
}

impl Default for End {
    fn default() -> Self {
        Self::Finish {
            reason: FinishReason::Stop,
        }
    }
}

/// An error a script produces.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScriptedError {
    /// Its kind.
    pub kind: ErrorKind,
    /// Its message.
    pub message: String,
    /// The HTTP status a wire server would answer with.
    #[serde(default)]
    pub status: Option<u16>,
    /// The `retry-after` a wire server would send, in milliseconds.
    #[serde(default)]
    pub retry_after_ms: Option<u64>,
}

impl ScriptedError {
    /// An error of this kind.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            status: None,
            retry_after_ms: None,
        }
    }

    /// The equivalent [`ProviderError`].
    pub fn to_error(&self) -> ProviderError {
        let mut error = ProviderError::new(self.kind, self.message.clone()).with_provider("scripted");
        if let Some(status) = self.status {
            error = error.with_status(status);
        }
        if let Some(ms) = self.retry_after_ms {
            error = error.with_retry_after(Duration::from_millis(ms));
        }
        error
    }
}

/// What a [`ScriptedProvider`] was asked, for assertions in host tests.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// The messages.
    pub messages: Vec<Message>,
    /// The tool names offered.
    pub tools: Vec<String>,
    /// The model.
    pub model: String,
    /// The system prompt.
    pub system: Option<String>,
    /// The structured output asked for, if any.
    pub output_schema: Option<OutputSchema>,
}

/// A deterministic provider following a [`Script`].
#[derive(Debug)]
pub struct ScriptedProvider {
    info: ProviderInfo,
    script: Script,
    cursor: AtomicUsize,
    requests: Mutex<Vec<RecordedRequest>>,
}

impl ScriptedProvider {
    /// A provider playing `script`.
    pub fn new(script: Script) -> Self {
        let capabilities = Capabilities::none().with_streaming().with_reasoning().with_images();
        Self {
            info: ProviderInfo::new("scripted", capabilities),
            script,
            cursor: AtomicUsize::new(0),
            requests: Mutex::new(Vec::new()),
        }
    }

    /// A provider answering every call with `text`.
    pub fn always(text: impl Into<String>) -> Self {
        Self::new(Script::new(vec![Turn::text(text)]).repeating())
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// The call number (0-based) and its turn.
    fn next_turn(&self) -> Result<(usize, Turn), ProviderError> {
        let n = self.cursor.fetch_add(1, Ordering::SeqCst);
        let turn = match self.script.turns.get(n) {
            Some(turn) => turn,
            None if self.script.repeat_last => self
                .script
                .turns
                .last()
                .ok_or_else(|| ProviderError::config("the script has no turns"))?,
            None => {
                return Err(ProviderError::config(format!(
                    "the script has {} turns and call {} asked for another",
                    self.script.turns.len(),
                    n + 1
                ))
                .with_provider("scripted"));
            }
        };
        Ok((n, turn.clone()))
    }

    /// Keep what this call was asked, for [`requests`](Self::requests).
    fn record(&self, messages: &[Message], tools: &ToolSet, model: &str, context: Option<&RequestContext>) {
        if let Ok(mut requests) = self.requests.lock() {
            requests.push(RecordedRequest {
                messages: messages.to_vec(),
                tools: tools.specs().map(|s| s.name.clone()).collect(),
                model: model.to_string(),
                system: context.and_then(|c| c.system.clone()),
                output_schema: context.and_then(|c| c.output_schema.clone()),
            });
        }
    }
}

/// Text split into word-sized deltas, as the scripted provider streams it: each delta ends
/// after a run of whitespace, and together they are the text. Wire mocks use the same split so
/// every provider's goldens agree.
///
/// ```
/// assert_eq!(patchbay_scripted::word_deltas("héllo  wörld 🎉"), ["héllo  ", "wörld ", "🎉"]);
/// ```
pub fn word_deltas(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_space = false;
    for (at, ch) in text.char_indices() {
        if in_space && !ch.is_whitespace() {
            out.push(&text[start..at]);
            start = at;
        }
        in_space = ch.is_whitespace();
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

#[async_trait]
impl Provider for ScriptedProvider {
    fn info(&self) -> &ProviderInfo {
        &self.info
    }

    async fn create_response(
        &self,
        messages: &[Message],
        tools: &ToolSet,
        model: &str,
        signal: &Signal,
        context: Option<&RequestContext>,
    ) -> Result<EventStream, ProviderError> {
        check_conversation(messages, true)?;
        if signal.is_cancelled() {
            return Err(ProviderError::cancelled());
        }
        self.record(messages, tools, model, context);
        let span = request_span_for(self.info.name.as_str(), model, messages, context);
        let (n, turn) = self.next_turn().map_err(|e| record_error(&span, e))?;
        let response = match turn {
            Turn::Fail(error) => return Err(record_error(&span, error.to_error())),
            Turn::Respond(response) => response,
        };
        let model = model.to_string();
        let signal = signal.clone();
        // Like a direct API, the script model connects no MCP servers itself.
        let warnings: Vec<Warning> = context
            .and_then(RequestContext::unattached_mcp_servers)
            .into_iter()
            .collect();
        let events = Box::pin(async_stream::stream! {
            let mut recorder = MetricsRecorder::start();
            let events = response_events(n, &response, model, warnings);
            for event in events {
                if signal.is_cancelled() {
                    yield Err(ProviderError::cancelled());
                    return;
                }
                recorder.observe(&event);
                yield Ok(event);
                tokio::task::yield_now().await;
            }
            match response.end {
                End::Finish { reason } => {
                    if signal.is_cancelled() {
                        yield Err(ProviderError::cancelled());
                        return;
                    }
                    yield Ok(Event::Usage(response.usage));
                    recorder.observe(&Event::Usage(response.usage));
                    yield Ok(Event::Finish { reason, usage: response.usage, metrics: recorder.finish() });
                }
                End::Error(error) => yield Err(error.to_error()),
                End::Truncate => yield Err(ProviderError::protocol("the stream ended before the response finished").with_provider("scripted")),
                End::Stall => {
                    signal.cancelled().await;
                    yield Err(ProviderError::cancelled());
                }
            }
        });
        Ok(in_span(events, span))
    }
}

/// Every event a scripted response streams before its end: `Started`, the input usage, then
/// each part's events.
fn response_events(n: usize, response: &Response, model: String, warnings: Vec<Warning>) -> Vec<Event> {
    let id = response.id.clone().unwrap_or_else(|| format!("scripted-{}", n + 1));
    let mut events = vec![
        Event::Started {
            response_id: Some(id),
            model,
            session_id: None,
            warnings,
        },
        Event::Usage(Usage {
            input: response.usage.input,
            ..Usage::default()
        }),
    ];
    let mut sources = 0;
    for (index, part) in response.parts.iter().enumerate() {
        push_part_events(&mut events, index, part, &mut sources);
    }
    events
}

/// The events of one part: text and thinking as word-sized deltas, a tool call's input in two
/// halves before the call; `sources` counts the response's sources so far.
fn push_part_events(events: &mut Vec<Event>, index: usize, part: &Part, sources: &mut u64) {
    match part {
        Part::Text { text } => {
            events.extend(word_deltas(text).into_iter().map(|text| Event::TextDelta {
                index,
                text: text.to_owned(),
            }));
        }
        Part::Cited { text, sources: cited } => {
            push_part_events(events, index, &Part::text(text.clone()), sources);
            for citation in cited {
                *sources += 1;
                let mut source = Source::url(sources.to_string(), index, citation.url.clone(), "scripted");
                source.title = Some(citation.title.clone());
                source.cited_text = Some(citation.cited_text.clone());
                events.push(Event::Source(source));
            }
        }
        Part::Thinking { text, signature } => {
            events.extend(word_deltas(text).into_iter().map(|text| Event::ReasoningDelta {
                index,
                text: text.to_owned(),
            }));
            if let Some(signature) = signature {
                events.push(Event::ReasoningSignature {
                    index,
                    signature: signature.clone(),
                });
            }
        }
        Part::ToolCall { id, name, input } => {
            events.push(Event::ToolCallStart {
                id: id.clone(),
                name: name.clone(),
            });
            let json = input.to_string();
            let mid = json
                .char_indices()
                .map(|(i, _)| i)
                .nth(json.chars().count() / 2)
                .unwrap_or(0);
            for piece in [&json[..mid], &json[mid..]] {
                if !piece.is_empty() {
                    events.push(Event::ToolCallDelta {
                        id: id.clone(),
                        partial_json: piece.to_string(),
                    });
                }
            }
            events.push(Event::ToolCall {
                id: id.clone(),
                name: name.clone(),
                input: input.clone(),
                executed_by: ExecutedBy::Host,
                signature: None,
            });
        }
    }
}

/// The provider's registry name.
pub const NAME: &str = "scripted";

/// The registry entry: options `{"script": <Script JSON>}` or `{"text": "..."}`.
pub fn factory() -> patchbay_core::ProviderFactory {
    patchbay_core::ProviderFactory::new(
        NAME,
        "deterministic scripted model; options: {\"script\": <Script JSON>} or {\"text\": \"...\"}",
        build,
    )
}

/// Builds a [`ScriptedProvider`] from JSON options: `{"script": <Script JSON>}` plays the
/// script, `{"text": "..."}` answers every call with the text; other keys are refused.
pub fn build(options: &Value) -> Result<std::sync::Arc<dyn Provider>, ProviderError> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct ScriptedOptions {
        script: Option<Script>,
        text: Option<String>,
    }
    let options: ScriptedOptions = match options {
        Value::Null => ScriptedOptions {
            script: None,
            text: None,
        },
        options => serde_json::from_value(options.clone())
            .map_err(|e| ProviderError::config(format!("invalid scripted options: {e}")).with_provider(NAME))?,
    };
    Ok(std::sync::Arc::new(match (options.script, options.text) {
        (Some(script), _) => ScriptedProvider::new(script),
        (None, Some(text)) => ScriptedProvider::always(text),
        (None, None) => ScriptedProvider::always("Hello from the scripted provider."),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_deltas_keep_every_character() {
        let text = "héllo  wörld 🎉 end";
        let deltas = word_deltas(text);
        assert_eq!(deltas.concat(), text);
        assert_eq!(deltas, vec!["héllo  ", "wörld ", "🎉 ", "end"]);
    }

    #[test]
    fn script_round_trips_through_json() {
        let script = Script::new(vec![
            Turn::parts(vec![
                Part::thinking("hmm", "sig"),
                Part::tool_call("t1", "echo", serde_json::json!({"a": 1})),
            ]),
            Turn::Fail(ScriptedError::new(ErrorKind::RateLimited, "slow")),
        ]);
        let json = serde_json::to_string(&script).expect("serializes");
        assert_eq!(Script::from_json(&json).expect("parses"), script);
    }
}
