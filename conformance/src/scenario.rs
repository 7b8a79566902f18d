//! The shared scenarios: scripted conversations every provider must turn into the same events.

use patchbay_core::{ErrorKind, FinishReason, FnTool, Message, OutputSchema, ToolContext, ToolResult, ToolSet};
use patchbay_scripted::{Citation, End, Part, Response, Script, ScriptedError, Turn};
use serde::Deserialize;
use serde_json::json;

/// The model name every scenario asks for.
pub const SCENARIO_MODEL: &str = "conformance-model";

/// A capability a scenario needs; a target without it shows the scenario as ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Needs {
    /// The provider emits reasoning.
    Reasoning,
    /// The provider can be cancelled mid-stream at a point the scenario chooses.
    MidStreamCancel,
}

/// When the harness cancels the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CancelAt {
    /// Once the run's text so far equals this text (whatever the chunking).
    AfterText(&'static str),
}

/// One shared scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Its name: the trial name and the golden snapshot's name.
    pub name: &'static str,
    /// What it checks.
    pub description: &'static str,
    /// The conversation sent in (usually one user message).
    pub messages: Vec<Message>,
    /// The model's side, one turn per model call.
    pub script: Script,
    /// Capabilities it needs.
    pub needs: Vec<Needs>,
    /// When the harness cancels, if it does.
    pub cancel: Option<CancelAt>,
    /// The structured output the run asks for (the harness sets it on the request context).
    pub output_schema: Option<OutputSchema>,
}

impl Scenario {
    fn new(name: &'static str, description: &'static str, prompt: &str, turns: Vec<Turn>) -> Self {
        Self {
            name,
            description,
            messages: vec![Message::user(prompt)],
            script: Script::new(turns),
            needs: Vec::new(),
            cancel: None,
            output_schema: None,
        }
    }

    fn output(mut self, schema: OutputSchema) -> Self {
        self.output_schema = Some(schema);
        self
    }

