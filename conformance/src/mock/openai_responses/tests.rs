use patchbay_core::{ErrorKind, FinishReason, Usage};
use patchbay_scripted::{Citation, End, Part, Response, Script, ScriptedError, Turn};
use serde_json::{Value, json};

use super::{ResponsesWire, error_code};
use crate::mock::{MockServer, ONE_DELTA_ABOVE, WireFormat};

const MODEL: &str = "gpt-5-mini";

/// The events of a rendered response, checking the framing: each frame one
/// `event: <type>\ndata: <one line of JSON>\n\n`, the JSON's `type` the event name, its
/// `sequence_number` counting from 0.
fn events(frames: &[String]) -> Vec<(String, Value)> {
    frames
        .iter()
        .enumerate()
        .map(|(at, frame)| {
            let rest = frame
                .strip_prefix("event: ")
                .unwrap_or_else(|| panic!("no event line: {frame:?}"));
            let (name, rest) = rest.split_once('\n').unwrap();
            let data = rest
                .strip_prefix("data: ")
                .and_then(|d| d.strip_suffix("\n\n"))
                .unwrap();
            assert!(!data.contains('\n'), "one data line: {frame:?}");
            let value: Value = serde_json::from_str(data).unwrap();
            assert_eq!(value["type"], name, "{frame:?}");
            assert_eq!(value["sequence_number"], at, "{frame:?}");
            (name.to_string(), value)
        })
        .collect()
}

fn render(response: &Response) -> Vec<(String, Value)> {
    events(&ResponsesWire::new().render_response(response, MODEL))
}

fn names(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(name, _)| name.as_str()).collect()
}

/// The events called `name`.
fn named<'a>(events: &'a [(String, Value)], name: &str) -> Vec<&'a Value> {
    events.iter().filter(|(n, _)| n == name).map(|(_, v)| v).collect()
}

/// The `delta`s of the events called `name`, joined.
fn joined(events: &[(String, Value)], name: &str) -> String {
    named(events, name)
        .iter()
        .map(|e| e["delta"].as_str().unwrap())
        .collect()
}

