//! The layout: a call's file names, stems, extensions, and the listing of a family folder.

use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use patchbay_fixtures::{CallFiles, DEFAULT_SOURCE, body_extension, files_in, path_in, relative_name, stem, utc_time};

#[test]
fn a_stem_has_the_time_the_model_and_a_number() {
    let time = UNIX_EPOCH + Duration::from_secs(1_735_787_045);
    let stem = stem(time, "openai/gpt-4o mini", 3);
    assert!(stem.starts_with("20250102T030405Z_openai-gpt-4o-mini_"), "{stem}");
    assert!(stem.ends_with("-3"), "{stem}");
    assert_eq!(utc_time(time), "2025-01-02T03:04:05Z");
}

#[test]
fn a_stem_names_an_empty_model_and_cuts_a_long_one() {
    let time = UNIX_EPOCH;
    assert!(stem(time, "", 1).starts_with("19700101T000000Z_model_"));
    let long = stem(time, &"m".repeat(100), 1);
    assert!(long.contains(&format!("_{}_", "m".repeat(64))), "{long}");
}

#[test]
fn the_extension_follows_the_content_type() {
    assert_eq!(body_extension(Some("text/event-stream; charset=utf-8"), true), "sse");
    assert_eq!(body_extension(Some("application/json"), false), "json");
    assert_eq!(body_extension(Some("application/x-ndjson"), true), "jsonl");
    assert_eq!(body_extension(None, true), "sse");
    assert_eq!(body_extension(Some("text/html"), false), "txt");
}

#[test]
fn a_call_keeps_its_body_beside_the_fixtures_and_its_request_apart() {
    let files = CallFiles::new("openrouter", DEFAULT_SOURCE, "s");
    assert_eq!(files.stem(), "s");
    assert_eq!(files.body("json"), "openrouter/recorded/s.json");
    assert_eq!(files.request(), "requests/openrouter/recorded/s.json");
    let dir = Path::new("/tmp/rec");
    assert_eq!(
        path_in(dir, &files.body("json")),
        dir.join("openrouter").join("recorded").join("s.json")
    );
    assert_eq!(relative_name(dir, &path_in(dir, &files.request())), files.request());
}

#[test]
fn a_family_folder_lists_the_files_of_its_sources_only() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let family = dir.path().join("anthropic");
    for file in ["recorded/b.sse", "recorded/a.json", "ai/c.sse", "ai/deeper/d.sse"] {
        let path = path_in(&family, file);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("folders");
        std::fs::write(&path, b"x").expect("a file");
    }
    std::fs::write(family.join("loose.sse"), b"x").expect("a loose file");
    let names: Vec<String> = files_in(&family)
        .iter()
        .map(|path| relative_name(dir.path(), path))
        .collect();
    assert_eq!(
        names,
        [
            "anthropic/ai/c.sse",
            "anthropic/recorded/a.json",
            "anthropic/recorded/b.sse"
        ]
    );
    assert!(files_in(&dir.path().join("missing")).is_empty());
}
