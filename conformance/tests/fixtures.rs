//! The recorded fixtures inside the crate: the manifest, the files and the notice agree, so every
//! file has a known source and licence, and the tests of every provider find them here.

use std::collections::BTreeSet;

use patchbay_conformance::fixtures::{self, ManifestEntry};

const FAMILIES: [&str; 6] = [
    "anthropic",
    "gemini",
    "openai-chat",
    "openai-compatible",
    "openai-responses",
    "openrouter",
];

fn manifest() -> Vec<ManifestEntry> {
    fixtures::manifest().unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_fixture_file_is_in_the_manifest_and_every_entry_exists() {
    let listed: BTreeSet<String> = manifest().into_iter().map(|entry| entry.local_path).collect();
    let on_disk: BTreeSet<String> = FAMILIES
        .into_iter()
        .flat_map(fixtures::files)
        .map(|path| fixtures::relative_name(&path))
        .collect();
    assert!(
        on_disk.len() >= 250,
        "expected the recorded fixtures, found {}",
        on_disk.len()
    );
    let unlisted: Vec<_> = on_disk.difference(&listed).collect();
    let missing: Vec<_> = listed.difference(&on_disk).collect();
    assert!(unlisted.is_empty(), "files without a MANIFEST.tsv line: {unlisted:?}");
    assert!(missing.is_empty(), "MANIFEST.tsv lines without a file: {missing:?}");
}

#[test]
fn every_source_has_a_licence_and_a_notice_entry() {
    let notice = std::fs::read_to_string(fixtures::root().join("NOTICE")).expect("NOTICE");
    let licences = fixtures::root().join("LICENSES");
    for entry in manifest() {
        let name = &entry.local_path;
        assert!(
            matches!(entry.license.as_str(), "MIT" | "Apache-2.0" | "MIT OR Apache-2.0"),
            "{name}: licence `{}` is not one the NOTICE covers",
            entry.license
        );
        assert_eq!(
            entry.commit.len(),
            40,
            "{name}: commit `{}` is not a full hash",
            entry.commit
        );
        let block = notice
            .split("\n\n")
            .find(|block| block.lines().next() == Some(entry.source_repo.as_str()))
            .unwrap_or_else(|| panic!("{name}: NOTICE has no entry for {}", entry.source_repo));
        assert!(
            block.contains(&entry.commit),
            "{name}: NOTICE names another commit of {}",
            entry.source_repo
        );
        assert!(
            block.contains("Copyright"),
            "{name}: NOTICE entry has no copyright line"
        );
        let file = block
            .split(['(', ')'])
            .find(|part| part.starts_with("LICENSES/"))
            .unwrap_or_else(|| panic!("{name}: NOTICE entry names no licence file"));
        assert!(
            licences.join(file.trim_start_matches("LICENSES/")).is_file(),
            "{name}: {file} is missing"
        );
        let family = name.split('/').next().unwrap_or_default();
        assert!(FAMILIES.contains(&family), "{name}: unknown family `{family}`");
    }
}