#[test]
fn a_text_streams_as_one_message_item_between_created_and_completed() {
    let events = render(&Response::new(vec![Part::text("Hello! How can I help?")]).with_usage(12, 9));
    assert_eq!(
        names(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    for (_, created) in &events[..2] {
        let response = &created["response"];
        assert_eq!(response["id"], "resp_1");
        assert_eq!(response["object"], "response");
        assert_eq!(response["status"], "in_progress");
        assert_eq!(response["model"], MODEL);
        assert_eq!(response["output"], json!([]));
        assert_eq!(response["usage"], Value::Null);
        assert_eq!(response["store"], false);
    }
    let added = &events[2].1;
    assert_eq!(added["output_index"], 0);
    assert_eq!(
        added["item"],
        json!({ "id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": [] })
    );
    assert_eq!(events[3].1["part"]["text"], "");
    let delta = &events[4].1;
    assert_eq!(
        (&delta["item_id"], &delta["content_index"]),
        (&json!("msg_1"), &json!(0))
    );
    assert_eq!(delta["logprobs"], json!([]));
    assert_eq!(joined(&events, "response.output_text.delta"), "Hello! How can I help?");
    assert_eq!(events[9].1["text"], "Hello! How can I help?");
    let item = &events[11].1["item"];
    assert_eq!(item["status"], "completed");
    assert_eq!(
        item["content"],
        json!([{ "type": "output_text", "annotations": [], "logprobs": [], "text": "Hello! How can I help?" }])
    );
    let completed = &events[12].1["response"];
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["output"], json!([item]));
    assert_eq!(
        completed["usage"],
        json!({
            "input_tokens": 12, "input_tokens_details": { "cached_tokens": 0 },
            "output_tokens": 9, "output_tokens_details": { "reasoning_tokens": 0 }, "total_tokens": 21,
        })
    );
}

#[test]
fn thinking_then_a_tool_call_are_a_reasoning_and_a_function_call_item() {
    let text = "The user asks about rain. I should check.";
    let response = Response::new(vec![
        Part::thinking(text, "c2lnbmF0dXJl"),
        Part::tool_call("toolu_01", "get_weather", json!({ "city": "Paris" })),
    ]);
    let events = render(&response);
    let reasoning = named(&events, "response.output_item.done")[0];
    assert_eq!(reasoning["output_index"], 0);
    assert_eq!(
        reasoning["item"],
        json!({
            "id": "rs_1", "type": "reasoning", "encrypted_content": "c2lnbmF0dXJl",
            "summary": [{ "type": "summary_text", "text": text }],
        })
    );
    let part = named(&events, "response.reasoning_summary_part.added")[0];
    assert_eq!((&part["item_id"], &part["summary_index"]), (&json!("rs_1"), &json!(0)));
    assert_eq!(joined(&events, "response.reasoning_summary_text.delta"), text);
    assert_eq!(named(&events, "response.reasoning_summary_text.done")[0]["text"], text);
    assert_eq!(
        named(&events, "response.reasoning_summary_part.done")[0]["part"]["text"],
        text
    );

    let added = named(&events, "response.output_item.added")[1];
    assert_eq!(added["output_index"], 1);
    assert_eq!(
        added["item"],
        json!({
            "id": "fc_2", "type": "function_call", "status": "in_progress", "arguments": "",
            "call_id": "toolu_01", "name": "get_weather",
        })
    );
    let arguments = r#"{"city":"Paris"}"#;
    assert_eq!(named(&events, "response.function_call_arguments.delta").len(), 2);
    assert_eq!(joined(&events, "response.function_call_arguments.delta"), arguments);
    let done = named(&events, "response.function_call_arguments.done")[0];
    assert_eq!(
        (&done["item_id"], &done["arguments"]),
        (&json!("fc_2"), &json!(arguments))
    );
    let call = &named(&events, "response.output_item.done")[1]["item"];
    assert_eq!(
        (&call["status"], &call["arguments"]),
        (&json!("completed"), &json!(arguments))
    );
    let (last, terminal) = events.last().unwrap();
    assert_eq!(last, "response.completed", "a tool-use finish completes");
    assert_eq!(terminal["response"]["output"].as_array().unwrap().len(), 2);
}

#[test]
fn with_tool_namespaces_an_mcp_call_names_its_server_as_the_namespace() {
    let response = Response::new(vec![
        Part::tool_call("call_1", "mcp__host__get_weather", json!({ "city": "Paris" })),
        Part::tool_call("call_2", "shell", json!({ "command": "ls" })),
    ]);
    let plain = render(&response);
    let item = &named(&plain, "response.output_item.added")[0]["item"];
    assert_eq!(item["name"], "mcp__host__get_weather", "unchanged by default");
    assert!(item.get("namespace").is_none());

    let events = events(
        &ResponsesWire::new()
            .with_tool_namespaces()
            .render_response(&response, MODEL),
    );
    let added = named(&events, "response.output_item.added");
    let done = named(&events, "response.output_item.done");
    let (_, terminal) = events.last().unwrap();
    for item in [&added[0]["item"], &done[0]["item"], &terminal["response"]["output"][0]] {
        assert_eq!(
            (&item["namespace"], &item["name"]),
            (&json!("mcp__host"), &json!("get_weather"))
        );
        assert_eq!(item["call_id"], "call_1");
    }
    for item in [&added[1]["item"], &done[1]["item"]] {
        assert_eq!(
            item["name"], "shell",
            "a name that is not mcp__<server>__<tool> is kept"
        );
        assert!(item.get("namespace").is_none());
    }
}

#[test]
fn an_empty_thinking_has_no_summary_events_and_no_signature_no_encrypted_content() {
    let signed = Part::Thinking {
        text: String::new(),
        signature: Some("c2ln".into()),
    };
    let events = render(&Response::new(vec![signed]));
    assert_eq!(
        names(&events)[2..],
        [
            "response.output_item.added",
            "response.output_item.done",
            "response.completed"
        ]
    );
    assert_eq!(
        events[3].1["item"],
        json!({ "id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "c2ln" })
    );
    let unsigned = Part::Thinking {
        text: "Hmm.".into(),
        signature: None,
    };
    let events = render(&Response::new(vec![unsigned]));
    let item = &named(&events, "response.output_item.done")[0]["item"];
    assert!(item.get("encrypted_content").is_none(), "{item}");
}

#[test]
fn a_refusal_finish_streams_the_text_as_a_refusal_part() {
    let response = Response::new(vec![Part::text("I can't help with that.")]).with_end(End::Finish {
        reason: FinishReason::Refusal,
    });
    let events = render(&response);
    assert!(named(&events, "response.output_text.delta").is_empty());
    assert_eq!(
        named(&events, "response.content_part.added")[0]["part"],
        json!({ "type": "refusal", "refusal": "" })
    );
    assert_eq!(joined(&events, "response.refusal.delta"), "I can't help with that.");
    let done = named(&events, "response.refusal.done")[0];
    assert_eq!(
        (&done["refusal"], &done["content_index"]),
        (&json!("I can't help with that."), &json!(0))
    );
    let item = &named(&events, "response.output_item.done")[0]["item"];
    assert_eq!(
        item["content"],
        json!([{ "type": "refusal", "refusal": "I can't help with that." }])
    );
    let (last, terminal) = events.last().unwrap();
    assert_eq!(
        (last.as_str(), &terminal["response"]["status"]),
        ("response.completed", &json!("completed"))
    );
}

#[test]
fn max_tokens_and_a_content_filter_end_incomplete_with_their_reason() {
    for (reason, why) in [
        (FinishReason::Length, "max_output_tokens"),
        (FinishReason::ContentFilter, "content_filter"),
    ] {
        let response = Response::new(vec![Part::text("Once upon a time")]).with_end(End::Finish { reason });
        let events = render(&response);
        let (last, terminal) = events.last().unwrap();
        assert_eq!(last, "response.incomplete");
        assert_eq!(terminal["response"]["status"], "incomplete");
        assert_eq!(terminal["response"]["incomplete_details"], json!({ "reason": why }));
        assert_eq!(terminal["response"]["output"].as_array().unwrap().len(), 1);
    }
    for reason in [FinishReason::Cancelled, FinishReason::Other("pause_turn".into())] {
        let events = render(&Response::new(Vec::new()).with_end(End::Finish { reason }));
        assert_eq!(
            names(&events),
            ["response.created", "response.in_progress", "response.completed"]
        );
        assert_eq!(events[2].1["response"]["incomplete_details"], Value::Null);
    }
}

#[test]
fn an_error_end_is_an_error_event_instead_of_the_terminal_one() {
    let error = ScriptedError::new(ErrorKind::Overloaded, "Overloaded");
    let events = render(&Response::new(vec![Part::text("Here is the first part")]).with_end(End::Error(error)));
    let (last, event) = events.last().unwrap();
    assert_eq!(last, "error");
    assert_eq!(
        event,
        &json!({
            "type": "error", "code": "server_is_overloaded", "message": "Overloaded", "param": null,
            "sequence_number": events.len() - 1,
        })
    );
    assert!(!names(&events).iter().any(|n| n.starts_with("response.completed")));
    for (kind, code) in [
        (ErrorKind::Overloaded, "server_is_overloaded"),
        (ErrorKind::RateLimited, "rate_limit_exceeded"),
        (ErrorKind::ContextTooLong, "context_length_exceeded"),
        (ErrorKind::InvalidRequest, "invalid_request_error"),
        (ErrorKind::Auth, "invalid_api_key"),
        (ErrorKind::Server, "server_error"),
        (ErrorKind::Transport, "server_error"),
    ] {
        assert_eq!(error_code(kind), code, "{kind:?}");
    }
}

#[test]
fn a_cut_stream_has_every_item_event_but_no_terminal_one() {
    for end in [End::Truncate, End::Stall] {
        let events = render(&Response::new(vec![Part::text("One, two,")]).with_end(end.clone()));
        assert_eq!(events.last().unwrap().0, "response.output_item.done", "{end:?}");
    }
}

#[test]
fn cited_text_carries_one_url_citation_per_source_spanning_its_characters() {
    let text = "Köln: 330 m.";
    let response = Response::new(vec![Part::cited(
        text,
        vec![
            Citation::new("https://a.example/", "A", "passage a"),
            Citation::new("https://b.example/", "B", "passage b"),
        ],
    )]);
    let events = render(&response);
    let added = named(&events, "response.output_text.annotation.added");
    assert_eq!(added.len(), 2);
    assert_eq!(added[1]["annotation_index"], 1);
    assert_eq!(added[1]["content_index"], 0);
    let annotation = json!({
        "type": "url_citation", "url": "https://a.example/", "title": "A", "start_index": 0, "end_index": 12,
    });
    assert_eq!(added[0]["annotation"], annotation);
    let at = |name: &str| names(&events).iter().position(|n| *n == name).unwrap();
    assert!(at("response.output_text.annotation.added") > at("response.output_text.delta"));
    assert!(at("response.output_text.annotation.added") < at("response.output_text.done"));
    let part = &named(&events, "response.content_part.done")[0]["part"];
    assert_eq!(part["annotations"].as_array().unwrap().len(), 2);
    assert_eq!(part["annotations"][0], annotation);
    assert!(!events.iter().any(|(_, e)| e.to_string().contains("passage")));
}

#[test]
fn a_huge_text_is_one_delta() {
    let text = "word ".repeat(ONE_DELTA_ABOVE);
    let events = render(&Response::new(vec![Part::text(text.clone())]));
    let deltas = named(&events, "response.output_text.delta");
    assert_eq!(deltas.len(), 1);
    assert_eq!(deltas[0]["delta"], text);
}

#[test]
fn usage_counts_the_whole_prompt_and_the_reasoning() {
    let mut response = Response::new(vec![Part::text("a")]);
    response.usage = Usage {
        input: Some(100),
        output: Some(30),
        cache_read: Some(400),
        cache_write: Some(5),
        reasoning: Some(10),
        cost_usd: None,
    };
    let events = render(&response);
    assert_eq!(
        events.last().unwrap().1["response"]["usage"],
        json!({
            "input_tokens": 505, "input_tokens_details": { "cached_tokens": 400 },
            "output_tokens": 30, "output_tokens_details": { "reasoning_tokens": 10 }, "total_tokens": 535,
        })
    );
}

#[test]
fn ids_stay_unique_across_the_calls_of_one_wire() {
    let wire = ResponsesWire::new();
    let first = events(&wire.render_response(
        &Response::new(vec![Part::text("a"), Part::tool_call("t1", "f", json!({}))]),
        MODEL,
    ));
    let (_, _, body) = wire.render_failure(&ScriptedError::new(ErrorKind::Server, "oops"));
    assert!(body.contains("server_error"));
    let mut scripted = Response::new(vec![Part::text("b")]);
    scripted.id = Some("resp_scripted".into());
    let second = events(&wire.render_response(&scripted, MODEL));
    let third = events(&wire.render_response(&Response::new(vec![Part::text("c")]), MODEL));
    let item_ids = |events: &[(String, Value)]| -> Vec<Value> {
        named(events, "response.output_item.done")
            .iter()
            .map(|e| e["item"]["id"].clone())
            .collect()
    };
    assert_eq!(first[0].1["response"]["id"], "resp_1");
    assert_eq!(item_ids(&first), [json!("msg_1"), json!("fc_2")]);
    assert_eq!(second[0].1["response"]["id"], "resp_scripted");
    assert_eq!(item_ids(&second), [json!("msg_3")]);
    assert_eq!(third[0].1["response"]["id"], "resp_4", "the failure was call 3");
    assert_eq!(item_ids(&third), [json!("msg_4")]);
    let clone = wire.clone();
    let fourth = events(&clone.render_response(&Response::new(Vec::new()), MODEL));
    assert_eq!(fourth[0].1["response"]["id"], "resp_5");
}

#[test]
fn failures_are_openai_error_bodies_with_a_request_id_and_a_rounded_up_wait() {
    let limited = ScriptedError {
        retry_after_ms: Some(1_500),
        ..ScriptedError::new(ErrorKind::RateLimited, "Rate limit reached for requests")
    };
    let (status, headers, body) = ResponsesWire::new().render_failure(&limited);
    assert_eq!(status, 429);
    let header = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
    assert_eq!(header("retry-after"), Some("2"));
    assert_eq!(header("x-request-id"), Some("req_1"));
    assert_eq!(header("content-type"), Some("application/json"));
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        body,
        json!({ "error": {
            "message": "Rate limit reached for requests", "type": "requests", "param": null,
            "code": "rate_limit_exceeded",
        }})
    );
    for (kind, status, kind_type, code) in [
        (ErrorKind::Auth, 401, "invalid_request_error", "invalid_api_key"),
        (
            ErrorKind::ContextTooLong,
            400,
            "invalid_request_error",
            "context_length_exceeded",
        ),
        (
            ErrorKind::InvalidRequest,
            400,
            "invalid_request_error",
            "invalid_request_error",
        ),
        (
            ErrorKind::Overloaded,
            503,
            "service_unavailable_error",
            "server_is_overloaded",
        ),
        (ErrorKind::Server, 500, "server_error", "server_error"),
    ] {
        let (got, headers, body) = ResponsesWire::new().render_failure(&ScriptedError::new(kind, "no"));
        assert_eq!(got, status, "{kind:?}");
        assert!(headers.iter().all(|(n, _)| n != "retry-after"), "{kind:?}");
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            (&body["error"]["type"], &body["error"]["code"]),
            (&json!(kind_type), &json!(code))
        );
    }
    let zero = ScriptedError {
        status: Some(429),
        retry_after_ms: Some(0),
        ..ScriptedError::new(ErrorKind::RateLimited, "wait")
    };
    let (_, headers, _) = ResponsesWire::new().render_failure(&zero);
    assert!(headers.contains(&("retry-after".into(), "0".into())));
}

#[test]
fn every_scenario_renders_typed_frames() {
    for scenario in crate::scenarios() {
        let wire = ResponsesWire::new();
        for turn in &scenario.script.turns {
            match turn {
                Turn::Respond(response) => {
                    let events = events(&wire.render_response(response, crate::SCENARIO_MODEL));
                    assert_eq!(events[0].1["response"]["model"], crate::SCENARIO_MODEL);
                    let terminals = events
                        .iter()
                        .filter(|(n, _)| n == "response.completed" || n == "response.incomplete")
                        .count();
                    let finished = matches!(response.end, End::Finish { .. });
                    assert_eq!(terminals, usize::from(finished), "{}", scenario.name);
                }
                Turn::Fail(error) => {
                    let (_, _, body) = wire.render_failure(error);
                    let body: Value = serde_json::from_str(&body).unwrap();
                    assert!(body["error"]["code"].is_string(), "{}", scenario.name);
                }
            }
        }
    }
}

/// One raw HTTP/1.1 POST of a Responses request to `path`; the whole answer as text.
async fn post(server: &MockServer, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    let body = r#"{"model":"gpt-5-mini","input":[{"role":"user","content":"Say hello."}],"stream":true,"store":false}"#;
    let request = format!(
        "POST {path} HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer sk-secret\r\n\
         content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    String::from_utf8(answer).unwrap()
}

#[tokio::test]
async fn the_server_answers_responses_posts_under_either_base_url() {
    let limited = ScriptedError {
        status: Some(429),
        retry_after_ms: Some(0),
        ..ScriptedError::new(ErrorKind::RateLimited, "Rate limit reached.")
    };
    let script = Script::new(vec![
        Turn::Fail(limited),
        Turn::text("Hello there."),
        Turn::text("Again."),
    ]);
    let server = MockServer::builder(ResponsesWire::new())
        .script(&script)
        .start()
        .await
        .unwrap();
    let failed = post(&server, "/v1/responses").await;
    assert!(failed.starts_with("HTTP/1.1 429"), "{failed}");
    assert!(failed.contains("x-request-id: req_1"), "{failed}");
    assert!(failed.contains(r#""code":"rate_limit_exceeded""#), "{failed}");
    for (path, id) in [("/v1/responses", "resp_2"), ("/responses", "resp_3")] {
        let answer = post(&server, path).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.contains("content-type: text/event-stream"), "{answer}");
        assert!(answer.contains("event: response.created\ndata: "), "{answer}");
        assert!(answer.contains(&format!(r#""id":"{id}""#)), "{answer}");
        assert!(answer.contains(r#""model":"gpt-5-mini""#), "{answer}");
        assert!(answer.contains("event: response.completed\n"), "{answer}");
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[1].path, "/v1/responses");
    assert_eq!(requests[2].path, "/responses");
    assert_eq!(requests[1].header("authorization"), Some("[redacted]"));
    assert_eq!(requests[1].body["store"], false);
}
