use patchbay_core::{Tool, ToolContext, tool::ToolStatus};
use patchbay_tools::{BashTool, Workspace, coding_tools};
use serde_json::json;

#[test]
fn the_set_has_five_tools_and_bash_only_when_enabled() {
    let names = |workspace: Workspace| {
        coding_tools(workspace)
            .specs()
            .map(|spec| spec.name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(Workspace::new(".")), ["read", "write", "edit", "glob", "grep"]);
    assert_eq!(
        names(Workspace::new(".").with_bash(true)),
        ["read", "write", "edit", "glob", "grep", "bash"]
    );
}

#[test]
fn schemas_are_plain_objects_with_required_fields() {
    let tools = coding_tools(Workspace::new(".").with_bash(true));
    let required = |name: &str| tools.get(name).unwrap().spec().input_schema["required"].clone();
    assert_eq!(required("read"), json!(["path"]));
    assert_eq!(required("write"), json!(["path", "content"]));
    assert_eq!(required("edit"), json!(["path", "old_string", "new_string"]));
    assert_eq!(required("glob"), json!(["pattern"]));
    assert_eq!(required("grep"), json!(["pattern"]));
    assert_eq!(required("bash"), json!(["command"]));
    for spec in tools.specs() {
        assert_eq!(spec.input_schema["type"], "object", "{}", spec.name);
        assert!(spec.description.len() > 100, "{} needs a real description", spec.name);
        assert!(spec.input_schema.get("$schema").is_none());
    }
}

#[tokio::test]
async fn bash_refuses_to_run_unless_enabled() {
    let dir = tempfile::tempdir().unwrap();
    let tool = BashTool::new(Workspace::new(dir.path()));
    let result = tool.execute(json!({"command": "touch ran"}), &ToolContext::new()).await;
    assert_eq!(result.status, ToolStatus::Denied);
    assert!(result.text_content().contains("disabled"));
    assert!(!dir.path().join("ran").exists());
}

#[test]
fn workspace_debug_hides_env_values() {
    let workspace = Workspace::new("/w").with_env("API_TOKEN", "s3cr3t");
    let debug = format!("{workspace:?}");
    assert!(debug.contains("API_TOKEN") && !debug.contains("s3cr3t"), "{debug}");
}
