//! [`ProviderFactory`]: how a provider crate offers itself to a registry.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::error::ProviderError;
use crate::provider::Provider;

/// Builds a provider from JSON options (the crate's `XConfig::from_options`, then
/// `XProvider::new`).
pub type BuildFn = fn(&Value) -> Result<Arc<dyn Provider>, ProviderError>;

/// One provider a registry can build by name. Every provider crate exports one from
/// `pub fn factory() -> ProviderFactory`; the facade's `Registry` lists them.
///
/// ```
/// use std::sync::Arc;
/// use patchbay_core::{ProviderError, ProviderFactory};
/// fn build(_: &serde_json::Value) -> Result<Arc<dyn patchbay_core::Provider>, ProviderError> {
///     Err(ProviderError::config("not configured"))
/// }
/// let factory = ProviderFactory::new("mine", "my provider; options: none", build);
/// assert_eq!(factory.name, "mine");
/// assert!(factory.build(&serde_json::Value::Null).is_err());
/// ```
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct ProviderFactory {
    /// The name hosts use (`anthropic`, `openrouter`...): the crate's `NAME`.
    pub name: &'static str,
    /// One line on what it is and which options it reads.
    pub description: &'static str,
    /// Builds it.
    pub build_fn: BuildFn,
}

impl ProviderFactory {
    /// A factory named `name`.
    pub const fn new(name: &'static str, description: &'static str, build_fn: BuildFn) -> Self {
        Self {
            name,
            description,
            build_fn,
        }
    }

    /// Builds the provider from JSON options.
    pub fn build(&self, options: &Value) -> Result<Arc<dyn Provider>, ProviderError> {
        (self.build_fn)(options)
    }
}

impl fmt::Debug for ProviderFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderFactory")
            .field("name", &self.name)
            .field("description", &self.description)
            .finish_non_exhaustive()
    }
}
