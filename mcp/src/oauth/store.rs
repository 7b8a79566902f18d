//! Where tokens live between runs: the [`TokenStore`] a host provides, an in-memory and a file
//! store, and the adapter that hands one server's slice of a store to rmcp.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};

use crate::oauth::error::OAuthError;

/// Where a host keeps each server's OAuth credentials (client id, access and refresh tokens,
/// granted scopes), keyed by the server's URL. Implement it over a keychain or a database; an
/// in-memory ([`MemoryTokenStore`]) and a file store ([`FileTokenStore`]) ship.
///
/// [`StoredCredentials`]' `Debug` never shows a token; an implementation must not log one
/// either.
#[async_trait]
pub trait TokenStore: Send + Sync + 'static {
    /// The credentials saved for `server` (its URL), if any.
    async fn load(&self, server: &str) -> Result<Option<StoredCredentials>, OAuthError>;
    /// Save `credentials` for `server`, replacing what was there.
    async fn save(&self, server: &str, credentials: StoredCredentials) -> Result<(), OAuthError>;
    /// Forget `server`'s credentials.
    async fn clear(&self, server: &str) -> Result<(), OAuthError>;
}

/// Tokens in memory, gone when the process ends (the default). Clones share the tokens.
#[derive(Clone, Default)]
pub struct MemoryTokenStore {
    entries: Arc<Mutex<HashMap<String, StoredCredentials>>>,
}

impl MemoryTokenStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<String, StoredCredentials>> {
        self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl fmt::Debug for MemoryTokenStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let servers: Vec<String> = self.entries().keys().cloned().collect();
        f.debug_struct("MemoryTokenStore").field("servers", &servers).finish()
    }
}

#[async_trait]
impl TokenStore for MemoryTokenStore {
    async fn load(&self, server: &str) -> Result<Option<StoredCredentials>, OAuthError> {
        Ok(self.entries().get(server).cloned())
    }

    async fn save(&self, server: &str, credentials: StoredCredentials) -> Result<(), OAuthError> {
        self.entries().insert(server.to_owned(), credentials);
        Ok(())
    }

    async fn clear(&self, server: &str) -> Result<(), OAuthError> {
        self.entries().remove(server);
        Ok(())
    }
}

/// Tokens in one JSON file, an object from server URL to credentials. Every save writes a new
/// file readable by its owner only (mode `0600`) beside the old one and renames it over it, so
/// a crash never leaves half a file. Saves within the process are serialized; two processes
/// saving at once may lose one's update (the loser authorizes again).
#[derive(Clone)]
pub struct FileTokenStore {
    path: Arc<PathBuf>,
    lock: Arc<tokio::sync::Mutex<()>>,
}

impl fmt::Debug for FileTokenStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileTokenStore").field("path", &self.path).finish()
    }
}

type Entries = BTreeMap<String, StoredCredentials>;

impl FileTokenStore {
    /// A store in `path` (created on the first save, with its folder).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: Arc::new(path.into()),
            lock: Arc::default(),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    async fn read(&self) -> Result<Entries, OAuthError> {
        let path = self.path.clone();
        blocking(move || read_entries(&path)).await
    }

    async fn update(&self, change: impl FnOnce(&mut Entries) + Send + 'static) -> Result<(), OAuthError> {
        let _guard = self.lock.lock().await;
        let path = self.path.clone();
        blocking(move || {
            let mut entries = read_entries(&path)?;
            change(&mut entries);
            write_entries(&path, &entries)
        })
        .await
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, OAuthError> + Send + 'static,
) -> Result<T, OAuthError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| OAuthError::store("the file task failed", error))?
}

fn read_entries(path: &Path) -> Result<Entries, OAuthError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Entries::new()),
        Err(error) => return Err(OAuthError::store(format!("cannot read {}", path.display()), error)),
    };
    warn_if_readable_by_others(path);
    // Only the position of a parse error: serde's message may quote a value (a token).
    serde_json::from_slice(&bytes).map_err(|error| OAuthError::Store {
        message: format!(
            "{} is not a token file (line {}, column {})",
            path.display(),
            error.line(),
            error.column()
        ),
        source: None,
    })
}

#[cfg(unix)]
fn warn_if_readable_by_others(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(metadata) = std::fs::metadata(path)
        && metadata.permissions().mode() & 0o077 != 0
    {
        tracing::warn!(path = %path.display(), "the token file is readable by others; the next save makes it 0600");
    }
}

#[cfg(not(unix))]
fn warn_if_readable_by_others(_path: &Path) {}

fn write_entries(path: &Path, entries: &Entries) -> Result<(), OAuthError> {
    let folder = match path.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(folder)
        .map_err(|error| OAuthError::store(format!("cannot create {}", folder.display()), error))?;
    let name = path.file_name().and_then(|name| name.to_str()).unwrap_or("tokens");
    let temporary = folder.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4()));
    let bytes = serde_json::to_vec_pretty(entries).map_err(|error| OAuthError::store("cannot encode tokens", error))?;
    let written = write_private(&temporary, &bytes).and_then(|()| std::fs::rename(&temporary, path));
    written.map_err(|error| {
        let _ = std::fs::remove_file(&temporary);
        OAuthError::store(format!("cannot write {}", path.display()), error)
    })
}

/// Write a new file only its owner can read, and flush it to disk.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[async_trait]
impl TokenStore for FileTokenStore {
    async fn load(&self, server: &str) -> Result<Option<StoredCredentials>, OAuthError> {
        Ok(self.read().await?.remove(server))
    }

    async fn save(&self, server: &str, credentials: StoredCredentials) -> Result<(), OAuthError> {
        let server = server.to_owned();
        self.update(move |entries| {
            entries.insert(server, credentials);
        })
        .await
    }

    async fn clear(&self, server: &str) -> Result<(), OAuthError> {
        let server = server.to_owned();
        self.update(move |entries| {
            entries.remove(&server);
        })
        .await
    }
}

/// One server's slice of a [`TokenStore`], as rmcp's [`CredentialStore`].
#[derive(Clone)]
pub(crate) struct ServerStore {
    pub(crate) store: Arc<dyn TokenStore>,
    pub(crate) server: String,
}

fn to_auth_error(error: OAuthError) -> AuthError {
    // rmcp's error keeps a message only; it names what failed, never a credential.
    let mut message = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    AuthError::CredentialStoreError(message)
}

#[async_trait]
impl CredentialStore for ServerStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.store.load(&self.server).await.map_err(to_auth_error)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.store.save(&self.server, credentials).await.map_err(to_auth_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.store.clear(&self.server).await.map_err(to_auth_error)
    }
}
