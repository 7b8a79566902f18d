//! Blueprints loaded from the fixture files under `tests/blueprints/`.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use patchbay::context::McpTransport;
use patchbay_orchestrator::blueprint::{
    Blueprint, BlueprintError, BlueprintStatus, Blueprints, DEFAULT_BLUEPRINT, DEFAULT_TOOLS,
};
use serde_json::json;

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/blueprints")
        .join(path)
}

fn names<'a>(blueprints: impl Iterator<Item = &'a Blueprint>) -> Vec<String> {
    blueprints.map(|b| b.name.clone()).collect()
}

#[test]
fn folder_loads_both_file_shapes_and_skips_other_files() {
    let blueprints = Blueprints::load_dir(&fixture("good")).unwrap();
    assert_eq!(names(blueprints.all()), ["coder", "default", "old-helper", "reviewer"]);
    assert_eq!(blueprints.len(), 4);
    assert_eq!(
        blueprints.source("reviewer"),
        Some(fixture("good/reviewer.toml").as_path())
    );
    assert_eq!(blueprints.source("coder"), Some(fixture("good/team.toml").as_path()));
}

#[test]
fn single_file_shape_reads_every_field() {
    let blueprints = Blueprints::load_file(&fixture("good/reviewer.toml")).unwrap();
    let reviewer = blueprints.get("reviewer").unwrap();
    assert_eq!(reviewer.description, "Reviews a diff and lists the problems it finds.");
    assert_eq!(reviewer.provider, "anthropic");
    assert_eq!(reviewer.model, "claude-sonnet-4-5");
    assert_eq!(reviewer.system.as_deref(), Some("You review code. Be brief."));
    assert_eq!(reviewer.tools, ["read", "glob", "grep"]);
    assert_eq!(reviewer.max_steps, Some(20));
    assert_eq!(
        reviewer.provider_options,
        json!({"max_tokens": 4096, "thinking": {"budget_tokens": 1024}})
    );
    assert_eq!(reviewer.status, BlueprintStatus::Active);
    assert_eq!(reviewer.mcp_servers.len(), 1);
    assert_eq!(reviewer.mcp_servers[0].name, "github");
    match &reviewer.mcp_servers[0].transport {
        McpTransport::Http { url, headers } => {
            assert_eq!(url, "https://example.invalid/mcp");
            assert_eq!(headers["X-Agent-Session-Name"], "reviewer");
        }
        other => panic!("expected http, got {other:?}"),
    }
}

#[test]
fn many_file_shape_reads_defaults_and_retired_status() {
    let blueprints = Blueprints::load_file(&fixture("good/team.toml")).unwrap();
    let coder = blueprints.get("coder").unwrap();
    assert!(coder.tools.iter().any(|t| t == "bash"));
    assert_eq!(coder.system, None);
    assert_eq!(coder.max_steps, None);
    assert_eq!(coder.provider_options, json!({}));
    let old = blueprints.get("old-helper").unwrap();
    assert_eq!(old.status, BlueprintStatus::Retired);
    assert_eq!(old.tools, DEFAULT_TOOLS);
    assert!(matches!(
        &old.mcp_servers[0].transport,
        McpTransport::Stdio { command, args, .. } if command == "my-mcp" && args == &["--quiet"]
    ));
}

#[test]
fn tools_left_out_are_the_file_tools_without_bash() {
    let blueprints = Blueprints::load_file(&fixture("good/team.toml")).unwrap();
    let tools = &blueprints.get("old-helper").unwrap().tools;
    assert_eq!(tools, &["read", "write", "edit", "glob", "grep"]);
    assert!(!tools.iter().any(|t| t == "bash"));
}

#[test]
fn active_leaves_out_retired_blueprints() {
    let blueprints = Blueprints::load_dir(&fixture("good")).unwrap();
    assert_eq!(names(blueprints.active()), ["coder", "default", "reviewer"]);
    assert!(blueprints.get("old-helper").is_some());
}

#[test]
fn builtin_default_is_scripted_and_present_without_a_folder() {
    let blueprints = Blueprints::new();
    let default = blueprints.default_blueprint();
    assert_eq!(default.name, DEFAULT_BLUEPRINT);
    assert_eq!(default.provider, "scripted");
    assert_eq!(default.status, BlueprintStatus::Active);
    assert!(default.tools.is_empty());
    assert_eq!(blueprints.get("default"), Some(default));
    assert_eq!(blueprints.source("default"), None);
    assert_eq!(names(blueprints.active()), ["default"]);
}

#[test]
fn folder_default_replaces_the_builtin_one() {
    let blueprints = Blueprints::load_dir(&fixture("override")).unwrap();
    let default = blueprints.default_blueprint();
    assert_eq!(
        default.description,
        "Our default: a scripted answer that names the team."
    );
    assert_eq!(default.provider_options, json!({"text": "The team default answered."}));
    assert_eq!(
        blueprints.source("default"),
        Some(fixture("override/default.toml").as_path())
    );
    assert_eq!(names(blueprints.all()), ["default", "other"]);
}

#[test]
fn duplicate_names_across_files_are_refused_naming_both_files() {
    let err = Blueprints::load_dir(&fixture("duplicate")).unwrap_err();
    let BlueprintError::Duplicate { name, first, second } = &err else {
        panic!("expected a duplicate, got {err:?}");
    };
    assert_eq!(name, "same");
    assert_eq!(first, &fixture("duplicate/a.toml"));
    assert_eq!(second, &fixture("duplicate/b.toml"));
    let message = err.to_string();
    assert!(message.contains("a.toml") && message.contains("b.toml"), "{message}");
    assert!(message.contains("`same`"), "{message}");
}

