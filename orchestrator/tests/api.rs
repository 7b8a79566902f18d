//! The JSON HTTP API over a real listener: every endpoint, the error shapes, and the event
//! stream (stored events first, live ones, Last-Event-ID, the end on delete and on shutdown).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use patchbay::mcp::ToolServer;
use patchbay_orchestrator::Orchestrator;
use patchbay_orchestrator::blueprint::Blueprints;
use patchbay_orchestrator::http::{HttpOptions, serve_http};
use patchbay_orchestrator::store::{JobStatus, SqliteStore};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tempfile::TempDir;

#[path = "api/fixtures.rs"]
mod fixtures;
#[path = "api/sse_client.rs"]
mod sse_client;

use fixtures::{retired_blueprint, secret_blueprint, stall_blueprint};
use sse_client::{Events, Message, event_type, is_end};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The longest any single wait in these tests lasts.
const LIMIT: Duration = Duration::from_secs(20);

struct Api {
    _dir: TempDir,
    orchestrator: Orchestrator,
    server: ToolServer,
    base: String,
    client: reqwest::Client,
}

async fn start() -> Result<Api, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store = SqliteStore::open(dir.path().join("data")).await?;
    let mut blueprints = Blueprints::new();
    let source = Path::new("test-blueprints.toml");
    blueprints.add(stall_blueprint()?, source)?;
    blueprints.add(secret_blueprint()?, source)?;
    blueprints.add(retired_blueprint()?, source)?;
    let orchestrator = Orchestrator::builder(Arc::new(store), blueprints)
        .project_dir(dir.path())
        .start()
        .await?;
    let server = serve_http(&orchestrator, HttpOptions::default()).await?;
    let base = server
        .url()
        .strip_suffix("/mcp")
        .ok_or("the MCP URL ends in /mcp")?
        .to_owned();
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::AUTHORIZATION,
        format!("Bearer {}", server.token()).parse()?,
    );
    let client = patchbay_http::client_builder()
        .default_headers(headers)
        .timeout(LIMIT)
        .build()?;
    Ok(Api {
        _dir: dir,
        orchestrator,
        server,
        base,
        client,
    })
}

impl Api {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> Result<(StatusCode, Value), Box<dyn std::error::Error>> {
        let response = request.send().await?;
        let status = response.status();
        let text = response.text().await?;
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).map_err(|e| format!("not JSON ({e}): {text}"))?
        };
        Ok((status, body))
    }

    async fn get(&self, path: &str) -> Result<(StatusCode, Value), Box<dyn std::error::Error>> {
        self.send(self.client.get(self.url(path))).await
    }

    async fn post(&self, path: &str, body: &Value) -> Result<(StatusCode, Value), Box<dyn std::error::Error>> {
        self.send(self.client.post(self.url(path)).json(body)).await
    }

    async fn delete(&self, path: &str) -> Result<(StatusCode, Value), Box<dyn std::error::Error>> {
        self.send(self.client.delete(self.url(path))).await
    }

    /// Queue a start and return the job.
    async fn start_session(&self, name: &str, blueprint: &str) -> Result<Value, Box<dyn std::error::Error>> {
        let body = json!({"type": "start_session", "session_name": name, "prompt": "hello", "agent_name": blueprint});
        let (status, job) = self.post("/jobs", &body).await?;
        assert_eq!(status, StatusCode::CREATED, "{job}");
        Ok(job)
    }

    /// Wait (bounded) until the job has ended; returns its final status.
    async fn wait_job(&self, job: &Value) -> Result<JobStatus, Box<dyn std::error::Error>> {
        let id = job["job_id"].as_str().ok_or("a job id")?;
        let name = job["session_name"].as_str().ok_or("a session name")?;
        let job = self.orchestrator.wait_for_job(id, name, LIMIT).await?;
        assert!(
            job.status.is_terminal(),
            "job {id} still {} after {LIMIT:?}",
            job.status
        );
        Ok(job.status)
    }

    /// Wait (bounded) until the job runs.
    async fn wait_running(&self, job: &Value) -> TestResult {
        let id = job["job_id"].as_str().ok_or("a job id")?;
        let deadline = tokio::time::Instant::now() + LIMIT;
        loop {
            let job = self.orchestrator.job(id).await?;
            if job.status == JobStatus::Running {
                return Ok(());
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "job {id} never ran: {}",
                job.status
            );
            // Status changes wake this at once; the limit only bounds a missed one.
            let name = job.session_name.clone();
            let _ = self.orchestrator.status(&name, Some(Duration::from_millis(200))).await;
        }
    }

    async fn session_id(&self, name: &str) -> Result<String, Box<dyn std::error::Error>> {
        let (status, session) = self.get(&format!("/sessions/by-name/{name}")).await?;
        assert_eq!(status, StatusCode::OK, "{session}");
        Ok(session["session_id"].as_str().ok_or("a session id")?.to_owned())
    }
}

