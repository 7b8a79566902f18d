//! The live check (CONTRIBUTING, "Live checks"): `PATCHBAY_LIVE=1 cargo test --test live` runs the
//! shared scenarios a real model can answer against a real Ollama server (a local one needs no
//! key; `OLLAMA_API_KEY` for a hosted one), recording every call and validating every stream.
//! Without the switch the live trials are ignored and say why; `live_against_the_mock` runs the
//! same check against the `OllamaWire` mock in every build.

use std::sync::Arc;

use patchbay_conformance::live::{Live, run_live};
use patchbay_ollama::mock::OllamaWire;
use patchbay_ollama::{NAME, OllamaConfig, OllamaProvider, OllamaTranslator};

fn main() {
    let live = Live::new(NAME, "OLLAMA_API_KEY", "llama3.2", |setup| {
        let mut config = OllamaConfig::from_env()?.with_record_dir(&setup.record_dir);
        if !setup.key.expose().is_empty() {
            config = config.with_api_key(Some(setup.key.clone()));
        }
        if let Some(url) = &setup.base_url {
            config = config.with_base_url(url);
        }
        Ok(Arc::new(OllamaProvider::new(config)?))
    })
    .with_optional_key()
    .with_replay(|body| patchbay_core::kit::replay(|| OllamaTranslator::new("recorded", Vec::new()), [body]))
    .with_mock(OllamaWire);
    run_live(live)
}
