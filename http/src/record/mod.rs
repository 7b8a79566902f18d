//! Recording live traffic as fixtures: each call's request (credentials removed) and response
//! body (verbatim) in the layout of the shipped fixtures, plus a manifest line, so that
//! `replay` and `patchbay_conformance::FixtureRun::new([family]).in_dir(dir)` read them as they
//! read the shipped ones. The format (layout, manifest columns, the scenario a call shows) is
//! [`patchbay_fixtures`]'s; this module writes it.
//!
//! A provider holds an optional [`Recorder`] (built from its config's `record_dir`) and hands it
//! to the call runner ([`crate::Call::with_recorder`]), which starts a [`Tape`] per call: the
//! request is recorded as it is sent, the body as it is read, and the tape watches the events
//! ([`Tape::watch`]); with recording off the tape is [`Tape::off`] and costs nothing but a
//! branch.
//!
//! ```text
//! DIR/MANIFEST.tsv                                  one line per call (header when new)
//! DIR/<family>/recorded/<stem>.sse                  the response body as received (.json: a JSON answer or error body)
//! DIR/requests/<family>/recorded/<stem>.json        method, URL, headers, JSON body; no credentials
//! ```
//!
//! `<stem>` is the UTC time, the model, the process id and a counter
//! (`20250102T030405Z_claude-sonnet-4-5_4711-1`, [`patchbay_fixtures::stem`]); files are created
//! with `create_new`, so concurrent calls never share or overwrite one.

mod redact;

use std::fmt;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, ready};
use std::time::SystemTime;

use bytes::Bytes;
use futures::Stream;
use patchbay_core::{Event, EventStream, ProviderError};
use patchbay_fixtures::{CallFiles, DEFAULT_SOURCE, Detector, MANIFEST_FILE, ManifestEntry, detect_scenario};
use pin_project_lite::pin_project;
use serde_json::{Value, json};

use redact::{Scrubber, scrub_text};

/// The environment variable that turns recording on for providers configured from the
/// environment (`from_env`, `from_options`): the folder to record into.
pub const RECORD_DIR_ENV: &str = "PATCHBAY_RECORD_DIR";

/// Calls started by this process, numbering the stems.
static CALLS: AtomicU64 = AtomicU64::new(0);

/// Where and how a provider records its calls. Cheap to clone (shared). `Debug` shows the
/// folder, the family and how many secrets it removes, never the secrets.
///
/// ```
/// use patchbay_http::record::Recorder;
/// let recorder = Recorder::new("/tmp/recordings", "anthropic")
///     .with_recorded_by("patchbay-anthropic 0.1.0")
///     .with_secret("sk-ant-123456");
/// assert!(!format!("{recorder:?}").contains("sk-ant-123456"));
/// ```
#[derive(Clone)]
pub struct Recorder {
    settings: Arc<Settings>,
    state: Arc<State>,
}

#[derive(Clone)]
struct Settings {
    dir: PathBuf,
    family: String,
    source: String,
    recorded_by: String,
    server: Option<String>,
    secrets: Vec<String>,
}

#[derive(Default)]
struct State {
    warned: AtomicBool,
    manifest: Mutex<()>,
}

impl fmt::Debug for Recorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recorder")
            .field("dir", &self.settings.dir)
            .field("family", &self.settings.family)
            .field("source", &self.settings.source)
            .field("recorded_by", &self.settings.recorded_by)
            .field("secrets", &self.settings.secrets.len())
            .finish()
    }
}

impl Recorder {
    /// Record into `dir`, bodies below `<dir>/<family>/recorded/`. Nothing is created until the
    /// first call: a folder that cannot be written only costs a warning then.
    pub fn new(dir: impl Into<PathBuf>, family: impl Into<String>) -> Self {
        Self {
            settings: Arc::new(Settings {
                dir: dir.into(),
                family: family.into(),
                source: DEFAULT_SOURCE.into(),
                recorded_by: concat!("patchbay-http ", env!("CARGO_PKG_VERSION")).into(),
                server: None,
                secrets: Vec::new(),
            }),
            state: Arc::default(),
        }
    }

