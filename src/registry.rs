//! Build a provider by name from configuration, among the providers compiled in.

use std::sync::Arc;

use patchbay_core::{Provider, ProviderError, ProviderFactory};
use serde_json::Value;

/// The providers patchbay ships: registry name and the facade's cargo feature that compiles it in.
pub const KNOWN_PROVIDERS: [(&str, &str); 7] = [
    ("scripted", "scripted"),
    ("anthropic", "anthropic"),
    ("openrouter", "openrouter"),
    ("claude-agent", "claude-agent"),
    ("gemini", "gemini"),
    ("openai", "openai"),
    ("acp", "acp"),
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
        registry.register(patchbay_scripted::factory());
        #[cfg(feature = "anthropic")]
        registry.register(patchbay_anthropic::factory());
        #[cfg(feature = "openrouter")]
        registry.register(patchbay_openrouter::factory());
        #[cfg(feature = "claude-agent")]
        registry.register(patchbay_claude_agent::factory());
        #[cfg(feature = "gemini")]
        registry.register(patchbay_gemini::factory());
        #[cfg(feature = "openai")]
        registry.register(patchbay_openai::factory());
        #[cfg(feature = "acp")]
        registry.register(patchbay_acp::factory());
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
            return factory.build(options);
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
