//! JSON Schema to the OpenAPI subset Gemini's function declarations take (`parameters`, a
//! `Schema` object). Uses nothing.
//!
//! Kept as they are: `type`, `format` (see below), `title`, `description`, `nullable`, `enum`,
//! `items`, `properties`, `required`, `minItems`, `maxItems`, `minProperties`,
//! `maxProperties`, `minLength`, `maxLength`, `pattern`, `minimum`, `maximum`, `anyOf`,
//! `propertyOrdering`, `default`, `example`.
//!
//! Rewritten:
//!
//! - `type: ["string", "null"]` is `type: "string"` with `nullable: true`; several non-null
//!   types become an `anyOf` of one schema per type (each with the keywords of its type;
//!   `title`, `description`, `nullable`, `default`, `example` stay outside). A `{"type":
//!   "null"}` branch of an `anyOf` (how schemars writes an `Option`) is `nullable: true`, and
//!   an `anyOf` left with one branch is that branch.
//! - `const: x` is `enum: [x]`. Gemini's enums are strings: a non-string value is sent as its
//!   JSON text with `type: "string"` (noted); a `null` value is `nullable: true`.
//! - `oneOf` is `anyOf` (noted: "exactly one" becomes "at least one").
//! - `$ref` to a local pointer (`#/$defs/..`, `#/definitions/..`, `#`) is inlined, its sibling
//!   keywords laid over the target; a reference to itself on the way down (recursion), one that
//!   does not resolve, or nesting deeper than [`MAX_DEPTH`] becomes `{"type": "object"}`
//!   (noted).
//! - `allOf` of one schema is that schema laid under the rest; of several object schemas, their
//!   `properties` merged and `required` joined; anything else is dropped (noted).
//! - `examples` gives its first value as `example`.
//! - `format`: Gemini takes `enum` and `date-time` on strings and `int32`, `int64`, `float`,
//!   `double` on numbers; any other is dropped (noted).
//! - `required` keeps only names `properties` declares (Gemini refuses the others; noted), and
//!   an empty `properties` is left out (some versions refuse it on an object).
//! - An array without `items` gets `items: {"type": "string"}` (Gemini refuses an array
//!   without items; noted). A schema with no type is typed from its keywords (`properties` is
//!   an object, `items` an array, `pattern` a string, `minimum` a number...), else it is an
//!   object (noted below the root: Gemini has no "any" type).
//! - Dropped silently (no meaning lost): `$schema`, `$id`, `$anchor`, `$comment`, `$defs`,
//!   `definitions`, and `additionalProperties` when it is `true` or `false`. Dropped with a note:
//!   every other keyword (`additionalProperties` as a schema, `not`, `if`/`then`/`else`,
//!   `patternProperties`, `dependencies`, `exclusiveMinimum`/`Maximum`, `multipleOf`,
//!   `uniqueItems`, `contentEncoding`, `prefixItems`...).
//!
//! The notes name keywords and paths (`#/properties/when`), never a value from the schema.

use serde_json::{Map, Value, json};

/// How deep schemas nest (counting inlined `$ref`s) before the rest is cut to an object.
pub(crate) const MAX_DEPTH: usize = 32;

/// The formats Gemini takes on a string.
const STRING_FORMATS: [&str; 2] = ["enum", "date-time"];
/// The formats Gemini takes on a number or an integer.
const NUMBER_FORMATS: [&str; 4] = ["int32", "int64", "float", "double"];
/// The types Gemini knows (besides `null`, which is `nullable`).
const TYPES: [&str; 6] = ["string", "number", "integer", "boolean", "array", "object"];

/// Keywords that go with one type: when several types split into an `anyOf`, each branch gets
/// the keywords of its type.
fn keyword_type(key: &str) -> Option<&'static str> {
    match key {
        "enum" | "minLength" | "maxLength" | "pattern" => Some("string"),
        "minimum" | "maximum" => Some("number"),
        "items" | "minItems" | "maxItems" => Some("array"),
        "properties" | "required" | "minProperties" | "maxProperties" | "propertyOrdering" => Some("object"),
        _ => None,
    }
}

/// `schema` as a Gemini `Schema` object, and notes of what was dropped or changed (each
/// "what at #/path"; keywords and property names only, no values).
///
/// The root is always an object schema (`{}` becomes `{"type": "object"}`).
pub(crate) fn to_gemini(schema: &Value) -> (Value, Vec<String>) {
    let mut converter = Converter {
        root: schema,
        refs: Vec::new(),
        notes: Vec::new(),
        member: false,
    };
    let converted = converter.convert(schema, "#", 0);
    (Value::Object(converted), converter.notes)
}

