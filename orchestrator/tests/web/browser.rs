//! The browser side: chromedriver as a child process, a headless Chromium session, and a
//! bounded wait for text on the page.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;

use crate::PAGE_WAIT;
use crate::common::{Fallible, TestResult, within};

/// chromedriver as a child process in a process group of its own (with the browsers it
/// starts), killed on drop, also when the test fails.
pub(crate) struct Chromedriver {
    child: Child,
    port: u16,
}

impl Chromedriver {
    pub(crate) fn start(path: &Path) -> Fallible<Self> {
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
    pub(crate) async fn ready(&self) -> TestResult {
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
    pub(crate) async fn browser(&self, chromium: &Path) -> Fallible<Client> {
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
pub(crate) async fn wait_text(browser: &Client, css: &str, needle: &str) -> Fallible<String> {
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

/// The text of each element matching `css`, read in one go (the page re-renders its lists
/// every few seconds, so elements found one by one may be gone when read).
pub(crate) async fn texts(browser: &Client, css: &str) -> Fallible<Vec<String>> {
    let value = browser
        .execute(
            "return Array.from(document.querySelectorAll(arguments[0]), (e) => e.innerText);",
            vec![json!(css)],
        )
        .await?;
    Ok(serde_json::from_value(value)?)
}

/// Click what `locator` finds, looking again while the page re-renders it (bounded).
pub(crate) async fn click(browser: &Client, locator: Locator<'_>) -> TestResult {
    let deadline = Instant::now() + PAGE_WAIT;
    loop {
        let clicked = match browser.find(locator).await {
            Ok(element) => element.click().await,
            Err(error) => Err(error),
        };
        match clicked {
            Ok(()) => return Ok(()),
            Err(_) if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(100)).await,
            Err(error) => return Err(format!("cannot click {locator:?}: {error}").into()),
        }
    }
}