    /// The `<source>` folder (default [`patchbay_fixtures::DEFAULT_SOURCE`], `recorded`).
    pub fn with_source(mut self, source: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.settings).source = source.into();
        self
    }

    /// Who records, for the manifest's `provenance` column (`patchbay-anthropic 0.1.0`).
    pub fn with_recorded_by(mut self, recorded_by: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.settings).recorded_by = recorded_by.into();
        self
    }

    /// The manifest's `server` column when no request URL names one (an agent runtime: the CLI).
    pub fn with_server(mut self, server: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.settings).server = Some(server.into());
        self
    }

    /// A secret (an API key, a header value) replaced by `[redacted]` wherever it appears in a
    /// recorded file: the request, the body, the manifest. Secrets shorter than 6 bytes are not
    /// searched for (they would match ordinary text).
    pub fn with_secret(mut self, secret: impl Into<String>) -> Self {
        let secret = secret.into();
        if secret.len() >= redact::MIN_SECRET_LEN {
            Arc::make_mut(&mut self.settings).secrets.push(secret);
        }
        self
    }

    /// The folder recorded into.
    pub fn dir(&self) -> &Path {
        &self.settings.dir
    }

    /// The family folder's name.
    pub fn family(&self) -> &str {
        &self.settings.family
    }

    /// A tape for one call to `model`.
    pub fn tape(&self, model: &str) -> Tape {
        let time = SystemTime::now();
        let number = CALLS.fetch_add(1, Ordering::Relaxed) + 1;
        let settings = &self.settings;
        Tape {
            call: Some(Arc::new(Call {
                recorder: self.clone(),
                model: model.to_string(),
                files: CallFiles::new(
                    &settings.family,
                    &settings.source,
                    patchbay_fixtures::stem(time, model, number),
                ),
                time,
                state: Mutex::default(),
            })),
        }
    }

    /// A path of the folder's layout (relative, `/` separators) below the folder.
    fn path(&self, relative: &str) -> PathBuf {
        patchbay_fixtures::path_in(&self.settings.dir, relative)
    }

    /// Logs a failure to write: a warning the first time, a debug event after.
    fn failed(&self, what: &str, path: &Path, error: &std::io::Error) {
        if self.state.warned.swap(true, Ordering::Relaxed) {
            tracing::debug!(path = %path.display(), %error, "cannot write {what}");
        } else {
            tracing::warn!(
                path = %path.display(),
                %error,
                "cannot write {what}: calls go on unrecorded (later failures are debug events)"
            );
        }
    }

    fn scrub(&self, text: &str) -> String {
        scrub_text(text, &self.settings.secrets)
    }
}

/// One call's recording: started by [`Recorder::tape`] (or [`Tape::start`], as the call runner
/// does), fed the request and the body by the runner's send path, put around the events with
/// [`watch`](Self::watch). A failed write never changes the call: it is logged (a warning once
/// per recorder) and the call goes on unrecorded. Cheap to clone; [`Tape::off`] records nothing.
#[derive(Clone, Default)]
pub struct Tape {
    call: Option<Arc<Call>>,
}

impl fmt::Debug for Tape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.call {
            Some(call) => f.debug_tuple("Tape").field(&call.files.stem()).finish(),
            None => f.write_str("Tape(off)"),
        }
    }
}

struct Call {
    recorder: Recorder,
    model: String,
    files: CallFiles,
    time: SystemTime,
    state: Mutex<CallState>,
}

#[derive(Default)]
struct CallState {
    /// A write failed: nothing more is written for this call.
    dead: bool,
    /// The manifest line is written.
    written: bool,
    request: Option<String>,
    body: Option<(String, String)>,
    server: Option<String>,
    status: Option<u16>,
    request_id: Option<String>,
}

impl Tape {
    /// A tape that records nothing.
    pub fn off() -> Self {
        Self::default()
    }

    /// [`Recorder::tape`] when there is a recorder, else [`Tape::off`].
    pub fn start(recorder: Option<&Recorder>, model: &str) -> Self {
        recorder.map_or_else(Self::off, |recorder| recorder.tape(model))
    }

    /// Whether this tape records.
    pub fn is_on(&self) -> bool {
        self.call.is_some()
    }

    /// The body file of `response` while the tape records (`None` otherwise): what
    /// the runner's body stream writes every chunk to, secrets replaced.
    pub(crate) fn response_sink(&self, response: &reqwest::Response) -> Option<BodySink> {
        self.call.as_ref()?;
        let status = response.status();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let extension = patchbay_fixtures::body_extension(content_type.as_deref(), status.is_success());
        let format = format!(
            "response body as received (HTTP {}, {})",
            status.as_u16(),
            content_type.as_deref().unwrap_or("no content-type")
        );
        Some(self.body_sink(extension, &format))
    }

