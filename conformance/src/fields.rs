//! The field audit: proof that a translator drops no field of the recorded streams unknowingly.
//!
//! A provider keeps a table of every field its wire sends (`FIELDS.md` in the crate, which is
//! also its documentation): each field either becomes an event ("mapped") or is knowingly
//! ignored, with the reason. [`FieldAudit`] reads every payload of every recording, lists
//! each field (leaf) it holds, and checks the table three ways:
//! - a field the table does not name fails the audit until someone decides its fate;
//! - a field the table calls mapped must change the events when its value changes (it is
//!   perturbed in up to twelve recordings, once in each: a string gains a character, a number grows, a boolean
//!   flips; `null`s and empty containers cannot be perturbed and are taken on trust);
//! - a field the table calls ignored must not change the events when its value changes.
//!
//! Paths are `kind:dotted.path`, where `kind` is what the provider's `kind_of` says about the
//! payload (its `type`, say) and array elements are written `[]`: `message_delta:usage.output_tokens`,
//! `:choices[].delta.content`. A table pattern ending in `.*` covers the field it names and
//! everything below it; the longest matching pattern wins.
//!
//! The table is a Markdown table whose first column holds the pattern in backticks and whose
//! second column says what the field becomes, or starts with `ignored:` and says why:
//!
//! ```
//! use patchbay_conformance::fields::FieldTable;
//! let table = FieldTable::from_markdown("
//! | field | becomes |
//! |---|---|
//! | `:choices[].delta.content` | `TextDelta` |
//! | `:system_fingerprint` | ignored: a deployment id; nothing a host acts on |
//! ").unwrap();
//! assert_eq!(table.len(), 2);
//! ```

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use patchbay_core::kit::{Framer, Framing};
use patchbay_core::{ErrorKind, Event};
use serde_json::Value;

use crate::normalize::without_timings;

/// In how many recordings (at most) a field is perturbed.
const PLACES: usize = 12;

/// What happens to a field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    /// It becomes (part of) this event.
    Mapped(String),
    /// It is knowingly dropped, for this reason.
    Ignored(String),
}

/// A provider's field table.
#[derive(Debug, Clone, Default)]
pub struct FieldTable {
    rows: Vec<(String, Fate)>,
}

impl FieldTable {
    /// Read the rows of a Markdown table: `` | `pattern` | what it becomes, or ignored: why | ``.
    /// Rows whose first cell holds no backticked pattern (the header, the rule) are skipped.
    pub fn from_markdown(text: &str) -> Result<Self, String> {
        let mut rows = Vec::new();
        for (number, line) in text.lines().enumerate() {
            let cells: Vec<&str> = line.trim().trim_matches('|').split('|').map(str::trim).collect();
            let Some(pattern) = cells
                .first()
                .and_then(|c| c.strip_prefix('`'))
                .and_then(|c| c.strip_suffix('`'))
            else {
                continue;
            };
            let fate = cells.get(1).copied().unwrap_or_default();
            let fate = match fate.strip_prefix("ignored:") {
                Some(reason) if !reason.trim().is_empty() => Fate::Ignored(reason.trim().to_owned()),
                Some(_) => return Err(format!("line {}: `{pattern}` is ignored without a reason", number + 1)),
                None if fate.is_empty() => return Err(format!("line {}: `{pattern}` says nothing", number + 1)),
                None => Fate::Mapped(fate.to_owned()),
            };
            rows.push((pattern.to_owned(), fate));
        }
        Ok(Self { rows })
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether the table has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The fate of a field path: the longest matching pattern's.
    pub fn fate(&self, path: &str) -> Option<&Fate> {
        self.rows
            .iter()
            .filter(|(pattern, _)| matches(pattern, path))
            .max_by_key(|(pattern, _)| pattern.len())
            .map(|(_, fate)| fate)
    }
}

fn matches(pattern: &str, path: &str) -> bool {
    match pattern.strip_suffix(".*") {
        Some(prefix) => {
            path == prefix
                || path
                    .strip_prefix(prefix)
                    .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
        }
        None => pattern == path,
    }
}

/// Frames written back as an SSE body (`data: <frame>` and a blank line each), for translators
/// that read bytes.
pub fn sse_body(frames: &[String]) -> Vec<u8> {
    let mut body = Vec::with_capacity(frames.iter().map(|f| f.len() + 8).sum());
    for frame in frames {
        body.extend_from_slice(b"data: ");
        body.extend_from_slice(frame.as_bytes());
        body.extend_from_slice(b"\n\n");
    }
    body
}

/// What a translation of one recording gave: each response's events and error kind.
pub type Outcomes = Vec<(Vec<Event>, Option<ErrorKind>)>;

type Translate<'a> = Box<dyn Fn(&[String]) -> Outcomes + 'a>;

/// The audit of one provider over a set of recordings. See the module docs.
pub struct FieldAudit<'a> {
    table: FieldTable,
    files: Vec<PathBuf>,
    kind_of: Box<dyn Fn(&Value) -> String + 'a>,
    translate: Translate<'a>,
}