struct Converter<'a> {
    /// Where local `$ref`s point into.
    root: &'a Value,
    /// The `$ref`s being inlined, outermost first (a repeat is a cycle).
    refs: Vec<String>,
    notes: Vec<String>,
    /// Set while an `allOf` member is converted: its `required` may name properties of the
    /// other members, so it is checked after the merge, not in the member.
    member: bool,
}

fn object() -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("type".into(), json!("object"));
    map
}

impl Converter<'_> {
    fn note(&mut self, path: &str, what: impl std::fmt::Display) {
        self.notes.push(format!("{what} at {path}"));
    }

    fn convert(&mut self, schema: &Value, path: &str, depth: usize) -> Map<String, Value> {
        if depth > MAX_DEPTH {
            self.note(path, format_args!("nesting deeper than {MAX_DEPTH} cut to an object"));
            return object();
        }
        match schema {
            Value::Object(map) if map.contains_key("$ref") => self.inline_ref(map, path, depth),
            Value::Object(map) => self.convert_map(map, path, depth),
            Value::Bool(true) => self.convert_map(&Map::new(), path, depth),
            Value::Bool(false) => {
                self.note(path, "the `false` schema sent as an object");
                object()
            }
            _ => {
                self.note(path, "a value that is not a schema sent as an object");
                object()
            }
        }
    }

    /// A schema with `$ref`: the target with the siblings laid over it, converted.
    fn inline_ref(&mut self, map: &Map<String, Value>, path: &str, depth: usize) -> Map<String, Value> {
        let Some(reference) = map.get("$ref").and_then(Value::as_str) else {
            self.note(path, "a `$ref` that is not a string dropped");
            let mut rest = map.clone();
            rest.remove("$ref");
            return self.convert_map(&rest, path, depth);
        };
        if self.refs.iter().any(|seen| seen == reference) {
            self.note(path, "a recursive `$ref` cut to an object");
            return object();
        }
        let target = reference
            .strip_prefix('#')
            .and_then(|pointer| self.root.pointer(pointer));
        let mut merged = match target {
            Some(Value::Object(target)) => target.clone(),
            Some(Value::Bool(true)) => Map::new(),
            _ => {
                self.note(
                    path,
                    "a `$ref` that does not resolve to a local schema sent as an object",
                );
                return object();
            }
        };
        for (key, value) in map {
            if key != "$ref" {
                merged.insert(key.clone(), value.clone());
            }
        }
        self.refs.push(reference.to_string());
        let converted = self.convert(&Value::Object(merged), path, depth + 1);
        self.refs.pop();
        converted
    }

    fn convert_map(&mut self, map: &Map<String, Value>, path: &str, depth: usize) -> Map<String, Value> {
        let member = std::mem::take(&mut self.member);
        let mut out = Map::new();
        let mut nullable = map.get("nullable") == Some(&Value::Bool(true));
        let mut types = self.types(map.get("type"), path);
        if types.iter().any(|t| t == "null") {
            nullable = true;
            types.retain(|t| t != "null");
        }
        let mut any_of: Option<Vec<Map<String, Value>>> = None;
        let mut all_of: Vec<Map<String, Value>> = Vec::new();
        for (key, value) in map {
            let at = format!("{path}/{key}");
            match key.as_str() {
                "type" | "nullable" | "enum" | "const" | "format" => {}
                "$schema" | "$id" | "$anchor" | "$comment" | "$defs" | "definitions" => {}
                "additionalProperties" if value.is_boolean() => {}
                "title" | "description" | "pattern" if value.is_string() => {
                    out.insert(key.clone(), value.clone());
                }
                "minItems" | "maxItems" | "minProperties" | "maxProperties" | "minLength" | "maxLength" | "minimum"
                | "maximum"
                    if value.is_number() =>
                {
                    out.insert(key.clone(), value.clone());
                }
                "default" | "example" => {
                    out.insert(key.clone(), value.clone());
                }
                "examples" => {
                    if let (false, Some(first)) =
                        (map.contains_key("example"), value.as_array().and_then(|a| a.first()))
                    {
                        out.insert("example".into(), first.clone());
                    }
                }
                "propertyOrdering" if value.as_array().is_some_and(|a| a.iter().all(Value::is_string)) => {
                    out.insert(key.clone(), value.clone());
                }
                "required" if value.as_array().is_some_and(|a| a.iter().all(Value::is_string)) => {
                    out.insert(key.clone(), value.clone());
                }
                "properties" if value.is_object() => {
                    let mut properties = Map::new();
                    for (name, schema) in value.as_object().into_iter().flatten() {
                        let converted = self.convert(schema, &format!("{at}/{name}"), depth + 1);
                        properties.insert(name.clone(), Value::Object(converted));
                    }
                    out.insert(key.clone(), Value::Object(properties));
                }
                "items" => {
                    let items = match value {
                        Value::Array(tuple) => {
                            self.note(path, "tuple `items` sent as one schema");
                            let mut branches: Vec<Map<String, Value>> = tuple
                                .iter()
                                .enumerate()
                                .map(|(i, schema)| self.convert(schema, &format!("{at}/{i}"), depth + 1))
                                .collect();
                            match branches.len() {
                                0 => None,
                                1 => branches.pop(),
                                _ => {
                                    let mut any = Map::new();
                                    any.insert("anyOf".into(), json!(branches));
                                    Some(any)
                                }
                            }
                        }
                        schema => Some(self.convert(schema, &at, depth + 1)),
                    };
                    if let Some(items) = items {
                        out.insert(key.clone(), Value::Object(items));
                    }
                }
                "anyOf" | "oneOf" if value.is_array() => {
                    if key == "oneOf" {
                        self.note(path, "`oneOf` sent as `anyOf`");
                    }
                    if any_of.is_some() {
                        self.note(path, "a second `anyOf`/`oneOf` dropped");
                        continue;
                    }
                    let mut branches = Vec::new();
                    for (i, branch) in value.as_array().into_iter().flatten().enumerate() {
                        if is_null_schema(branch) {
                            nullable = true;
                        } else {
                            branches.push(self.convert(branch, &format!("{at}/{i}"), depth + 1));
                        }
                    }
                    any_of = Some(branches);
                }
                "allOf" if value.is_array() => {
                    for (i, schema) in value.as_array().into_iter().flatten().enumerate() {
                        self.member = true;
                        all_of.push(self.convert(schema, &format!("{at}/{i}"), depth + 1));
                        self.member = false;
                    }
                }
                _ => self.note(path, format_args!("`{key}` dropped")),
            }
        }

        // anyOf: none left (only null) is no constraint; one is that schema.
        match any_of {
            Some(mut branches) if branches.len() == 1 && types.is_empty() => {
                if let Some(branch) = branches.pop() {
                    lay_under(&mut out, branch);
                }
            }
            Some(branches) if !branches.is_empty() => {
                out.insert("anyOf".into(), json!(branches));
            }
            _ => {}
        }

        // allOf: one schema, or several object schemas merged.
        match all_of.len() {
            0 => {}
            1 => {
                if let Some(member) = all_of.pop() {
                    lay_under(&mut out, member);
                }
            }
            _ if all_of.iter().all(is_object_schema) => {
                for member in all_of {
                    lay_under(&mut out, member);
                }
            }
            _ => self.note(path, "`allOf` of schemas that are not all objects dropped"),
        }
        if types.is_empty() {
            if let Some(Value::String(t)) = out.remove("type") {
                types.push(t);
            }
        } else {
            out.remove("type");
        }
        if out.remove("nullable") == Some(Value::Bool(true)) {
            nullable = true;
        }

        // const and enum: strings only.
        let values = match (map.get("const"), map.get("enum")) {
            (Some(value), _) => Some(("const", vec![value.clone()])),
            (None, Some(Value::Array(values))) => Some(("enum", values.clone())),
            (None, Some(_)) => {
                self.note(path, "an `enum` that is not a list dropped");
                None
            }
            (None, None) => out
                .remove("enum")
                .and_then(|v| v.as_array().cloned())
                .map(|v| ("enum", v)),
        };
        if let Some((keyword, values)) = values {
            let mut strings = Vec::with_capacity(values.len());
            let mut converted = false;
            for value in values {
                match value {
                    Value::Null => nullable = true,
                    Value::String(s) => strings.push(Value::String(s)),
                    other => {
                        converted = true;
                        strings.push(Value::String(other.to_string()));
                    }
                }
            }
            if converted || types.iter().any(|t| t != "string") {
                self.note(path, format_args!("non-string `{keyword}` values sent as strings"));
            }
            if !strings.is_empty() {
                out.insert("enum".into(), Value::Array(strings));
                types = vec!["string".into()];
            }
        }

        // Type: from the keywords when not given.
        if types.is_empty() && !out.contains_key("anyOf") {
            let inferred = if ["properties", "required", "minProperties", "maxProperties"]
                .iter()
                .any(|k| out.contains_key(*k))
            {
                "object"
            } else if ["items", "minItems", "maxItems"].iter().any(|k| out.contains_key(*k)) {
                "array"
            } else if ["minLength", "maxLength", "pattern"]
                .iter()
                .any(|k| out.contains_key(*k))
            {
                "string"
            } else if ["minimum", "maximum"].iter().any(|k| out.contains_key(*k)) {
                "number"
            } else {
                if path != "#" {
                    self.note(path, "a schema with no type sent as an object");
                }
                "object"
            };
            types.push(inferred.into());
        }

        // format: what Gemini takes for the type.
        if let Some(format) = map.get("format") {
            let kept = format.as_str().is_some_and(|format| {
                types.iter().any(|t| match t.as_str() {
                    "string" => STRING_FORMATS.contains(&format),
                    "number" | "integer" => NUMBER_FORMATS.contains(&format),
                    _ => false,
                })
            });
            if kept {
                out.insert("format".into(), format.clone());
            } else {
                self.note(path, "`format` dropped");
            }
        }

        if !member {
            self.fix_object(&mut out, path);
        }
        if types.iter().any(|t| t == "array") && !out.contains_key("items") {
            self.note(path, "an array without `items` given string items");
            out.insert("items".into(), json!({ "type": "string" }));
        }

        match types.len() {
            0 => {}
            1 => {
                out.insert("type".into(), json!(types[0]));
            }
            _ => split_types(&mut out, &types),
        }
        if nullable {
            out.insert("nullable".into(), json!(true));
        }
        out
    }

    /// The type names of `type` (a string or a list), unknown ones dropped with a note.
    fn types(&mut self, value: Option<&Value>, path: &str) -> Vec<String> {
        let names: Vec<&Value> = match value {
            None => return Vec::new(),
            Some(Value::Array(list)) => list.iter().collect(),
            Some(one) => vec![one],
        };
        let mut types = Vec::new();
        for name in names {
            match name.as_str() {
                Some(t) if t == "null" || TYPES.contains(&t) => {
                    if !types.iter().any(|seen| seen == t) {
                        types.push(t.to_string());
                    }
                }
                _ => self.note(path, "an unknown `type` dropped"),
            }
        }
        types
    }

    /// `properties: {}` left out; `required` naming only declared properties.
    fn fix_object(&mut self, out: &mut Map<String, Value>, path: &str) {
        if out
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty)
        {
            out.remove("properties");
        }
        let Some(Value::Array(required)) = out.get("required") else {
            return;
        };
        let properties = out.get("properties").and_then(Value::as_object);
        let kept: Vec<Value> = required
            .iter()
            .filter(|name| {
                name.as_str()
                    .is_some_and(|n| properties.is_some_and(|p| p.contains_key(n)))
            })
            .cloned()
            .collect();
        if kept.len() != required.len() {
            self.note(path, "`required` names not in `properties` dropped");
        }
        if kept.is_empty() {
            out.remove("required");
        } else {
            out.insert("required".into(), Value::Array(kept));
        }
    }
}

