//! Our tool server, called by our client set: context registry, token, Host check, shutdown.

use std::time::{Duration, Instant};

use patchbay_core::{RequestContext, tool::ToolContent, tool::ToolStatus};
use patchbay_mcp::{McpClientSet, ToolServer};
use serde_json::json;

use crate::common::{Db, http, tools};

#[tokio::test]
async fn registered_context_reaches_the_tool() {
    let server = ToolServer::start(tools()).await.expect("server starts");
    let context = RequestContext::new()
        .with_metadata("project_id", "p1")
        .with_metadata("thread_id", "t9")
        .with_extension(Db("main"));
    let guard = server.register(&context);
    assert_eq!(server.contexts(), 1);

    let connections = McpClientSet::new()
        .with_server(guard.server_config("host"))
        .connect()
        .await;
    assert_eq!(connections.failed(), []);
    let tools = connections.tools().await;
    let names: Vec<_> = tools.specs().map(|spec| spec.name.as_str()).collect();
    assert_eq!(names, ["echo", "whoami", "fail", "rich"]);

    let whoami = tools.get("whoami").expect("whoami listed");
    let cx = patchbay_core::ToolContext::new().with_tool_use_id("call-7");
    let result = whoami.execute(json!({}), &cx).await;
    assert_eq!(result.status, ToolStatus::Completed);
    assert_eq!(result.text_content(), r#"project=Some("p1") db=main"#);
    assert_eq!(
        result.metadata,
        Some(json!({"metadata": {"project_id": "p1", "thread_id": "t9"}, "tool_use_id": "call-7"}))
    );

    connections.close().await;
    drop(guard);
    assert_eq!(server.contexts(), 0);
    server.shutdown().await;
}

#[tokio::test]
async fn every_content_kind_and_status_survives_the_round_trip() {
    let server = ToolServer::start(tools()).await.expect("server starts");
    let guard = server.register(&RequestContext::new());
    let connections = McpClientSet::new()
        .with_server(guard.server_config("host"))
        .connect()
        .await;
    let tools = connections.tools().await;
    let cx = Default::default();

    let rich = tools.get("rich").expect("rich").execute(json!({}), &cx).await;
    let local = crate::common::tools()
        .get("rich")
        .expect("rich")
        .execute(json!({}), &cx)
        .await;
    assert_eq!(rich, local);
    assert!(matches!(rich.content[1], ToolContent::Image { .. }));

    let failed = tools.get("fail").expect("fail").execute(json!({}), &cx).await;
    assert_eq!(failed.status, ToolStatus::Failed);
    assert_eq!(failed.text_content(), "it failed on purpose");

    let bad_input = tools.get("echo").expect("echo").execute(json!({"nope": 1}), &cx).await;
    assert_eq!(bad_input.status, ToolStatus::Failed);
    connections.close().await;
}

#[tokio::test]
async fn a_wrong_token_is_refused() {
    let server = ToolServer::start(tools()).await.expect("server starts");
    let guard = server.register(&RequestContext::new());
    let mut headers: Vec<(&str, &str)> = vec![("Authorization", "Bearer not-the-token")];
    headers.push(("x-patchbay-context", guard.id()));
    let connections = McpClientSet::new()
        .with_server(http("host", server.url(), &headers))
        .connect()
        .await;
    assert_eq!(connections.connected(), Vec::<String>::new());
    let failure = &connections.failed()[0];
    eprintln!("wrong token: {failure:?}");
    assert_eq!(failure.name, "host");
    assert!(failure.error.contains("authorization refused"), "{}", failure.error);
    assert!(connections.warnings().iter().any(|w| w.code == "mcp_server_failed"));

    let no_token = McpClientSet::new()
        .with_server(http("host", server.url(), &[]))
        .connect()
        .await;
    assert_eq!(no_token.failed().len(), 1);
}

#[tokio::test]
async fn an_unknown_or_expired_context_id_is_refused() {
    let server = ToolServer::start(tools()).await.expect("server starts");
    let bearer = format!("Bearer {}", server.token());
    let unknown = McpClientSet::new()
        .with_server(http(
            "host",
            server.url(),
            &[("Authorization", &bearer), ("x-patchbay-context", "0123456789abcdef")],
        ))
        .connect()
        .await;
    let failure = &unknown.failed()[0];
    assert!(
        failure.error.contains("unknown or expired patchbay context id"),
        "{}",
        failure.error
    );

    // Registered, connected, then the guard is dropped: the next call is refused, not served
    // with some other context.
    let other = server.register(&RequestContext::new().with_metadata("project_id", "other"));
    let guard = server.register(&RequestContext::new().with_metadata("project_id", "mine"));
    let connections = McpClientSet::new()
        .with_server(guard.server_config("host"))
        .connect()
        .await;
    let tools = connections.tools().await;
    drop(guard);
    let result = tools
        .get("whoami")
        .expect("whoami")
        .execute(json!({}), &Default::default())
        .await;
    assert_eq!(result.status, ToolStatus::Failed);
    assert!(
        result.text_content().contains("unknown or expired"),
        "{}",
        result.text_content()
    );
    drop(other);
    connections.close().await;
}

#[tokio::test]
async fn calls_need_a_context_unless_anonymous_is_allowed() {
    let server = ToolServer::start(tools()).await.expect("server starts");
    let bearer = format!("Bearer {}", server.token());
    let config = http(
        "host",
        server.url(),
        &[("Authorization", &bearer), ("x-patchbay-meta-project_id", "hdr")],
    );
    let connections = McpClientSet::new().with_server(config.clone()).connect().await;
    let tools = connections.tools().await;
    assert_eq!(tools.len(), 4, "listing needs only the token");
    let result = tools
        .get("whoami")
        .expect("whoami")
        .execute(json!({}), &Default::default())
        .await;
    assert!(
        result.text_content().contains("missing x-patchbay-context"),
        "{}",
        result.text_content()
    );

    let open = ToolServer::builder(crate::common::tools())
        .allow_anonymous()
        .start()
        .await
        .expect("starts");
    let bearer = format!("Bearer {}", open.token());
    let config = http(
        "open",
        open.url(),
        &[("Authorization", &bearer), ("x-patchbay-meta-project_id", "hdr")],
    );
    let connections = McpClientSet::new().with_server(config).connect().await;
    let tools = connections.tools().await;
    let result = tools
        .get("whoami")
        .expect("whoami")
        .execute(json!({}), &Default::default())
        .await;
    assert_eq!(result.text_content(), r#"project=Some("hdr") db=none"#);
}

#[tokio::test]
async fn a_foreign_host_header_is_refused() {
    let server = ToolServer::start(tools()).await.expect("server starts");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let client = patchbay_http::client_builder().build().expect("client");
    let send = |host: Option<&'static str>| {
        let mut request = client
            .post(server.url())
            .bearer_auth(server.token())
            .header("accept", "application/json, text/event-stream")
            .json(&body);
        if let Some(host) = host {
            request = request.header("host", host);
        }
        request.send()
    };
    let good = send(None).await.expect("reachable");
    assert!(good.status().is_success(), "{}", good.status());
    let evil = send(Some("evil.example")).await.expect("reachable");
    assert!(evil.status().is_client_error(), "{}", evil.status());

    // A web page's request (it carries an Origin) is refused too.
    let from_page = client
        .post(server.url())
        .bearer_auth(server.token())
        .header("accept", "application/json, text/event-stream")
        .header("origin", "https://evil.example")
        .json(&body)
        .send()
        .await
        .expect("reachable");
    assert!(from_page.status().is_client_error(), "{}", from_page.status());
}

#[tokio::test]
async fn the_global_server_serves_the_tools_a_context_brings() {
    let server = ToolServer::global().expect("global server");
    let again = ToolServer::global().expect("global server");
    assert!(std::ptr::eq(server, again));
    let guard = server.register_with_tools(&RequestContext::new().with_metadata("project_id", "g"), tools());
    let connections = McpClientSet::new()
        .with_server(guard.server_config("host"))
        .connect()
        .await;
    let tools = connections.tools().await;
    let result = tools
        .get("whoami")
        .expect("whoami")
        .execute(json!({}), &Default::default())
        .await;
    assert_eq!(result.text_content(), r#"project=Some("g") db=none"#);
    connections.close().await;
}

#[tokio::test]
async fn shutdown_is_prompt_and_final() {
    let server = ToolServer::start(tools()).await.expect("server starts");
    let guard = server.register(&RequestContext::new());
    let connections = McpClientSet::new()
        .with_server(guard.server_config("host"))
        .connect()
        .await;
    assert_eq!(connections.connected(), ["host"]);
    let start = Instant::now();
    server.shutdown().await;
    assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());
    let after = McpClientSet::new()
        .with_connect_timeout(Duration::from_secs(2))
        .with_server(guard.server_config("host"))
        .connect()
        .await;
    assert_eq!(after.failed().len(), 1);
    connections.close().await;
}

#[tokio::test]
async fn stdio_serving_gives_every_call_the_process_context() {
    use rmcp::ServiceExt;
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let context = RequestContext::new().with_metadata("project_id", "stdio");
    let server = tokio::spawn(async move {
        let (read, write) = tokio::io::split(server_io);
        ToolServer::builder(tools()).serve_io(read, write, &context).await
    });
    let (read, write) = tokio::io::split(client_io);
    let client = ().serve((read, write)).await.expect("handshake");
    let listed = client.peer().list_all_tools().await.expect("list");
    assert_eq!(listed.len(), 4);
    let mut params = rmcp::model::CallToolRequestParams::new("whoami");
    params.arguments = Some(serde_json::Map::new());
    let result = client.call_tool(params).await.expect("call");
    let result = patchbay_mcp::from_call_tool_result(result);
    assert_eq!(result.text_content(), r#"project=Some("stdio") db=none"#);
    client.cancel().await.expect("closed");
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("server ends when the client goes")
        .expect("joined")
        .expect("served");
}

#[tokio::test]
async fn a_stateful_server_keeps_sessions_and_still_checks_every_request() {
    let server = ToolServer::builder(tools())
        .stateful(true)
        .start()
        .await
        .expect("server starts");
    let guard = server.register(&RequestContext::new().with_metadata("project_id", "s1"));
    let connections = McpClientSet::new()
        .with_server(guard.server_config("host"))
        .connect()
        .await;
    assert_eq!(connections.failed(), []);
    let tools = connections.tools().await;
    let result = tools
        .get("whoami")
        .expect("whoami")
        .execute(json!({}), &Default::default())
        .await;
    assert_eq!(result.text_content(), r#"project=Some("s1") db=none"#);
    drop(guard);
    let result = tools
        .get("whoami")
        .expect("whoami")
        .execute(json!({}), &Default::default())
        .await;
    assert!(result.text_content().contains("unknown or expired"), "{result:?}");
    connections.close().await;
    server.shutdown().await;
}

#[tokio::test]
async fn a_client_timeout_cancels_the_tool_on_our_server() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use patchbay_core::{FnTool, ToolContext, ToolResult, ToolSet};

    let cancelled = Arc::new(AtomicBool::new(false));
    let seen = cancelled.clone();
    let slow = FnTool::new("slow", "Waits.", move |_: crate::common::Empty, cx: ToolContext| {
        let seen = seen.clone();
        async move {
            tokio::select! {
                _ = cx.signal.cancelled() => {
                    seen.store(true, Ordering::SeqCst);
                    ToolResult::aborted()
                }
                _ = tokio::time::sleep(Duration::from_secs(30)) => ToolResult::text("finished"),
            }
        }
    });
    let server = ToolServer::start(ToolSet::new().with(slow)).await.expect("server");
    let guard = server.register(&RequestContext::new());
    let connections = McpClientSet::new()
        .with_call_timeout(Duration::from_millis(300))
        .with_server(guard.server_config("host"))
        .connect()
        .await;
    let tools = connections.tools().await;
    let result = tools
        .get("slow")
        .expect("slow")
        .execute(json!({}), &Default::default())
        .await;
    assert!(result.text_content().contains("timed out"), "{result:?}");
    let start = Instant::now();
    while !cancelled.load(Ordering::SeqCst) && start.elapsed() < Duration::from_secs(3) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        cancelled.load(Ordering::SeqCst),
        "the tool on the server never saw the cancellation"
    );
    connections.close().await;
    server.shutdown().await;
}

#[tokio::test]
async fn a_mapped_header_becomes_metadata_of_anonymous_calls_only() {
    let open = ToolServer::builder(tools())
        .allow_anonymous()
        .metadata_header("X-Agent-Session-Name", "project_id")
        .start()
        .await
        .expect("starts");
    let bearer = format!("Bearer {}", open.token());
    let config = http(
        "open",
        open.url(),
        &[("Authorization", &bearer), ("X-Agent-Session-Name", "from-header")],
    );
    let connections = McpClientSet::new().with_server(config).connect().await;
    let tools = connections.tools().await;
    let result = tools
        .get("whoami")
        .expect("whoami")
        .execute(json!({}), &Default::default())
        .await;
    assert_eq!(result.text_content(), r#"project=Some("from-header") db=none"#);
    connections.close().await;

    // Under a registered context the registered metadata is the whole metadata.
    let guard = open.register(&RequestContext::new().with_metadata("project_id", "registered"));
    let mut config = guard.server_config("host");
    if let patchbay_core::context::McpTransport::Http { headers, .. } = &mut config.transport {
        headers.insert("X-Agent-Session-Name".into(), "from-header".into());
    }
    let connections = McpClientSet::new().with_server(config).connect().await;
    let tools = connections.tools().await;
    let result = tools
        .get("whoami")
        .expect("whoami")
        .execute(json!({}), &Default::default())
        .await;
    assert_eq!(result.text_content(), r#"project=Some("registered") db=none"#);
    connections.close().await;
}

#[tokio::test]
async fn extra_routes_share_the_listener_the_token_and_a_chosen_port() {
    // Find a free port, then ask for it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let routes = axum::Router::new().route("/hello", axum::routing::get(|| async { "hi" }));
    let server = ToolServer::builder(tools())
        .port(port)
        .with_routes(routes)
        .start()
        .await
        .expect("starts on the chosen port");
    assert_eq!(server.addr().port(), port);
    assert_eq!(server.url(), format!("http://127.0.0.1:{port}/mcp"));
    let client = patchbay_http::client_builder().build().expect("a client");
    let url = format!("http://127.0.0.1:{port}/hello");
    let refused = client.get(&url).send().await.expect("answers");
    assert_eq!(refused.status(), 401, "the routes need the token");
    let ok = client
        .get(&url)
        .bearer_auth(server.token())
        .send()
        .await
        .expect("answers");
    assert_eq!(ok.status(), 200);
    assert_eq!(ok.text().await.expect("body"), "hi");
    // The MCP endpoint still works beside them.
    let bearer = format!("Bearer {}", server.token());
    let connections = McpClientSet::new()
        .with_server(http("host", server.url(), &[("Authorization", &bearer)]))
        .connect()
        .await;
    assert_eq!(connections.failed(), []);
    connections.close().await;
    server.shutdown().await;
}

#[tokio::test]
async fn public_routes_answer_without_the_token_but_only_to_the_own_host() {
    let private = axum::Router::new().route("/hello", axum::routing::get(|| async { "hi" }));
    let public = axum::Router::new().route("/login", axum::routing::get(|| async { "log in here" }));
    let server = ToolServer::builder(tools())
        .with_routes(private)
        .with_public_routes(public)
        .start()
        .await
        .expect("starts");
    let port = server.addr().port();
    let client = patchbay_http::client_builder().build().expect("a client");
    let login = format!("http://127.0.0.1:{port}/login");
    let open = client.get(&login).send().await.expect("answers");
    assert_eq!(open.status(), 200, "a public route needs no token");
    assert_eq!(open.text().await.expect("body"), "log in here");
    let by_name = client
        .get(&login)
        .header("host", format!("localhost:{port}"))
        .send()
        .await
        .expect("answers");
    assert_eq!(by_name.status(), 200, "localhost:<port> is the server's own host too");
    let rebound = client
        .get(&login)
        .header("host", format!("evil.example:{port}"))
        .send()
        .await
        .expect("answers");
    assert_eq!(
        rebound.status(),
        403,
        "a foreign Host header is refused (DNS rebinding)"
    );
    // The guarded routes and unknown paths still need the token.
    for path in ["/hello", "/nowhere"] {
        let refused = client
            .get(format!("http://127.0.0.1:{port}{path}"))
            .send()
            .await
            .expect("answers");
        assert_eq!(refused.status(), 401, "{path} needs the token");
    }
    server.shutdown().await;
}

#[tokio::test]
async fn an_authorizer_lets_in_what_it_accepts_from_the_own_host_only() {
    let routes = axum::Router::new().route(
        "/hello",
        axum::routing::get(|| async { "hi" }).post(|| async { "posted" }),
    );
    // Accepts a made-up credential, for GET only: it sees method, path and headers.
    let authorizer: patchbay_mcp::Authorizer = std::sync::Arc::new(|parts: &http::request::Parts| {
        let open = parts.method == http::Method::GET
            && parts.uri.path() == "/hello"
            && parts.headers.get("x-test-pass").is_some_and(|v| v == "open sesame");
        open.then(patchbay_mcp::Grant::new)
    });
    let server = ToolServer::builder(tools())
        .with_routes(routes)
        .authorize_with(authorizer)
        .start()
        .await
        .expect("starts");
    let url = format!("http://127.0.0.1:{}/hello", server.addr().port());
    let client = patchbay_http::client_builder().build().expect("a client");
    let status = |request: reqwest::RequestBuilder| async move { request.send().await.expect("answers").status() };
    assert_eq!(status(client.get(&url).header("x-test-pass", "open sesame")).await, 200);
    assert_eq!(status(client.get(&url).header("x-test-pass", "wrong")).await, 401);
    assert_eq!(status(client.get(&url)).await, 401);
    assert_eq!(
        status(client.post(&url).header("x-test-pass", "open sesame")).await,
        401,
        "the authorizer refused the method"
    );
    assert_eq!(
        status(
            client
                .get(&url)
                .header("x-test-pass", "open sesame")
                .header("host", "evil.example")
        )
        .await,
        401,
        "the authorizer is not asked for a foreign Host header"
    );
    // The bearer token works as before, for every method.
    assert_eq!(status(client.post(&url).bearer_auth(server.token())).await, 200);
    server.shutdown().await;
}

/// The metadata `whoami` reports for a call over `config`.
async fn whoami_metadata(config: patchbay_core::context::McpServerConfig) -> serde_json::Value {
    let connections = McpClientSet::new().with_server(config).connect().await;
    assert_eq!(connections.failed(), [], "connects");
    let tools = connections.tools().await;
    let result = tools
        .get("whoami")
        .expect("whoami")
        .execute(json!({}), &Default::default())
        .await;
    connections.close().await;
    result.metadata.expect("whoami reports its metadata")["metadata"].clone()
}

#[tokio::test]
async fn a_grant_vouches_for_metadata_over_every_header_and_the_routes_see_it() {
    // A made-up credential bound to one caller: `Bearer alice-pass` is alice, whatever the
    // request claims.
    let authorizer: patchbay_mcp::Authorizer = std::sync::Arc::new(|parts: &http::request::Parts| {
        let given = parts.headers.get("authorization")?;
        (given == "Bearer alice-pass").then(|| patchbay_mcp::Grant::new().with_metadata("caller", "alice"))
    });
    let routes = axum::Router::new().route(
        "/who",
        axum::routing::get(|request: axum::extract::Request| async move {
            match request.extensions().get::<patchbay_mcp::Grant>() {
                Some(grant) => format!("granted {:?}", grant.metadata().get("caller")),
                None => "no grant".to_owned(),
            }
        }),
    );
    let server = ToolServer::builder(tools())
        .allow_anonymous()
        .metadata_header("X-Caller", "caller")
        .with_routes(routes)
        .authorize_with(authorizer)
        .start()
        .await
        .expect("starts");
    let forged = [
        ("Authorization", "Bearer alice-pass"),
        ("X-Caller", "mallory"),
        ("x-patchbay-meta-caller", "mallory"),
        ("x-patchbay-meta-project_id", "p1"),
    ];
    let metadata = whoami_metadata(http("granted", server.url(), &forged)).await;
    assert_eq!(
        metadata["caller"], "alice",
        "the grant wins over both headers: {metadata}"
    );
    assert_eq!(metadata["project_id"], "p1", "keys the grant does not name are kept");

    // Under a registered context too, the grant wins over the registered metadata.
    let guard = server.register(&RequestContext::new().with_metadata("caller", "bob"));
    let mut config = guard.server_config("registered");
    if let patchbay_core::context::McpTransport::Http { headers, .. } = &mut config.transport {
        headers.insert("Authorization".into(), "Bearer alice-pass".into());
    }
    assert_eq!(whoami_metadata(config).await["caller"], "alice");
    assert_eq!(
        whoami_metadata(guard.server_config("token")).await["caller"],
        "bob",
        "with the bearer token, the registered metadata stands"
    );

    // With the bearer token there is no grant: the header says who calls, as before.
    let bearer = format!("Bearer {}", server.token());
    let claimed = [("Authorization", bearer.as_str()), ("X-Caller", "mallory")];
    assert_eq!(
        whoami_metadata(http("token", server.url(), &claimed)).await["caller"],
        "mallory"
    );

    // The routes beside /mcp find the grant in the request's extensions.
    let url = format!("http://127.0.0.1:{}/who", server.addr().port());
    let client = patchbay_http::client_builder().build().expect("a client");
    let text = |request: reqwest::RequestBuilder| async move {
        let response = request.send().await.expect("answers");
        (response.status(), response.text().await.expect("a body"))
    };
    assert_eq!(
        text(client.get(&url).header("authorization", "Bearer alice-pass")).await,
        (reqwest::StatusCode::OK, r#"granted Some("alice")"#.to_owned())
    );
    assert_eq!(
        text(client.get(&url).bearer_auth(server.token())).await,
        (reqwest::StatusCode::OK, "no grant".to_owned())
    );
    assert_eq!(
        text(client.get(&url).header("authorization", "Bearer bob-pass"))
            .await
            .0,
        reqwest::StatusCode::UNAUTHORIZED
    );
    server.shutdown().await;
}