/// One place a field occurs: the file, the frame and the JSON pointer.
#[derive(Debug, Clone)]
struct Place {
    file: usize,
    frame: usize,
    pointer: String,
}

impl<'a> FieldAudit<'a> {
    /// An audit of `files` against `table`. `translate` gets the frames of one recording (each
    /// payload's text: JSON, or anything else such as `[DONE]`, in order) and translates them.
    pub fn new(table: FieldTable, files: Vec<PathBuf>, translate: impl Fn(&[String]) -> Outcomes + 'a) -> Self {
        Self {
            table,
            files,
            kind_of: Box::new(|value| value.get("type").and_then(Value::as_str).unwrap_or_default().to_owned()),
            translate: Box::new(translate),
        }
    }

    /// How a payload's kind (the part of its paths before `:`) is read; by default its `type`.
    pub fn with_kind_of(mut self, kind_of: impl Fn(&Value) -> String + 'a) -> Self {
        self.kind_of = Box::new(kind_of);
        self
    }

    /// Run the audit. `Err` lists every problem found.
    pub fn run(&self) -> Result<AuditSummary, String> {
        let frames: Vec<Vec<String>> = self.files.iter().map(|path| frames_of(path)).collect();
        // Every field path, with its places (smallest recordings first).
        let mut order: Vec<usize> = (0..self.files.len()).collect();
        order.sort_by_key(|&i| frames[i].iter().map(String::len).sum::<usize>());
        let mut places: BTreeMap<String, Vec<Place>> = BTreeMap::new();
        for &file in &order {
            for (frame, text) in frames[file].iter().enumerate() {
                let Ok(value) = serde_json::from_str::<Value>(text) else {
                    continue;
                };
                let kind = (self.kind_of)(&value);
                leaves(&value, &mut String::new(), &mut String::new(), &mut |path, pointer| {
                    let list = places.entry(format!("{kind}:{path}")).or_default();
                    // One place per recording, in up to `PLACES` recordings.
                    if list.len() < PLACES && list.last().is_none_or(|last| last.file != file) {
                        list.push(Place {
                            file,
                            frame,
                            pointer: pointer.to_owned(),
                        });
                    }
                });
            }
        }
        let mut baselines: HashMap<usize, Outcomes> = HashMap::new();
        let mut problems = String::new();
        let mut summary = AuditSummary::default();
        for (path, list) in &places {
            let Some(fate) = self.table.fate(path) else {
                let _ = writeln!(
                    problems,
                    "unknown field `{path}` (in {}): map it or say why it is ignored",
                    self.name(list[0].file)
                );
                continue;
            };
            let mut tried = 0;
            let mut changed_in = None;
            for place in list {
                let mut copy = frames[place.file].clone();
                if !perturb(&mut copy[place.frame], &place.pointer) {
                    continue;
                }
                tried += 1;
                let baseline = baselines
                    .entry(place.file)
                    .or_insert_with(|| strip((self.translate)(&frames[place.file])));
                if strip((self.translate)(&copy)) != *baseline {
                    changed_in.get_or_insert(place.file);
                }
            }
            match fate {
                Fate::Mapped(_) if tried > 0 && changed_in.is_none() => {
                    let _ = writeln!(
                        problems,
                        "`{path}` is listed as mapped, but changing it changes no event (in {})",
                        self.name(list[0].file)
                    );
                }
                Fate::Ignored(_) if changed_in.is_some() => {
                    let file = changed_in.unwrap_or_default();
                    let _ = writeln!(
                        problems,
                        "`{path}` is listed as ignored, but changing it changes the events (in {})",
                        self.name(file)
                    );
                }
                Fate::Mapped(_) if tried > 0 => summary.mapped_proven += 1,
                Fate::Mapped(_) => summary.mapped_on_trust += 1,
                Fate::Ignored(_) => summary.ignored += 1,
            }
        }
        summary.fields = places.len();
        summary.files = self.files.len();
        if problems.is_empty() {
            Ok(summary)
        } else {
            Err(problems)
        }
    }

