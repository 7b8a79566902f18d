use super::*;

fn convert(schema: Value) -> (Value, Vec<String>) {
    to_gemini(&schema)
}

fn mentions(notes: &[String], what: &str) -> bool {
    notes.iter().any(|note| note.contains(what))
}

#[test]
fn a_plain_schema_passes_unchanged() {
    let schema = json!({
        "type": "object",
        "description": "Where.",
        "properties": {
            "city": { "type": "string", "description": "The city.", "minLength": 1 },
            "days": { "type": "integer", "minimum": 1, "maximum": 14, "format": "int32" },
            "tags": { "type": "array", "items": { "type": "string" }, "maxItems": 3 },
            "when": { "type": "string", "format": "date-time" },
            "unit": { "type": "string", "enum": ["c", "f"], "default": "c" },
        },
        "required": ["city"],
        "propertyOrdering": ["city", "days", "tags", "when", "unit"],
    });
    let (converted, notes) = convert(schema.clone());
    assert_eq!(converted, schema);
    assert!(notes.is_empty(), "{notes:?}");
}

#[test]
fn empty_schemas_are_objects_without_properties() {
    for schema in [
        json!({}),
        json!({ "type": "object" }),
        json!({ "type": "object", "properties": {} }),
        json!(true),
    ] {
        let (converted, notes) = convert(schema.clone());
        assert_eq!(converted, json!({ "type": "object" }), "{schema}");
        assert!(notes.is_empty(), "{schema}: {notes:?}");
    }
}

#[test]
fn nullable_type_arrays() {
    let (converted, notes) = convert(json!({
        "type": "object",
        "properties": {
            "a": { "type": ["string", "null"], "maxLength": 5 },
            "b": { "type": ["null", "integer"] },
            "c": { "type": ["string", "integer", "null"], "description": "Either.", "pattern": "^x", "minimum": 2 },
        },
    }));
    assert_eq!(
        converted["properties"],
        json!({
            "a": { "type": "string", "nullable": true, "maxLength": 5 },
            "b": { "type": "integer", "nullable": true },
            "c": {
                "description": "Either.",
                "nullable": true,
                "anyOf": [
                    { "type": "string", "pattern": "^x" },
                    { "type": "integer", "minimum": 2 },
                ],
            },
        })
    );
    assert!(notes.is_empty(), "{notes:?}");
}

#[test]
fn option_as_any_of_with_null_is_the_branch_made_nullable() {
    // How schemars writes `Option<Inner>`.
    let (converted, notes) = convert(json!({
        "type": "object",
        "properties": {
            "inner": { "anyOf": [{ "$ref": "#/$defs/Inner" }, { "type": "null" }], "description": "Maybe." },
        },
        "$defs": { "Inner": { "type": "object", "properties": { "x": { "type": "number" } }, "required": ["x"] } },
    }));
    assert_eq!(
        converted["properties"]["inner"],
        json!({
            "type": "object",
            "description": "Maybe.",
            "nullable": true,
            "properties": { "x": { "type": "number" } },
            "required": ["x"],
        })
    );
    assert!(notes.is_empty(), "{notes:?}");
}

#[test]
fn refs_to_defs_and_definitions_are_inlined() {
    let (converted, notes) = convert(json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "from": { "$ref": "#/$defs/Point", "description": "Start." },
            "to": { "$ref": "#/definitions/Point" },
        },
        "required": ["from", "to"],
        "$defs": { "Point": { "type": "object", "properties": { "x": { "type": "number" } }, "description": "A point." } },
        "definitions": { "Point": { "type": "object", "properties": { "y": { "type": "number" } } } },
    }));
    assert_eq!(
        converted,
        json!({
            "type": "object",
            "properties": {
                "from": { "type": "object", "description": "Start.", "properties": { "x": { "type": "number" } } },
                "to": { "type": "object", "properties": { "y": { "type": "number" } } },
            },
            "required": ["from", "to"],
        })
    );
    assert!(notes.is_empty(), "{notes:?}");
}

