//! `replay`: print the normalized events of a recorded stream, then the validator's verdict.
//!
//! ```text
//! cargo run -p patchbay-replay -- --family anthropic FILE
//! ```
//!
//! FILE is a captured response body: raw SSE (with or without `event:` lines) or one JSON
//! payload per line; a file holding several responses prints each in turn. Each line of output
//! is one JSON value: the events of every response (normalized as the shared goldens are:
//! deltas joined, ids as ordinals, timings dropped), a `{"response": N, ...}` line before each
//! response when there are several, an `{"type": "error", ...}` line for an error that ended a
//! response, and last `{"verdict": "valid" | "invalid", ...}`. A stream is invalid when it
//! breaks a lifecycle rule or the wire format (a `Protocol` error); an error the provider reported
//! in the stream (`overloaded_error`...) is valid. The exit code is 0 for a valid stream, 1 for an
//! invalid one, 2 for bad arguments.
//!
//! Each family is a wire (see [`families`]), replayed by core's one generic
//! [`replay`]; add one there with its provider crate as a dependency.

use std::process::ExitCode;

use patchbay_conformance::{Recording, normalize};
use patchbay_core::ErrorKind;
use patchbay_core::kit::replay;
use serde_json::json;

/// A family's translation: a recorded body in, one recording per response out.
type Translate = fn(&[u8]) -> Vec<Recording>;

/// Every family, by name: each replays its wire.
fn families() -> Vec<(&'static str, Translate)> {
    vec![
        ("anthropic", |body| replay(patchbay_anthropic::Translator::new, [body])),
        ("openai", |body| {
            replay(patchbay_openrouter::translate::Translator::default, [body])
        }),
        ("gemini", |body| replay(patchbay_gemini::Translator::default, [body])),
        ("openai-responses", |body| {
            replay(patchbay_openai::Translator::default, [body])
        }),
        ("claude-agent", |body| {
            replay(
                || patchbay_claude_agent::translate::Translator::new("", patchbay_claude_agent::DEFAULT_HOST_SERVER),
                [body],
            )
        }),
    ]
}

fn usage(message: &str) -> ExitCode {
    let names: Vec<&str> = families().iter().map(|(name, _)| *name).collect();
    eprintln!("{message}\nusage: replay --family <{}> FILE", names.join("|"));
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let mut family = None;
    let mut file = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--family" => family = args.next(),
            "-h" | "--help" => return usage("print the normalized events of a recorded stream"),
            _ if file.is_none() && !arg.starts_with("--") => file = Some(arg),
            other => return usage(&format!("unexpected argument `{other}`")),
        }
    }
    let (Some(family), Some(file)) = (family, file) else {
        return usage("--family and FILE are required");
    };
    let Some((_, translate)) = families().into_iter().find(|(name, _)| *name == family) else {
        return usage(&format!("unknown family `{family}`"));
    };
    let body = match std::fs::read(&file) {
        Ok(body) => body,
        Err(error) => {
            eprintln!("cannot read {file}: {error}");
            return ExitCode::from(2);
        }
    };
    let recordings = translate(&body);
    let several = recordings.len() > 1;
    let mut violations = Vec::new();
    for (index, recording) in recordings.iter().enumerate() {
        if several {
            println!("{}", json!({ "response": index + 1 }));
        }
        let outcome = normalize(&recording.events, recording.error.as_ref().map(|e| e.kind()));
        for event in outcome.events {
            println!("{event}");
        }
        if let Some(error) = &recording.error {
            println!(
                "{}",
                json!({ "type": "error", "kind": error.kind().as_str(), "message": error.to_string() })
            );
            if error.kind() == ErrorKind::Protocol {
                // The stream broke the wire format: valid events, invalid stream.
                violations.push(json!({ "response": index + 1, "violation": error.to_string() }));
            }
        }
        if let Err(found) = recording.validate() {
            violations.extend(
                found
                    .into_iter()
                    .map(|v| json!({ "response": index + 1, "violation": v.to_string() })),
            );
        }
    }
    if violations.is_empty() {
        println!("{}", json!({ "verdict": "valid", "responses": recordings.len() }));
        ExitCode::SUCCESS
    } else {
        println!(
            "{}",
            json!({ "verdict": "invalid", "responses": recordings.len(), "violations": violations })
        );
        ExitCode::from(1)
    }
}
