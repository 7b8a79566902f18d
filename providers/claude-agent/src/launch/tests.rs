//! The launch plan without a process: argv, environment, MCP config, fingerprint.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use patchbay_core::{
    Message, RequestContext, Tool, ToolContext, ToolResult, ToolSet, ToolSpec, context::McpServerConfig,
    context::McpTransport, context::Session,
};
use serde_json::{Value, json};

use super::{Call, LaunchPlan, Place};
use crate::config::{ClaudeAgentConfig, HostTools, SettingSource};

const SECRET: &str = "sk-SECRET-PLAN-42";
const SESSION: &str = "11111111-1111-4111-8111-111111111111";

struct Named(ToolSpec);

#[async_trait]
impl Tool for Named {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    async fn execute(&self, _input: Value, _cx: &ToolContext) -> ToolResult {
        ToolResult::text("")
    }
}

fn tools(names: &[&str]) -> ToolSet {
    let mut set = ToolSet::new();
    for name in names {
        let _ = set.insert(Arc::new(Named(ToolSpec::new(
            *name,
            "A tool.",
            json!({ "type": "object" }),
        ))));
    }
    set
}

fn plan_in(
    dir: &str,
    config: &ClaudeAgentConfig,
    tools: &ToolSet,
    model: &str,
    context: &RequestContext,
) -> LaunchPlan {
    let messages = [Message::user("hi")];
    let call = Call {
        messages: &messages,
        tools,
        model,
        context,
    };
    let place = Place {
        dir: Path::new(dir),
        http_host: None,
    };
    LaunchPlan::new(config, &call, &place)
}

fn plan(config: &ClaudeAgentConfig, tools: &ToolSet, context: &RequestContext) -> LaunchPlan {
    plan_in("/tmp/run-1", config, tools, "sonnet", context)
}

/// The value after `flag` in `args`.
fn after<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let i = args.iter().position(|a| a == flag)?;
    args.get(i + 1).map(String::as_str)
}

