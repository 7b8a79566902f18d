//! Every reader of the loopback streams, each returning the text it got so the harness can
//! check that nobody dropped or mangled any of it.
//!
//! - the typed serde baseline: reqwest bytes, lines split with memchr, each `data:` line parsed
//!   once with serde_json into a small borrowed struct (the least a typed Rust reader does);
//! - patchbay's providers through `Provider::create_response` (HTTP, SSE framing, translation,
//!   events, the provider's span and limits: the full path a user takes);
//! - async-openai, genai and rig-core through their streaming chat calls (genai and rig-core
//!   on every wire, with their OpenAI, Anthropic, Gemini and Responses clients; async-openai on
//!   the two OpenAI wires, chat completions and Responses).
//!
//! The baseline and patchbay readers take a `gate`: a future awaited once, right after the
//! first text arrives (the many-streams bench holds every stream open there); the translation
//! bench passes `None`.

use std::borrow::Cow;
use std::future::Future;

use futures::StreamExt;
use patchbay_anthropic::{AnthropicConfig, AnthropicProvider};
use patchbay_core::{Event, Message, Provider, Signal, ToolSet};
use patchbay_gemini::{GeminiConfig, GeminiProvider};
use patchbay_openai::{OpenAiConfig, OpenAiProvider};
use patchbay_openrouter::{OpenRouterConfig, OpenRouterProvider};
use serde::Deserialize;

/// Any consumer's failure.
pub type Failure = Box<dyn std::error::Error + Send + Sync>;

/// Which wire a consumer reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// OpenAI chat completions.
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
    /// Gemini `streamGenerateContent?alt=sse`.
    Gemini,
    /// OpenAI's Responses API (`POST /responses`).
    Responses,
}

/// The model every Gemini reader asks for (the path names it: `models/{MODEL}:…`).
pub const GEMINI_MODEL: &str = "gemini-bench";

impl Wire {
    /// Every wire, in table order.
    pub const ALL: [Wire; 4] = [Wire::OpenAi, Wire::Anthropic, Wire::Gemini, Wire::Responses];

    /// Column name.
    pub fn name(self) -> &'static str {
        match self {
            Wire::OpenAi => "OpenAI wire",
            Wire::Anthropic => "Anthropic wire",
            Wire::Gemini => "Gemini wire",
            Wire::Responses => "Responses wire",
        }
    }

    /// The path (and query) a raw reader posts to.
    pub fn path(self) -> &'static str {
        match self {
            Wire::OpenAi => "/v1/chat/completions",
            Wire::Anthropic => "/v1/messages",
            Wire::Gemini => "/v1beta/models/gemini-bench:streamGenerateContent?alt=sse",
            Wire::Responses => "/v1/responses",
        }
    }

    /// The request body a raw reader sends (the server reads and drops it).
    pub fn request(self) -> &'static str {
        match self {
            Wire::OpenAi | Wire::Anthropic => {
                r#"{"model":"bench","max_tokens":1024,"messages":[{"role":"user","content":"bench"}],"stream":true}"#
            }
            Wire::Gemini => r#"{"contents":[{"role":"user","parts":[{"text":"bench"}]}]}"#,
            Wire::Responses => r#"{"model":"bench","input":"bench","stream":true}"#,
        }
    }

    /// Parse a wire's name on the command line: `openai`, `anthropic`, `gemini` or
    /// `openai-responses`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "openai" => Some(Wire::OpenAi),
            "anthropic" => Some(Wire::Anthropic),
            "gemini" => Some(Wire::Gemini),
            "openai-responses" => Some(Wire::Responses),
            _ => None,
        }
    }
}

/// The HTTP client of the baseline (and of the raw reads of the first-event bench): built as
/// patchbay builds its own, so the difference measured is patchbay's layer, not client setup.
pub fn http_client() -> reqwest::Client {
    patchbay_http::client_builder().build().expect("reqwest client")
}

/// Install ring as rustls' process-wide provider: reqwest is built with `rustls-no-provider`
/// (patchbay's choice), and the peers' own clients need a provider even for plain HTTP.
pub fn install_crypto() {
    let _ = patchbay_http::rustls::crypto::ring::default_provider().install_default();
}

async fn pass<F: Future<Output = ()>>(gate: &mut Option<F>) {
    if let Some(gate) = gate.take() {
        gate.await;
    }
}

// ---------------------------------------------------------------------------------------------
// The baseline

