//! The shared conformance scenarios against `OllamaProvider`, served by a loopback mock speaking
//! Ollama's `/api/chat` JSON lines (`OllamaWire`), one write per line and at random byte cuts.

mod target;

use patchbay_conformance::mock::Chunking;
use patchbay_conformance::run_suite;

fn main() {
    let target = target::target()
        .with_chunkings([Chunking::PerFrame, Chunking::Random { seed: 7, max: 17 }])
        .with_baseline_file(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance-baseline.toml"));
    run_suite(target)
}
