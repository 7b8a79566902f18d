//! The opt-in live check (`cargo test -p patchbay-openai --test live`): with `PATCHBAY_LIVE=1`
//! and `OPENAI_API_KEY` set, the shared scenarios a real model can answer run against
//! OpenAI's API (`PATCHBAY_LIVE_MODEL`, default `gpt-5-mini`; another server of the same wire with
//! `PATCHBAY_LIVE_BASE_URL`, the part before `/responses`), every call recorded into
//! `PATCHBAY_LIVE_RECORD_DIR` (default: a new folder in the temp dir, printed), the validator on
//! every live stream and every recorded body. Without them the live trials are ignored and say
//! why. The `live_against_the_mock` trial always runs: the same check against the conformance
//! crate's Responses mock. See `patchbay_conformance::live`.

use std::sync::Arc;

use patchbay_conformance::live::{Live, run_live};
use patchbay_conformance::mock::openai_responses::ResponsesWire;
use patchbay_openai::{NAME, OPENAI_BASE_URL, OpenAiConfig, OpenAiProvider};

fn main() {
    let live = Live::new(NAME, "OPENAI_API_KEY", "gpt-5-mini", |setup| {
        let base = match setup.base_url.as_deref() {
            // The mock answers any path: give it OpenAI's layout.
            Some(url) if url.starts_with("http://127.0.0.1") => format!("{}/v1", url.trim_end_matches('/')),
            Some(url) => url.to_string(),
            None => OPENAI_BASE_URL.to_string(),
        };
        let config = OpenAiConfig::new(base)
            .with_api_key(setup.key.expose())
            .with_record_dir(&setup.record_dir);
        Ok(Arc::new(OpenAiProvider::new(config)?))
    })
    .with_replay(|body| patchbay_core::kit::replay(patchbay_openai::Translator::default, [body]))
    .with_mock(ResponsesWire::new());
    run_live(live)
}
