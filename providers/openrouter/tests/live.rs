//! The opt-in live check (`cargo test -p patchbay-openrouter --test live`): with
//! `PATCHBAY_LIVE=1` and `OPENROUTER_API_KEY` set, the shared scenarios a real model can answer
//! run against OpenRouter (`PATCHBAY_LIVE_MODEL`, default `openai/gpt-4o-mini`; another server
//! of the OpenRouter dialect with `PATCHBAY_LIVE_BASE_URL`), every call recorded into
//! `PATCHBAY_LIVE_RECORD_DIR` (default: a new folder in the temp dir, printed), the validator on
//! every live stream and every recorded body. Without them the live trials are ignored and say
//! why. The `live_against_the_mock` trial always runs: the same check against the conformance
//! crate's chat-completions mock, pointed at by `PATCHBAY_LIVE_BASE_URL`. See
//! `patchbay_conformance::live`.

use std::sync::Arc;

use patchbay_conformance::live::{Live, run_live};
use patchbay_conformance::mock::openai::OpenAiWire;
use patchbay_openrouter::{Dialect, NAME, OPENROUTER_BASE_URL, OpenRouterConfig, OpenRouterProvider};

fn main() {
    let live = Live::new(NAME, "OPENROUTER_API_KEY", "openai/gpt-4o-mini", |setup| {
        // Another base URL is another server of the same dialect (its recordings go to the
        // `openrouter` family too).
        let config = OpenRouterConfig::new(setup.base_url.as_deref().unwrap_or(OPENROUTER_BASE_URL))
            .with_dialect(Dialect::OpenRouter)
            .with_api_key(setup.key.expose())
            .with_record_dir(&setup.record_dir);
        Ok(Arc::new(OpenRouterProvider::new(config)?))
    })
    .with_replay(|body| patchbay_core::kit::replay(patchbay_openrouter::translate::Translator::default, [body]))
    .with_mock(OpenAiWire);
    run_live(live)
}
