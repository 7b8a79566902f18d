//! The conformance target both test binaries use: `OllamaProvider` pointed at a loopback mock
//! speaking `OllamaWire` that serves the case's script.

use std::sync::Arc;

use patchbay_conformance::{Fixture, Target};
use patchbay_ollama::mock::OllamaWire;
use patchbay_ollama::{OllamaConfig, OllamaProvider};

/// The target named `ollama` (without chunkings or baseline: the callers add them).
pub(crate) fn target() -> Target {
    Target::new("ollama", |case| async move {
        let server = case.mock(OllamaWire).await?;
        let config = OllamaConfig::default().with_base_url(server.url());
        let provider = Arc::new(OllamaProvider::new(config)?);
        Ok(Fixture::new(provider).with_guard(server))
    })
}
