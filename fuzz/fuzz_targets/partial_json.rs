//! `patchbay_core::object::parse_partial_json`, the partial-JSON completion of streamed
//! structured output: no panic; what it returns is JSON that serializes and reads back the same;
//! on text that is already complete JSON it gives that value (numbers compared as `f64`, as the
//! two parsers may round the last digit differently); and every prefix of a complete JSON text
//! of a complete JSON object or array (up to 128 bytes) that it completes gives one of the same
//! kind.
#![no_main]

use libfuzzer_sys::fuzz_target;
use patchbay_core::object::parse_partial_json;
use serde_json::Value;

/// Equal, with numbers compared as `f64` (relative 1e-12).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x == y || (x - y).abs() <= 1e-12 * x.abs().max(y.abs()),
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(key, x)| y.get(key).is_some_and(|y| same(x, y)))
        }
        _ => a == b,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let partial = parse_partial_json(text);
    if let Some(value) = &partial {
        let json = serde_json::to_string(value).expect("a value serializes");
        let back: Value = serde_json::from_str(&json).expect("what it returns is JSON");
        assert!(same(&back, value), "{json} read back as {back}");
    }
    if let Ok(complete) = serde_json::from_str::<Value>(text) {
        let Some(partial) = partial else {
            panic!("complete JSON {text:?} gave nothing");
        };
        assert!(
            same(&partial, &complete),
            "complete JSON {text:?} gave {partial}, not {complete}"
        );
        // Every prefix of short texts (quadratic: long ones would slow the fuzzer down).
        if (complete.is_object() || complete.is_array()) && text.len() <= 128 {
            for (at, _) in text.char_indices() {
                if let Some(prefix) = parse_partial_json(&text[..at]) {
                    assert_eq!(
                        prefix.is_object(),
                        complete.is_object(),
                        "the prefix {:?} gave {prefix}",
                        &text[..at]
                    );
                }
            }
        }
    }
});