    fn name(&self, file: usize) -> String {
        crate::fixtures::relative_name(&self.files[file])
    }
}

/// The counts of a clean audit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AuditSummary {
    /// Recordings read.
    pub files: usize,
    /// Distinct field paths seen.
    pub fields: usize,
    /// Mapped fields whose change changed the events.
    pub mapped_proven: usize,
    /// Mapped fields only ever `null` or empty, taken on trust.
    pub mapped_on_trust: usize,
    /// Ignored fields (none of them changed the events).
    pub ignored: usize,
}

/// Each payload of a recording in order: SSE `data:` frames or JSON lines.
fn frames_of(path: &Path) -> Vec<String> {
    let body = std::fs::read(path).unwrap_or_default();
    // A whole JSON answer: an array of chunks (Gemini's stream without `alt=sse`) is a frame per
    // chunk, one object (pretty-printed over many lines) is one frame.
    match serde_json::from_slice::<Value>(&body) {
        Ok(Value::Array(items)) => return items.iter().map(Value::to_string).collect(),
        Ok(value @ Value::Object(_)) => return vec![value.to_string()],
        _ => {}
    }
    let mut frames = Vec::new();
    let mut framer = Framer::new(Framing::SseOrJsonLines);
    // JSON frames are written again as serde_json writes them, so that a perturbed frame
    // differs from its baseline in the perturbed value only.
    let mut keep = |data: &[u8]| {
        let frame = match serde_json::from_slice::<Value>(data) {
            Ok(value) => value.to_string(),
            Err(_) => String::from_utf8_lossy(data).into_owned(),
        };
        frames.push(frame);
        Ok(())
    };
    // A recording the framer refuses (a huge line on purpose) keeps the frames before it.
    if framer.push(&body, &mut keep).is_ok() {
        let _ = framer.finish(&mut keep);
    }
    frames
}

/// Call `each(path, pointer)` for every leaf: scalars, `null`, empty arrays and objects.
fn leaves(value: &Value, path: &mut String, pointer: &mut String, each: &mut dyn FnMut(&str, &str)) {
    let (path_len, pointer_len) = (path.len(), pointer.len());
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, child) in map {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                pointer.push('/');
                pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                leaves(child, path, pointer, each);
                path.truncate(path_len);
                pointer.truncate(pointer_len);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for (i, child) in items.iter().enumerate() {
                path.push_str("[]");
                let _ = write!(pointer, "/{i}");
                leaves(child, path, pointer, each);
                path.truncate(path_len);
                pointer.truncate(pointer_len);
            }
        }
        _ => each(path, pointer),
    }
}

/// Change the leaf at `pointer` in a JSON frame; `false` when it cannot be changed.
fn perturb(frame: &mut String, pointer: &str) -> bool {
    let Ok(mut value) = serde_json::from_str::<Value>(frame) else {
        return false;
    };
    let Some(leaf) = value.pointer_mut(pointer) else {
        return false;
    };
    let changed = match leaf {
        Value::String(text) => {
            text.push('~');
            true
        }
        Value::Bool(flag) => {
            *flag = !*flag;
            true
        }
        Value::Number(number) => {
            *leaf = match (number.as_u64(), number.as_i64(), number.as_f64()) {
                (Some(n), _, _) => Value::from(n.saturating_add(1)),
                (None, Some(n), _) => Value::from(n.saturating_add(1)),
                (None, None, Some(x)) => Value::from(x * 2.0 + 1.0),
                _ => return false,
            };
            true
        }
        _ => false,
    };
    if changed {
        *frame = value.to_string();
    }
    changed
}

