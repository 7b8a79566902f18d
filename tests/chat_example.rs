use std::path::PathBuf;
use std::process::Command;

use patchbay::Event;

/// The chat example binary, built by `cargo test` next to this test's binary.
fn chat_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?.parent()?;
    let path = dir
        .join("examples")
        .join(format!("chat{}", std::env::consts::EXE_SUFFIX));
    path.exists().then_some(path)
}

fn run_chat(args: &[&str]) -> Option<(String, String, bool)> {
    let Some(binary) = chat_binary() else {
        assert!(std::env::var_os("CI").is_none(), "the chat example was not built");
        eprintln!("skipping: build the chat example first (cargo test builds it)");
        return None;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("notes.md"), "# notes\n").expect("write");
    std::fs::create_dir(dir.path().join("src")).expect("mkdir");
    let output = Command::new(binary)
        .args(args)
        .current_dir(dir.path())
        .output()
        .expect("chat runs");
    Some((
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        output.status.success(),
    ))
}

#[test]
fn chat_json_prints_one_valid_event_per_line() {
    let Some((stdout, stderr, ok)) = run_chat(&["--json", "what is in this folder?"]) else {
        return;
    };
    assert!(ok, "{stderr}");
    let events: Vec<Event> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not an event: {line}: {e}")))
        .collect();
    patchbay::validate(events.iter().map(Ok)).expect("the lifecycle validator accepts the run");
    let listing = events.iter().find_map(|e| match e {
        Event::ToolResult { name, result, .. } if name == "read" => Some(result.text_content()),
        _ => None,
    });
    let listing = listing.expect("a real tool result");
    assert!(listing.contains("notes.md") && listing.contains("src/"), "{listing}");
}

#[test]
fn chat_streams_text_tools_and_a_usage_line_offline() {
    let Some((stdout, stderr, ok)) = run_chat(&["what is in this folder?"]) else {
        return;
    };
    assert!(ok, "{stderr}");
    assert!(stderr.contains("offline"), "{stderr}");
    assert!(stdout.contains("→ read"), "{stdout}");
    assert!(stdout.contains("notes.md"), "{stdout}");
    assert!(
        stdout.lines().last().is_some_and(|l| l.starts_with("[Stop | usage:")),
        "{stdout}"
    );
}

#[test]
fn chat_names_the_compiled_providers_for_an_unknown_one() {
    let Some((_, stderr, ok)) = run_chat(&["--provider", "nope", "hi"]) else {
        return;
    };
    assert!(!ok);
    assert!(
        stderr.contains("unknown provider `nope`") && stderr.contains("scripted"),
        "{stderr}"
    );
}