#[test]
fn duplicate_names_in_one_file_are_refused() {
    let err = Blueprints::load_file(&fixture("bad/duplicate_in_file.toml")).unwrap_err();
    assert!(
        matches!(&err, BlueprintError::Duplicate { name, .. } if name == "twice"),
        "{err:?}"
    );
}

#[test]
fn toml_syntax_error_names_the_file_and_line() {
    let path = fixture("bad/syntax.toml");
    let err = Blueprints::load_file(&path).unwrap_err();
    let BlueprintError::Parse {
        path: at,
        line,
        message,
        ..
    } = &err
    else {
        panic!("expected a parse error, got {err:?}");
    };
    assert_eq!(at, &path);
    assert_eq!(*line, Some(3));
    assert!(!message.is_empty());
    assert!(err.to_string().contains("syntax.toml:3: "), "{err}");
}

#[test]
fn unknown_field_is_refused_with_its_line() {
    let err = Blueprints::load_file(&fixture("bad/unknown_field.toml")).unwrap_err();
    let BlueprintError::Parse { line, message, .. } = &err else {
        panic!("expected a parse error, got {err:?}");
    };
    assert_eq!(*line, Some(4));
    assert!(message.contains("max_step"), "{message}");
}

#[test]
fn invalid_blueprint_name_is_refused_with_the_rule() {
    let err = Blueprints::load_file(&fixture("bad/bad_name.toml")).unwrap_err();
    assert!(matches!(err, BlueprintError::InvalidName { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("bad_name.toml"), "{message}");
    assert!(message.contains("`has space`"), "{message}");
    assert!(message.contains("1 to 60 characters"), "{message}");
}

#[test]
fn empty_provider_is_refused() {
    let err = Blueprints::load_file(&fixture("bad/empty_provider.toml")).unwrap_err();
    assert!(
        matches!(&err, BlueprintError::EmptyProvider { name, .. } if name == "nobody"),
        "{err:?}"
    );
}

#[test]
fn unknown_provider_is_left_for_the_registry() {
    let blueprints = Blueprints::load_file(&fixture("unknown_provider.toml")).unwrap();
    assert_eq!(
        blueprints.get("future").unwrap().provider,
        "some-provider-not-compiled-in"
    );
}

#[test]
fn unknown_tool_is_refused_naming_it() {
    let err = Blueprints::load_file(&fixture("bad/unknown_tool.toml")).unwrap_err();
    assert!(
        matches!(&err, BlueprintError::UnknownTool { tool, .. } if tool == "shell"),
        "{err:?}"
    );
    assert!(err.to_string().contains("`shell`"));
}

#[test]
fn provider_options_must_be_a_table() {
    let err = Blueprints::load_file(&fixture("bad/options_not_table.toml")).unwrap_err();
    assert!(matches!(err, BlueprintError::OptionsNotATable { .. }), "{err:?}");
}

#[test]
fn missing_folder_and_file_are_read_errors_naming_the_path() {
    let missing = fixture("no-such-folder");
    let err = Blueprints::load_dir(&missing).unwrap_err();
    assert!(matches!(err, BlueprintError::Read { ref path, .. } if path == &missing));
    let err = Blueprints::load_file(&fixture("no-such-file.toml")).unwrap_err();
    assert!(err.to_string().contains("no-such-file.toml"), "{err}");
}

#[test]
fn blueprint_round_trips_through_json() {
    let blueprints = Blueprints::load_file(&fixture("good/reviewer.toml")).unwrap();
    let reviewer = blueprints.get("reviewer").unwrap();
    let value = serde_json::to_value(reviewer).unwrap();
    assert_eq!(value["status"], "active");
    let back: Blueprint = serde_json::from_value(value).unwrap();
    assert_eq!(&back, reviewer);
}

#[test]
fn a_file_over_the_size_limit_is_refused_clearly() {
    use patchbay_orchestrator::blueprint::{BlueprintError, MAX_FILE_BYTES};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.toml");
    // A valid blueprint whose description alone is over the limit (issue 25: 100 MB loaded).
    let description = "d".repeat(MAX_FILE_BYTES as usize);
    let text =
        format!("name = \"huge\"\nprovider = \"scripted\"\nmodel = \"scripted\"\ndescription = \"{description}\"\n");
    std::fs::write(&path, text).unwrap();
    let error = Blueprints::load_dir(dir.path()).unwrap_err();
    assert!(matches!(error, BlueprintError::TooLarge { .. }), "{error}");
    let message = error.to_string();
    assert!(
        message.contains("huge.toml") && message.contains("1048576"),
        "{message}"
    );
    // Just under the limit loads, and its listing is cut.
    let description = "d".repeat(100_000);
    let text =
        format!("name = \"big\"\nprovider = \"scripted\"\nmodel = \"scripted\"\ndescription = \"{description}\"\n");
    std::fs::write(&path, text).unwrap();
    let blueprints = Blueprints::load_dir(dir.path()).unwrap();
    let listed = patchbay_orchestrator::format::BlueprintSummary::from(blueprints.get("big").unwrap());
    assert!(listed.description.len() < 3_000, "{}", listed.description.len());
}
