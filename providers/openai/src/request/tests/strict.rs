//! Strict-mode qualification: schemas that qualify as they are, and the first rule the others
//! break.

use serde_json::{Value, json};

use crate::request::strict::check;

/// An object schema of these properties, all required, nothing else allowed.
fn object(properties: Value) -> Value {
    let required: Vec<String> = properties
        .as_object()
        .map(|map| map.keys().cloned().collect())
        .unwrap_or_default();
    json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false })
}

#[test]
fn nested_schemas_with_defs_refs_any_of_and_supported_keywords_qualify() {
    let schema = json!({
        "type": "object",
        "title": "Order",
        "description": "An order.",
        "properties": {
            "id": { "type": "string", "pattern": "^[a-z0-9]+$", "description": "The id." },
            "created": { "type": "string", "format": "date-time" },
            "email": { "type": ["string", "null"], "format": "email" },
            "status": { "type": "string", "enum": ["open", "closed"] },
            "kind": { "type": "string", "const": "order" },
            "total": { "type": "number", "minimum": 0, "exclusiveMaximum": 1e9, "multipleOf": 0.01 },
            "lines": {
                "type": "array",
                "minItems": 1,
                "maxItems": 100,
                "items": { "$ref": "#/$defs/line" },
            },
            "customer": {
                "anyOf": [
                    { "$ref": "#/$defs/customer" },
                    { "type": "null" },
                ],
                "description": "Who ordered.",
            },
            "parent": { "anyOf": [{ "$ref": "#" }, { "type": "null" }] },
        },
        "required": ["id", "created", "email", "status", "kind", "total", "lines", "customer", "parent"],
        "additionalProperties": false,
        "$defs": {
            "line": {
                "type": "object",
                "properties": {
                    "sku": { "type": "string" },
                    "quantity": { "type": "integer", "minimum": 1, "maximum": 99 },
                    "options": { "type": "array", "items": { "$ref": "#/$defs/line" } },
                },
                "required": ["sku", "quantity", "options"],
                "additionalProperties": false,
            },
            "customer": object(json!({
                "name": { "type": "string" },
                "address": object(json!({ "city": { "type": "string" }, "zip": { "type": ["string", "null"] } })),
            })),
        },
    });
    assert_eq!(check(&schema), Ok(()));
    assert_eq!(check(&object(json!({}))), Ok(()));
}

#[test]
fn objects_must_forbid_other_properties_and_require_every_one_at_any_depth() {
    let nested = |inner: Value| object(json!({ "outer": object(json!({ "inner": inner })) }));
    let cases = [
        (
            nested(json!({ "type": "object", "properties": {}, "required": [] })),
            "an object without `\"additionalProperties\": false` at #/properties/outer/properties/inner",
        ),
        (
            nested(json!({ "type": "object", "properties": {}, "required": [], "additionalProperties": true })),
            "an object without `\"additionalProperties\": false` at #/properties/outer/properties/inner",
        ),
        (
            nested(
                json!({ "type": "object", "properties": {}, "required": [], "additionalProperties": { "type": "string" } }),
            ),
            "an object without `\"additionalProperties\": false` at #/properties/outer/properties/inner",
        ),
        (
            nested(
                json!({ "type": "object", "properties": { "a": { "type": "string" } }, "required": [], "additionalProperties": false }),
            ),
            "property `a` is not `required` at #/properties/outer/properties/inner",
        ),
        (
            nested(json!({ "type": "object", "properties": {}, "required": ["ghost"], "additionalProperties": false })),
            "`required` names `ghost`, which is not a property, at #/properties/outer/properties/inner",
        ),
        (
            nested(json!({ "type": "object", "properties": {}, "additionalProperties": false })),
            "an object without a `required` list at #/properties/outer/properties/inner",
        ),
        (
            nested(json!({ "type": "object", "required": [], "additionalProperties": false })),
            "an object without `properties` at #/properties/outer/properties/inner",
        ),
        (
            nested(
                json!({ "type": ["object", "null"], "properties": { "a/b": { "type": "object" } }, "required": ["a/b"], "additionalProperties": false }),
            ),
            "an object without `\"additionalProperties\": false` at #/properties/outer/properties/inner/properties/a~1b",
        ),
        (
            json!({ "type": "object", "properties": { "a": { "type": "string" } }, "required": ["a"], "additionalProperties": false,
                    "$defs": { "loose": { "type": "object" } } }),
            "an object without `\"additionalProperties\": false` at #/$defs/loose",
        ),
    ];
    for (schema, reason) in cases {
        assert_eq!(check(&schema), Err(reason.to_string()), "{schema}");
    }
}