fn mcp_config(plan: &LaunchPlan) -> Value {
    let file = plan.files.iter().find(|f| f.path.ends_with("mcp-config.json"));
    let text = file.map_or("null", |f| f.text.as_str());
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_new_session_has_no_session_flags_and_sends_the_message() {
    let plan = plan(&ClaudeAgentConfig::new(), &ToolSet::new(), &RequestContext::new());
    let args = &plan.args;
    assert_eq!(&args[..2], ["--output-format", "stream-json"]);
    assert!(args.contains(&"--include-partial-messages".to_string()));
    assert_eq!(
        after(args, "--system-prompt"),
        Some(""),
        "no system: the SDK's empty prompt"
    );
    assert_eq!(after(args, "--model"), Some("sonnet"));
    assert!(
        !args
            .iter()
            .any(|a| a.starts_with("--resume") || a.starts_with("--session-id"))
    );
    assert!(!args.contains(&"--mcp-config".to_string()), "no servers, no MCP config");
    assert_eq!(plan.session_id, None);
    let turn: Value = serde_json::from_str(&plan.user_turn).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(turn["message"]["content"], json!([{ "type": "text", "text": "hi" }]));
    assert_eq!(plan.initialize, json!({ "subtype": "initialize", "hooks": null }));
}

#[test]
fn a_resumed_session_resumes_and_names_its_id() {
    let context = RequestContext::new().with_session(Session::Resume { id: SESSION.into() });
    let plan = plan(
        &ClaudeAgentConfig::new().with_extra_args(["--debug"]),
        &ToolSet::new(),
        &context,
    );
    let resume = format!("--resume={SESSION}");
    let at = plan.args.iter().position(|a| *a == resume);
    assert!(at.is_some(), "{:?}", plan.args);
    assert_eq!(
        plan.args.last().map(String::as_str),
        Some("--debug"),
        "extra args come last"
    );
    assert_eq!(plan.session_id.as_deref(), Some(SESSION));
    let turn: Value = serde_json::from_str(&plan.user_turn).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(turn["session_id"], SESSION);

    let fork = RequestContext::new().with_session(Session::Fork { from: SESSION.into() });
    let plan = plan_in(
        "/tmp/run-1",
        &ClaudeAgentConfig::new(),
        &ToolSet::new(),
        "sonnet",
        &fork,
    );
    assert!(
        plan.args.ends_with(&[resume, "--fork-session".into()]),
        "{:?}",
        plan.args
    );
    assert_eq!(plan.session_id, None, "a fork gets its id from the CLI");

    let fixed = RequestContext::new().with_session(Session::New {
        id: Some(SESSION.into()),
    });
    let plan = plan_in(
        "/tmp/run-1",
        &ClaudeAgentConfig::new(),
        &ToolSet::new(),
        "sonnet",
        &fixed,
    );
    assert!(plan.args.contains(&format!("--session-id={SESSION}")));
}

fn docs_server() -> McpServerConfig {
    let headers = BTreeMap::from([("Authorization".to_string(), format!("Bearer {SECRET}"))]);
    McpServerConfig {
        name: "docs".into(),
        transport: McpTransport::Http {
            url: "http://127.0.0.1:9/mcp".into(),
            headers,
        },
    }
}

#[test]
fn the_hosts_mcp_servers_and_the_host_tools_go_in_the_mcp_config_file() {
    let context = RequestContext::new().with_mcp_server(docs_server());
    let plan = plan(&ClaudeAgentConfig::new(), &tools(&["lookup"]), &context);
    assert_eq!(after(&plan.args, "--mcp-config"), Some("/tmp/run-1/mcp-config.json"));
    let config = mcp_config(&plan);
    assert_eq!(config["mcpServers"]["docs"]["url"], "http://127.0.0.1:9/mcp");
    assert_eq!(config["mcpServers"]["host"], json!({ "type": "sdk", "name": "host" }));
    assert_eq!(after(&plan.args, "--allowedTools"), Some("mcp__host__lookup"));

    let http = ClaudeAgentConfig::new().with_host_tools(HostTools::Http);
    let messages = [Message::user("hi")];
    let tools = tools(&["lookup"]);
    let call = Call {
        messages: &messages,
        tools: &tools,
        model: "sonnet",
        context: &context,
    };
    let mut served = docs_server();
    served.name = "host".into();
    let place = Place {
        dir: Path::new("/tmp/run-1"),
        http_host: Some(served),
    };
    let config = mcp_config(&LaunchPlan::new(&http, &call, &place));
    assert_eq!(
        config["mcpServers"]["host"]["type"], "http",
        "the HTTP tool server's entry"
    );
}

#[test]
fn the_environment_passes_through_and_no_secret_is_on_the_command_line() {
    let config = ClaudeAgentConfig::new()
        .with_env("ANTHROPIC_API_KEY", SECRET)
        .with_system_prompt(crate::SystemPrompt::Custom);
    let context = RequestContext::new()
        .with_env("TOKEN", SECRET)
        .with_max_tokens(300)
        .with_system(format!("Never say {SECRET}."))
        .with_mcp_server(docs_server());
    let plan = plan(&config, &ToolSet::new(), &context);
    assert_eq!(plan.env["ANTHROPIC_API_KEY"], SECRET);
    assert_eq!(plan.env["TOKEN"], SECRET);
    assert_eq!(plan.env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"], "300");
    assert_eq!(plan.env["CLAUDE_CODE_ENTRYPOINT"], "sdk-rust");
    assert!(plan.inherit_env);
    assert!(!plan.args.iter().any(|a| a.contains(SECRET)), "{:?}", plan.args);
    assert_eq!(
        after(&plan.args, "--system-prompt-file"),
        Some("/tmp/run-1/system-prompt.txt")
    );
    assert!(plan.files.iter().any(|f| f.text.contains(SECRET)), "secrets go by file");
}

#[test]
fn ignored_sampling_options_are_warnings() {
    let mut context = RequestContext::new();
    context.sampling.temperature = Some(0.5);
    context.sampling.stop_sequences = vec!["END".into()];
    let plan = plan(&ClaudeAgentConfig::new(), &ToolSet::new(), &context);
    let texts: Vec<&str> = plan.warnings.iter().map(|w| w.message.as_str()).collect();
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(texts[0].contains("`temperature`") && texts[1].contains("`stop_sequences`"));
}

#[test]
fn equal_launches_have_equal_fingerprints_whatever_the_session_and_directory() {
    let config = ClaudeAgentConfig::new().with_env("A", "1");
    let context = |id: &str| {
        RequestContext::new()
            .with_system("Be brief.")
            .with_session(Session::Resume { id: id.into() })
    };
    let set = tools(&["lookup"]);
    let one = plan_in("/tmp/run-1", &config, &set, "sonnet", &context(SESSION));
    let two = plan_in("/tmp/run-2", &config, &set, "sonnet", &context("another"));
    assert_eq!(one.fingerprint, two.fingerprint);
}

#[test]
fn a_launch_relevant_difference_changes_the_fingerprint() {
    let config = ClaudeAgentConfig::new();
    let context = RequestContext::new().with_system("Be brief.");
    let set = tools(&["lookup"]);
    let base = plan(&config, &set, &context).fingerprint;
    let differs = |other: LaunchPlan, what: &str| assert_ne!(other.fingerprint, base, "{what}");
    differs(plan_in("/tmp/run-1", &config, &set, "opus", &context), "model");
    differs(plan(&config.clone().with_env("A", "1"), &set, &context), "env");
    differs(
        plan(&config.clone().with_inherit_env(false), &set, &context),
        "inherit_env",
    );
    differs(
        plan(&config, &set, &context.clone().with_system("Be long.")),
        "system prompt",
    );
    differs(plan(&config, &tools(&["other"]), &context), "tool names");
    differs(
        plan(&config, &set, &context.clone().with_working_dir("/srv")),
        "working dir",
    );
    differs(
        plan(&config, &set, &context.clone().with_mcp_server(docs_server())),
        "MCP servers",
    );
    differs(
        plan(&config.clone().with_extra_args(["--debug"]), &set, &context),
        "extra args",
    );
    let reviewer = crate::AgentDefinition::new("Reviews.", "Review.");
    differs(
        plan(&config.clone().with_agent("reviewer", reviewer), &set, &context),
        "agents",
    );
    // A CLI initialized with hooks must not serve a call without them, nor the other way round.
    differs(
        plan(&config, &set, &context.clone().with_hooks(Arc::new(NoHooks))),
        "hooks",
    );
    differs(
        plan(&config.clone().with_host_tools(HostTools::Http), &set, &context),
        "host tools",
    );
    differs(
        plan(
            &config.clone().with_setting_sources([SettingSource::Project]),
            &set,
            &context,
        ),
        "setting sources",
    );
    // A kept-alive CLI started from one program must not serve a call that names another.
    differs(
        plan(&config.clone().with_cli_path("/opt/other/claude"), &set, &context),
        "the CLI program",
    );
}

struct NoHooks;

impl patchbay_core::hooks::Hooks for NoHooks {}

#[test]
fn hooks_are_registered_with_initialize_and_agents_sent_typed() {
    let config = ClaudeAgentConfig::new().with_agent(
        "reviewer",
        crate::AgentDefinition::new("Reviews.", "Review.").with_tools(["Read"]),
    );
    let without = plan(&config, &ToolSet::new(), &RequestContext::new());
    assert_eq!(without.initialize["hooks"], Value::Null);
    assert_eq!(
        without.initialize["agents"],
        json!({ "reviewer": { "description": "Reviews.", "prompt": "Review.", "tools": ["Read"] } })
    );
    let context = RequestContext::new().with_hooks(Arc::new(NoHooks));
    let with = plan(&config, &ToolSet::new(), &context);
    let events: Vec<&String> = with.initialize["hooks"]
        .as_object()
        .into_iter()
        .flat_map(|m| m.keys())
        .collect();
    assert_eq!(events, ["PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop"]);
    assert_eq!(
        with.initialize["hooks"]["PreToolUse"][0]["hookCallbackIds"],
        json!(["patchbay_pre_tool_use"])
    );
}

#[test]
fn no_setting_source_is_read_unless_asked() {
    let context = RequestContext::new();
    let none = plan(&ClaudeAgentConfig::new(), &ToolSet::new(), &context);
    assert_eq!(after(&none.args, "--setting-sources"), Some(""), "{:?}", none.args);
    let config = ClaudeAgentConfig::new().with_setting_sources([SettingSource::User, SettingSource::Project]);
    let some = plan(&config, &ToolSet::new(), &context);
    assert_eq!(after(&some.args, "--setting-sources"), Some("user,project"));
}

#[test]
fn only_the_given_mcp_servers_are_used() {
    let context = RequestContext::new().with_mcp_server(docs_server());
    let given = plan(&ClaudeAgentConfig::new(), &ToolSet::new(), &context);
    assert!(given.args.iter().any(|a| a == "--mcp-config"), "{:?}", given.args);
    assert!(
        given.args.iter().any(|a| a == "--strict-mcp-config"),
        "{:?}",
        given.args
    );
    let host_tools = plan(&ClaudeAgentConfig::new(), &tools(&["lookup"]), &RequestContext::new());
    assert!(host_tools.args.iter().any(|a| a == "--strict-mcp-config"));
    let nothing = plan(&ClaudeAgentConfig::new(), &ToolSet::new(), &RequestContext::new());
    assert!(
        !nothing
            .args
            .iter()
            .any(|a| a == "--mcp-config" || a == "--strict-mcp-config")
    );
}

#[test]
fn an_output_schema_goes_to_the_cli_as_json_schema() {
    let schema = patchbay_core::OutputSchema::new("weather", json!({"type": "object", "required": ["city"]}));
    let with = plan(
        &ClaudeAgentConfig::new(),
        &ToolSet::new(),
        &RequestContext::new().with_output_schema(schema),
    );
    let flag = after(&with.args, "--json-schema").expect("the flag is given");
    assert_eq!(
        serde_json::from_str::<Value>(flag).unwrap_or_else(|e| panic!("{e}")),
        json!({"type": "object", "required": ["city"]})
    );
    let without = plan(&ClaudeAgentConfig::new(), &ToolSet::new(), &RequestContext::new());
    assert!(!without.args.contains(&"--json-schema".to_string()));
    assert_ne!(
        with.fingerprint, without.fingerprint,
        "a kept-alive CLI of another schema is not reused"
    );
}
