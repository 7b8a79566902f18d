//! The reasoning-call guess, `include`, sampling, `reasoning` and `text`.

use patchbay_core::{RequestContext, Warning};
use serde_json::{Map, Value, json};

use super::options::CallOptions;

/// What `include` asks for so a stateless reasoning call gets its reasoning back.
pub(super) const ENCRYPTED_REASONING: &str = "reasoning.encrypted_content";

/// The model name prefixes (after the last `/`, lower case) of reasoning models.
const REASONING_MODELS: [&str; 6] = ["o1", "o3", "o4", "gpt-5", "codex", "gpt-oss"];

/// Whether `model` names a reasoning model: its name after the last `/` starts with one of
/// `REASONING_MODELS`, except `gpt-5-chat`.
pub(super) fn reasoning_model(model: &str) -> bool {
    let name = model
        .rsplit_once('/')
        .map_or(model, |(_, name)| name)
        .to_ascii_lowercase();
    !name.starts_with("gpt-5-chat") && REASONING_MODELS.iter().any(|prefix| name.starts_with(prefix))
}

/// Whether this is a reasoning call: `encrypted_reasoning` when set, else the guess (the
/// `reasoning` option, a thinking budget, or a reasoning model).
pub(super) fn reasoning_call(model: &str, context: &RequestContext, options: &CallOptions) -> bool {
    options.encrypted_reasoning.unwrap_or_else(|| {
        options.reasoning.is_some() || context.sampling.thinking_budget.is_some() || reasoning_model(model)
    })
}

/// `include`: the encrypted reasoning on a stateless reasoning call, then the option's
/// entries, without repeats, in order; `None` when empty.
pub(super) fn include(store: bool, reasoning_call: bool, options: &CallOptions) -> Option<Value> {
    let ours = (!store && reasoning_call).then_some(ENCRYPTED_REASONING);
    let mut include: Vec<&str> = Vec::new();
    for entry in ours
        .into_iter()
        .chain(options.include.iter().flatten().map(String::as_str))
    {
        if !include.contains(&entry) {
            include.push(entry);
        }
    }
    (!include.is_empty()).then(|| json!(include))
}

/// An `f32` as the decimal it was written as (`0.9`, not `0.8999999761581421`).
pub(super) fn decimal(value: f32) -> Value {
    value.to_string().parse::<f64>().map_or(Value::Null, |v| json!(v))
}

/// `max_output_tokens`, `temperature` and `top_p` into `body`; warnings for what the wire has
/// no field for, and for the sampling a reasoning call leaves out.
pub(super) fn sampling(
    context: &RequestContext,
    reasoning_call: bool,
    body: &mut Map<String, Value>,
    warnings: &mut Vec<Warning>,
) {
    let sampling = &context.sampling;
    if let Some(max) = sampling.max_tokens {
        body.insert("max_output_tokens".into(), json!(max));
    }
    let pairs = [("temperature", sampling.temperature), ("top_p", sampling.top_p)];
    let set: Vec<(&str, f32)> = pairs
        .into_iter()
        .filter_map(|(key, value)| value.map(|value| (key, value)))
        .collect();
    if reasoning_call && !set.is_empty() {
        let names: Vec<String> = set.iter().map(|(key, _)| format!("`{key}`")).collect();
        warnings.push(Warning::new(
            Warning::UNSUPPORTED_OPTION,
            format!(
                "{} left out: reasoning models refuse sampling parameters",
                names.join(" and ")
            ),
        ));
    } else {
        for (key, value) in set {
            body.insert(key.into(), decimal(value));
        }
    }
    if sampling.top_k.is_some() {
        warnings.push(Warning::new(
            Warning::UNSUPPORTED_OPTION,
            "the Responses API has no `top_k`: it was not sent",
        ));
    }
    if !sampling.stop_sequences.is_empty() {
        warnings.push(Warning::new(
            Warning::UNSUPPORTED_OPTION,
            "the Responses API has no stop sequences: they were not sent",
        ));
    }
}

/// The effort a thinking budget maps to: `0` minimal, up to 2048 low, up to 8192 medium,
/// above high.
pub(super) fn effort_for(budget: u32) -> &'static str {
    match budget {
        0 => "minimal",
        1..=2048 => "low",
        2049..=8192 => "medium",
        _ => "high",
    }
}

/// `reasoning`: the option's object as given (its `effort` from the thinking budget when it
/// has none), else the budget's effort; `None` when neither is set. Never a `summary` unless
/// the option asks for one.
pub(super) fn reasoning(context: &RequestContext, options: &CallOptions, warnings: &mut Vec<Warning>) -> Option<Value> {
    let budget = context.sampling.thinking_budget;
    let Some(given) = &options.reasoning else {
        return budget.map(|budget| json!({ "effort": effort_for(budget) }));
    };
    let mut reasoning = given.clone();
    match budget {
        Some(_) if reasoning.contains_key("effort") => warnings.push(Warning::new(
            Warning::UNSUPPORTED_OPTION,
            "the sampling's thinking budget gives way to the `reasoning` option's effort",
        )),
        Some(budget) => {
            reasoning.insert("effort".into(), json!(effort_for(budget)));
        }
        None => {}
    }
    Some(Value::Object(reasoning))
}

/// `text`: `verbosity` from the option, `format` from the output schema; `None` when empty.
pub(super) fn text(context: &RequestContext, options: &CallOptions) -> Option<Value> {
    let mut text = Map::new();
    if let Some(verbosity) = &options.verbosity {
        text.insert("verbosity".into(), json!(verbosity));
    }
    if let Some(schema) = &context.output_schema {
        let mut format = Map::new();
        format.insert("type".into(), json!("json_schema"));
        format.insert("name".into(), json!(schema.name));
        if let Some(description) = &schema.description {
            format.insert("description".into(), json!(description));
        }
        format.insert("schema".into(), schema.schema.clone());
        format.insert("strict".into(), json!(schema.strict));
        text.insert("format".into(), Value::Object(format));
    }
    (!text.is_empty()).then_some(Value::Object(text))
}
