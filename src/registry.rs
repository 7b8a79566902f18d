//! Build a provider by name from configuration, among the providers compiled in.

use std::fmt;
use std::sync::Arc;

use patchbay_core::{Provider, ProviderError};
use serde_json::Value;

/// A function that builds a provider from JSON options.
pub type BuildFn = fn(&Value) -> Result<Arc<dyn Provider>, ProviderError>;

/// One provider a registry can build.
#[derive(Clone)]
pub struct ProviderFactory {
    /// The name hosts use (`anthropic`, `openrouter`...).
    pub name: &'static str,
    /// One line on what it is and which options it reads.
    pub description: &'static str,
    /// Builds it.
    pub build: BuildFn,
}

impl fmt::Debug for ProviderFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderFactory")
            .field("name", &self.name)
            .field("description", &self.description)
            .finish_non_exhaustive()
    }
}

/// The providers patchbay ships: registry name and the facade's cargo feature that compiles it in.
pub const KNOWN_PROVIDERS: [(&str, &str); 4] = [
    ("scripted", "scripted"),
    ("anthropic", "anthropic"),
    ("openrouter", "openrouter"),
    ("claude-agent", "claude-agent"),
];

/// Providers by name. [`Registry::compiled`] holds every provider whose cargo feature is on;
/// hosts can [`register`](Registry::register) their own.
///
/// ```
/// let registry = patchbay::Registry::compiled();
/// assert!(registry.names().contains(&"scripted"));
/// let provider = registry.build("scripted", &serde_json::json!({"text": "hi"})).unwrap();
/// assert_eq!(provider.info().name, "scripted");
/// let Err(err) = registry.build("nope", &serde_json::Value::Null) else { panic!("unknown name") };
/// assert!(err.to_string().contains("scripted"));
/// ```
#[derive(Debug, Clone, Default)]
pub struct Registry {
    factories: Vec<ProviderFactory>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every provider compiled into this build.
    pub fn compiled() -> Self {
        #[allow(unused_mut)]
        let mut registry = Self::new();
        #[cfg(feature = "scripted")]
        registry.register(ProviderFactory {
            name: "scripted",
            description: "deterministic scripted model; options: {\"script\": <Script JSON>} or {\"text\": \"...\"}",
            build: build_scripted,
        });
        #[cfg(feature = "anthropic")]
        registry.register(ProviderFactory {
            name: "anthropic",
            description: "Anthropic Messages API; options: api_key, auth_token, base_url, version, betas, headers, \
                          connect_timeout_ms, read_timeout_ms, request_timeout_ms, default_max_tokens \
                          (on top of ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL)",
            build: patchbay_anthropic::build,
        });
        #[cfg(feature = "openrouter")]
        registry.register(ProviderFactory {
            name: "openrouter",
            description: "OpenAI-compatible chat completions; OPENROUTER_API_KEY / OPENAI_API_KEY / OPENAI_BASE_URL, options override",
            build: build_openrouter,
        });
        #[cfg(feature = "claude-agent")]
        registry.register(ProviderFactory {
            name: "claude-agent",
            description: "the Claude Code CLI as an agent runtime; PATCHBAY_CLAUDE_CLI or PATH, options override",
            build: patchbay_claude_agent::build,
        });
        registry
    }

    /// Add a factory; a later factory with the same name replaces the earlier one.
    pub fn register(&mut self, factory: ProviderFactory) {
        self.factories.retain(|f| f.name != factory.name);
        self.factories.push(factory);
    }

    /// The names it can build, in registration order.
    pub fn names(&self) -> Vec<&'static str> {
        self.factories.iter().map(|f| f.name).collect()
    }

    /// The factories.
    pub fn factories(&self) -> &[ProviderFactory] {
        &self.factories
    }

    /// The cargo feature of the `patchbay` facade that compiles in the provider `name`, for the
    /// providers patchbay ships ([`KNOWN_PROVIDERS`]).
    pub fn feature_for(name: &str) -> Option<&'static str> {
        KNOWN_PROVIDERS
            .iter()
            .find(|(known, _)| *known == name)
            .map(|(_, feature)| *feature)
    }

    /// Build the provider `name` with `options`. A name this registry lacks is a `Config` error
    /// that lists what is compiled in, and for a provider patchbay ships, which cargo feature
    /// adds it.
    pub fn build(&self, name: &str, options: &Value) -> Result<Arc<dyn Provider>, ProviderError> {
        if let Some(factory) = self.factories.iter().find(|f| f.name == name) {
            return (factory.build)(options);
        }
        let compiled = self.names().join(", ");
        Err(ProviderError::config(match Self::feature_for(name) {
            Some(feature) => format!(
                "provider `{name}` is not compiled into this build: enable the cargo feature `{feature}` \
                 of patchbay; compiled in: {compiled}"
            ),
            None => format!("unknown provider `{name}`; compiled in: {compiled}"),
        }))
    }
}

#[cfg(feature = "scripted")]
fn build_scripted(options: &Value) -> Result<Arc<dyn Provider>, ProviderError> {
    use patchbay_scripted::{Script, ScriptedProvider};
    if let Some(script) = options.get("script") {
        let script: Script = serde_json::from_value(script.clone())
            .map_err(|e| ProviderError::config(format!("invalid scripted `script` option: {e}")))?;
        return Ok(Arc::new(ScriptedProvider::new(script)));
    }
    let text = options
        .get("text")
        .and_then(Value::as_str)
        .unwrap_or("Hello from the scripted provider.");
    Ok(Arc::new(ScriptedProvider::always(text)))
}

#[cfg(feature = "openrouter")]
fn build_openrouter(options: &Value) -> Result<Arc<dyn Provider>, ProviderError> {
    Ok(Arc::new(patchbay_openrouter::OpenRouterProvider::from_options(
        options,
    )?))
}