#[test]
fn recursion_is_cut_to_an_object() {
    let (converted, notes) = convert(json!({
        "$ref": "#/$defs/Node",
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "value": { "type": "string" },
                    "children": { "type": "array", "items": { "$ref": "#/$defs/Node" } },
                },
            },
        },
    }));
    assert_eq!(
        converted["properties"]["children"],
        json!({ "type": "array", "items": { "type": "object" } })
    );
    assert_eq!(converted["properties"]["value"], json!({ "type": "string" }));
    assert!(
        mentions(
            &notes,
            "recursive `$ref` cut to an object at #/properties/children/items"
        ),
        "{notes:?}"
    );
    // A root that refers to itself.
    let (converted, notes) = convert(json!({ "type": "object", "properties": { "me": { "$ref": "#" } } }));
    assert_eq!(
        converted["properties"]["me"]["properties"]["me"],
        json!({ "type": "object" })
    );
    assert!(mentions(&notes, "recursive"), "{notes:?}");
}

#[test]
fn depth_is_bounded() {
    let mut schema = json!({ "type": "string" });
    for _ in 0..40 {
        schema = json!({ "type": "object", "properties": { "a": schema } });
    }
    let (converted, notes) = convert(schema);
    let mut node = &converted;
    let mut levels = 0;
    while let Some(next) = node.get("properties").and_then(|p| p.get("a")) {
        node = next;
        levels += 1;
    }
    assert_eq!(levels, MAX_DEPTH + 1);
    assert_eq!(node, &json!({ "type": "object" }));
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(mentions(&notes, "nesting deeper than 32"), "{notes:?}");
}

#[test]
fn unresolved_refs_are_objects() {
    let (converted, notes) = convert(json!({
        "type": "object",
        "properties": { "a": { "$ref": "https://example.com/schema.json" }, "b": { "$ref": "#/$defs/Missing" } },
    }));
    assert_eq!(converted["properties"]["a"], json!({ "type": "object" }));
    assert_eq!(converted["properties"]["b"], json!({ "type": "object" }));
    assert_eq!(
        notes.iter().filter(|n| n.contains("does not resolve")).count(),
        2,
        "{notes:?}"
    );
}

#[test]
fn const_and_enums_become_string_enums() {
    let (converted, notes) = convert(json!({
        "type": "object",
        "properties": {
            "kind": { "const": "circle" },
            "level": { "type": "integer", "enum": [1, 2, 3] },
            "flag": { "const": true },
            "maybe": { "type": ["string", "null"], "enum": ["a", null] },
        },
    }));
    assert_eq!(
        converted["properties"],
        json!({
            "kind": { "type": "string", "enum": ["circle"] },
            "level": { "type": "string", "enum": ["1", "2", "3"] },
            "flag": { "type": "string", "enum": ["true"] },
            "maybe": { "type": "string", "enum": ["a"], "nullable": true },
        })
    );
    assert!(
        mentions(&notes, "non-string `enum` values sent as strings at #/properties/level"),
        "{notes:?}"
    );
    assert!(
        mentions(&notes, "non-string `const` values sent as strings at #/properties/flag"),
        "{notes:?}"
    );
    assert_eq!(notes.len(), 2, "{notes:?}");
    // No value from the schema is quoted.
    assert!(
        !notes.iter().any(|n| n.contains("circle") || n.contains('1')),
        "{notes:?}"
    );
}

#[test]
fn one_of_is_any_of_with_a_note() {
    let (converted, notes) = convert(json!({
        "oneOf": [{ "type": "string" }, { "type": "object", "properties": { "n": { "type": "integer" } } }],
    }));
    assert_eq!(
        converted,
        json!({ "anyOf": [{ "type": "string" }, { "type": "object", "properties": { "n": { "type": "integer" } } }] })
    );
    assert_eq!(notes, ["`oneOf` sent as `anyOf` at #"]);
}

#[test]
fn all_of_is_merged_or_dropped() {
    let (converted, notes) = convert(json!({
        "type": "object",
        "properties": { "extra": { "allOf": [{ "$ref": "#/$defs/Base" }], "description": "Extra." } },
        "$defs": { "Base": { "type": "object", "properties": { "id": { "type": "string" } }, "required": ["id"] } },
    }));
    assert_eq!(
        converted["properties"]["extra"],
        json!({
            "type": "object",
            "description": "Extra.",
            "properties": { "id": { "type": "string" } },
            "required": ["id"],
        })
    );
    assert!(notes.is_empty(), "{notes:?}");
    let (converted, notes) = convert(json!({
        "allOf": [
            { "type": "object", "properties": { "a": { "type": "string" } }, "required": ["a"] },
            { "properties": { "b": { "type": "number" } }, "required": ["b", "a"] },
        ],
    }));
    assert_eq!(
        converted,
        json!({
            "type": "object",
            "properties": { "a": { "type": "string" }, "b": { "type": "number" } },
            "required": ["a", "b"],
        })
    );
    assert!(notes.is_empty(), "{notes:?}");
    let (converted, notes) = convert(json!({
        "type": "object",
        "properties": { "x": { "allOf": [{ "type": "string" }, { "minLength": 2 }] } },
    }));
    assert_eq!(converted["properties"]["x"], json!({ "type": "object" }));
    assert!(
        mentions(
            &notes,
            "`allOf` of schemas that are not all objects dropped at #/properties/x"
        ),
        "{notes:?}"
    );
}

