//! `tools` (host functions, then the `tools` option's objects) and `tool_choice`.

use patchbay_core::{ToolSet, ToolSpec, Warning, context::ToolChoice};
use serde_json::{Map, Value, json};

use super::options::CallOptions;
use super::strict;

/// The `tools` list: one function per host tool, then the `tools` option's objects verbatim.
pub(super) fn wire_tools(tools: &ToolSet, options: &CallOptions, warnings: &mut Vec<Warning>) -> Vec<Value> {
    let mut out: Vec<Value> = tools
        .specs()
        .map(|spec| function(spec, options.strict_tools, warnings))
        .collect();
    out.extend(options.tools.iter().flatten().cloned());
    out
}

/// The parameters of a tool that takes none (its schema `null` or `{}`): an object schema
/// that takes nothing, which every Responses server accepts and which qualifies for strict mode.
pub(super) fn no_parameters() -> Value {
    json!({ "type": "object", "properties": {}, "required": [], "additionalProperties": false })
}

/// One host tool as a `function` tool; `strict` from the schema, or `forced` by the option (a
/// schema that does not qualify, forced strict, gives a warning naming the tool).
pub(super) fn function(spec: &ToolSpec, forced: Option<bool>, warnings: &mut Vec<Warning>) -> Value {
    let takes_nothing = match &spec.input_schema {
        Value::Null => true,
        Value::Object(map) => map.is_empty(),
        _ => false,
    };
    let parameters = if takes_nothing {
        no_parameters()
    } else {
        spec.input_schema.clone()
    };
    let qualifies = strict::check(&parameters);
    let strict = match (forced, &qualifies) {
        (Some(true), Err(reason)) => {
            warnings.push(Warning::new(
                Warning::UNSUPPORTED_OPTION,
                format!(
                    "tool `{}`: its input schema does not qualify for OpenAI's strict mode ({reason}), \
                     but `strict_tools` sends it strict: the server may refuse it",
                    spec.name
                ),
            ));
            true
        }
        (Some(forced), _) => forced,
        (None, qualifies) => qualifies.is_ok(),
    };
    let mut function = Map::new();
    function.insert("type".into(), json!("function"));
    function.insert("name".into(), json!(spec.name));
    if !spec.description.is_empty() {
        function.insert("description".into(), json!(spec.description));
    }
    function.insert("parameters".into(), parameters);
    function.insert("strict".into(), json!(strict));
    Value::Object(function)
}

/// `tool_choice`: the `tool_choice` option as given, else the context's; `None` when neither
/// sets it.
pub(super) fn tool_choice(choice: Option<&ToolChoice>, options: &CallOptions) -> Option<Value> {
    if let Some(explicit) = &options.tool_choice {
        return Some(explicit.clone());
    }
    Some(match choice? {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::Any => json!("required"),
        ToolChoice::None => json!("none"),
        ToolChoice::Tool(name) => json!({ "type": "function", "name": name }),
    })
}
