//! Snapshot settings: goldens live at a fixed path inside this crate, shared by every provider.

use std::path::PathBuf;

/// The directory holding every golden of this crate.
pub fn snapshot_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("snapshots")
}

/// Settings for shared-scenario goldens (`snapshots/scenarios/<scenario>.snap`).
pub fn scenario_settings() -> insta::Settings {
    settings_in("scenarios")
}

/// Settings for goldens in `snapshots/<folder>`, named only by the snapshot name.
pub fn settings_in(folder: &str) -> insta::Settings {
    settings_at(snapshot_root().join(folder))
}

/// Settings for snapshots in `dir`, named only by the snapshot name (no module prefix, no
/// expression in the file), with JSON object keys sorted: serde_json keeps insertion order
/// when any crate of the build turns on its `preserve_order` (the ACP SDK does), so a
/// snapshot must not depend on it.
pub fn settings_at(dir: PathBuf) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_sort_maps(true);
    settings.set_snapshot_path(dir);
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings
}

/// `tests/snapshots/<folder>` of the crate whose tests run (cargo sets `CARGO_MANIFEST_DIR`
/// for them); `None` outside cargo.
pub(crate) fn callers_snapshots(folder: &str) -> Option<PathBuf> {
    std::env::var_os("CARGO_MANIFEST_DIR").map(|dir| PathBuf::from(dir).join("tests/snapshots").join(folder))
}

/// Split `data` at pseudo-random byte boundaries (deterministic for a seed); chunk sizes are
/// 1 to `max_chunk` bytes. Multi-byte characters and lines get cut anywhere.
pub fn split_randomly(data: &[u8], seed: u64, max_chunk: usize) -> Vec<Vec<u8>> {
    let mut state = seed ^ 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        // splitmix64
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let max_chunk = max_chunk.max(1) as u64;
    let mut chunks = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let size = (1 + next() % max_chunk) as usize;
        let (head, tail) = rest.split_at(size.min(rest.len()));
        chunks.push(head.to_vec());
        rest = tail;
    }
    chunks
}
