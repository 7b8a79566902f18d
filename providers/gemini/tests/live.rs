//! The opt-in live check (`cargo test -p patchbay-gemini --test live`): with `PATCHBAY_LIVE=1`
//! and `GEMINI_API_KEY` set, the shared scenarios a real model can answer run against the Gemini
//! API (`PATCHBAY_LIVE_MODEL`, default `gemini-2.5-flash`; another server of the same wire with
//! `PATCHBAY_LIVE_BASE_URL`, the part before `/models/`), every call recorded into
//! `PATCHBAY_LIVE_RECORD_DIR` (default: a new folder in the temp dir, printed), the validator on
//! every live stream and every recorded body. Without them the live trials are ignored and say
//! why. The `live_against_the_mock` trial always runs: the same check against the conformance
//! crate's Gemini mock. See `patchbay_conformance::live`.

use std::sync::Arc;

use patchbay_conformance::live::{Live, run_live};
use patchbay_conformance::mock::gemini::GeminiWire;
use patchbay_gemini::{GEMINI_BASE_URL, GeminiConfig, GeminiProvider, NAME};

fn main() {
    let live = Live::new(NAME, "GEMINI_API_KEY", "gemini-2.5-flash", |setup| {
        let base = match setup.base_url.as_deref() {
            // The mock answers any path: give it the Gemini API's layout.
            Some(url) if url.starts_with("http://127.0.0.1") => format!("{}/v1beta", url.trim_end_matches('/')),
            Some(url) => url.to_string(),
            None => GEMINI_BASE_URL.to_string(),
        };
        let config = GeminiConfig::new(base)
            .with_api_key(setup.key.expose())
            .with_record_dir(&setup.record_dir);
        Ok(Arc::new(GeminiProvider::new(config)?))
    })
    .with_replay(|body| patchbay_core::kit::replay(patchbay_gemini::Translator::default, [body]))
    .with_mock(GeminiWire);
    run_live(live)
}