    /// A file for a body that is not an HTTP response (an agent runtime's stdout):
    /// `<dir>/<family>/<source>/<stem>.<extension>`, its `format` for the manifest. Created at
    /// once (an empty body is a file too); write with [`BodySink::write`].
    pub fn body_sink(&self, extension: &str, format: &str) -> BodySink {
        let Some(call) = &self.call else {
            return BodySink::default();
        };
        let recorder = &call.recorder;
        let relative = call.files.body(extension);
        let path = recorder.path(&relative);
        let Some(file) = call.create(&path, "a recorded body") else {
            return BodySink::default();
        };
        call.lock().body = Some((relative, format.to_string()));
        BodySink {
            file: Some(file),
            scrubber: Scrubber::new(&recorder.settings.secrets),
            call: Some(call.clone()),
            path,
        }
    }

    /// The call's events, unchanged, watched: when they end (`Finish`, an error, or the stream
    /// dropped early) the manifest line is written with the scenario they show
    /// ([`detect_scenario`]). Without a recording, `events` itself.
    pub fn watch(&self, events: EventStream) -> EventStream {
        match &self.call {
            Some(call) => Box::pin(Watch {
                inner: events,
                call: call.clone(),
                detector: Detector::new(),
                done: false,
            }),
            None => events,
        }
    }

    /// Records the request as it will be sent (see the crate docs for what is left out).
    pub(crate) fn request(&self, request: &reqwest::Request) {
        let Some(call) = &self.call else { return };
        let url = request.url();
        let server = match (url.host_str(), url.port()) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            (Some(host), None) => host.to_string(),
            (None, _) => String::new(),
        };
        call.lock().server = Some(server);
        let (headers, removed) = redact::headers(request.headers());
        let body = match request.body().and_then(reqwest::Body::as_bytes) {
            Some(bytes) => serde_json::from_slice::<Value>(bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned())),
            None => Value::Null,
        };
        let recorded = json!({
            "method": request.method().as_str(),
            "url": redact::url(url),
            "headers": headers,
            "removed_headers": removed,
            "body": body,
        });
        let text = call
            .recorder
            .scrub(&serde_json::to_string_pretty(&recorded).unwrap_or_default());
        let relative = call.files.request();
        let path = call.recorder.path(&relative);
        let Some(mut file) = call.create(&path, "a recorded request") else {
            return;
        };
        match file.write_all(text.as_bytes()).and_then(|()| file.write_all(b"\n")) {
            Ok(()) => call.lock().request = Some(relative),
            Err(error) => call.die("a recorded request", &path, &error),
        }
    }

    /// Notes the response's status and request id for the manifest.
    pub(crate) fn response(&self, response: &reqwest::Response) {
        if let Some(call) = &self.call {
            let mut state = call.lock();
            state.status = Some(response.status().as_u16());
            state.request_id = patchbay_core::kit::request_id(response.headers());
        }
    }

    /// The call failed before any event: the manifest line names the error.
    pub(crate) fn failed(&self, error: &ProviderError) {
        if let Some(call) = &self.call {
            call.finish(&detect_scenario([Err(error)]), None);
        }
    }
}

impl Call {
    fn lock(&self) -> MutexGuard<'_, CallState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new file (its folder created first), or `None` after logging why not.
    fn create(&self, path: &Path, what: &str) -> Option<File> {
        if self.lock().dead {
            return None;
        }
        let created = match path.parent() {
            Some(parent) => std::fs::create_dir_all(parent),
            None => Ok(()),
        }
        .and_then(|()| std::fs::OpenOptions::new().write(true).create_new(true).open(path));
        match created {
            Ok(file) => Some(file),
            Err(error) => {
                self.die(what, path, &error);
                None
            }
        }
    }

    fn die(&self, what: &str, path: &Path, error: &std::io::Error) {
        self.lock().dead = true;
        self.recorder.failed(what, path, error);
    }