fn strip(outcomes: Outcomes) -> Outcomes {
    outcomes
        .into_iter()
        .map(|(events, error)| (without_timings(&events), error))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_pattern_wins_and_prefixes_stop_at_separators() {
        let table = FieldTable::from_markdown(
            "| `a:x.*` | ignored: all of x |\n| `a:x.y` | `TextDelta` |\n| `a:list[].z` | `Usage` |",
        )
        .expect("test data");
        assert_eq!(table.fate("a:x.y"), Some(&Fate::Mapped("`TextDelta`".into())));
        assert!(matches!(table.fate("a:x.w"), Some(Fate::Ignored(_))));
        assert!(matches!(table.fate("a:x[].w"), Some(Fate::Ignored(_))));
        assert_eq!(table.fate("a:xy"), None);
        assert!(table.fate("a:list[].z").is_some());
        assert!(FieldTable::from_markdown("| `a:b` | ignored: |").is_err());
    }

    #[test]
    fn leaves_name_paths_with_array_markers_and_perturb_changes_them() {
        let value: Value =
            serde_json::from_str(r#"{"a":{"b":[{"c":1},{"c":"x"}],"e":[],"n":null}}"#).expect("test data");
        let mut seen = Vec::new();
        leaves(&value, &mut String::new(), &mut String::new(), &mut |path, pointer| {
            seen.push(format!("{path}={pointer}"))
        });
        assert_eq!(
            seen,
            vec!["a.b[].c=/a/b/0/c", "a.b[].c=/a/b/1/c", "a.e=/a/e", "a.n=/a/n"]
        );
        let mut frame = value.to_string();
        assert!(perturb(&mut frame, "/a/b/0/c"));
        assert!(perturb(&mut frame, "/a/b/1/c"));
        assert!(!perturb(&mut frame, "/a/n"));
        assert_eq!(frame, r#"{"a":{"b":[{"c":2},{"c":"x~"}],"e":[],"n":null}}"#);
    }
}

#[cfg(test)]
mod audit_tests {
    use super::*;
    use patchbay_core::FinishReason;

    /// A toy translator: `text` becomes a text delta, everything else is dropped.
    fn toy(frames: &[String]) -> Outcomes {
        let events = frames
            .iter()
            .filter_map(|f| serde_json::from_str::<Value>(f).ok())
            .filter_map(|v| v.get("text").and_then(Value::as_str).map(str::to_owned))
            .map(|text| Event::TextDelta { index: 0, text })
            .chain([Event::Finish {
                reason: FinishReason::Stop,
                usage: Default::default(),
                metrics: Default::default(),
            }])
            .collect();
        vec![(events, None)]
    }

    fn audit(table: &str) -> Result<AuditSummary, String> {
        let dir = tempfile::tempdir().expect("test data");
        let path = dir.path().join("toy.jsonl");
        std::fs::write(
            &path,
            "{\"type\":\"t\",\"text\":\"hi\",\"seq\":1}\n{\"type\":\"t\",\"text\":\"there\",\"seq\":2}\n",
        )
        .expect("test data");
        FieldAudit::new(FieldTable::from_markdown(table).expect("test data"), vec![path], toy).run()
    }

    #[test]
    fn a_new_field_fails_until_decided_and_claims_are_checked_both_ways() {
        let unknown =
            audit("| `t:text` | `TextDelta` |\n| `t:type` | ignored: dispatch |").expect_err("the audit fails");
        assert!(unknown.contains("unknown field `t:seq`"), "{unknown}");

        let wrong_mapped = audit("| `t:text` | `TextDelta` |\n| `t:type` | ignored: toy |\n| `t:seq` | `Usage` |")
            .expect_err("the audit fails");
        assert!(
            wrong_mapped.contains("`t:seq` is listed as mapped, but changing it changes no event"),
            "{wrong_mapped}"
        );

        let wrong_ignored =
            audit("| `t:text` | ignored: nobody reads it |\n| `t:type` | ignored: toy |\n| `t:seq` | ignored: toy |")
                .expect_err("the audit fails");
        assert!(
            wrong_ignored.contains("`t:text` is listed as ignored, but changing it changes the events"),
            "{wrong_ignored}"
        );

        let clean = audit("| `t:text` | `TextDelta` |\n| `t:type` | ignored: toy |\n| `t:seq` | ignored: a counter |")
            .expect("test data");
        assert_eq!((clean.fields, clean.mapped_proven, clean.ignored), (3, 1, 2));
    }
}
