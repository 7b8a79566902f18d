//! Every HTTP provider against hostile loopback servers (conformance::hardening): no redirect is followed,
//! nothing stalls forever, nothing grows without bound, `retry-after` dates count. One test per
//! behaviour, run over each HTTP provider the registry builds.

use std::sync::Arc;
use std::time::Duration;

use patchbay::Registry;
use patchbay_conformance::Recording;
use patchbay_conformance::hardening::{BuildHttp, HttpWire, check_hardening};
use patchbay_conformance::raw::{RawServer, Step};
use patchbay_core::kit::StreamLimits;
use patchbay_core::{Event, Message, Provider, ProviderError, Signal, ToolSet};
use serde_json::{Value, json};

/// Longer than any limit these tests set: a call still running then hangs.
const HANG: Duration = Duration::from_secs(20);

/// One HTTP provider: its registry name, how to point it at a server, and its wire.
struct Http {
    name: &'static str,
    /// A first content event's bytes (the stream has started).
    start: &'static str,
    /// A keep-alive that carries no content.
    keepalive: &'static str,
    /// A line start of a data frame (an endless line follows it).
    data_prefix: &'static str,
}

const ANTHROPIC: Http = Http {
    name: "anthropic",
    start: "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\
            \"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":1,\
            \"output_tokens\":0}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\
            \"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\
            \"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n",
    keepalive: "event: ping\ndata: {\"type\":\"ping\"}\n\n",
    data_prefix: "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"",
};

const OPENROUTER: Http = Http {
    name: "openrouter",
    start: "data: {\"id\":\"r1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n",
    keepalive: ": OPENROUTER PROCESSING\n\n",
    data_prefix: "data: {\"id\":\"r1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"",
};

const GEMINI: Http = Http {
    name: "gemini",
    start: "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hi\"}]},\"index\":0}],\
            \"responseId\":\"r1\",\"modelVersion\":\"m\"}\r\n\r\n",
    keepalive: ": keep-alive\r\n\r\n",
    data_prefix: "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"",
};

const OPENAI: Http = Http {
    name: "openai",
    start: "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\
            \"model\":\"m\",\"status\":\"in_progress\",\"output\":[]}}\n\nevent: response.output_text.delta\n\
            data: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hi\"}\n\n",
    keepalive: ": keep-alive\n\n",
    data_prefix: "data: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"content_index\":0,\"delta\":\"",
};

static PROVIDERS: [Http; 4] = [ANTHROPIC, OPENROUTER, GEMINI, OPENAI];

impl Http {
    /// The entry of `name`.
    fn named(name: &str) -> &'static Http {
        PROVIDERS
            .iter()
            .find(|http| http.name == name)
            .expect("a known provider")
    }

    /// The provider pointed at `base` with a recognisable key and `options` on top.
    fn build(&self, base: &str, options: Value) -> Arc<dyn Provider> {
        let mut all = match self.name {
            "anthropic" | "gemini" => json!({ "base_url": base, "api_key": "sk-HARDENING-KEY" }),
            "openai" => json!({ "base_url": format!("{base}/v1"), "api_key": "sk-HARDENING-KEY" }),
            _ => json!({ "base_url": format!("{base}/v1"), "api_key": "sk-HARDENING-KEY", "dialect": "generic" }),
        };
        if let (Value::Object(all), Value::Object(extra)) = (&mut all, options) {
            all.extend(extra);
        }
        Registry::compiled().build(self.name, &all).expect("provider builds")
    }

    /// A `200` event stream's head.
    fn stream_head(&self) -> Step {
        Step::head("200 OK", &[("content-type", "text/event-stream")])
    }
}

/// Call `provider` once and collect its events and the error that ended it, failing the test
/// if the whole call takes longer than [`HANG`].
async fn call(provider: &dyn Provider) -> (Vec<Event>, Option<ProviderError>) {
    let (messages, tools, signal) = ([Message::user("hi")], ToolSet::new(), Signal::new());
    let run = Recording::call(provider, &messages, &tools, "m", &signal, None);
    let Recording { events, error } = tokio::time::timeout(HANG, run).await.expect("the call hung");
    (events, error)
}

