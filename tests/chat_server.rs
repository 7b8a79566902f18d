//! The chat-server example as a user runs it (`cargo run --example chat-server`): its HTTP
//! contract (token, the UI message stream, approval across requests, resuming a stream after
//! `Last-Event-ID`) and its page in headless Chromium, with the README's screenshot.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::Locator;
use patchbay_conformance::browser::{Chromedriver, click, screenshot, wait_text};
use patchbay_conformance::peers::Peer;
use serde_json::{Value, json};

type Fallible<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// The example's binary, built by `cargo test` next to this test's folder.
pub(crate) fn chat_server_binary() -> Peer {
    let exe = std::env::current_exe().unwrap_or_default();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap_or(Path::new("."));
    let path = profile_dir
        .join("examples")
        .join(format!("chat-server{}", std::env::consts::EXE_SUFFIX));
    Peer::at(
        "the chat-server example",
        path,
        "build it with `cargo build --example chat-server` (`cargo test` builds it)",
    )
}

/// The example running on loopback; killed on drop.
struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    base: String,
    token: String,
}

impl Server {
    fn start() -> Fallible<Self> {
        use std::os::unix::process::CommandExt;
        let mut child = Command::new(chat_server_binary().path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .process_group(0)
            .spawn()?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        reader.read_line(&mut line)?;
        // Keep reading what it prints, as a terminal would.
        std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
        // `chat server on http://127.0.0.1:PORT/?token=TOKEN`
        let url = line.trim().rsplit(' ').next().unwrap_or_default().to_string();
        let (base, token) = url
            .split_once("/?token=")
            .ok_or_else(|| format!("no URL in the first line: {line:?}"))?;
        Ok(Self {
            base: base.to_string(),
            token: token.to_string(),
            child,
        })
    }

    fn page(&self) -> String {
        format!("{}/?token={}", self.base, self.token)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn client() -> Fallible<reqwest::Client> {
    Ok(patchbay_http::client_builder()
        .timeout(Duration::from_secs(30))
        .build()?)
}

/// The frames of a UI message stream: `(id, data)`, `[DONE]` included.
fn frames(body: &str) -> Vec<(Option<u64>, String)> {
    body.split("\n\n")
        .filter(|frame| !frame.trim().is_empty())
        .map(|frame| {
            let id = frame
                .lines()
                .find_map(|l| l.strip_prefix("id:"))
                .and_then(|v| v.trim().parse().ok());
            let data: Vec<&str> = frame
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim_start)
                .collect();
            (id, data.join("\n"))
        })
        .collect()
}

fn chunks(frames: &[(Option<u64>, String)]) -> Vec<Value> {
    frames
        .iter()
        .filter(|(_, data)| data != "[DONE]")
        .filter_map(|(_, data)| serde_json::from_str(data).ok())
        .collect()
}

/// The text of a stream's `text-delta` chunks.
fn text(chunks: &[Value]) -> String {
    chunks
        .iter()
        .filter(|c| c["type"] == "text-delta")
        .filter_map(|c| c["delta"].as_str())
        .collect()
}

/// POST /api/chat with `body` and the token; the status, the stream header and the body.
async fn post(server: &Server, body: &Value) -> Fallible<(u16, Option<String>, String)> {
    let response = client()?
        .post(format!("{}/api/chat", server.base))
        .bearer_auth(&server.token)
        .json(body)
        .send()
        .await?;
    let status = response.status().as_u16();
    let header = response
        .headers()
        .get("x-vercel-ai-ui-message-stream")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    Ok((status, header, response.text().await?))
}

pub(crate) async fn chat_server_streams_pauses_for_approval_and_resumes_over_http() {
    run_over_http().await.unwrap_or_else(|e| panic!("{e}"));
}

async fn run_over_http() -> Fallible<()> {
    let server = Server::start()?;
    let http = client()?;
    // No token, no service.
    let refused = http
        .post(format!("{}/api/chat", server.base))
        .json(&json!({}))
        .send()
        .await?;
    assert_eq!(refused.status().as_u16(), 401);
    assert_eq!(
        http.get(format!("{}/", server.base)).send().await?.status().as_u16(),
        401
    );
    assert_eq!(http.get(server.page()).send().await?.status().as_u16(), 200);

    // What `useChat`'s default transport posts.
    let user = json!({"id": "u1", "role": "user", "parts": [{"type": "text", "text": "What is the release plan?"}]});
    let first = json!({"id": "chat-http", "messages": [user], "trigger": "submit-message"});
    let (status, header, body) = post(&server, &first).await?;
    assert_eq!((status, header.as_deref()), (200, Some("v1")), "{body}");
    let first_frames = frames(&body);
    assert_eq!(first_frames.last().map(|f| f.1.as_str()), Some("[DONE]"));
    let first_chunks = chunks(&first_frames);
    let approval = first_chunks
        .iter()
        .find(|c| c["type"] == "tool-approval-request")
        .ok_or_else(|| format!("no approval request in {body}"))?;
    let call_id = approval["toolCallId"].as_str().ok_or("a call id")?.to_string();
    let input = first_chunks
        .iter()
        .find(|c| c["type"] == "tool-input-available" && c["toolCallId"] == call_id.as_str())
        .map(|c| c["input"].clone())
        .ok_or("the call's input")?;
    assert!(
        !first_chunks
            .iter()
            .any(|c| c["type"] == "tool-output-available" && c["toolCallId"] == call_id.as_str()),
        "the publish call must not run before approval"
    );

    // A reconnecting client gets the rest after Last-Event-ID, not a new run.
    let resumed = http
        .get(format!("{}/api/chat/chat-http/stream", server.base))
        .bearer_auth(&server.token)
        .header("last-event-id", "3")
        .send()
        .await?
        .text()
        .await?;
    let tail: Vec<_> = first_frames
        .iter()
        .filter(|(id, _)| id.is_none_or(|id| id > 3))
        .cloned()
        .collect();
    assert_eq!(frames(&resumed), tail);
    let none = http
        .get(format!("{}/api/chat/nobody/stream", server.base))
        .bearer_auth(&server.token)
        .send()
        .await?;
    assert_eq!(none.status().as_u16(), 204);

    // The person approves from a later request: the run resumes, the note is published.
    let assistant = json!({"id": "a1", "role": "assistant", "parts": [
        {"type": "text", "text": text(&first_chunks)},
        {"type": "tool-publish_note", "toolCallId": call_id, "state": "approval-responded", "input": input,
         "approval": {"id": approval["approvalId"], "approved": true}},
    ]});
    let second = json!({"id": "chat-http", "messages": [first["messages"][0], assistant], "trigger": "submit-message"});
    let (status, _, body) = post(&server, &second).await?;
    assert_eq!(status, 200, "{body}");
    let second_chunks = chunks(&frames(&body));
    assert!(
        second_chunks
            .iter()
            .any(|c| c["type"] == "tool-output-available" && c["toolCallId"] == call_id.as_str()),
        "{body}"
    );
    assert!(text(&second_chunks).contains("the summary note is published"), "{body}");
    assert!(second_chunks.iter().any(|c| c["type"] == "source-url"), "{body}");
    Ok(())
}

pub(crate) async fn chat_server_page_streams_asks_for_approval_and_resumes_in_chromium(chromium: &Path, driver: &Path) {
    in_chromium(chromium, driver).await.unwrap_or_else(|e| panic!("{e}"));
}

async fn in_chromium(chromium: &Path, driver: &Path) -> Fallible<()> {
    let server = Server::start()?;
    let chromedriver = Chromedriver::start(driver)?;
    let browser = chromedriver.browser(chromium).await?;
    let outcome = async {
        // The page fits this window: the screenshots show it without a blank half.
        browser.set_window_size(1000, 560).await?;
        browser.goto(&server.page()).await?;
        click(&browser, Locator::Css("#send")).await?;
        wait_text(&browser, ".assistant", "Let me look through the team's documents.").await?;
        wait_text(&browser, ".tool", "search_docs: 2 documents match").await?;
        wait_text(&browser, ".tool.waiting", "publish_note needs your approval").await?;
        wait_text(&browser, ".tool.waiting .approve", "Approve").await?;
        screenshot(
            &browser,
            Path::new(env!("CARGO_MANIFEST_DIR")),
            "chat-server-approval.png",
        )
        .await?;
        click(&browser, Locator::Css(".tool.waiting .approve")).await?;
        wait_text(&browser, ".assistant", "Done: the summary note is published.").await?;
        wait_text(&browser, ".tool", "publish_note: Published").await?;
        let chips = wait_text(&browser, ".sources", "Release checklist").await?;
        assert!(chips.contains("Q3 planning notes"), "{chips}");
        screenshot(&browser, Path::new(env!("CARGO_MANIFEST_DIR")), "chat-server.png").await?;
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    }
    .await;
    let _ = browser.close().await;
    drop(chromedriver);
    outcome
}
