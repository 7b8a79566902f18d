//! [`OllamaProvider`]: the thin I/O around the request plan and the translator.

use patchbay_core::kit::redact_url;
use patchbay_core::{
    Capabilities, EventStream, Message, Provider, ProviderError, ProviderInfo, RequestContext, Signal, ToolSet,
    async_trait,
};
use patchbay_http::record::Recorder;
use patchbay_http::{Call, Prepared, reqwest};

use crate::NAME;
use crate::config::{OllamaConfig, normalize_host};
use crate::error::Error;
use crate::request::plan;
use crate::translate::OllamaTranslator;

/// An Ollama server's `/api/chat` as a patchbay [`Provider`]: streaming, reasoning (`think`),
/// images, host tools. Configured once, shared by any number of calls.
///
/// ```
/// use patchbay_core::Provider;
/// use patchbay_ollama::{OllamaConfig, OllamaProvider};
/// let provider = OllamaProvider::new(OllamaConfig::default()).expect("a client");
/// assert_eq!(provider.info().name, "ollama");
/// ```
pub struct OllamaProvider {
    config: OllamaConfig,
    endpoint: String,
    client: reqwest::Client,
    info: ProviderInfo,
    recorder: Option<Recorder>,
}

impl std::fmt::Debug for OllamaProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OllamaProvider")
            .field("endpoint", &redact_url(&self.endpoint))
            .field("config", &self.config)
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl OllamaProvider {
    /// A provider for this configuration: checks the base URL and builds the HTTP client
    /// (redirects are never followed). The only constructor.
    pub fn new(config: OllamaConfig) -> Result<Self, ProviderError> {
        let base = normalize_host(config.base_url(), "the configured base_url")?;
        let mut builder = patchbay_http::client_builder();
        if let Some(timeout) = config.connect_timeout() {
            builder = builder.connect_timeout(timeout);
        }
        let client = builder.build().map_err(|source| Error::Client { source })?;
        let capabilities = Capabilities::none().with_streaming().with_reasoning().with_images();
        let recorder = config.record_dir().map(|dir| {
            let recorder =
                Recorder::new(dir, NAME).with_recorded_by(concat!("patchbay-ollama ", env!("CARGO_PKG_VERSION")));
            match config.api_key() {
                Some(key) => recorder.with_secret(key.expose()),
                None => recorder,
            }
        });
        Ok(Self {
            endpoint: format!("{base}/api/chat"),
            config,
            client,
            info: ProviderInfo::new(NAME, capabilities),
            recorder,
        })
    }

    /// The configuration it was built with.
    pub fn config(&self) -> &OllamaConfig {
        &self.config
    }
}

#[async_trait]
impl Provider for OllamaProvider {
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
        Call::new(NAME, messages, model, signal, context)
            .with_limits(*self.config.limits())
            .with_recorder(self.recorder.as_ref())
            .requiring_user_last()
            .run(|| {
                let plan = plan(messages, tools, model, context)?;
                let wire = OllamaTranslator::new(model, plan.warnings).with_first_call(plan.first_call);
                let mut request = self.client.post(&self.endpoint);
                if let Some(key) = self.config.api_key() {
                    request = request.bearer_auth(key.expose());
                }
                Prepared::json(request, &plan.body, wire)
            })
            .await
    }
}

/// The factory a registry lists: builds an [`OllamaProvider`] from JSON options (see the crate
/// docs' `# Options`) on top of the environment.
///
/// ```
/// let factory = patchbay_ollama::factory();
/// assert_eq!(factory.name, "ollama");
/// assert!(factory.build(&serde_json::json!({"colour": "blue"})).is_err());
/// ```
pub fn factory() -> patchbay_core::ProviderFactory {
    patchbay_core::ProviderFactory::new(
        NAME,
        "Ollama's native /api/chat (local or hosted); options: base_url, api_key, read_timeout_ms, \
         content_timeout_ms, connect_timeout_ms, max_line_bytes, record_dir (on top of OLLAMA_HOST, OLLAMA_API_KEY, \
         PATCHBAY_RECORD_DIR)",
        build,
    )
}

fn build(
    options: &serde_json::Value,
) -> Result<std::sync::Arc<dyn patchbay_core::Provider>, patchbay_core::ProviderError> {
    Ok(std::sync::Arc::new(OllamaProvider::new(OllamaConfig::from_options(
        options,
    )?)?))
}
