//! Scoped tokens: the credential a run gets for this orchestrator's MCP endpoint. It reaches
//! the run's own session and the sessions below it (its children, theirs, and so on), never
//! a sibling, a parent or the whole store; the listener's bearer token (the admin token) keeps
//! everything.
//!
//! | With a scoped token for session S | |
//! |---|---|
//! | `start_agent_session` | starts a child of S (the caller is S) |
//! | `resume_agent_session`, `get_agent_session_status`, `get_agent_session_result`, `get_agent_session_events`, `cancel_agent_session` | only for S and the sessions below it; any other session is "not found" (`not_existent` for the status) |
//! | `list_agent_sessions` | S and the sessions below it, filters applied within them |
//! | `list_agent_blueprints` | all of them, as with the admin token |
//! | `delete_all_agent_sessions` | refused (`out_of_scope`) |
//! | the JSON API | `403` (`{"error": {"code": "forbidden", ...}}`) |
//! | the web view | not opened (`401`, as without a credential); `/login` does not take it |
//!
//! # Decisions
//! - **A token is a MAC, not a stored secret**: `pbs1.<session id>.<session name>.<mac>`, the
//!   MAC being HMAC-SHA256 under a key of the listener, over the session's id and name. It is
//!   checked without the store (no table, nothing to clean up when a session goes), in
//!   constant time.
//! - **The key is per process**: random (244 bits) when the listener starts, kept in memory
//!   only. Every process that runs jobs (`serve`, `mcp`, and each `worker` on a shared
//!   PostgreSQL store) serves its own loopback endpoint, and a run's MCP configuration names
//!   the endpoint of the process running it, so a token is always checked by the process that
//!   issued it: there is no secret to share between processes, hence none to configure or to
//!   leak. A token dies with its process, as the runs holding it do; until then it outlives
//!   the run it was made for (every run of a session gets the same token), which keeps the
//!   check free of store reads: what S's token reaches is S's own subtree, which S's runs
//!   reach anyway.
//! - **Bound to the session's id as well as its name**: a session deleted and started again
//!   under the same name is another session, and the old token reaches nothing (its calls
//!   answer `out_of_scope`: the token's own session is gone).
//! - **The holder is its session**: the token makes the caller S whatever
//!   `X-Agent-Session-Name` (or an `x-patchbay-meta-*` header) says. A different header value
//!   is ignored, not refused: the run's own MCP client sends its name anyway, and an error
//!   would tell a forger nothing it could use (see [`patchbay::mcp::Grant`]).
//! - **Outside the scope reads as "not found"**, the answer for a session that does not exist
//!   (`session_not_found`, or the status `not_existent`): telling a run "outside your scope"
//!   would tell it that a sibling of that name exists. Two things still show that a name is
//!   taken: starting a session under a name in use anywhere (names are unique in the whole
//!   store), and S's own listing entry names S's parent.
//! - **Below S is read from the parent links as they are now**: a resume by another caller
//!   makes it the parent (see the crate docs), so a session that the admin moves under another
//!   parent leaves S's scope, and one S resumes comes under S.

use std::collections::BTreeMap;
use std::sync::Arc;

use hmac::digest::KeyInit;
use hmac::{Hmac, Mac};
use patchbay::mcp::{Authorizer, Grant};
use sha2::Sha256;

use crate::caller::CALLER_METADATA_KEY;
use crate::store::Session;

/// The metadata key of a tool call made with a scoped token: the id of the token's session.
/// Only the token's [`Grant`] sets it (over anything a request's headers say).
pub const SCOPE_METADATA_KEY: &str = "agent_scope_session_id";

/// What every scoped token starts with (and its format's version).
const PREFIX: &str = "pbs1.";
/// What the MAC is about, so it can never be mistaken for another use of the key.
const PURPOSE: &[u8] = b"patchbay-orchestrator scoped token v1";

type HmacSha256 = Hmac<Sha256>;

/// The session a scoped token reaches (with everything below it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// The session's id (a session of the same name started later is another one).
    pub session_id: String,
    /// The session's name.
    pub session_name: String,
}

impl Scope {
    /// The scope a tool call's metadata carries (set by a scoped token's grant only).
    pub(crate) fn of(metadata: &BTreeMap<String, String>) -> Option<Self> {
        Some(Self {
            session_id: metadata.get(SCOPE_METADATA_KEY)?.clone(),
            session_name: metadata.get(CALLER_METADATA_KEY).cloned().unwrap_or_default(),
        })
    }
}

