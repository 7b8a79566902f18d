//! Streamed function-call arguments (Vertex AI's `partialArgs`): a value put at a JSON path
//! (`$.recipe.ingredients[0].name`, `$['odd key']`) inside the arguments built so far, a string
//! value appended to the string already there.

use serde_json::{Map, Value};

/// The deepest path taken.
const MAX_DEPTH: usize = 64;
/// The largest array index taken: an array is filled with `null` up to it, so a hostile index
/// must not allocate without bound.
const MAX_INDEX: usize = 10_000;

/// One step of a path.
#[derive(Debug, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

/// The steps of `$...`, or why the path is not one.
fn parse(path: &str) -> Result<Vec<Step>, String> {
    let rest = path.strip_prefix('$').ok_or("does not start with `$`")?;
    let bytes = rest.as_bytes();
    let mut steps = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if steps.len() >= MAX_DEPTH {
            return Err(format!("is deeper than {MAX_DEPTH} steps"));
        }
        match bytes[at] {
            b'.' => {
                let start = at + 1;
                let end = rest[start..]
                    .find(['.', '['])
                    .map_or(rest.len(), |offset| start + offset);
                if end == start {
                    return Err("has an empty key".into());
                }
                steps.push(Step::Key(rest[start..end].to_string()));
                at = end;
            }
            b'[' => {
                let close = rest[at..]
                    .find(']')
                    .map(|offset| at + offset)
                    .ok_or("has an unclosed `[`")?;
                let inside = &rest[at + 1..close];
                let quoted = inside
                    .strip_prefix('\'')
                    .and_then(|s| s.strip_suffix('\''))
                    .or_else(|| inside.strip_prefix('"').and_then(|s| s.strip_suffix('"')));
                match quoted {
                    Some(key) => steps.push(Step::Key(key.to_string())),
                    None => {
                        let index: usize = inside.parse().map_err(|_| format!("has a bad index `{inside}`"))?;
                        if index > MAX_INDEX {
                            return Err(format!("has an index over {MAX_INDEX}"));
                        }
                        steps.push(Step::Index(index));
                    }
                }
                at = close + 1;
            }
            _ => return Err("has a step that is neither `.key` nor `[...]`".into()),
        }
    }
    Ok(steps)
}

/// The value a piece puts at its path.
#[derive(Debug)]
pub(crate) enum Piece {
    /// A piece of a string, appended to the string there.
    Text(String),
    /// A whole value (number, bool, null).
    Whole(Value),
}

/// Put `piece` at `path` inside `root`, making the objects and arrays on the way.
pub(crate) fn put(root: &mut Value, path: &str, piece: Piece) -> Result<(), String> {
    let steps = parse(path).map_err(|problem| format!("the argument path `{path}` {problem}"))?;
    let mut slot = root;
    for step in steps {
        slot = match step {
            Step::Key(key) => {
                if !slot.is_object() {
                    *slot = Value::Object(Map::new());
                }
                let Value::Object(map) = slot else {
                    unreachable!("made an object")
                };
                map.entry(key).or_insert(Value::Null)
            }
            Step::Index(index) => {
                if !slot.is_array() {
                    *slot = Value::Array(Vec::new());
                }
                let Value::Array(items) = slot else {
                    unreachable!("made an array")
                };
                if items.len() <= index {
                    items.resize(index + 1, Value::Null);
                }
                &mut items[index]
            }
        };
    }
    match (piece, slot) {
        (Piece::Text(more), Value::String(text)) => text.push_str(&more),
        (Piece::Text(text), slot) => *slot = Value::String(text),
        (Piece::Whole(value), slot) => *slot = value,
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pieces_build_nested_arguments() {
        let mut args = json!({});
        put(&mut args, "$.recipe.ingredients[1].name", Piece::Text("Ground".into())).unwrap();
        put(&mut args, "$.recipe.ingredients[1].name", Piece::Text(" beef".into())).unwrap();
        put(&mut args, "$.recipe.ingredients[1].name", Piece::Text(String::new())).unwrap();
        put(&mut args, "$.recipe.steps[0]", Piece::Text("Preheat.".into())).unwrap();
        put(&mut args, "$['odd key'].price", Piece::Whole(json!(0.5))).unwrap();
        put(&mut args, "$.done", Piece::Whole(json!(true))).unwrap();
        assert_eq!(
            args,
            json!({"recipe": {"ingredients": [null, {"name": "Ground beef"}], "steps": ["Preheat."]},
                   "odd key": {"price": 0.5}, "done": true})
        );
    }

    #[test]
    fn bad_paths_are_refused_without_allocating() {
        let mut args = json!({});
        for path in ["location", "$.", "$[", "$[x]", "$[99999999999]", "$..a", "$a"] {
            assert!(put(&mut args, path, Piece::Whole(json!(1))).is_err(), "{path}");
        }
        let deep = format!("${}", ".a".repeat(MAX_DEPTH + 1));
        assert!(put(&mut args, &deep, Piece::Whole(json!(1))).is_err());
        assert_eq!(args, json!({}));
    }
}
