use patchbay::scripted::Part;
use patchbay::{
    Agent, Event, Message, Registry, Signal, ToolResult, sink::Broadcast, sink::EventBroadcast, sink::EventSink,
};
use serde_json::Value;

use crate::common::{echo_call, provider, respond, tools};

#[derive(Default)]
struct Recorder {
    text: String,
    calls: Vec<String>,
    results: Vec<String>,
    events: usize,
}

impl EventSink for Recorder {
    fn on_text(&mut self, _index: usize, text: &str) {
        self.text.push_str(text);
    }
    fn on_tool_call(&mut self, _id: &str, name: &str, _input: &Value) {
        self.calls.push(name.into());
    }
    fn on_tool_result(&mut self, _id: &str, _name: &str, result: &ToolResult) {
        self.results.push(result.text_content());
    }
    fn on_event(&mut self, _event: &Event) {
        self.events += 1;
    }
}

#[tokio::test]
async fn sinks_and_broadcast_see_the_whole_run() {
    let agent = Agent::new(
        provider(vec![
            respond(vec![echo_call("c1", "ping")], 1, 1),
            respond(vec![Part::text("pong")], 1, 1),
        ]),
        "m",
    )
    .with_tools(tools(Default::default()));
    let broadcast = EventBroadcast::new(256);
    let mut subscriber = broadcast.subscribe();
    let stream = broadcast.tap(agent.stream(vec![Message::user("go")], Signal::new()));
    let mut sink = Recorder::default();
    let response = patchbay::sink::drive(stream, &mut sink).await.expect("run succeeds");

    assert_eq!(sink.text, "pong");
    assert_eq!(sink.calls, vec!["echo"]);
    assert_eq!(sink.results, vec!["ping"]);
    assert_eq!(response.text(), "pong");

    let mut seen = 0;
    while let Ok(Broadcast::Event(_)) = subscriber.try_recv() {
        seen += 1;
    }
    assert_eq!(seen, sink.events, "subscribers see every event");
}

#[test]
fn the_registry_lists_what_is_compiled_in() {
    let registry = Registry::compiled();
    let error = registry
        .build("no-such-provider", &Value::Null)
        .err()
        .expect("unknown name");
    assert_eq!(error.kind(), patchbay::ErrorKind::Config);
    for name in registry.names() {
        assert!(error.to_string().contains(name), "{error}");
    }
    let script = serde_json::json!({"script": {"turns": [{"kind": "fail", "kind_": 1}]}});
    assert!(
        registry.build("scripted", &script).is_err(),
        "a malformed script is a Config error"
    );
}

#[test]
fn a_shipped_provider_that_is_not_compiled_in_names_its_cargo_feature() {
    let registry = Registry::new();
    let error = registry
        .build("claude-agent", &Value::Null)
        .err()
        .expect("not registered");
    assert_eq!(error.kind(), patchbay::ErrorKind::Config);
    assert!(
        error
            .to_string()
            .contains("enable the cargo feature `claude-agent` of patchbay"),
        "{error}"
    );
    assert_eq!(Registry::feature_for("claude-agent"), Some("claude-agent"));
    assert_eq!(Registry::feature_for("no-such-provider"), None);
    for (name, _) in patchbay::KNOWN_PROVIDERS {
        assert!(Registry::new().build(name, &Value::Null).is_err());
    }
}