#[derive(Deserialize)]
struct OpenAiChunk<'a> {
    #[serde(borrow)]
    choices: Vec<OpenAiChoice<'a>>,
}

#[derive(Deserialize)]
struct OpenAiChoice<'a> {
    #[serde(borrow, default)]
    delta: Option<OpenAiDelta<'a>>,
}

#[derive(Deserialize)]
struct OpenAiDelta<'a> {
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct AnthropicChunk<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    delta: Option<AnthropicDelta<'a>>,
}

#[derive(Deserialize)]
struct AnthropicDelta<'a> {
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct GeminiChunk<'a> {
    #[serde(borrow, default)]
    candidates: Vec<GeminiCandidate<'a>>,
}

#[derive(Deserialize)]
struct GeminiCandidate<'a> {
    #[serde(borrow, default)]
    content: Option<GeminiContent<'a>>,
}

#[derive(Deserialize)]
struct GeminiContent<'a> {
    #[serde(borrow, default)]
    parts: Vec<GeminiPart<'a>>,
}

#[derive(Deserialize)]
struct GeminiPart<'a> {
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ResponsesEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    delta: Option<Cow<'a, str>>,
}

/// Append the text of one `data:` payload (the baseline's parse). A Gemini line still ends in
/// the `\r` of its `\r\n`: JSON whitespace, which serde_json skips.
pub fn baseline_line(wire: Wire, data: &[u8], text: &mut String) -> Result<(), Failure> {
    match wire {
        Wire::OpenAi => {
            if data == b"[DONE]" {
                return Ok(());
            }
            let chunk: OpenAiChunk<'_> = serde_json::from_slice(data)?;
            for choice in chunk.choices {
                if let Some(content) = choice.delta.and_then(|delta| delta.content) {
                    text.push_str(&content);
                }
            }
        }
        Wire::Anthropic => {
            let chunk: AnthropicChunk<'_> = serde_json::from_slice(data)?;
            if chunk.kind == "content_block_delta"
                && let Some(delta) = chunk.delta.and_then(|delta| delta.text)
            {
                text.push_str(&delta);
            }
        }
        Wire::Responses => {
            let event: ResponsesEvent<'_> = serde_json::from_slice(data)?;
            if event.kind == "response.output_text.delta"
                && let Some(delta) = event.delta
            {
                text.push_str(&delta);
            }
        }
        Wire::Gemini => {
            let chunk: GeminiChunk<'_> = serde_json::from_slice(data)?;
            for candidate in chunk.candidates {
                for part in candidate.content.into_iter().flat_map(|content| content.parts) {
                    if let Some(delta) = part.text {
                        text.push_str(&delta);
                    }
                }
            }
        }
    }
    Ok(())
}

/// The typed serde baseline: POST to `base` + the wire's path, read the body with reqwest,
/// split lines, parse each `data:` line once.
pub async fn baseline<F: Future<Output = ()>>(
    http: &reqwest::Client,
    base: &str,
    wire: Wire,
    mut gate: Option<F>,
) -> Result<String, Failure> {
    let mut response = http
        .post(format!("{base}{}", wire.path()))
        .header("content-type", "application/json")
        .body(wire.request())
        .send()
        .await?
        .error_for_status()?;
    let mut buf: Vec<u8> = Vec::new();
    let mut text = String::new();
    while let Some(chunk) = response.chunk().await? {
        buf.extend_from_slice(&chunk);
        let mut start = 0;
        while let Some(offset) = memchr::memchr(b'\n', &buf[start..]) {
            let line = &buf[start..start + offset];
            start += offset + 1;
            if let Some(data) = line.strip_prefix(b"data: ") {
                baseline_line(wire, data, &mut text)?;
            }
        }
        buf.drain(..start);
        if !text.is_empty() {
            pass(&mut gate).await;
        }
    }
    Ok(text)
}

// ---------------------------------------------------------------------------------------------
// patchbay

/// patchbay's providers for the server at `base`, one per wire.
pub struct Patchbay {
    /// `patchbay-openrouter` (OpenAI-compatible chat completions).
    pub openrouter: OpenRouterProvider,
    /// `patchbay-anthropic`.
    pub anthropic: AnthropicProvider,
    /// `patchbay-gemini` (the Gemini API, `{base}/v1beta`).
    pub gemini: GeminiProvider,
    /// `patchbay-openai` (OpenAI's Responses API, `{base}/v1`).
    pub openai: OpenAiProvider,
}

