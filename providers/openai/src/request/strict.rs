//! Whether a tool's input schema already qualifies for OpenAI's strict mode (checked, never
//! rewritten). The rules are in the [module docs](super), "Strict mode".

use serde_json::{Map, Value};

/// The keywords a strict schema may use; any other disqualifies it.
const KEYWORDS: [&str; 21] = [
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "anyOf",
    "$ref",
    "$defs",
    "description",
    "title",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
];

/// The keywords an `anyOf` schema may have beside it.
const ANY_OF_SIBLINGS: [&str; 4] = ["anyOf", "$defs", "description", "title"];

/// The JSON types a strict schema may name.
const TYPES: [&str; 7] = ["string", "number", "integer", "boolean", "object", "array", "null"];

/// The string formats strict mode takes.
const FORMATS: [&str; 9] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// The deepest nesting of object schemas strict mode takes.
const MAX_DEPTH: usize = 10;
/// The most properties a strict schema may have, all objects together.
const MAX_PROPERTIES: usize = 5000;
/// The most enum values a strict schema may have, all enums together.
const MAX_ENUM_VALUES: usize = 1000;

/// Why a schema does not qualify: the first rule it breaks, with its JSON pointer (keyword and
/// property names only, never a value).
pub(super) type Reason = String;

/// `Ok` when `schema` qualifies for strict mode as it is, else the first reason it does not.
pub(super) fn check(schema: &Value) -> Result<(), Reason> {
    let Some(root) = schema.as_object() else {
        return Err("the schema is not a JSON object".into());
    };
    if root.get("type").and_then(Value::as_str) != Some("object") {
        return Err("the root is not `\"type\": \"object\"`".into());
    }
    let mut counts = Counts::default();
    node(root, "#", 0, &mut counts)?;
    if counts.properties > MAX_PROPERTIES {
        return Err(format!("more than {MAX_PROPERTIES} properties"));
    }
    if counts.enum_values > MAX_ENUM_VALUES {
        return Err(format!("more than {MAX_ENUM_VALUES} enum values"));
    }
    Ok(())
}

/// What the size limits count over the whole schema.
#[derive(Default)]
struct Counts {
    properties: usize,
    enum_values: usize,
}

/// One subschema at `path`, `depth` object schemas deep.
fn node(schema: &Map<String, Value>, path: &str, depth: usize, counts: &mut Counts) -> Result<(), Reason> {
    if let Some(keyword) = schema.keys().find(|key| !KEYWORDS.contains(&key.as_str())) {
        return Err(format!("`{keyword}` at {path}"));
    }
    if let Some(defs) = schema.get("$defs") {
        let defs = defs
            .as_object()
            .ok_or_else(|| format!("`$defs` at {path} is not an object"))?;
        for (name, def) in defs {
            subschema(def, &format!("{path}/$defs/{}", pointer(name)), 0, counts)?;
        }
    }
    if let Some(reference) = schema.get("$ref") {
        return match reference.as_str() {
            Some(target) if target.starts_with('#') && schema.len() == 1 => Ok(()),
            Some(target) if target.starts_with('#') => Err(format!("`$ref` with other keywords at {path}")),
            _ => Err(format!("a `$ref` outside the schema at {path}")),
        };
    }
    if let Some(any_of) = schema.get("anyOf") {
        if let Some(other) = schema.keys().find(|key| !ANY_OF_SIBLINGS.contains(&key.as_str())) {
            return Err(format!("`anyOf` with `{other}` at {path}"));
        }
        let branches = any_of
            .as_array()
            .filter(|branches| !branches.is_empty())
            .ok_or_else(|| format!("`anyOf` at {path} is not a list of schemas"))?;
        for (at, branch) in branches.iter().enumerate() {
            subschema(branch, &format!("{path}/anyOf/{at}"), depth, counts)?;
        }
        return Ok(());
    }
    let types = types(schema, path)?;
    if let Some(values) = schema.get("enum") {
        let values = values
            .as_array()
            .ok_or_else(|| format!("an `enum` that is not a list at {path}"))?;
        counts.enum_values += values.len();
    }
    if let Some(format) = schema.get("format")
        && !format.as_str().is_some_and(|format| FORMATS.contains(&format))
    {
        return Err(format!("a `format` strict mode does not take at {path}"));
    }
    if types.contains(&"object") {
        object(schema, path, depth + 1, counts)?;
    } else if schema.contains_key("properties") || schema.contains_key("additionalProperties") {
        return Err(format!("object keywords without `\"type\": \"object\"` at {path}"));
    }
    if types.contains(&"array") {
        let items = schema
            .get("items")
            .ok_or_else(|| format!("an array without `items` at {path}"))?;
        subschema(items, &format!("{path}/items"), depth, counts)?;
    } else if schema.contains_key("items") {
        return Err(format!("`items` without `\"type\": \"array\"` at {path}"));
    }
    Ok(())
}

/// A subschema that must be a JSON object.
fn subschema(schema: &Value, path: &str, depth: usize, counts: &mut Counts) -> Result<(), Reason> {
    let schema = schema
        .as_object()
        .ok_or_else(|| format!("a schema that is not an object at {path}"))?;
    node(schema, path, depth, counts)
}

/// The schema's `type`: one known type or a non-empty list of them.
fn types<'a>(schema: &'a Map<String, Value>, path: &str) -> Result<Vec<&'a str>, Reason> {
    let types: Option<Vec<&str>> = match schema.get("type") {
        None => return Err(format!("a schema without `type` at {path}")),
        Some(Value::String(one)) => Some(vec![one.as_str()]),
        Some(Value::Array(list)) if !list.is_empty() => list.iter().map(Value::as_str).collect(),
        Some(_) => None,
    };
    types
        .filter(|types| types.iter().all(|t| TYPES.contains(t)))
        .ok_or_else(|| format!("a `type` strict mode does not take at {path}"))
}

/// The rules of an object schema: `properties`, all of them `required`, no others allowed.
fn object(schema: &Map<String, Value>, path: &str, depth: usize, counts: &mut Counts) -> Result<(), Reason> {
    if depth > MAX_DEPTH {
        return Err(format!("objects nested more than {MAX_DEPTH} deep at {path}"));
    }
    if schema.get("additionalProperties") != Some(&Value::Bool(false)) {
        return Err(format!("an object without `\"additionalProperties\": false` at {path}"));
    }
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .ok_or_else(|| format!("an object without `properties` at {path}"))?;
    let required: Option<Vec<&str>> = schema
        .get("required")
        .and_then(Value::as_array)
        .and_then(|list| list.iter().map(Value::as_str).collect());
    let required = required.ok_or_else(|| format!("an object without a `required` list at {path}"))?;
    if let Some(missing) = properties.keys().find(|key| !required.contains(&key.as_str())) {
        return Err(format!("property `{missing}` is not `required` at {path}"));
    }
    if let Some(extra) = required.iter().find(|name| !properties.contains_key(**name)) {
        return Err(format!(
            "`required` names `{extra}`, which is not a property, at {path}"
        ));
    }
    counts.properties += properties.len();
    for (name, property) in properties {
        subschema(property, &format!("{path}/properties/{}", pointer(name)), depth, counts)?;
    }
    Ok(())
}

/// A name as a JSON pointer token (`~` as `~0`, `/` as `~1`).
fn pointer(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}
