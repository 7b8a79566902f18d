//! The web view: logging in and every refusal over plain HTTP, then the pages in a real
//! browser (headless Chromium driven through chromedriver by fantoccini): the session tree,
//! a session's text and tool call showing up while the run goes on, resume and cancel
//! buttons, and a screenshot for the README (`target/web-view.png`).
//!
//! A `harness = false` binary (libtest-mimic, through patchbay-conformance's peers): without
//! Chromium or chromedriver (`.ci/peers/chromium.sh` installs them) the browser trial shows as
//! ignored with the reason, and fails when `CI=true`.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use common::{Fallible, Harness, TestResult, registry, stalling, within};
use fantoccini::{Client, ClientBuilder, Locator};
use patchbay::{
    Capabilities, ContentBlock, Event, EventStream, ExecutedBy, FinishReason, Message, MetricsRecorder, Provider,
    ProviderError, ProviderFactory, ProviderInfo, RequestContext, Signal, ToolSet, Usage, async_trait,
};
use patchbay_conformance::peers::{self, Peer};
use patchbay_orchestrator::blueprint::Blueprint;
use patchbay_orchestrator::http::{HttpOptions, Serving, serve};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// The longest any one wait for the browser lasts.
const PAGE_WAIT: Duration = Duration::from_secs(30);

fn main() {
    let chromium = program("Chromium", &["chromium", "chromium-browser", "google-chrome"]);
    let driver = program("chromedriver", &["chromedriver"]);
    let (chromium_path, driver_path) = (chromium.path().to_owned(), driver.path().to_owned());
    let trials = vec![
        peers::async_trial("login_and_refusals_over_http", &[], || async {
            login_and_refusals_over_http().await.unwrap_or_else(|e| panic!("{e}"));
        }),
        peers::async_trial(
            "browser_shows_a_run_live_and_its_buttons_resume_and_cancel",
            &[&chromium, &driver],
            move || async move {
                browser_shows_a_run_live(&chromium_path, &driver_path)
                    .await
                    .unwrap_or_else(|e| panic!("{e}"));
            },
        ),
    ];
    peers::run(trials)
}

/// The first of `names` on `PATH`, as a peer (missing: the first name under /usr/bin).
fn program(what: &str, names: &[&str]) -> Peer {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = names
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
        .find(|candidate| candidate.is_file());
    let fallback = Path::new("/usr/bin").join(names.first().copied().unwrap_or("chromium"));
    Peer::at(
        what,
        found.unwrap_or(fallback),
        "run .ci/peers/chromium.sh (apt-get install chromium chromium-driver)",
    )
}

// ---- the orchestrator under test -------------------------------------------------------------

/// An orchestrator on the `drip` and `stall` blueprints, served on loopback.
struct Site {
    harness: Harness,
    serving: Serving,
    base: String,
    /// Sends the bearer token.
    api: reqwest::Client,
}

