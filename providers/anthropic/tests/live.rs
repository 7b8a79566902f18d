//! The opt-in live check (`cargo test -p patchbay-anthropic --test live`): with
//! `PATCHBAY_LIVE=1` and `ANTHROPIC_API_KEY` set, the shared scenarios a real model can answer
//! run against the Messages API (`PATCHBAY_LIVE_MODEL`, default `claude-haiku-4-5`; another
//! server with `PATCHBAY_LIVE_BASE_URL`), every call recorded into `PATCHBAY_LIVE_RECORD_DIR`
//! (default: a new folder in the temp dir, printed), the validator on every live stream and
//! every recorded body. Without them the live trials are ignored and say why. The
//! `live_against_the_mock` trial always runs: the same check against the conformance crate's
//! Messages mock, pointed at by `PATCHBAY_LIVE_BASE_URL`. See `patchbay_conformance::live`.

use std::sync::Arc;

use patchbay_anthropic::{AnthropicConfig, AnthropicProvider, NAME};
use patchbay_conformance::live::{Live, run_live};
use patchbay_conformance::mock::anthropic::AnthropicWire;

fn main() {
    let live = Live::new(NAME, "ANTHROPIC_API_KEY", "claude-haiku-4-5", |setup| {
        let mut config = AnthropicConfig::new(setup.key.expose()).with_record_dir(&setup.record_dir);
        if let Some(url) = &setup.base_url {
            config = config.with_base_url(url);
        }
        Ok(Arc::new(AnthropicProvider::new(config)?))
    })
    .with_replay(|body| patchbay_core::kit::replay(patchbay_anthropic::Translator::new, [body]))
    .with_mock(AnthropicWire);
    run_live(live)
}