    /// Writes the manifest line, once, if the body was recorded and nothing failed.
    fn finish(&self, scenario: &str, answered_model: Option<&str>) {
        let line = {
            let mut state = self.lock();
            let Some((body, format)) = state.body.clone() else {
                return;
            };
            if state.dead || state.written {
                return;
            }
            state.written = true;
            let settings = &self.recorder.settings;
            let mut notes = vec![
                format!("recorded {}", patchbay_fixtures::utc_time(self.time)),
                format!("requested model {}", self.model),
            ];
            notes.extend(state.status.map(|status| format!("HTTP {status}")));
            notes.extend(state.request_id.as_ref().map(|id| format!("request id {id}")));
            let server = state
                .server
                .clone()
                .or_else(|| settings.server.clone())
                .unwrap_or_default();
            let provenance = format!("recorded live by {}", settings.recorded_by);
            let entry = ManifestEntry {
                local_path: body,
                source_path: state.request.clone().unwrap_or_default(),
                scenario: scenario.to_string(),
                format,
                provenance,
                server,
                model: answered_model.unwrap_or(&self.model).to_string(),
                notes: notes.join("; "),
                ..ManifestEntry::default()
            };
            self.recorder.scrub(&entry.to_line())
        };
        let path = self.recorder.path(MANIFEST_FILE);
        let _serial = self
            .recorder
            .state
            .manifest
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Err(error) = patchbay_fixtures::append(&path, &line) {
            self.recorder.failed("the recording manifest", &path, &error);
        }
    }
}

/// The file a body is recorded into: bytes in as they arrive, secrets replaced, the held-back
/// tail written when it is dropped. A failed write stops the recording of this call (the
/// manifest line is left out). [`BodySink::default`] writes nothing.
#[derive(Default)]
pub struct BodySink {
    file: Option<File>,
    scrubber: Scrubber,
    call: Option<Arc<Call>>,
    path: PathBuf,
}

impl fmt::Debug for BodySink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BodySink")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl BodySink {
    /// Append bytes of the body.
    pub fn write(&mut self, bytes: &[u8]) {
        if self.file.is_some() {
            let safe = self.scrubber.push(bytes);
            write_body(&mut self.file, self.call.as_deref(), &self.path, &safe);
        }
    }
}

impl Drop for BodySink {
    fn drop(&mut self) {
        let tail = self.scrubber.finish();
        if !tail.is_empty() {
            write_body(&mut self.file, self.call.as_deref(), &self.path, &tail);
        }
    }
}

/// Writes to a body file; a failure closes it and stops the call's recording.
fn write_body(file: &mut Option<File>, call: Option<&Call>, path: &Path, bytes: &[u8]) {
    let Some(open) = file else { return };
    if let Err(error) = open.write_all(bytes) {
        *file = None;
        if let Some(call) = call {
            call.die("a recorded body", path, &error);
        }
    }
}

/// `body`, every chunk also written to `sink` (when there is one).
pub(crate) fn tee<S>(body: S, sink: Option<BodySink>) -> impl Stream<Item = S::Item> + Send + 'static
where
    S: Stream<Item = Result<Bytes, ProviderError>> + Send + 'static,
{
    Tee { inner: body, sink }
}

pin_project! {
    /// A body stream whose chunks are also written to a [`BodySink`].
    struct Tee<S> {
        #[pin]
        inner: S,
        sink: Option<BodySink>,
    }
}

impl<S: Stream<Item = Result<Bytes, ProviderError>>> Stream for Tee<S> {
    type Item = S::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        let item = ready!(this.inner.poll_next(cx));
        match &item {
            Some(Ok(chunk)) => {
                if let Some(sink) = this.sink {
                    sink.write(chunk);
                }
            }
            // The body ended: close the file (writes the held-back tail).
            None => drop(this.sink.take()),
            Some(Err(_)) => {}
        }
        Poll::Ready(item)
    }
}

/// A call's events, passed on unchanged, fed to a [`Detector`]; the manifest line is written
/// at their end or when the stream is dropped.
struct Watch {
    inner: EventStream,
    call: Arc<Call>,
    detector: Detector,
    done: bool,
}

impl Watch {
    fn end(&mut self) {
        if !self.done {
            self.done = true;
            self.call.finish(&self.detector.scenario(), self.detector.model());
        }
    }
}

impl Stream for Watch {
    type Item = Result<Event, ProviderError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let item = ready!(self.inner.as_mut().poll_next(cx));
        match &item {
            Some(Ok(event)) => {
                self.detector.event(event);
                if self.detector.ended() {
                    self.end();
                }
            }
            Some(Err(error)) => {
                self.detector.error(error);
                self.end();
            }
            None => self.end(),
        }
        Poll::Ready(item)
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.end();
    }
}
