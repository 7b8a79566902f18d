//! No secret reaches `Debug`, `Display` or a log line (issue 11): every public config, provider
//! and error type of every crate is formatted with a recognisable key inside, and real calls run
//! under a `tracing` subscriber at TRACE whose whole output is searched.

use std::collections::BTreeMap;

use futures::StreamExt;
use patchbay::anthropic::{AnthropicConfig, AnthropicProvider};
use patchbay::claude_agent::{ClaudeAgentConfig, ClaudeAgentProvider};
use patchbay::gemini::{GeminiConfig, GeminiProvider};
use patchbay::mcp::{McpClientSet, ToolServer};
use patchbay::openai::{KeyHeader, OpenAiConfig, OpenAiProvider};
use patchbay::openrouter::{OpenRouterConfig, OpenRouterProvider};
use patchbay::{
    Message, Provider, Registry, RequestContext, Signal, ToolSet, context::McpServerConfig, context::McpTransport,
};
use patchbay_conformance::logs::LogCapture;
use patchbay_conformance::raw::{RawServer, Step};
use serde_json::json;

/// The key: every secret in this file contains it.
const KEY: &str = "sk-CANARY-7f3a";

fn secret(what: &str) -> String {
    format!("{KEY}-{what}")
}

/// A URL whose credentials are secrets.
fn url_with_credentials(base: &str) -> String {
    base.replacen("http://", &format!("http://user:{}@", secret("url")), 1)
}

/// Fails with the offending text when `KEY` appears in any form of `value`.
fn assert_clean(what: &str, text: &str) {
    assert!(!text.contains(KEY), "{what} shows a secret:\n{text}");
}

fn assert_debug_clean(what: &str, value: &impl std::fmt::Debug) {
    assert_clean(what, &format!("{value:?}"));
    assert_clean(what, &format!("{value:#?}"));
}