#[test]
fn keywords_strict_mode_refuses_disqualify_wherever_they_are() {
    for keyword in [
        "allOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "dependentRequired",
        "dependentSchemas",
        "patternProperties",
        "unevaluatedProperties",
        "propertyNames",
        "minProperties",
        "maxProperties",
        "unevaluatedItems",
        "contains",
        "minContains",
        "maxContains",
        "uniqueItems",
        "prefixItems",
        "minLength",
        "maxLength",
        "default",
        "examples",
        "$schema",
        "definitions",
    ] {
        let mut inner = json!({ "type": "string" });
        inner[keyword] = json!(1);
        let schema = object(json!({ "list": { "type": "array", "items": inner } }));
        assert_eq!(
            check(&schema),
            Err(format!("`{keyword}` at #/properties/list/items")),
            "{keyword}"
        );
    }
}

#[test]
fn other_shapes_that_do_not_qualify() {
    let cases = [
        (json!(null), "the schema is not a JSON object"),
        (
            json!({ "anyOf": [object(json!({}))] }),
            "the root is not `\"type\": \"object\"`",
        ),
        (
            json!({ "$ref": "#/$defs/a", "$defs": { "a": object(json!({})) } }),
            "the root is not `\"type\": \"object\"`",
        ),
        (
            json!({ "type": ["object"], "properties": {}, "required": [], "additionalProperties": false }),
            "the root is not `\"type\": \"object\"`",
        ),
        (object(json!({ "a": {} })), "a schema without `type` at #/properties/a"),
        (
            object(json!({ "a": { "enum": ["x"] } })),
            "a schema without `type` at #/properties/a",
        ),
        (
            object(json!({ "a": true })),
            "a schema that is not an object at #/properties/a",
        ),
        (
            object(json!({ "a": { "type": "date" } })),
            "a `type` strict mode does not take at #/properties/a",
        ),
        (
            object(json!({ "a": { "type": [] } })),
            "a `type` strict mode does not take at #/properties/a",
        ),
        (
            object(json!({ "a": { "type": "integer", "format": "uint32" } })),
            "a `format` strict mode does not take at #/properties/a",
        ),
        (
            object(json!({ "a": { "type": "array" } })),
            "an array without `items` at #/properties/a",
        ),
        (
            object(json!({ "a": { "type": "array", "items": [{ "type": "string" }] } })),
            "a schema that is not an object at #/properties/a/items",
        ),
        (
            object(json!({ "a": { "type": "string", "items": { "type": "string" } } })),
            "`items` without `\"type\": \"array\"` at #/properties/a",
        ),
        (
            object(json!({ "a": { "type": "string", "properties": {} } })),
            "object keywords without `\"type\": \"object\"` at #/properties/a",
        ),
        (
            object(json!({ "a": { "$ref": "#/$defs/x", "description": "d" } })),
            "`$ref` with other keywords at #/properties/a",
        ),
        (
            object(json!({ "a": { "$ref": "https://example.com/schema.json" } })),
            "a `$ref` outside the schema at #/properties/a",
        ),
        (
            object(json!({ "a": { "anyOf": [] } })),
            "`anyOf` at #/properties/a is not a list of schemas",
        ),
        (
            object(json!({ "a": { "anyOf": [{ "type": "string" }], "type": "string" } })),
            "`anyOf` with `type` at #/properties/a",
        ),
        (
            object(json!({ "a": { "anyOf": [{ "type": "string", "maxLength": 3 }] } })),
            "`maxLength` at #/properties/a/anyOf/0",
        ),
        (
            object(json!({ "a": { "type": "string", "enum": "x" } })),
            "an `enum` that is not a list at #/properties/a",
        ),
    ];
    for (schema, reason) in cases {
        assert_eq!(check(&schema), Err(reason.to_string()), "{schema}");
    }
}

#[test]
fn size_limits() {
    let mut deep = object(json!({ "leaf": { "type": "string" } }));
    for _ in 0..9 {
        deep = object(json!({ "next": deep }));
    }
    assert_eq!(check(&deep), Ok(()), "ten levels");
    let deeper = object(json!({ "next": deep }));
    assert!(
        check(&deeper).is_err_and(|reason| reason.starts_with("objects nested more than 10 deep")),
        "eleven levels"
    );
    let many: serde_json::Map<String, Value> = (0..5001)
        .map(|i| (format!("p{i}"), json!({ "type": "null" })))
        .collect();
    assert_eq!(
        check(&object(Value::Object(many))),
        Err("more than 5000 properties".into())
    );
    let values: Vec<String> = (0..1001).map(|i| format!("v{i}")).collect();
    let schema = object(json!({ "e": { "type": "string", "enum": values } }));
    assert_eq!(check(&schema), Err("more than 1000 enum values".into()));
}