fn fast() -> Value {
    json!({ "read_timeout_ms": 300, "content_timeout_ms": 1500 })
}

/// The conformance crate's hostile-server suite on every HTTP provider the registry builds:
/// refused redirects (the other host hears nothing), read and content timeouts, stalled and
/// huge error bodies, endless lines, `retry-after` dates.
#[tokio::test]
async fn every_http_provider_survives_the_hostile_servers() {
    for http in &PROVIDERS {
        let wire = HttpWire {
            name: http.name,
            content_type: "text/event-stream",
            start: http.start,
            keepalive: http.keepalive,
            data_prefix: http.data_prefix,
        };
        let name = http.name;
        let build: BuildHttp = Arc::new(move |base: &str, limits: StreamLimits| {
            let options = json!({
                "read_timeout_ms": limits.read_timeout.map_or(0, |t| t.as_millis() as u64),
                "content_timeout_ms": limits.content_timeout.map_or(0, |t| t.as_millis() as u64),
                "max_line_bytes": limits.max_line_bytes,
                "headers": { "x-custom": "sk-CUSTOM-HEADER" },
            });
            Http::named(name).build(base, options)
        });
        check_hardening(wire, build).await;
    }
}

#[tokio::test]
async fn absurd_usage_numbers_cost_their_value_not_the_stream() {
    let bodies = [
        (
            ANTHROPIC,
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\
             \"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":1e30,\
             \"output_tokens\":-5,\"cache_read_input_tokens\":\"many\"}}}\n\nevent: content_block_start\ndata: \
             {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
             event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\
             \"text_delta\",\"text\":\"Hi\"}}\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\",\
             \"index\":0}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\
             \"end_turn\"},\"usage\":{\"output_tokens\":18446744073709551616}}\n\nevent: message_stop\ndata: \
             {\"type\":\"message_stop\"}\n\n",
        ),
        (
            OPENROUTER,
            "data: {\"id\":\"r1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\
             \"finish_reason\":\"stop\"}]}\n\ndata: {\"id\":\"r1\",\"choices\":[],\"usage\":{\"prompt_tokens\":1e30,\
             \"completion_tokens\":-5,\"prompt_tokens_details\":{\"cached_tokens\":18446744073709551616}}}\n\n\
             data: [DONE]\n\n",
        ),
        (
            GEMINI,
            "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hi\"}]},\"finishReason\":\"STOP\"}],\
             \"usageMetadata\":{\"promptTokenCount\":1e30,\"candidatesTokenCount\":-5,\
             \"cachedContentTokenCount\":18446744073709551616,\"thoughtsTokenCount\":\"many\"}}\r\n\r\n",
        ),
        (
            OPENAI,
            "data: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hi\"}\n\n\
             data: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"usage\":{\
             \"input_tokens\":1e30,\"output_tokens\":-5,\"input_tokens_details\":{\"cached_tokens\":18446744073709551616},\
             \"output_tokens_details\":{\"reasoning_tokens\":\"many\"}}}}\n\n",
        ),
    ];
    for (http, body) in bodies {
        let server = RawServer::start(vec![http.stream_head(), Step::send(body)]).await;
        let (events, error) = call(http.build(server.url(), fast()).as_ref()).await;
        assert!(error.is_none(), "{}: {error:?}", http.name);
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::TextDelta { text, .. } if text == "Hi")),
            "{}",
            http.name
        );
        let usage = events
            .iter()
            .rev()
            .find_map(|e| match e {
                Event::Usage(usage) => Some(*usage),
                _ => None,
            })
            .expect("usage");
        // Past u64::MAX saturates, negative is 0, a string is unknown.
        if http.name == "anthropic" {
            assert_eq!(usage.output, Some(u64::MAX), "{usage:?}");
        } else if http.name == "gemini" {
            // The prompt minus the cached count: both saturated.
            assert_eq!(
                (usage.cache_read, usage.output, usage.reasoning),
                (Some(u64::MAX), Some(0), None),
                "{usage:?}"
            );
        } else {
            assert_eq!((usage.cache_read, usage.output), (Some(u64::MAX), Some(0)), "{usage:?}");
        }
    }
}