impl Patchbay {
    /// Providers pointed at `base` (`http://127.0.0.1:PORT`).
    pub fn new(base: &str) -> Self {
        Patchbay {
            openrouter: OpenRouterProvider::new(OpenRouterConfig::new(format!("{base}/v1")).with_api_key("bench"))
                .expect("openrouter provider"),
            anthropic: AnthropicProvider::new(AnthropicConfig::new("bench").with_base_url(base))
                .expect("anthropic provider"),
            gemini: GeminiProvider::new(GeminiConfig::new(format!("{base}/v1beta")).with_api_key("bench"))
                .expect("gemini provider"),
            openai: OpenAiProvider::new(OpenAiConfig::new(format!("{base}/v1")).with_api_key("bench"))
                .expect("openai provider"),
        }
    }

    /// The full provider path for `wire`.
    pub async fn read<F: Future<Output = ()>>(&self, wire: Wire, gate: Option<F>) -> Result<String, Failure> {
        match wire {
            Wire::OpenAi => provider_text(&self.openrouter, "bench", gate).await,
            Wire::Anthropic => provider_text(&self.anthropic, "claude-bench", gate).await,
            Wire::Gemini => provider_text(&self.gemini, GEMINI_MODEL, gate).await,
            Wire::Responses => provider_text(&self.openai, "bench", gate).await,
        }
    }
}

/// `create_response`, then every event; the text deltas joined. An error event fails.
pub async fn provider_text<F: Future<Output = ()>>(
    provider: &impl Provider,
    model: &str,
    mut gate: Option<F>,
) -> Result<String, Failure> {
    let messages = [Message::user("bench")];
    let mut stream = provider
        .create_response(&messages, &ToolSet::new(), model, &Signal::new(), None)
        .await?;
    let mut text = String::new();
    while let Some(event) = stream.next().await {
        if let Event::TextDelta { text: delta, .. } = event? {
            text.push_str(&delta);
            pass(&mut gate).await;
        }
    }
    Ok(text)
}

// ---------------------------------------------------------------------------------------------
// The peers

/// The peers' clients, each pointed at the server at `base`.
pub struct Peers {
    async_openai: async_openai::Client<async_openai::config::OpenAIConfig>,
    genai_openai: genai::Client,
    genai_anthropic: genai::Client,
    genai_gemini: genai::Client,
    genai_responses: genai::Client,
    rig_openai: rig_core::Model<rig_core::providers::openai::wire::Chat>,
    rig_anthropic: rig_core::Model<rig_core::providers::anthropic::wire::Messages>,
    rig_gemini: rig_core::Model<rig_core::providers::gemini::completion::GenerateContent>,
    rig_responses: rig_core::Model<rig_core::providers::openai::responses_api::wire::Responses>,
}

/// The peer libraries, by name and version (as locked in Cargo.lock).
pub const PEERS: [&str; 3] = ["async-openai 0.43.0", "genai 0.7.2", "rig-core 0.44.0"];

/// A genai client whose every target is the server at `base`: `{base}/v1/` for the OpenAI,
/// OpenAI Responses (`openai_resp`) and Anthropic adapters, `{base}/v1beta/` for Gemini's (its
/// path is `models/{model}:…`).
fn genai_client(base: &str, kind: genai::adapter::AdapterKind) -> genai::Client {
    let version = if kind == genai::adapter::AdapterKind::Gemini {
        "v1beta"
    } else {
        "v1"
    };
    let endpoint = format!("{base}/{version}/");
    let resolver = genai::resolver::ServiceTargetResolver::from_resolver_fn(
        move |target: genai::ServiceTarget| -> Result<genai::ServiceTarget, genai::resolver::Error> {
            Ok(genai::ServiceTarget {
                endpoint: genai::resolver::Endpoint::from_owned(endpoint.clone()),
                auth: genai::resolver::AuthData::from_single("bench"),
                model: genai::ModelIden::new(kind, target.model.model_name),
            })
        },
    );
    genai::Client::builder()
        .with_service_target_resolver(resolver)
        .build()
        .expect("genai client")
}