/// `{"type": "null"}` (with at most a title or description).
fn is_null_schema(schema: &Value) -> bool {
    schema.as_object().is_some_and(|map| {
        map.get("type") == Some(&json!("null"))
            && map
                .keys()
                .all(|k| matches!(k.as_str(), "type" | "title" | "description"))
    })
}

/// A converted schema that is an object (typed so, or with properties).
fn is_object_schema(schema: &Map<String, Value>) -> bool {
    schema.get("type") == Some(&json!("object")) || schema.contains_key("properties")
}

/// Lay `under` beneath `out`: `out`'s keywords win, except `properties` (merged, `out`'s
/// winning per name) and `required` (joined, without repeats).
fn lay_under(out: &mut Map<String, Value>, under: Map<String, Value>) {
    for (key, value) in under {
        match (key.as_str(), out.get_mut(&key), value) {
            ("properties", Some(Value::Object(ours)), Value::Object(theirs)) => {
                for (name, schema) in theirs {
                    ours.entry(name).or_insert(schema);
                }
            }
            ("required", Some(Value::Array(ours)), Value::Array(theirs)) => {
                for name in theirs {
                    if !ours.contains(&name) {
                        ours.push(name);
                    }
                }
            }
            (_, Some(_), _) => {}
            (_, None, value) => {
                out.insert(key, value);
            }
        }
    }
}

/// Several types as an `anyOf` of one schema per type, each with its type's keywords.
fn split_types(out: &mut Map<String, Value>, types: &[String]) {
    let mut branches = Vec::with_capacity(types.len());
    for t in types {
        let mut branch = Map::new();
        branch.insert("type".into(), json!(t));
        for (key, value) in out.iter() {
            let family = keyword_type(key);
            let matches = family == Some(t.as_str()) || (family == Some("number") && t == "integer");
            let format_fits = key == "format"
                && value.as_str().is_some_and(|f| match t.as_str() {
                    "string" => STRING_FORMATS.contains(&f),
                    "number" | "integer" => NUMBER_FORMATS.contains(&f),
                    _ => false,
                });
            if matches || format_fits {
                branch.insert(key.clone(), value.clone());
            }
        }
        branches.push(Value::Object(branch));
    }
    out.retain(|key, _| keyword_type(key).is_none() && key != "format");
    out.insert("anyOf".into(), Value::Array(branches));
}

#[cfg(test)]
mod tests;
