//! Headless Chromium for browser tests (feature `browser`): chromedriver as a child process,
//! a Chromium session driven by fantoccini, and bounded waits for what a page shows. The
//! programs come from Debian's `chromium` and `chromium-driver` (`.ci/peers/chromium.sh`);
//! [`chromium`] and [`chromedriver`] find them as [`Peer`]s, so a test without them is ignored
//! locally and fails under `CI=true`.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;

use crate::peers::Peer;

/// The longest any one wait for the browser lasts.
pub const PAGE_WAIT: Duration = Duration::from_secs(30);

/// What a browser step fails with.
pub type BrowserError = Box<dyn std::error::Error + Send + Sync>;

/// Chromium as a peer (the first of its usual names on `PATH`).
pub fn chromium() -> Peer {
    program("Chromium", &["chromium", "chromium-browser", "google-chrome"])
}

/// chromedriver as a peer.
pub fn chromedriver() -> Peer {
    program("chromedriver", &["chromedriver"])
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

/// chromedriver as a child process in a process group of its own (with the browsers it
/// starts), killed on drop, also when the test fails.
#[derive(Debug)]
pub struct Chromedriver {
    child: Child,
    port: u16,
}

impl Chromedriver {
    /// Start chromedriver at `path` on a free loopback port.
    pub fn start(path: &Path) -> Result<Self, BrowserError> {
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

    /// A headless Chromium session (`chromium` is the browser's path), once chromedriver
    /// answers (bounded by [`PAGE_WAIT`]).
    pub async fn browser(&self, chromium: &Path) -> Result<Client, BrowserError> {
        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "goog:chromeOptions".to_owned(),
            json!({
                "binary": chromium,
                "args": ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                         "--window-size=1280,1400", "--hide-scrollbars"],
            }),
        );
        let deadline = Instant::now() + PAGE_WAIT;
        loop {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(capabilities.clone())
                .connect(&self.url())
                .await
            {
                Ok(client) => return Ok(client),
                Err(_) if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(100)).await,
                Err(error) => return Err(format!("chromedriver gave no session within {PAGE_WAIT:?}: {error}").into()),
            }
        }
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
pub async fn wait_text(browser: &Client, css: &str, needle: &str) -> Result<String, BrowserError> {
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

/// The text of each element matching `css`, read in one go (a page that re-renders its lists
/// may drop elements found one by one before they are read).
pub async fn texts(browser: &Client, css: &str) -> Result<Vec<String>, BrowserError> {
    let value = browser
        .execute(
            "return Array.from(document.querySelectorAll(arguments[0]), (e) => e.innerText);",
            vec![json!(css)],
        )
        .await?;
    Ok(serde_json::from_value(value)?)
}

/// Click what `locator` finds, looking again while the page re-renders it (bounded).
pub async fn click(browser: &Client, locator: Locator<'_>) -> Result<(), BrowserError> {
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

/// Save a screenshot of the page as `name` in `$CARGO_TARGET_DIR`, else in the workspace's
/// `target/` (`workspace` is the workspace's root); its path.
pub async fn screenshot(browser: &Client, workspace: &Path, name: &str) -> Result<std::path::PathBuf, BrowserError> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"));
    std::fs::create_dir_all(&target)?;
    browser.execute("window.scrollTo(0, 0)", Vec::new()).await?;
    let path = target.join(name);
    std::fs::write(&path, browser.screenshot().await?)?;
    println!("screenshot: {}", path.display());
    Ok(path)
}
