//! A session's transcript for `get_agent_session_events`: its stored events after a seq, a
//! page at a time, in markdown (a readable transcript) or JSON (the events as stored).
//!
//! A page holds the events after `after` until [`MAX_PAGE_CHARS`] characters of answer or
//! `limit` events, whichever comes first; `next_after` is the seq to ask from next (`None`
//! once the page reached the last stored event). A single event's text longer than
//! [`MAX_RESULT_CHARS`] is cut as results are (with a line saying so), so no answer is larger
//! than an agent's context can take.
//!
//! Markdown joins the deltas of one text or reasoning block into one item and leaves out what
//! only streaming needs (tool input fragments, signatures, usage updates); each item starts with
//! the seq (or seq range) it came from.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use crate::format::{MAX_RESULT_CHARS, ResponseFormat, truncate_result};
use crate::store::StoredEvent;

/// The most characters of one page (as results are cut).
pub const MAX_PAGE_CHARS: usize = MAX_RESULT_CHARS;
/// The default and largest number of events per page.
pub const DEFAULT_EVENTS: usize = 200;
/// The largest `limit`.
pub const MAX_EVENTS: usize = 1000;

/// One page of a session's events.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventsPage {
    /// The session.
    pub session_name: String,
    /// The events, in order (`created_at` as RFC 3339 text).
    pub events: Vec<Value>,
    /// Ask with `after` = this for the next page; `None` when no stored event follows.
    pub next_after: Option<i64>,
}

/// A page of `events` (those after the caller's `after`, in order), at most `limit` of them.
pub fn page(session_name: &str, events: &[StoredEvent], limit: usize, format: ResponseFormat) -> String {
    let limit = limit.clamp(1, MAX_EVENTS);
    let mut chosen = Vec::new();
    let mut size = 0;
    for stored in events.iter().take(limit) {
        let view = view(stored);
        let len = view.to_string().len();
        if !chosen.is_empty() && size + len > MAX_PAGE_CHARS {
            break;
        }
        size += len;
        chosen.push((stored.seq, view));
    }
    let more = chosen.len() < events.len();
    let next_after = more.then(|| chosen.last().map(|(seq, _)| *seq)).flatten();
    match format {
        ResponseFormat::Json => {
            let page = EventsPage {
                session_name: session_name.to_owned(),
                events: chosen.into_iter().map(|(_, v)| v).collect(),
                next_after,
            };
            serde_json::to_string_pretty(&page).unwrap_or_default()
        }
        ResponseFormat::Markdown => markdown(session_name, &chosen, next_after),
    }
}

/// A stored event as shown: long strings cut, the time as RFC 3339.
fn view(stored: &StoredEvent) -> Value {
    serde_json::json!({
        "seq": stored.seq,
        "job_id": stored.job_id,
        "created_at": crate::service::rfc3339(stored.created_at),
        "event": cut_strings(&stored.event),
    })
}

fn cut_strings(value: &Value) -> Value {
    match value {
        Value::String(text) if text.chars().count() > MAX_RESULT_CHARS => Value::String(truncate_result(text)),
        Value::Array(items) => Value::Array(items.iter().map(cut_strings).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), cut_strings(v))).collect()),
        other => other.clone(),
    }
}

fn markdown(session_name: &str, chosen: &[(i64, Value)], next_after: Option<i64>) -> String {
    let mut out = format!("## {session_name} events\n");
    if chosen.is_empty() {
        out.push_str("\nNo events found.\n");
    }
    // A run of deltas of one kind and block: (kind, index, first seq, last seq, text).
    let mut open: Option<(String, i64, i64, i64, String)> = None;
    let flush = |out: &mut String, open: &mut Option<(String, i64, i64, i64, String)>| {
        if let Some((kind, _, first, last, text)) = open.take() {
            let seqs = if first == last {
                first.to_string()
            } else {
                format!("{first}-{last}")
            };
            let _ = write!(out, "\n- {seqs} {kind}: {}\n", truncate_result(&text));
        }
    };
    for (seq, view) in chosen {
        let event = &view["event"];
        let kind = event["type"].as_str().unwrap_or("event");
        let delta = match kind {
            "text_delta" => Some("text"),
            "reasoning_delta" => Some("reasoning"),
            _ => None,
        };
        if let Some(delta) = delta {
            let index = event["index"].as_i64().unwrap_or_default();
            let text = event["text"].as_str().unwrap_or_default();
            match &mut open {
                Some((k, i, _, last, buffer)) if k == delta && *i == index => {
                    *last = *seq;
                    buffer.push_str(text);
                }
                _ => {
                    flush(&mut out, &mut open);
                    open = Some((delta.to_owned(), index, *seq, *seq, text.to_owned()));
                }
            }
            continue;
        }
        flush(&mut out, &mut open);
        let line = match kind {
            "started" => Some(format!("started (model {})", event["model"].as_str().unwrap_or("?"))),
            "tool_call" => Some(format!(
                "tool call `{}`: {}",
                event["name"].as_str().unwrap_or("?"),
                event["input"]
            )),
            "tool_result" => Some(format!(
                "tool result `{}` ({}): {}",
                event["name"].as_str().unwrap_or("?"),
                event["result"]["status"].as_str().unwrap_or("?"),
                tool_text(&event["result"])
            )),
            "step_finished" => Some(format!("step finished ({})", reason(&event["reason"]))),
            "finish" => Some(format!("finished ({})", reason(&event["reason"]))),
            "error" => Some(format!(
                "error ({}): {}",
                event["kind"].as_str().unwrap_or("?"),
                event["message"].as_str().unwrap_or_default()
            )),
            _ => None,
        };
        if let Some(line) = line {
            let _ = write!(out, "\n- {seq} {line}\n");
        }
    }
    flush(&mut out, &mut open);
    if let Some(next) = next_after {
        let _ = write!(out, "\n[more events: ask again with after = {next}]\n");
    }
    out
}

fn reason(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

fn tool_text(result: &Value) -> String {
    let text: String = result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    truncate_result(&text)
}