/// Asserts an error answer: the status and `{"error": {"code", "message"}}`.
fn assert_error(answer: &(StatusCode, Value), status: StatusCode, code: &str) {
    let (got, body) = answer;
    assert_eq!(*got, status, "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(
        body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn jobs_sessions_and_agents_happy_paths() -> TestResult {
    let api = start().await?;

    // The parent named below is a session here (a missing one is refused).
    for parent in ["boss", "other-boss"] {
        let job = api.start_session(parent, "default").await?;
        assert_eq!(api.wait_job(&job).await?, JobStatus::Completed);
    }
    let missing =
        json!({"type": "start_session", "session_name": "stray", "prompt": "hi", "parent_session_name": "nobody"});
    assert_error(
        &api.post("/jobs", &missing).await?,
        StatusCode::NOT_FOUND,
        "caller_not_found",
    );

    // POST /jobs: 201, a Location, the queued job.
    let body =
        json!({"type": "start_session", "session_name": "alpha", "prompt": "hello", "parent_session_name": "boss"});
    let response = api.client.post(api.url("/jobs")).json(&body).send().await?;
    assert_eq!(response.status(), StatusCode::CREATED);
    let location = response
        .headers()
        .get("location")
        .ok_or("a Location header")?
        .to_str()?
        .to_owned();
    let job: Value = response.json().await?;
    assert_eq!(location, format!("/jobs/{}", job["job_id"].as_str().ok_or("id")?));
    assert_eq!(job["type"], "start_session");
    assert_eq!(job["session_name"], "alpha");
    assert_eq!(job["agent_name"], "default");
    assert_eq!(job["parent_session_name"], "boss");
    assert!(job["created_at"].as_str().is_some_and(|t| t.ends_with('Z')), "{job}");
    assert_eq!(api.wait_job(&job).await?, JobStatus::Completed);

    // GET /jobs/{id}
    let (status, got) = api.get(&location).await?;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(got["status"], "completed");
    assert!(got["finished_at"].is_string(), "{got}");

    // Sessions: list, by name, by id, result.
    let (status, list) = api.get("/sessions").await?;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list["sessions"].as_array().map(Vec::len), Some(3), "{list}");
    assert_eq!(list["sessions"][2]["session_name"], "alpha");
    assert_eq!(list["next_offset"], Value::Null);
    // Filters and keyset pages.
    let (status, children) = api.get("/sessions?parent_session_name=boss&limit=1").await?;
    assert_eq!(status, StatusCode::OK, "{children}");
    assert_eq!(children["total"], 1, "{children}");
    assert_eq!(children["sessions"][0]["session_name"], "alpha");
    let (_, first) = api.get("/sessions?status=finished&limit=2").await?;
    assert_eq!(first["total"], 3, "{first}");
    let next = first["next_after"].as_str().ok_or("a next page")?.to_owned();
    let (_, rest) = api
        .get(&format!("/sessions?status=finished&limit=2&after={next}"))
        .await?;
    assert_eq!(rest["sessions"][0]["session_name"], "alpha", "{rest}");
    assert_eq!(rest["next_after"], Value::Null, "{rest}");
    let id = api.session_id("alpha").await?;
    let (status, session) = api.get(&format!("/sessions/{id}")).await?;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(session["session_name"], "alpha");
    assert_eq!(session["status"], "finished");
    assert_eq!(session["parent_session_name"], "boss");
    assert_eq!(session["job_status"], "completed");
    assert!(session.get("conversation").is_none(), "{session}");
    let (status, result) = api.get(&format!("/sessions/{id}/result")).await?;
    assert_eq!(status, StatusCode::OK, "{result}");
    assert!(result["result"].as_str().is_some_and(|r| !r.is_empty()), "{result}");

    // A resume (the header names the caller), then paging through the session's jobs.
    let resume = json!({"type": "resume_session", "session_name": "alpha", "prompt": "again", "agent_name": "default", "project_dir": "."});
    let response = api
        .client
        .post(api.url("/jobs"))
        .header("X-Agent-Session-Name", "other-boss")
        .json(&resume)
        .send()
        .await?;
    assert_eq!(response.status(), StatusCode::CREATED);
    let second: Value = response.json().await?;
    assert_eq!(second["type"], "resume_session");
    assert_eq!(second["parent_session_name"], "other-boss");
    assert_eq!(api.wait_job(&second).await?, JobStatus::Completed);
    let (status, page) = api.get("/jobs?session_name=alpha&limit=1").await?;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(page["jobs"][0]["job_id"], job["job_id"]);
    assert_eq!(page["next_offset"], 1);
    let (_, page) = api.get("/jobs?session_name=alpha&limit=1&offset=1").await?;
    assert_eq!(page["jobs"][0]["job_id"], second["job_id"]);
    let (_, all) = api.get("/jobs").await?;
    assert_eq!(all["jobs"].as_array().map(Vec::len), Some(4), "{all}");
    let (_, none) = api.get("/jobs?session_name=nobody").await?;
    assert_eq!(none["jobs"], json!([]));

    // Agents: the list (retired included), one without secrets.
    let (status, agents) = api.get("/agents").await?;
    assert_eq!(status, StatusCode::OK);
    let names: Vec<&str> = agents["agents"]
        .as_array()
        .ok_or("a list")?
        .iter()
        .filter_map(|a| a["name"].as_str())
        .collect();
    assert_eq!(names, ["default", "old", "secretive", "stall"]);
    assert_eq!(agents["agents"][1]["status"], "retired");
    let response = api.client.get(api.url("/agents/secretive")).send().await?;
    assert_eq!(response.status(), StatusCode::OK);
    let text = response.text().await?;
    assert!(!text.contains("SECRET"), "a secret leaked: {text}");
    let agent: Value = serde_json::from_str(&text)?;
    assert_eq!(agent["provider"], "anthropic");
    assert_eq!(agent["system"], "Be brief.");
    assert_eq!(agent["provider_option_keys"], json!(["api_key", "max_tokens"]));
    assert_eq!(
        agent["mcp_servers"][0]["transport"]["header_names"],
        json!(["Authorization"])
    );
    assert_eq!(agent["mcp_servers"][1]["transport"]["env_names"], json!(["API_KEY"]));
    assert_eq!(agent["mcp_servers"][1]["transport"]["arg_count"], 2);
    assert_eq!(agent["source"], "test-blueprints.toml");
    let (status, default) = api.get("/agents/default").await?;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(default["source"], Value::Null);

    // DELETE one session, then all.
    api.start_session("beta", "default").await?;
    let (status, deleted) = api.delete(&format!("/sessions/{id}")).await?;
    assert_eq!(status, StatusCode::OK, "{deleted}");
    assert_eq!(deleted["session_name"], "alpha");
    assert_error(
        &api.get(&format!("/sessions/{id}")).await?,
        StatusCode::NOT_FOUND,
        "session_not_found",
    );
    let (status, deleted) = api.delete("/sessions").await?;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(deleted["deleted"], 3);
    let (_, list) = api.get("/sessions").await?;
    assert_eq!(list["sessions"], json!([]));

    api.server.shutdown().await;
    api.orchestrator.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_token_is_required() -> TestResult {
    let api = start().await?;
    let plain = patchbay_http::client_builder().timeout(LIMIT).build()?;
    for path in ["/sessions", "/jobs", "/agents", "/nowhere"] {
        let response = plain.get(api.url(path)).send().await?;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{path} without a token");
        let response = plain.get(api.url(path)).bearer_auth("wrong").send().await?;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{path} with a wrong token");
        // The API's own error shape, as every other API error (not JSON-RPC's).
        let body: Value = response.json().await?;
        assert_eq!(body["error"]["code"], "unauthorized", "{path}: {body}");
        assert!(body["error"]["message"].is_string(), "{path}: {body}");
    }
    let body = json!({"type": "start_session", "session_name": "sneaky", "prompt": "hi"});
    let response = plain.post(api.url("/jobs")).json(&body).send().await?;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert!(
        api.orchestrator.list_sessions().await?.is_empty(),
        "nothing was written"
    );
    api.orchestrator.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_ids_names_and_routes_are_404() -> TestResult {
    let api = start().await?;
    let nf = StatusCode::NOT_FOUND;
    assert_error(&api.get("/jobs/no-such-job").await?, nf, "job_not_found");
    assert_error(
        &api.post("/jobs/no-such-job/cancel", &json!({})).await?,
        nf,
        "job_not_found",
    );
    assert_error(&api.get("/sessions/no-such-id").await?, nf, "session_not_found");
    assert_error(&api.get("/sessions/no-such-id/result").await?, nf, "session_not_found");
    assert_error(&api.get("/sessions/no-such-id/events").await?, nf, "session_not_found");
    assert_error(&api.delete("/sessions/no-such-id").await?, nf, "session_not_found");
    assert_error(&api.get("/sessions/by-name/nobody").await?, nf, "session_not_found");
    assert_error(&api.get("/agents/nobody").await?, nf, "blueprint_not_found");
    assert_error(&api.get("/nowhere").await?, nf, "not_found");
    let resume = json!({"type": "resume_session", "session_name": "nobody", "prompt": "hi"});
    assert_error(&api.post("/jobs", &resume).await?, nf, "session_not_found");
    let start = json!({"type": "start_session", "session_name": "s1", "prompt": "hi", "agent_name": "nobody"});
    assert_error(&api.post("/jobs", &start).await?, nf, "blueprint_not_found");
    assert_error(
        &api.send(api.client.put(api.url("/sessions"))).await?,
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
    );
    assert!(
        api.orchestrator.list_sessions().await?.is_empty(),
        "nothing was written"
    );
    api.orchestrator.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_is_a_4xx_with_a_json_error() -> TestResult {
    let api = start().await?;
    let bad = StatusCode::BAD_REQUEST;
    let start = |name: &str| json!({"type": "start_session", "session_name": name, "prompt": "hi"});

    let answer = api.post("/jobs", &start("has space")).await?;
    assert_error(&answer, bad, "invalid_name");
    assert!(
        answer.1["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("1 to 60 characters")),
        "{}",
        answer.1
    );
    assert_error(&api.post("/jobs", &start(&"x".repeat(61))).await?, bad, "invalid_name");
    assert_error(&api.get("/sessions/by-name/bad%20name").await?, bad, "invalid_name");

    let malformed = api
        .client
        .post(api.url("/jobs"))
        .header("content-type", "application/json")
        .body("{\"type\": \"start_session\", ");
    assert_error(&api.send(malformed).await?, bad, "invalid_json");
    let mut unknown = start("ok-name");
    unknown["colour"] = json!("blue");
    let answer = api.post("/jobs", &unknown).await?;
    assert_error(&answer, bad, "invalid_request");
    assert!(
        answer.1["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("colour")),
        "{}",
        answer.1
    );
    let wrong_type = json!({"type": "fork_session", "session_name": "ok-name", "prompt": "hi"});
    assert_error(&api.post("/jobs", &wrong_type).await?, bad, "invalid_request");
    let missing = json!({"type": "start_session", "session_name": "ok-name"});
    assert_error(&api.post("/jobs", &missing).await?, bad, "invalid_request");
    let empty_prompt = json!({"type": "start_session", "session_name": "ok-name", "prompt": "  "});
    assert_error(&api.post("/jobs", &empty_prompt).await?, bad, "invalid_request");
    let lonely_callback = json!({"type": "start_session", "session_name": "ok-name", "prompt": "hi", "callback": true});
    assert_error(&api.post("/jobs", &lonely_callback).await?, bad, "invalid_request");
    let bad_parent =
        json!({"type": "start_session", "session_name": "ok-name", "prompt": "hi", "parent_session_name": "a b"});
    assert_error(&api.post("/jobs", &bad_parent).await?, bad, "invalid_name");
    let no_dir =
        json!({"type": "start_session", "session_name": "ok-name", "prompt": "hi", "project_dir": "missing-dir"});
    assert_error(&api.post("/jobs", &no_dir).await?, bad, "invalid_request");

    let text = api
        .client
        .post(api.url("/jobs"))
        .header("content-type", "text/plain")
        .body(start("ok-name").to_string());
    assert_error(
        &api.send(text).await?,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
    );
    let no_type = api.client.post(api.url("/jobs")).body(start("ok-name").to_string());
    assert_error(
        &api.send(no_type).await?,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
    );

    let mut huge = start("ok-name");
    huge["prompt"] = json!("x".repeat(1024 * 1024 + 100));
    assert_error(
        &api.post("/jobs", &huge).await?,
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
    );

    assert_error(&api.get("/jobs?limit=0").await?, bad, "invalid_request");
    assert_error(&api.get("/jobs?limit=many").await?, bad, "invalid_request");
    assert_error(&api.get("/sessions?limit=100000").await?, bad, "invalid_request");
    assert_error(&api.get("/sessions?colour=blue").await?, bad, "invalid_request");
    assert_error(&api.get("/jobs?session_name=bad%20name").await?, bad, "invalid_name");

    assert!(
        api.orchestrator.list_sessions().await?.is_empty(),
        "nothing was written"
    );
    let (_, jobs) = api.get("/jobs").await?;
    assert_eq!(jobs["jobs"], json!([]), "no job was queued");
    api.orchestrator.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn conflicts_are_409() -> TestResult {
    let api = start().await?;
    let job = api.start_session("busy", "stall").await?;
    api.wait_running(&job).await?;
    let id = api.session_id("busy").await?;

    let again = json!({"type": "start_session", "session_name": "busy", "prompt": "hi"});
    assert_error(
        &api.post("/jobs", &again).await?,
        StatusCode::CONFLICT,
        "session_exists",
    );
    assert_error(
        &api.get(&format!("/sessions/{id}/result")).await?,
        StatusCode::CONFLICT,
        "still_running",
    );
    assert_error(
        &api.post(
            "/jobs",
            &json!({"type": "start_session", "session_name": "late", "prompt": "hi", "agent_name": "old"}),
        )
        .await?,
        StatusCode::CONFLICT,
        "blueprint_retired",
    );
    let moved = json!({"type": "resume_session", "session_name": "busy", "prompt": "hi", "agent_name": "default"});
    assert_error(
        &api.post("/jobs", &moved).await?,
        StatusCode::BAD_REQUEST,
        "invalid_request",
    );
    let moved = json!({"type": "resume_session", "session_name": "busy", "prompt": "hi", "project_dir": "/"});
    assert_error(
        &api.post("/jobs", &moved).await?,
        StatusCode::BAD_REQUEST,
        "outside_projects_root",
    );

    // Cancel the running job: it ends cancelled; cancelling it again is a conflict.
    let job_id = job["job_id"].as_str().ok_or("id")?;
    let (status, cancelled) = api.post(&format!("/jobs/{job_id}/cancel"), &json!({})).await?;
    assert_eq!(status, StatusCode::OK, "{cancelled}");
    assert_eq!(cancelled["status"], "cancelled");
    assert_error(
        &api.post(&format!("/jobs/{job_id}/cancel"), &json!({})).await?,
        StatusCode::CONFLICT,
        "job_ended",
    );
    let (status, result) = api.get(&format!("/sessions/{id}/result")).await?;
    assert_eq!(status, StatusCode::OK, "{result}");
    assert_eq!(result["status"], "cancelled");
    api.orchestrator.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn events_stored_first_then_live_and_resumable() -> TestResult {
    let api = start().await?;
    let job = api.start_session("talker", "default").await?;
    assert_eq!(api.wait_job(&job).await?, JobStatus::Completed);
    let id = api.session_id("talker").await?;
    let stored = api.orchestrator.store().events_since(&id, 0).await?;
    assert!(stored.len() >= 2, "a run stores events");

    // follow=false on an ended session: every stored event, numbered 1..n, then the end.
    let mut events = Events::open(
        &api.client,
        api.url(&format!("/sessions/{id}/events?follow=false")),
        None,
    )
    .await?;
    let messages = events.until(is_end).await?;
    let (end, messages) = messages.split_last().ok_or("messages")?;
    let seqs: Vec<i64> = messages.iter().filter_map(Message::seq).collect();
    assert_eq!(seqs, (1..=stored.len() as i64).collect::<Vec<_>>());
    let first = messages[0].json()?;
    assert_eq!(first["seq"], 1);
    assert_eq!(first["session_id"], id.as_str());
    assert_eq!(first["job_id"], job["job_id"]);
    assert_eq!(first["event"], stored[0].event);
    assert_eq!(end.json()?["reason"], "ended");
    assert_eq!(end.id, None);
    assert!(events.next().await?.is_none(), "the stream closes after its end");

    // `after` and Last-Event-ID skip what the client has (the header wins).
    let mut events = Events::open(
        &api.client,
        api.url(&format!("/sessions/{id}/events?follow=false&after=1")),
        None,
    )
    .await?;
    assert_eq!(events.next().await?.and_then(|m| m.seq()), Some(2));
    let mut events = Events::open(
        &api.client,
        api.url(&format!("/sessions/{id}/events?follow=false&after=1")),
        Some(2),
    )
    .await?;
    assert_eq!(events.next().await?.and_then(|m| m.seq()), Some(3));

    // Following: the stored events, then the events of a resume as they are stored.
    let n = stored.len() as i64;
    let mut events = Events::open(&api.client, api.url(&format!("/sessions/{id}/events")), None).await?;
    let old = events.until(|m| m.seq() == Some(n)).await?;
    assert_eq!(old.len() as i64, n);
    let resume = json!({"type": "resume_session", "session_name": "talker", "prompt": "more"});
    let (status, second) = api.post("/jobs", &resume).await?;
    assert_eq!(status, StatusCode::CREATED);
    let live = events.until(|m| event_type(m).as_deref() == Some("finish")).await?;
    let seqs: Vec<i64> = live.iter().filter_map(Message::seq).collect();
    assert_eq!(
        seqs,
        (n + 1..=n + live.len() as i64).collect::<Vec<_>>(),
        "live and in order"
    );
    assert_eq!(live[0].json()?["job_id"], second["job_id"]);

    // Deleting the session ends the stream.
    let (status, _) = api.delete(&format!("/sessions/{id}")).await?;
    assert_eq!(status, StatusCode::OK);
    let rest = events.until(is_end).await?;
    assert_eq!(rest.last().ok_or("end")?.json()?["reason"], "deleted");
    assert!(events.next().await?.is_none());
    api.orchestrator.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn events_of_a_run_in_progress() -> TestResult {
    let api = start().await?;
    let job = api.start_session("stalling", "stall").await?;
    api.wait_running(&job).await?;
    let id = api.session_id("stalling").await?;

    // The run is stalled after its text: the stream shows the text, and follow=false does
    // not end while the run goes on.
    let mut events = Events::open(
        &api.client,
        api.url(&format!("/sessions/{id}/events?follow=false")),
        None,
    )
    .await?;
    let before = events
        .until(|m| m.json().is_ok_and(|v| v.to_string().contains("working")))
        .await?;
    let last = before.last().and_then(Message::seq).ok_or("a seq")?;

    // Cancelling the job stores the cancellation: it arrives live, then the stream ends.
    let job_id = job["job_id"].as_str().ok_or("id")?;
    let (status, _) = api.post(&format!("/jobs/{job_id}/cancel"), &json!({})).await?;
    assert_eq!(status, StatusCode::OK);
    let after = events.until(is_end).await?;
    let (end, live) = after.split_last().ok_or("messages")?;
    assert_eq!(end.json()?["reason"], "ended");
    assert!(
        live.first().and_then(Message::seq).is_some_and(|s| s > last),
        "new events after {last}"
    );
    assert!(
        live.iter().any(|m| m.json().is_ok_and(|v| v["event"]["kind"]
            .as_str()
            .is_some_and(|k| k.eq_ignore_ascii_case("cancelled")))),
        "the cancellation arrives: {live:?}"
    );

    // Stopping the orchestrator ends a following stream.
    let mut events = Events::open(
        &api.client,
        api.url(&format!("/sessions/{id}/events")),
        Some(i64::MAX - 1),
    )
    .await?;
    api.orchestrator.shutdown().await;
    let rest = events.until(is_end).await?;
    assert_eq!(rest.last().ok_or("end")?.json()?["reason"], "stopping");
    assert!(events.next().await?.is_none());
    Ok(())
}