/// Issues and checks the scoped tokens of one listener (see the [module docs](self)). Cheap to
/// clone; its `Debug` shows no key.
#[derive(Clone)]
pub struct ScopedTokens {
    key: Arc<[u8; 64]>,
}

impl std::fmt::Debug for ScopedTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScopedTokens").finish_non_exhaustive()
    }
}

impl Default for ScopedTokens {
    fn default() -> Self {
        Self::new()
    }
}

impl ScopedTokens {
    /// Tokens under a fresh random key (244 random bits from the OS).
    pub fn new() -> Self {
        let secret = crate::secret::fresh_secret();
        let mut key = [0u8; 64];
        for (slot, byte) in key.iter_mut().zip(secret.bytes()) {
            *slot = byte;
        }
        Self { key: Arc::new(key) }
    }

    fn mac(&self, session_id: &str, session_name: &str) -> HmacSha256 {
        let mut mac = <HmacSha256 as KeyInit>::new(self.key.as_ref().into());
        for part in [PURPOSE, session_id.as_bytes(), session_name.as_bytes()] {
            // Length-prefixed: no two (id, name) pairs sign the same bytes.
            mac.update(&(part.len() as u64).to_be_bytes());
            mac.update(part);
        }
        mac
    }

    /// The token of `session` (a secret: hand it to the session's run, never log it).
    pub fn issue(&self, session: &Session) -> String {
        self.token(&session.session_id, &session.session_name)
    }

    fn token(&self, session_id: &str, session_name: &str) -> String {
        let tag = self.mac(session_id, session_name).finalize().into_bytes();
        let hex: String = tag.iter().map(|b| format!("{b:02x}")).collect();
        format!("{PREFIX}{session_id}.{session_name}.{hex}")
    }

    /// The scope of `token` when these tokens issued it.
    pub fn check(&self, token: &str) -> Option<Scope> {
        let (payload, hex) = token.strip_prefix(PREFIX)?.rsplit_once('.')?;
        let (session_id, session_name) = payload.split_once('.')?;
        let tag = decode_hex(hex)?;
        self.mac(session_id, session_name).verify_slice(&tag).ok()?;
        Some(Scope {
            session_id: session_id.to_owned(),
            session_name: session_name.to_owned(),
        })
    }

    /// The grant of a request carrying `Authorization: Bearer <scoped token>`: the caller is
    /// the token's session, and its scope is that session.
    pub fn grant(&self, parts: &http::request::Parts) -> Option<Grant> {
        let value = parts.headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
        let scope = self.check(value.strip_prefix("Bearer ")?)?;
        Some(
            Grant::new()
                .with_metadata(CALLER_METADATA_KEY, scope.session_name)
                .with_metadata(SCOPE_METADATA_KEY, scope.session_id),
        )
    }

    /// The listener's authorizer: a scoped token, else `other` (the web view's cookie).
    pub(crate) fn authorizer_or(&self, other: Authorizer) -> Authorizer {
        let tokens = self.clone();
        Arc::new(move |parts| tokens.grant(parts).or_else(|| other(parts)))
    }
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) || !hex.is_ascii() {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
        .collect()
}

/// Whether a request was let in by a scoped token (its grant names a scope).
pub(crate) fn is_scoped(extensions: &http::Extensions) -> bool {
    extensions
        .get::<Grant>()
        .is_some_and(|grant| grant.metadata().contains_key(SCOPE_METADATA_KEY))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_names_its_session_and_nothing_else_checks() {
        let tokens = ScopedTokens::new();
        let token = tokens.token("id-1", "alpha");
        let scope = tokens.check(&token).expect("its own token");
        assert_eq!(
            scope,
            Scope {
                session_id: "id-1".into(),
                session_name: "alpha".into()
            }
        );
        // Another key, another name, another id, a cut or changed tag: nothing.
        assert_eq!(ScopedTokens::new().check(&token), None);
        assert_eq!(tokens.check(&token.replacen("alpha", "beta", 1)), None);
        assert_eq!(tokens.check(&token.replacen("id-1", "id-2", 1)), None);
        assert_eq!(tokens.check(&token[..token.len() - 2]), None);
        let flipped = format!(
            "{}{}",
            &token[..token.len() - 1],
            if token.ends_with('0') { '1' } else { '0' }
        );
        assert_eq!(tokens.check(&flipped), None);
        assert_eq!(tokens.check("pbs1.id-1.alpha.zz"), None);
        assert_eq!(tokens.check(""), None);
        assert!(!format!("{tokens:?}").contains(&token[token.len() - 64..]));
    }
}
