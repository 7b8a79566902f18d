//! `tools` (host functions, server tools, raw tools) and `toolConfig`.

use patchbay_core::{ToolSet, ToolSpec, Warning, context::ToolChoice};
use serde_json::{Map, Value, json};

use super::options::{CallOptions, ServerTool};
use crate::schema;

/// How many schema notes one warning lists before "and N more".
const MAX_NOTES: usize = 8;

/// The `tools` list: host functions, server tools from the options, raw tools from the options.
pub(super) fn wire_tools(tools: &ToolSet, options: &CallOptions, warnings: &mut Vec<Warning>) -> Vec<Value> {
    let mut out = Vec::new();
    let declarations: Vec<Value> = tools.specs().map(|spec| declaration(spec, warnings)).collect();
    if !declarations.is_empty() {
        out.push(json!({ "functionDeclarations": declarations }));
    }
    for (option, key) in [
        (&options.google_search, "googleSearch"),
        (&options.url_context, "urlContext"),
        (&options.code_execution, "codeExecution"),
    ] {
        if let Some(config) = option.as_ref().and_then(ServerTool::config) {
            out.push(json!({ key: config }));
        }
    }
    out.extend(options.tools.iter().flatten().cloned().map(Value::Object));
    out
}

/// One function declaration; a schema that lost keywords gives one warning naming them.
pub(super) fn declaration(spec: &ToolSpec, warnings: &mut Vec<Warning>) -> Value {
    let (parameters, notes) = schema::to_gemini(&spec.input_schema);
    let mut declaration = Map::new();
    declaration.insert("name".into(), json!(spec.name));
    if !spec.description.is_empty() {
        declaration.insert("description".into(), json!(spec.description));
    }
    let takes_nothing = parameters.get("type") == Some(&json!("object"))
        && parameters.get("properties").is_none()
        && parameters.get("anyOf").is_none();
    if !takes_nothing {
        declaration.insert("parameters".into(), parameters);
    }
    if !notes.is_empty() {
        let mut listed = notes[..notes.len().min(MAX_NOTES)].join("; ");
        if notes.len() > MAX_NOTES {
            listed.push_str(&format!("; and {} more", notes.len() - MAX_NOTES));
        }
        warnings.push(Warning::new(
            Warning::UNSUPPORTED_OPTION,
            format!(
                "tool `{}`: its input schema was converted to the subset Gemini takes: {listed}",
                spec.name
            ),
        ));
    }
    Value::Object(declaration)
}

/// `toolConfig` from the tool choice and the options; `None` when nothing sets it.
pub(super) fn tool_config(
    choice: Option<&ToolChoice>,
    options: &CallOptions,
    warnings: &mut Vec<Warning>,
) -> Option<Value> {
    let (mut mode, mut names) = match choice {
        None => (None, None),
        Some(ToolChoice::Auto) => (Some("AUTO"), None),
        Some(ToolChoice::Any) => (Some("ANY"), None),
        Some(ToolChoice::None) => (Some("NONE"), None),
        Some(ToolChoice::Tool(name)) => (Some("ANY"), Some(vec![name.clone()])),
    };
    if let Some(allowed) = &options.allowed_function_names {
        if matches!(choice, Some(ToolChoice::Auto | ToolChoice::None)) && options.function_calling_mode.is_none() {
            warnings.push(Warning::new(
                Warning::UNSUPPORTED_OPTION,
                "the tool choice gives way to the `allowed_function_names` option (mode ANY)",
            ));
        }
        names = Some(allowed.clone());
        mode = Some("ANY");
    }
    if let Some(explicit) = &options.function_calling_mode {
        mode = Some(explicit.as_str());
    }
    let mode = mode?;
    let mut config = Map::new();
    config.insert("mode".into(), json!(mode));
    if let Some(names) = names {
        config.insert("allowedFunctionNames".into(), json!(names));
    }
    Some(json!({ "functionCallingConfig": config }))
}