impl Peers {
    /// Clients for `base` (`http://127.0.0.1:PORT`).
    pub fn new(base: &str) -> Self {
        use rig_core::providers::{anthropic, gemini, openai};
        let async_openai = async_openai::Client::with_config(
            async_openai::config::OpenAIConfig::new()
                .with_api_base(format!("{base}/v1"))
                .with_api_key("bench"),
        );
        Peers {
            async_openai,
            genai_openai: genai_client(base, genai::adapter::AdapterKind::OpenAI),
            genai_anthropic: genai_client(base, genai::adapter::AdapterKind::Anthropic),
            genai_gemini: genai_client(base, genai::adapter::AdapterKind::Gemini),
            genai_responses: genai_client(base, genai::adapter::AdapterKind::OpenAIResp),
            rig_openai: openai::OpenAIConfig::new("bench")
                .with_base_url(format!("{base}/v1"))
                .client()
                .chat("bench"),
            rig_anthropic: anthropic::AnthropicConfig::new("bench")
                .with_base_url(base)
                .client()
                .completion("claude-bench"),
            rig_gemini: gemini::GeminiConfig::new("bench")
                .with_base_url(base)
                .client()
                .completion(GEMINI_MODEL),
            rig_responses: openai::OpenAIConfig::new("bench")
                .with_base_url(format!("{base}/v1"))
                .client()
                .responses("bench"),
        }
    }

    /// async-openai's `chat().create_stream` on the OpenAI wire, `responses().create_stream` on
    /// the Responses wire (it has no other).
    pub async fn async_openai(&self, wire: Wire) -> Result<String, Failure> {
        if wire == Wire::Responses {
            return self.async_openai_responses().await;
        }
        use async_openai::types::chat::{ChatCompletionRequestUserMessageArgs, CreateChatCompletionRequestArgs};
        let request = CreateChatCompletionRequestArgs::default()
            .model("bench")
            .messages([ChatCompletionRequestUserMessageArgs::default()
                .content("bench")
                .build()?
                .into()])
            .build()?;
        let mut stream = self.async_openai.chat().create_stream(request).await?;
        let mut text = String::new();
        while let Some(chunk) = stream.next().await {
            for choice in chunk?.choices {
                if let Some(content) = choice.delta.content {
                    text.push_str(&content);
                }
            }
        }
        Ok(text)
    }

    /// async-openai's `responses().create_stream`: every event typed, the text deltas joined.
    async fn async_openai_responses(&self) -> Result<String, Failure> {
        use async_openai::types::responses::{CreateResponseArgs, ResponseStreamEvent};
        let request = CreateResponseArgs::default().model("bench").input("bench").build()?;
        let mut stream = self.async_openai.responses().create_stream(request).await?;
        let mut text = String::new();
        while let Some(event) = stream.next().await {
            if let ResponseStreamEvent::ResponseOutputTextDelta(delta) = event? {
                text.push_str(&delta.delta);
            }
        }
        Ok(text)
    }

    /// genai's `exec_chat_stream` with its OpenAI, Anthropic, Gemini or OpenAI Responses
    /// (`openai_resp`) adapter.
    pub async fn genai(&self, wire: Wire) -> Result<String, Failure> {
        use genai::chat::{ChatMessage, ChatRequest, ChatStreamEvent};
        let (client, model) = match wire {
            Wire::OpenAi => (&self.genai_openai, "bench"),
            Wire::Anthropic => (&self.genai_anthropic, "claude-bench"),
            Wire::Gemini => (&self.genai_gemini, GEMINI_MODEL),
            Wire::Responses => (&self.genai_responses, "bench"),
        };
        let request = ChatRequest::new(vec![ChatMessage::user("bench")]);
        let mut stream = client.exec_chat_stream(model, request, None).await?.stream;
        let mut text = String::new();
        while let Some(event) = stream.next().await {
            if let ChatStreamEvent::Chunk(chunk) = event? {
                text.push_str(&chunk.content);
            }
        }
        Ok(text)
    }

    /// rig-core's `Model::stream` on its chat-completions, Messages, GenerateContent or
    /// Responses wire.
    pub async fn rig(&self, wire: Wire) -> Result<String, Failure> {
        use rig_core::completion::CompletionRequest;
        use rig_core::streaming::{Item, StreamEvent};
        let request = CompletionRequest::new("bench").max_tokens(1024);
        let mut stream = match wire {
            Wire::OpenAi => self.rig_openai.stream(request)?,
            Wire::Anthropic => self.rig_anthropic.stream(request)?,
            Wire::Gemini => self.rig_gemini.stream(request)?,
            Wire::Responses => self.rig_responses.stream(request)?,
        };
        let mut text = String::new();
        while let Some(item) = stream.next().await {
            if let Item::Event(StreamEvent::Text { text: delta, .. }) = item? {
                text.push_str(&delta);
            }
        }
        Ok(text)
    }
}