impl Site {
    async fn start(hold_name: &str) -> Fallible<Self> {
        let mut registry = registry();
        registry.register(ProviderFactory {
            name: "drip",
            description: "streams text slowly, then reads notes.txt (option hold: wait there before the tool call)",
            build: build_drip,
        });
        let blueprints = vec![drip_blueprint(hold_name), stalling("stall")];
        let harness = Harness::start_with(blueprints, 2, |builder| builder.registry(registry)).await?;
        std::fs::write(
            harness.project.join("notes.txt"),
            "Sunny, with a light breeze from the west.\n",
        )?;
        let serving = serve(&harness.orchestrator, HttpOptions::default()).await?;
        let base = format!("http://127.0.0.1:{}", serving.server.addr().port());
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            reqwest::header::AUTHORIZATION,
            format!("Bearer {}", serving.server.token()).parse()?,
        );
        let api = patchbay_http::client_builder()
            .default_headers(headers)
            .timeout(PAGE_WAIT)
            .build()?;
        Ok(Self {
            harness,
            serving,
            base,
            api,
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Queue a job through the JSON API (with the token); its id.
    async fn job(&self, body: Value) -> Fallible<String> {
        let response = self.api.post(self.url("/jobs")).json(&body).send().await?;
        let status = response.status();
        let job: Value = response.json().await?;
        if status != StatusCode::CREATED {
            return Err(format!("POST /jobs answered {status}: {job}").into());
        }
        Ok(job["job_id"].as_str().ok_or("a job id")?.to_owned())
    }

    async fn get(&self, path: &str) -> Fallible<Value> {
        Ok(self
            .api
            .get(self.url(path))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?)
    }

    async fn stop(self) -> TestResult {
        self.serving.server.shutdown().await;
        self.harness.stop().await
    }
}

/// A blueprint on `drip` with the `read` tool.
fn drip_blueprint(hold_name: &str) -> Blueprint {
    Blueprint {
        provider: "drip".to_owned(),
        model: "drip-1".to_owned(),
        tools: vec!["read".to_owned()],
        ..common::scripted("drip", json!({ "hold": hold_name }))
    }
}

/// Where `drip` runs wait before their tool call until the test lets them go.
#[derive(Debug)]
struct Hold {
    permits: tokio::sync::Semaphore,
    arrived: tokio::sync::watch::Sender<usize>,
}

/// The hold called `name` (providers are built from options, so they find it by name).
fn hold(name: &str) -> Arc<Hold> {
    static HOLDS: LazyLock<Mutex<HashMap<String, Arc<Hold>>>> = LazyLock::new(Default::default);
    let mut holds = HOLDS.lock().unwrap_or_else(|p| p.into_inner());
    holds
        .entry(name.to_owned())
        .or_insert_with(|| {
            Arc::new(Hold {
                permits: tokio::sync::Semaphore::new(0),
                arrived: tokio::sync::watch::Sender::new(0),
            })
        })
        .clone()
}

impl Hold {
    /// Let `n` more runs through.
    fn release(&self, n: usize) {
        self.permits.add_permits(n);
    }

    /// Wait until `n` runs in all have arrived.
    async fn arrived(&self, n: usize) -> TestResult {
        let mut arrived = self.arrived.subscribe();
        within(&format!("{n} runs at the hold"), arrived.wait_for(|k| *k >= n)).await??;
        Ok(())
    }

    async fn pass(&self, signal: &Signal) -> Result<(), ProviderError> {
        self.arrived.send_modify(|k| *k += 1);
        tokio::select! {
            permit = self.permits.acquire() => {
                permit.map_err(|_| ProviderError::cancelled())?.forget();
                Ok(())
            }
            () = signal.cancelled() => Err(ProviderError::cancelled()),
        }
    }
}

/// A provider that streams like a slow model: a prompt gets a thought, text word by word and,
/// once the hold (when one is set) lets it through, a `read` of `notes.txt`; a tool result
/// gets an answer quoting it.
struct Drip {
    info: ProviderInfo,
    hold: Option<Arc<Hold>>,
}

fn build_drip(options: &Value) -> Result<Arc<dyn Provider>, ProviderError> {
    Ok(Arc::new(Drip {
        info: ProviderInfo::new("drip", Capabilities::none().with_streaming().with_reasoning()),
        hold: options.get("hold").and_then(Value::as_str).map(hold),
    }))
}

#[async_trait]
impl Provider for Drip {
    fn info(&self) -> &ProviderInfo {
        &self.info
    }

    async fn create_response(
        &self,
        messages: &[Message],
        _tools: &ToolSet,
        model: &str,
        signal: &Signal,
        _context: Option<&RequestContext>,
    ) -> Result<EventStream, ProviderError> {
        let last = messages.last().ok_or_else(|| ProviderError::protocol("no messages"))?;
        let answered = last
            .content
            .iter()
            .any(|block| matches!(block, ContentBlock::ToolResult { .. }));
        let turn = if answered {
            let notes = if format!("{last:?}").contains("Sunny") {
                "sunny, with a light breeze"
            } else {
                "nothing"
            };
            DripTurn {
                thought: None,
                text: format!("The notes say it is {notes}."),
                hold: None,
            }
        } else {
            DripTurn {
                thought: Some("The answer is in the notes: read them first.".to_owned()),
                text: format!("Reading the notes for: {} ", last.text()),
                hold: self.hold.clone(),
            }
        };
        let (events, stream) = futures::channel::mpsc::unbounded();
        tokio::spawn(turn.play(model.to_owned(), signal.clone(), events));
        Ok(Box::pin(stream))
    }
}

/// One `drip` answer: played by a task into the stream's channel.
struct DripTurn {
    thought: Option<String>,
    text: String,
    /// Set for a turn ending in the tool call.
    hold: Option<Arc<Hold>>,
}

type Sender = futures::channel::mpsc::UnboundedSender<Result<Event, ProviderError>>;

impl DripTurn {
    async fn play(self, model: String, signal: Signal, out: Sender) {
        let mut recorder = MetricsRecorder::start();
        let mut send = |event: Event| {
            recorder.observe(&event);
            out.unbounded_send(Ok(event)).is_ok()
        };
        send(Event::Started {
            response_id: None,
            model,
            session_id: None,
            warnings: Vec::new(),
        });
        if let Some(thought) = &self.thought {
            send(Event::ReasoningDelta {
                index: 0,
                text: thought.clone(),
            });
        }
        for word in self.text.split_inclusive(' ') {
            tokio::time::sleep(Duration::from_millis(40)).await;
            if signal.is_cancelled()
                || !send(Event::TextDelta {
                    index: 1,
                    text: word.to_owned(),
                })
            {
                let _ = out.unbounded_send(Err(ProviderError::cancelled()));
                return;
            }
        }
        let calls = self.hold.is_some();
        if let Some(hold) = &self.hold
            && let Err(error) = hold.pass(&signal).await
        {
            let _ = out.unbounded_send(Err(error));
            return;
        }
        if calls {
            let input = json!({ "path": "notes.txt" });
            send(Event::ToolCallStart {
                id: "call-1".into(),
                name: "read".into(),
            });
            send(Event::ToolCallDelta {
                id: "call-1".into(),
                partial_json: input.to_string(),
            });
            send(Event::ToolCall {
                id: "call-1".into(),
                name: "read".into(),
                input,
                executed_by: ExecutedBy::Host,
            });
        }
        let usage = Usage {
            input: Some(812),
            output: Some(64),
            ..Usage::default()
        };
        send(Event::Usage(usage));
        let reason = if calls {
            FinishReason::ToolUse
        } else {
            FinishReason::Stop
        };
        let metrics = recorder.finish();
        let _ = out.unbounded_send(Ok(Event::Finish { reason, usage, metrics }));
    }
}

// ---- login and refusals over plain HTTP ------------------------------------------------------

/// The value of `Set-Cookie` and the `name=value` pair a browser sends back.
fn cookie_of(response: &reqwest::Response) -> Fallible<(String, String)> {
    let set = response
        .headers()
        .get(reqwest::header::SET_COOKIE)
        .ok_or("a Set-Cookie header")?
        .to_str()?
        .to_owned();
    let pair = set.split(';').next().unwrap_or_default().trim().to_owned();
    Ok((set, pair))
}

async fn login_and_refusals_over_http() -> TestResult {
    let site = Site::start("refusals").await?;
    let port = site.serving.server.addr().port();
    let token = site.serving.server.token().to_owned();
    let plain = patchbay_http::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(PAGE_WAIT)
        .build()?;

    // Without the cookie or token: the page is an HTML 401 saying how to log in; the API
    // answers as it always did.
    let page = plain.get(site.url("/")).send().await?;
    assert_eq!(page.status(), StatusCode::UNAUTHORIZED);
    assert!(
        page.headers()[reqwest::header::CONTENT_TYPE]
            .to_str()?
            .starts_with("text/html")
    );
    let text = page.text().await?;
    assert!(text.contains("login") && text.contains("action=\"/login\""), "{text}");
    let api = plain.get(site.url("/sessions")).send().await?;
    assert_eq!(api.status(), StatusCode::UNAUTHORIZED);
    let body: Value = api.json().await?;
    assert_eq!(body["error"]["code"], -32001, "{body}");

    // The one-time link: a cookie of its own, then a redirect to the page; a second use fails.
    let link = site.serving.web.login_url();
    assert!(link.starts_with(&site.url("/login?code=")), "{link}");
    let code = link.rsplit('=').next().unwrap_or_default().to_owned();
    let first = plain.get(&link).send().await?;
    assert_eq!(first.status(), StatusCode::SEE_OTHER);
    assert_eq!(first.headers()[reqwest::header::LOCATION], "/");
    let (set_cookie, cookie) = cookie_of(&first)?;
    let value = cookie
        .strip_prefix(&format!("patchbay_{port}="))
        .ok_or("the cookie is named after the port")?;
    assert!(
        value.len() >= 32 && value != code && value != token,
        "the cookie is a secret of its own"
    );
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(set_cookie.contains(attribute), "{attribute} in {set_cookie}");
    }
    let again = plain.get(&link).send().await?;
    assert_eq!(again.status(), StatusCode::UNAUTHORIZED, "a code works once");
    assert!(again.headers().get(reqwest::header::SET_COOKIE).is_none());

    // The cookie opens the page and reads the API.
    let with_cookie = |request: reqwest::RequestBuilder| request.header(reqwest::header::COOKIE, &cookie);
    assert_eq!(
        with_cookie(plain.get(site.url("/"))).send().await?.status(),
        StatusCode::OK
    );
    assert_eq!(
        with_cookie(plain.get(site.url("/sessions"))).send().await?.status(),
        StatusCode::OK
    );

    // A change with the cookie needs the CSRF header and the own origin.
    let job = json!({"type": "start_session", "session_name": "from-the-page", "prompt": "hi", "agent_name": "stall"});
    let own = site.url("");
    let cross_site_form = with_cookie(plain.post(site.url("/jobs")))
        .header("origin", "http://evil.example")
        .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body("type=start_session&session_name=evil&prompt=x")
        .send()
        .await?;
    assert_eq!(
        cross_site_form.status(),
        StatusCode::UNAUTHORIZED,
        "a cross-site form post"
    );
    let no_header = with_cookie(plain.post(site.url("/jobs")))
        .header("origin", &own)
        .json(&job)
        .send()
        .await?;
    assert_eq!(no_header.status(), StatusCode::UNAUTHORIZED, "no CSRF header");
    let foreign_origin = with_cookie(plain.post(site.url("/jobs")))
        .header("origin", "http://evil.example")
        .header("x-patchbay-csrf", "1")
        .json(&job)
        .send()
        .await?;
    assert_eq!(foreign_origin.status(), StatusCode::UNAUTHORIZED, "a foreign Origin");
    let rebound = with_cookie(plain.get(site.url("/sessions")))
        .header("host", format!("evil.example:{port}"))
        .send()
        .await?;
    assert_eq!(
        rebound.status(),
        StatusCode::UNAUTHORIZED,
        "a foreign Host (DNS rebinding)"
    );
    let from_page = with_cookie(plain.post(site.url("/jobs")))
        .header("origin", &own)
        .header("x-patchbay-csrf", "1")
        .json(&job)
        .send()
        .await?;
    assert_eq!(from_page.status(), StatusCode::CREATED, "as the page's script sends it");
    let cancel = from_page.json::<Value>().await?["job_id"]
        .as_str()
        .ok_or("a job id")?
        .to_owned();
    let cancelled = with_cookie(plain.post(site.url(&format!("/jobs/{cancel}/cancel"))))
        .header("x-patchbay-csrf", "1")
        .send()
        .await?;
    assert_eq!(cancelled.status(), StatusCode::OK);

    // The cookie never opens the MCP endpoint.
    let mcp = with_cookie(plain.post(site.url("/mcp")))
        .header("x-patchbay-csrf", "1")
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await?;
    assert_eq!(mcp.status(), StatusCode::UNAUTHORIZED);

    // The token form: wrong, from another site, then right.
    let form = |body: String| {
        plain
            .post(site.url("/login"))
            .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(body)
    };
    let wrong = form("token=guess".into()).send().await?;
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    assert!(wrong.headers().get(reqwest::header::SET_COOKIE).is_none());
    let elsewhere = form(format!("token={token}"))
        .header("origin", "http://evil.example")
        .send()
        .await?;
    assert_eq!(
        elsewhere.status(),
        StatusCode::FORBIDDEN,
        "a login form posted from another site"
    );
    let right = form(format!("token={token}")).header("origin", &own).send().await?;
    assert_eq!(right.status(), StatusCode::SEE_OTHER);
    let (_, second) = cookie_of(&right)?;
    assert_ne!(second, cookie, "each login gets its own cookie");
    assert_eq!(
        plain.get(site.url("/login")).send().await?.status(),
        StatusCode::OK,
        "the form"
    );
    let rebound_login = plain
        .get(site.url("/login"))
        .header("host", format!("evil.example:{port}"))
        .send()
        .await?;
    assert_eq!(rebound_login.status(), StatusCode::FORBIDDEN);

    // The bearer token works as before, without any of the cookie's checks.
    assert_eq!(site.api.get(site.url("/")).send().await?.status(), StatusCode::OK);
    site.job(json!({"type": "start_session", "session_name": "by-token", "prompt": "hi", "agent_name": "stall"}))
        .await?;
    site.stop().await
}

// ---- the pages in a browser ------------------------------------------------------------------

/// chromedriver as a child process in a process group of its own (with the browsers it
/// starts), killed on drop, also when the test fails.
struct Chromedriver {
    child: Child,
    port: u16,
}

impl Chromedriver {
    fn start(path: &Path) -> Fallible<Self> {
        use std::os::unix::process::CommandExt;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let child = Command::new(path)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()?;
        Ok(Self { child, port })
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Wait until it answers `/status`.
    async fn ready(&self) -> TestResult {
        let client = patchbay_http::client_builder()
            .timeout(Duration::from_secs(2))
            .build()?;
        let status = format!("{}/status", self.url());
        within("chromedriver answers", async {
            while !client.get(&status).send().await.is_ok_and(|r| r.status().is_success()) {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await
    }

    /// A headless Chromium session.
    async fn browser(&self, chromium: &Path) -> Fallible<Client> {
        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "goog:chromeOptions".to_owned(),
            json!({
                "binary": chromium,
                "args": ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                         "--window-size=1280,1400", "--hide-scrollbars"],
            }),
        );
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        Ok(ClientBuilder::new(connector)
            .capabilities(capabilities)
            .connect(&self.url())
            .await?)
    }
}

impl Drop for Chromedriver {
    fn drop(&mut self) {
        if let Some(group) = rustix::process::Pid::from_raw(self.child.id() as i32) {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of every element matching `css`, once it contains `needle` (bounded).
async fn wait_text(browser: &Client, css: &str, needle: &str) -> Fallible<String> {
    let deadline = Instant::now() + PAGE_WAIT;
    loop {
        let mut seen = String::new();
        for element in browser.find_all(Locator::Css(css)).await? {
            // An element the page just re-rendered is gone: the next look finds its successor.
            if let Ok(text) = element.text().await {
                seen.push_str(&text);
                seen.push('\n');
            }
        }
        if seen.contains(needle) {
            return Ok(seen);
        }
        if Instant::now() > deadline {
            return Err(format!("`{needle}` never showed in `{css}` within {PAGE_WAIT:?}; it showed:\n{seen}").into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Where the screenshot goes: `$CARGO_TARGET_DIR/web-view.png`, else `target/` of the workspace.
fn screenshot_path() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target.join("web-view.png")
}

async fn browser_shows_a_run_live(chromium: &Path, driver: &Path) -> TestResult {
    let started = Instant::now();
    let site = Site::start("browser").await?;
    let chromedriver = Chromedriver::start(driver)?;
    chromedriver.ready().await?;
    let browser = chromedriver.browser(chromium).await?;
    let outcome = drive(&site, &browser).await;
    let _ = browser.close().await;
    drop(chromedriver);
    site.stop().await?;
    outcome?;
    println!("the browser trial took {:.1?}", started.elapsed());
    Ok(())
}

async fn drive(site: &Site, browser: &Client) -> TestResult {
    let hold = hold("browser");
    // The printed link logs the browser in and lands on the sessions.
    browser.goto(&site.serving.web.login_url()).await?;
    assert_eq!(browser.current_url().await?.as_str(), site.url("/"));
    wait_text(browser, "#sessions", "No sessions yet").await?;

    let first = json!({"type": "start_session", "session_name": "weather-report", "agent_name": "drip",
        "prompt": "What do the notes say about the weather?"});
    site.job(first).await?;
    let child = site
        .job(
            json!({"type": "start_session", "session_name": "notes-helper", "agent_name": "stall",
            "prompt": "Wait for more notes.", "parent_session_name": "weather-report"}),
        )
        .await?;

    // The tree: the child right under its parent.
    wait_text(browser, "#sessions tbody", "notes-helper").await?;
    let mut rows = Vec::new();
    for row in browser.find_all(Locator::Css("#sessions tbody tr")).await? {
        rows.push(row.text().await?);
    }
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(rows[0].starts_with("weather-report"), "{rows:?}");
    assert!(rows[1].starts_with("└ notes-helper"), "{rows:?}");

    // The session page shows the text while the run waits before its tool call...
    browser.find(Locator::LinkText("weather-report")).await?.click().await?;
    hold.arrived(1).await?;
    let before = wait_text(
        browser,
        "#events",
        "Reading the notes for: What do the notes say about the weather?",
    )
    .await?;
    assert!(
        !before.contains("notes.txt"),
        "no tool call before the run makes it:\n{before}"
    );
    // ...then the tool call with its input and result, and the answer, as they come.
    hold.release(1);
    wait_text(browser, "#events .tool .tool-name", "read").await?;
    wait_text(browser, "#events .tool .input", "\"path\": \"notes.txt\"").await?;
    wait_text(
        browser,
        "#events .tool .result",
        "Sunny, with a light breeze from the west.",
    )
    .await?;
    wait_text(browser, "#events", "The notes say it is sunny, with a light breeze.").await?;
    wait_text(browser, "#events .run-footer", "finished: stop").await?;

    // Resume from the page: a second run streams in below the first.
    hold.release(1);
    let prompt = browser.find(Locator::Css("#resume textarea")).await?;
    prompt.send_keys("And what about tomorrow?").await?;
    browser
        .find(Locator::Css("#resume button[type=submit]"))
        .await?
        .click()
        .await?;
    wait_text(
        browser,
        "#events .run:nth-of-type(2)",
        "Reading the notes for: And what about tomorrow?",
    )
    .await?;
    wait_text(browser, "#events .run:nth-of-type(2) .run-footer", "finished: stop").await?;
    wait_text(browser, "#app .title-row", "finished").await?;
    browser.execute("window.scrollTo(0, 0)", Vec::new()).await?;
    let png = browser.screenshot().await?;
    let path = screenshot_path();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&path, png)?;
    println!("screenshot: {}", path.display());

    // Cancel the stalled child from its page.
    browser.goto(&site.url("/web/sessions/by-name/notes-helper")).await?;
    let button = browser
        .wait()
        .at_most(PAGE_WAIT)
        .for_element(Locator::Css(&format!("button.cancel[data-job='{child}']")))
        .await?;
    button.click().await?;
    wait_text(browser, "#app .jobs", "cancelled").await?;
    let job = site.get(&format!("/jobs/{child}")).await?;
    assert_eq!(job["status"], "cancelled", "{job}");
    Ok(())
}