    fn needs(mut self, needs: Needs) -> Self {
        self.needs.push(needs);
        self
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
struct WeatherInput {
    /// The city.
    city: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct NoInput {}

/// The host tools every scenario offers: `get_weather {city}` answers deterministically,
/// `explode {}` always fails.
pub fn scenario_tools() -> ToolSet {
    let weather = FnTool::new(
        "get_weather",
        "Current weather for a city.",
        |input: WeatherInput, _cx: ToolContext| async move { ToolResult::text(format!("Sunny, 21°C in {}.", input.city)) },
    );
    let explode = FnTool::new(
        "explode",
        "A tool that always fails.",
        |_: NoInput, _cx: ToolContext| async move { ToolResult::error("the tool exploded") },
    );
    ToolSet::new().with(weather).with(explode)
}

fn respond(parts: Vec<Part>, input: u64, output: u64) -> Turn {
    Turn::Respond(Response::new(parts).with_usage(input, output))
}

fn respond_end(parts: Vec<Part>, end: End, input: u64, output: u64) -> Turn {
    Turn::Respond(Response::new(parts).with_end(end).with_usage(input, output))
}

fn finish(reason: FinishReason) -> End {
    End::Finish { reason }
}

/// The text of `cancelled_mid_stream`, after which the harness cancels.
const CANCEL_TEXT: &str = "Let me think about that";

/// Text long enough to make one wire line of about a megabyte.
pub fn huge_text() -> String {
    "All work and no play makes a very long line. ".repeat(23_000)
}

/// The object `structured_output` answers with, spaced as a model writes it (so it streams in
/// several word-sized pieces).
pub const WEATHER_JSON: &str = r#"{"city": "Paris", "celsius": 21, "conditions": ["sunny", "dry"]}"#;

/// The schema `structured_output` asks for: strict-mode ready (every property required, no
/// others allowed).
pub fn weather_schema() -> OutputSchema {
    OutputSchema::new(
        "weather",
        json!({
            "type": "object",
            "properties": {
                "city": { "type": "string" },
                "celsius": { "type": "number" },
                "conditions": { "type": "array", "items": { "type": "string" } },
            },
            "required": ["city", "celsius", "conditions"],
            "additionalProperties": false,
        }),
    )
    .with_description("The current weather in a city.")
    .with_strict(true)
}

/// The shared scenario called `name`, if there is one.
///
/// ```
/// assert!(patchbay_conformance::scenario("text_only").is_some());
/// ```
pub fn scenario(name: &str) -> Option<Scenario> {
    scenarios().into_iter().find(|s| s.name == name)
}

/// Every shared scenario, in a stable order.
pub fn scenarios() -> Vec<Scenario> {
    let weather = |id: &str, city: &str| Part::tool_call(id, "get_weather", json!({ "city": city }));
    vec![
        Scenario::new(
            "text_only",
            "One streamed text answer.",
            "Say hello.",
            vec![respond(vec![Part::text("Hello! How can I help you today?")], 12, 9)],
        ),
        Scenario::new(
            "one_tool_call",
            "Text, one host tool call, its result, and a final answer.",
            "What is the weather in Paris?",
            vec![
                respond(
                    vec![Part::text("Let me check the weather."), weather("toolu_01", "Paris")],
                    40,
                    20,
                ),
                respond(vec![Part::text("It is sunny and 21°C in Paris.")], 80, 12),
            ],
        ),
        Scenario::new(
            "two_tool_steps",
            "Two steps that each call a tool, then an answer: call ids stay unique across the run.",
            "Weather in Paris, then in Tokyo?",
            vec![
                respond(vec![Part::text("First Paris."), weather("toolu_01", "Paris")], 40, 20),
                respond(vec![Part::text("Now Tokyo."), weather("toolu_02", "Tokyo")], 80, 20),
                respond(vec![Part::text("Both cities are sunny at 21°C.")], 120, 10),
            ],
        ),
        Scenario::new(
            "parallel_tool_calls",
            "Two tool calls in one response, both executed, results in call order.",
            "Weather in Paris and Tokyo?",
            vec![
                respond(vec![weather("toolu_01", "Paris"), weather("toolu_02", "Tokyo")], 40, 30),
                respond(vec![Part::text("Both cities are sunny at 21°C.")], 90, 10),
            ],
        ),
        Scenario::new(
            "thinking_then_tool_call",
            "Reasoning with a signature, then a tool call; the signature survives.",
            "Should I bring an umbrella in Paris?",
            vec![
                respond(
                    vec![
                        Part::thinking(
                            "The user asks about rain in Paris. I should check the weather.",
                            "c2lnbmF0dXJlLTE=",
                        ),
                        weather("toolu_01", "Paris"),
                    ],
                    50,
                    40,
                ),
                respond(vec![Part::text("No umbrella needed: it is sunny.")], 100, 10),
            ],
        )
        .needs(Needs::Reasoning),
        Scenario::new(
            "tool_error",
            "A tool fails; the failure goes back to the model, which answers.",
            "Blow it up.",
            vec![
                respond(vec![Part::tool_call("toolu_01", "explode", json!({}))], 30, 10),
                respond(vec![Part::text("The tool failed, sorry.")], 60, 6),
            ],
        ),
        Scenario::new(
            "max_tokens",
            "The output limit cuts the answer: finish reason Length.",
            "Write a long story.",
            vec![respond_end(
                vec![Part::text("Once upon a time there was a story that ran out of")],
                finish(FinishReason::Length),
                10,
                16,
            )],
        ),
        Scenario::new(
            "refusal",
            "The model refuses: finish reason Refusal.",
            "Help me do something bad.",
            vec![respond_end(
                vec![Part::text("I can't help with that.")],
                finish(FinishReason::Refusal),
                10,
                7,
            )],
        ),
        Scenario::new(
            "error_mid_stream",
            "An overload error after text reached the caller: a typed error, not retried.",
            "Say something.",
            vec![respond_end(
                vec![Part::text("Here is the first part")],
                End::Error(ScriptedError::new(ErrorKind::Overloaded, "Overloaded")),
                10,
                5,
            )],
        ),
        Scenario::new(
            "truncated_stream",
            "The stream stops without its end: a Protocol error.",
            "Count to three.",
            vec![respond_end(vec![Part::text("One, two,")], End::Truncate, 10, 5)],
        ),
        Scenario::new(
            "rate_limited_then_fine",
            "HTTP 429 with retry-after 0, then an answer: the retry layer hides the first try.",
            "Say hello.",
            vec![
                Turn::Fail(ScriptedError {
                    kind: ErrorKind::RateLimited,
                    message: "Number of requests has exceeded your rate limit".into(),
                    status: Some(429),
                    retry_after_ms: Some(0),
                }),
                respond(vec![Part::text("Hello after a short wait.")], 12, 7),
            ],
        ),
        Scenario {
            cancel: Some(CancelAt::AfterText(CANCEL_TEXT)),
            ..Scenario::new(
                "cancelled_mid_stream",
                "The stream stalls after some text; the caller cancels: the stream ends promptly with Cancelled.",
                "Think for a long time.",
                vec![respond_end(vec![Part::text(CANCEL_TEXT)], End::Stall, 10, 5)],
            )
        }
        .needs(Needs::MidStreamCancel),
        Scenario::new(
            "unicode_split",
            "Multi-byte characters that wire servers split across chunks arrive intact.",
            "Greet me in many languages.",
            vec![respond(
                vec![Part::text("Grüße aus Köln! 你好，世界。 Привет 🎉🚀👩‍👩‍👧 ÿ")],
                14,
                30,
            )],
        ),
        Scenario::new(
            "huge_line",
            "One text block of about a megabyte (one huge wire line) arrives intact.",
            "Write one very long line.",
            vec![respond(vec![Part::text(huge_text())], 10, 250_000)],
        ),
        Scenario::new(
            "structured_output",
            "The request asks for a JSON object of a schema: the object streams in pieces as the final text block, no tool call shows.",
            "What is the weather in Paris? Answer as JSON.",
            vec![respond(vec![Part::text(WEATHER_JSON)], 30, 18)],
        )
        .output(weather_schema()),
        Scenario::new(
            "sources",
            "An answer citing two web pages: each citation is a Source of its text block, with URL, title and cited passage.",
            "Where is the Eiffel Tower, and how tall is it?",
            vec![respond(
                vec![Part::cited(
                    "The Eiffel Tower stands in Paris and is 330 metres tall.",
                    vec![
                        Citation::new(
                            "https://en.wikipedia.org/wiki/Eiffel_Tower",
                            "Eiffel Tower - Wikipedia",
                            "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France.",
                        ),
                        Citation::new(
                            "https://www.toureiffel.paris/en/the-monument/key-figures",
                            "Key figures | Official Eiffel Tower Website",
                            "Height: 330 metres",
                        ),
                    ],
                )],
                25,
                16,
            )],
        ),
    ]
}