#[test]
fn dropped_keywords_are_listed_by_name_and_path() {
    let (converted, notes) = convert(json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": "urn:x",
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "address": { "type": "string", "format": "email" },
            "n": { "type": "number", "exclusiveMinimum": 0, "multipleOf": 2 },
            "list": { "type": "array", "items": { "type": "integer" }, "uniqueItems": true },
            "map": { "type": "object", "additionalProperties": { "type": "string" } },
            "blob": { "type": "string", "contentEncoding": "base64" },
            "cond": { "if": { "type": "string" }, "then": { "minLength": 1 }, "else": { "type": "number" } },
            "neg": { "type": "string", "not": { "const": "x" } },
            "pat": { "type": "object", "patternProperties": { "^a": { "type": "string" } } },
            "dep": { "type": "object", "dependencies": { "a": ["b"] } },
            "ex": { "type": "string", "examples": ["first", "second"] },
        },
    }));
    let properties = &converted["properties"];
    assert_eq!(converted.get("additionalProperties"), None);
    assert_eq!(properties["address"], json!({ "type": "string" }));
    assert_eq!(properties["n"], json!({ "type": "number" }));
    assert_eq!(
        properties["list"],
        json!({ "type": "array", "items": { "type": "integer" } })
    );
    assert_eq!(properties["map"], json!({ "type": "object" }));
    assert_eq!(properties["cond"], json!({ "type": "object" }));
    assert_eq!(properties["ex"], json!({ "type": "string", "example": "first" }));
    for expected in [
        "`format` dropped at #/properties/address",
        "`exclusiveMinimum` dropped at #/properties/n",
        "`multipleOf` dropped at #/properties/n",
        "`uniqueItems` dropped at #/properties/list",
        "`additionalProperties` dropped at #/properties/map",
        "`contentEncoding` dropped at #/properties/blob",
        "`if` dropped at #/properties/cond",
        "`then` dropped at #/properties/cond",
        "`else` dropped at #/properties/cond",
        "a schema with no type sent as an object at #/properties/cond",
        "`not` dropped at #/properties/neg",
        "`patternProperties` dropped at #/properties/pat",
        "`dependencies` dropped at #/properties/dep",
    ] {
        assert!(notes.iter().any(|n| n == expected), "{expected}: {notes:?}");
    }
    assert_eq!(notes.len(), 13, "{notes:?}");
    assert!(
        !notes.iter().any(|n| n.contains("email") || n.contains("base64")),
        "{notes:?}"
    );
}

#[test]
fn arrays_get_items_and_required_names_declared_properties() {
    let (converted, notes) = convert(json!({
        "type": "object",
        "properties": { "tags": { "type": "array" } },
        "required": ["tags", "ghost"],
    }));
    assert_eq!(
        converted,
        json!({
            "type": "object",
            "properties": { "tags": { "type": "array", "items": { "type": "string" } } },
            "required": ["tags"],
        })
    );
    assert!(mentions(
        &notes,
        "array without `items` given string items at #/properties/tags"
    ));
    assert!(mentions(&notes, "`required` names not in `properties` dropped at #"));
}

#[test]
fn untyped_schemas_are_typed_from_their_keywords() {
    let (converted, notes) = convert(json!({
        "properties": {
            "s": { "pattern": "^a" },
            "n": { "minimum": 0 },
            "l": { "items": { "type": "string" } },
            "any": { "description": "Anything." },
        },
    }));
    assert_eq!(
        converted,
        json!({
            "type": "object",
            "properties": {
                "s": { "type": "string", "pattern": "^a" },
                "n": { "type": "number", "minimum": 0 },
                "l": { "type": "array", "items": { "type": "string" } },
                "any": { "type": "object", "description": "Anything." },
            },
        })
    );
    assert_eq!(notes, ["a schema with no type sent as an object at #/properties/any"]);
}