fn assert_error_clean(what: &str, error: &(dyn std::error::Error + 'static)) {
    assert_clean(what, &format!("{error:?}"));
    let mut source = Some(error);
    while let Some(error) = source {
        assert_clean(what, &error.to_string());
        source = error.source();
    }
}

fn mcp_servers() -> Vec<McpServerConfig> {
    vec![
        McpServerConfig {
            name: "remote".into(),
            transport: McpTransport::Http {
                url: url_with_credentials("http://127.0.0.1:9/mcp"),
                headers: BTreeMap::from([("authorization".into(), format!("Bearer {}", secret("mcp-header")))]),
            },
        },
        McpServerConfig {
            name: "local".into(),
            transport: McpTransport::Stdio {
                command: "server".into(),
                args: Vec::new(),
                env: BTreeMap::from([("API_KEY".into(), secret("mcp-env"))]),
            },
        },
    ]
}

fn context() -> RequestContext {
    let mut context = RequestContext::new();
    context.env.insert("ANTHROPIC_API_KEY".into(), secret("context-env"));
    context.mcp_servers = mcp_servers();
    context
}

#[test]
fn configs_providers_and_errors_never_show_a_secret() {
    // Anthropic.
    let config = AnthropicConfig::new(secret("anthropic"))
        .with_base_url(url_with_credentials("http://127.0.0.1:9"))
        .with_header("x-extra", secret("anthropic-header"));
    assert_debug_clean("AnthropicConfig", &config);
    let provider = AnthropicProvider::new(config).expect("builds");
    assert_debug_clean("AnthropicProvider", &provider);
    let bad =
        AnthropicConfig::new(secret("anthropic")).with_base_url(format!("http://user:{}@[::1", secret("bad-url")));
    let error = AnthropicProvider::new(bad).expect_err("a bad URL");
    assert_error_clean("anthropic config error", &error);
    let bearer = patchbay::anthropic::Auth::Bearer(patchbay::kit::Secret::new(secret("bearer")));
    assert_debug_clean("anthropic Auth", &bearer);

    // OpenAI-compatible.
    let config = OpenRouterConfig::new(url_with_credentials("http://127.0.0.1:9/v1"))
        .with_api_key(secret("openrouter"))
        .with_header("x-extra", secret("openrouter-header"));
    assert_debug_clean("OpenRouterConfig", &config);
    let provider = OpenRouterProvider::new(config.clone()).expect("builds");
    assert_debug_clean("OpenRouterProvider", &provider);
    let error = OpenRouterProvider::new(OpenRouterConfig::new(format!("ftp://user:{}@host", secret("bad-url"))))
        .expect_err("not http");
    assert_error_clean("openrouter config error", &error);
    let error = patchbay::openrouter::factory()
        .build(&json!({ "base_url": format!("ftp://u:{}@h", secret("o")) }))
        .err()
        .expect("not http");
    assert_error_clean("openrouter options error", &error);
    let misplaced = json!({ "base_url": "http://127.0.0.1:9/v1", "include_usage": secret("misplaced") });
    let error = patchbay::openrouter::factory()
        .build(&misplaced)
        .err()
        .expect("not a bool");
    assert!(
        error.to_string().contains("include_usage") || error.to_string().contains("invalid type"),
        "{error}"
    );
    assert_error_clean("openrouter options error quoting a value", &error);

    // Gemini: the API key, a Vertex token, a token command's arguments, header values.
    let config = GeminiConfig::new(url_with_credentials("http://127.0.0.1:9/v1beta"))
        .with_api_key(secret("gemini"))
        .with_header("x-extra", secret("gemini-header"));
    assert_debug_clean("GeminiConfig", &config);
    assert_debug_clean("GeminiProvider", &GeminiProvider::new(config).expect("builds"));
    let vertex = GeminiConfig::vertex("p", "global").with_access_token(secret("vertex-token"));
    assert_debug_clean("GeminiConfig (Vertex token)", &vertex);
    assert_debug_clean(
        "GeminiProvider (Vertex token)",
        &GeminiProvider::new(vertex).expect("builds"),
    );
    let command = GeminiConfig::vertex("p", "global").with_token_command(["print-token", &secret("command-arg")]);
    assert_debug_clean("GeminiConfig (token command)", &command);
    let error = patchbay::gemini::factory()
        .build(&json!({ "base_url": format!("ftp://u:{}@h", secret("g")), "api_key": secret("gemini") }))
        .err()
        .expect("not http");
    assert_error_clean("gemini options error", &error);
    let error = patchbay::gemini::factory()
        .build(&json!({ "api_key": secret("gemini"), "headers": secret("misplaced") }))
        .err()
        .expect("not an object");
    assert_error_clean("gemini options error quoting a value", &error);

    // OpenAI Responses: the key (as a bearer or Azure's `api-key`), header and query values.
    let config = OpenAiConfig::new(url_with_credentials("http://127.0.0.1:9/v1"))
        .with_api_key(secret("openai"))
        .with_header("x-extra", secret("openai-header"))
        .with_query("api-version", secret("openai-query"));
    assert_debug_clean("OpenAiConfig", &config);
    assert_debug_clean("OpenAiProvider", &OpenAiProvider::new(config).expect("builds"));
    let azure = OpenAiConfig::azure("http://127.0.0.1:9/openai/v1", secret("azure"));
    assert_debug_clean("OpenAiConfig (Azure)", &azure);
    let error = patchbay::openai::factory()
        .build(&json!({ "base_url": format!("ftp://u:{}@h", secret("o")), "api_key": secret("openai") }))
        .err()
        .expect("not http");
    assert_error_clean("openai options error", &error);
    let error = patchbay::openai::factory()
        .build(&json!({ "api_key": secret("openai"), "query": secret("misplaced") }))
        .err()
        .expect("not an object");
    assert_error_clean("openai options error quoting a value", &error);

    // Claude agent runtime.
    let config = ClaudeAgentConfig::new()
        .with_env("ANTHROPIC_API_KEY", secret("claude-env"))
        .with_env("ANTHROPIC_BASE_URL", url_with_credentials("http://127.0.0.1:9"));
    assert_debug_clean("ClaudeAgentConfig", &config);
    let provider = ClaudeAgentProvider::new(config).expect("a valid configuration");
    assert_debug_clean("ClaudeAgentProvider", &provider);

    // ACP agent runtime: `env` values, arguments and home files (keys are shown, values never).
    #[cfg(feature = "acp")]
    {
        use patchbay::acp::{AcpConfig, AcpProvider, Preset};
        let config = AcpConfig::preset(Preset::Gemini)
            .with_env("GEMINI_API_KEY", secret("acp-env"))
            .with_args([format!("--token={}", secret("acp-arg"))])
            .with_home_file(".codex/config.toml", secret("acp-home-file"));
        assert_debug_clean("AcpConfig", &config);
        let provider = AcpProvider::new(config).expect("a valid configuration");
        assert_debug_clean("AcpProvider", &provider);
        let options = json!({
            "agent": "codex",
            "env": { "OPENAI_API_KEY": secret("acp-option-env") },
            "args": [secret("acp-option-arg")],
            "home_files": { ".codex/auth.json": secret("acp-option-home") },
        });
        let config = AcpConfig::from_options(&options).expect("valid options");
        assert_debug_clean("AcpConfig from options", &config);
        assert_debug_clean("AcpProvider from options", &AcpProvider::new(config).expect("builds"));
        let error = patchbay::acp::factory()
            .build(&json!({ "agent": "gemini", "env": secret("misplaced") }))
            .err()
            .expect("not an object");
        assert_error_clean("acp options error quoting a value", &error);
        let error = patchbay::acp::factory()
            .build(&json!({ "agent": secret("agent"), "env": { "K": secret("acp-env") } }))
            .err()
            .expect("not a preset");
        assert_error_clean("acp options error with an unknown preset", &error);
    }

    // Core and MCP.
    assert_debug_clean("RequestContext", &context());
    assert_debug_clean("McpServerConfig", &mcp_servers());
    assert_debug_clean("McpClientSet", &McpClientSet::new().with_servers(mcp_servers()));
    let registry = Registry::compiled();
    for name in registry.names() {
        let options = json!({ "api_key": secret(name), "base_url": url_with_credentials("http://127.0.0.1:9") });
        if let Err(error) = registry.build(name, &options) {
            assert_error_clean(name, &error);
        }
    }
}

async fn drain(provider: &dyn Provider, context: Option<&RequestContext>) {
    let signal = Signal::new();
    if let Ok(mut stream) = provider
        .create_response(&[Message::user("hi")], &ToolSet::new(), "m", &signal, context)
        .await
    {
        while let Some(item) = stream.next().await {
            if let Err(error) = item {
                assert_error_clean("a stream error", &error);
            }
        }
    }
}

/// Calls that succeed, fail, get redirected and reach an MCP server, all at TRACE.
async fn traced_calls() {
    let anthropic_ok = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",",
        "\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":1,",
        "\"output_tokens\":1}}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
    );
    let openrouter_ok = "data: {\"id\":\"r\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"},\
                         \"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let sse = || Step::head("200 OK", &[("content-type", "text/event-stream")]);
    let unauthorized = || {
        Step::send(
            "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: 61\r\nconnection: close\r\n\r\n\
             {\"error\":{\"type\":\"authentication_error\",\"message\":\"bad key\"}}",
        )
    };
    let other = RawServer::start(vec![Step::Stall]).await;
    let redirect = || {
        Step::head(
            "307 Temporary Redirect",
            &[(
                "location",
                &url_with_credentials(&format!("{}/v1/messages", other.url())),
            )],
        )
    };
    for steps in [
        vec![sse(), Step::send(anthropic_ok)],
        vec![unauthorized()],
        vec![redirect()],
    ] {
        let server = RawServer::start(steps).await;
        let config = AnthropicConfig::new(secret("anthropic"))
            .with_base_url(url_with_credentials(server.url()))
            .with_header("x-extra", secret("anthropic-header"));
        let provider = AnthropicProvider::new(config).expect("builds");
        drain(&provider, Some(&context())).await;
    }
    for steps in [
        vec![sse(), Step::send(openrouter_ok)],
        vec![unauthorized()],
        vec![redirect()],
    ] {
        let server = RawServer::start(steps).await;
        let config = OpenRouterConfig::new(url_with_credentials(&format!("{}/v1", server.url())))
            .with_api_key(secret("openrouter"))
            .with_header("x-extra", secret("openrouter-header"));
        let provider = OpenRouterProvider::new(config).expect("builds");
        drain(&provider, Some(&context())).await;
    }
    let gemini_ok =
        "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"x\"}]},\"finishReason\":\"STOP\"}]}\r\n\r\n";
    let gemini_unauthorized = || {
        Step::send(
            "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: 71\r\nconnection: close\r\n\r\n\
             {\"error\":{\"code\":401,\"message\":\"bad token\",\"status\":\"UNAUTHENTICATED\"}}",
        )
    };
    for (steps, vertex) in [
        (vec![sse(), Step::send(gemini_ok)], false),
        (vec![gemini_unauthorized()], true),
        (vec![redirect()], false),
    ] {
        let server = RawServer::start(steps).await;
        let mut config = GeminiConfig::new(url_with_credentials(&format!("{}/v1beta", server.url())))
            .with_api_key(secret("gemini"))
            .with_header("x-extra", secret("gemini-header"));
        if vertex {
            config = config
                .with_backend(patchbay::gemini::Backend::VertexAi)
                .with_access_token(secret("vertex-token"));
        }
        let provider = GeminiProvider::new(config).expect("builds");
        drain(&provider, Some(&context())).await;
    }
    let openai_ok = "data: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\"}}\n\n";
    let openai_unauthorized = || {
        Step::send(
            "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: 87\r\nconnection: close\r\n\r\n\
             {\"error\":{\"message\":\"bad key\",\"type\":\"invalid_request_error\",\"code\":\"invalid_api_key\"}}",
        )
    };
    for (steps, azure) in [
        (vec![sse(), Step::send(openai_ok)], false),
        (vec![openai_unauthorized()], true),
        (vec![redirect()], false),
    ] {
        let server = RawServer::start(steps).await;
        let mut config = OpenAiConfig::new(url_with_credentials(&format!("{}/v1", server.url())))
            .with_api_key(secret("openai"))
            .with_header("x-extra", secret("openai-header"))
            .with_query("api-version", secret("openai-query"));
        if azure {
            config = config.with_key_header(KeyHeader::Named("api-key".into()));
        }
        let provider = OpenAiProvider::new(config).expect("builds");
        drain(&provider, Some(&context())).await;
    }
    // An ACP "agent" that exits at once (`true`), started with secrets in its environment and
    // arguments and the context's MCP servers: the failed call shows none of them.
    #[cfg(feature = "acp")]
    {
        let config = patchbay::acp::AcpConfig::command("/usr/bin/true", [format!("--token={}", secret("acp-arg"))])
            .with_env("ACP_API_KEY", secret("acp-env"))
            .with_home_file(".agent/auth.json", secret("acp-home-file"));
        let provider = patchbay::acp::AcpProvider::new(config).expect("builds");
        drain(&provider, Some(&context())).await;
    }
    // An MCP client reaching a token-protected tool server, and one refused by it.
    let server = ToolServer::builder(ToolSet::new())
        .with_token(secret("mcp-token"))
        .start()
        .await
        .expect("serves");
    let guard = server.register(&RequestContext::new());
    let mut headers = guard.headers().clone();
    let good = McpServerConfig {
        name: "tools".into(),
        transport: McpTransport::Http {
            url: server.url().to_string(),
            headers: headers.clone(),
        },
    };
    headers.insert("authorization".into(), format!("Bearer {}", secret("wrong-token")));
    let bad = McpServerConfig {
        name: "refused".into(),
        transport: McpTransport::Http {
            url: url_with_credentials(server.url()),
            headers,
        },
    };
    // A port nobody listens on: the connection error carries the URL.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port");
    let dead = McpServerConfig {
        name: "dead".into(),
        transport: McpTransport::Http {
            url: url_with_credentials(&format!("http://{closed}/mcp")),
            headers: BTreeMap::new(),
        },
    };
    let set = McpClientSet::new().with_servers([good, bad, dead]);
    let connections = set.connect().await;
    assert_eq!(connections.connected(), vec!["tools".to_string()], "{connections:?}");
    assert_debug_clean("McpConnections", &connections);
    assert_eq!(connections.failed().len(), 2, "{connections:?}");
    for failure in connections.failed() {
        assert_debug_clean("McpFailure", failure);
    }
    connections.close().await;
    server.shutdown().await;
}

#[test]
fn nothing_logged_at_trace_shows_a_secret() {
    let capture = LogCapture::new();
    tracing::subscriber::with_default(capture.subscriber(), || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(traced_calls());
    });
    let logged = capture.text();
    for seen in ["redirect refused", "request failed", "chat{otel.name=chat "] {
        assert!(logged.contains(seen), "the subscriber saw `{seen}`:\n{logged}");
    }
    assert_clean("the TRACE log", &logged);
}
