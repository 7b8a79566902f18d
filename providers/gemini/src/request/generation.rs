//! `generationConfig`: sampling, thinking, structured output and the option's keys.

use patchbay_core::{RequestContext, Warning};
use serde_json::{Map, Value, json};

use super::options::CallOptions;

/// An `f32` as the decimal it was written as (`0.9`, not `0.8999999761581421`).
pub(super) fn decimal(value: f32) -> Value {
    value.to_string().parse::<f64>().map_or(Value::Null, |v| json!(v))
}

/// `generationConfig`: sampling, thinking, structured output, then the option's keys; `None`
/// when empty.
pub(super) fn generation_config(
    context: &RequestContext,
    options: &CallOptions,
    warnings: &mut Vec<Warning>,
) -> Option<Value> {
    let sampling = &context.sampling;
    let mut config = Map::new();
    if let Some(max) = sampling.max_tokens {
        config.insert("maxOutputTokens".into(), json!(max));
    }
    if let Some(temperature) = sampling.temperature {
        config.insert("temperature".into(), decimal(temperature));
    }
    if let Some(top_p) = sampling.top_p {
        config.insert("topP".into(), decimal(top_p));
    }
    if let Some(top_k) = sampling.top_k {
        config.insert("topK".into(), json!(top_k));
    }
    if !sampling.stop_sequences.is_empty() {
        config.insert("stopSequences".into(), json!(sampling.stop_sequences));
    }

    let level = options.thinking_level.as_deref();
    let budget = match (options.thinking_budget, sampling.thinking_budget, level) {
        (Some(budget), _, _) => Some(budget),
        (None, Some(_), Some(_)) => {
            warnings.push(Warning::new(
                Warning::UNSUPPORTED_OPTION,
                "the sampling's thinking budget gives way to the `thinking_level` option (Gemini takes one of them)",
            ));
            None
        }
        (None, budget, _) => budget.map(i64::from),
    };
    let include = options.include_thoughts.or(match (budget, level) {
        (Some(0), None) | (None, None) => None,
        _ => Some(true),
    });
    let mut thinking = Map::new();
    if let Some(budget) = budget {
        thinking.insert("thinkingBudget".into(), json!(budget));
    }
    if let Some(level) = level {
        thinking.insert("thinkingLevel".into(), json!(level));
    }
    if let Some(include) = include {
        thinking.insert("includeThoughts".into(), json!(include));
    }
    if !thinking.is_empty() {
        config.insert("thinkingConfig".into(), Value::Object(thinking));
    }

    if let Some(schema) = &context.output_schema {
        config.insert("responseMimeType".into(), json!("application/json"));
        config.insert("responseJsonSchema".into(), schema.schema.clone());
    }
    if let Some(mime_type) = &options.response_mime_type {
        config.insert("responseMimeType".into(), json!(mime_type));
    }
    for (key, value) in options.generation_config.iter().flatten() {
        config.insert(key.clone(), value.clone());
    }
    (!config.is_empty()).then_some(Value::Object(config))
}
