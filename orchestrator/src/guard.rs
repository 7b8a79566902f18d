//! The checks every start and resume passes, whether it came over MCP or the JSON API: the
//! calling session (a valid name of a session that exists), callbacks (only to such a
//! session), cycles in the parent chain, the projects root, the limits on children and the
//! tree's token budget (see [`crate::limits`]), and, for a call made with a scoped token, the
//! token's subtree (see [`crate::scope`]).
//!
//! # Decisions
//! - **The caller must be a session here.** `X-Agent-Session-Name` (MCP over HTTP),
//!   `AGENT_SESSION_NAME` (stdio) and the API's `parent_session_name` are one claim, checked
//!   once: a name breaking the session-name rule is `invalid_name`, a name of no session here
//!   is `caller_not_found`. A child is never linked to nothing.
//! - **`callback: true` without such a caller is refused** (`no_callback_target`), instead of
//!   being accepted with nobody to call back: the caller learns at once that no callback will
//!   come, and polls instead.
//! - **No cycles.** A session cannot resume itself (a sync self-resume would wait for its own
//!   run until the sync limit), and a resume from a caller whose parent chain contains the
//!   session (it would become its own ancestor) is refused (`cycle`).
//! - **Projects root.** Every `project_dir` (given, inherited from the parent, or a stored
//!   session's at resume) is resolved, symlinks included, and refused (`outside_projects_root`)
//!   unless it is the root or inside it. The root defaults to the orchestrator's folder.

use std::path::{Path, PathBuf};

use crate::budget::tree_budget;
use crate::error::OrchestratorError;
use crate::names::validate_session_name;
use crate::scope::Scope;
use crate::service::Orchestrator;
use crate::store::Session;

/// The longest parent chain walked when looking for a cycle (a chain in the store longer than
/// this is treated as a cycle).
pub(crate) const MAX_CHAIN: usize = 1000;

impl Orchestrator {
    /// The calling session: `None` without a caller; an error for a caller name that breaks
    /// the rule or names no session here.
    pub(crate) async fn caller_session(&self, caller: Option<&str>) -> Result<Option<Session>, OrchestratorError> {
        let Some(name) = caller else {
            return Ok(None);
        };
        validate_session_name(name).map_err(|e| {
            OrchestratorError::Invalid(format!(
                "the calling session's name (X-Agent-Session-Name, AGENT_SESSION_NAME or parent_session_name) is \
                 invalid: {e}"
            ))
        })?;
        match self.inner.store.get_session_by_name(name).await? {
            Some(session) => Ok(Some(session)),
            None => Err(OrchestratorError::UnknownCaller(name.to_owned())),
        }
    }

    /// Refuses a resume of `session` by `caller` that would make `session` its own parent or
    /// ancestor (or have it wait for itself).
    pub(crate) async fn refuse_cycle(&self, session: &str, caller: &Session) -> Result<(), OrchestratorError> {
        if caller.session_name == session {
            return Err(OrchestratorError::Cycle(format!(
                "session `{session}` cannot resume itself: its own run would wait for itself (a sync resume \
                 blocks until the sync limit) and it would become its own parent; answer in this run instead"
            )));
        }
        let mut chain = vec![caller.session_name.clone()];
        let mut next = caller.parent_session_name.clone();
        while let Some(name) = next {
            chain.push(name.clone());
            if name == session || chain.len() > MAX_CHAIN {
                return Err(OrchestratorError::Cycle(format!(
                    "session `{session}` is an ancestor of the caller (`{}`): resuming it from there would make it \
                     its own ancestor; end this run and let the result reach it (a callback) instead",
                    chain.join("` <- `")
                )));
            }
            next = self.parent_of(&name).await?;
        }
        Ok(())
    }

    /// Refuses a start by `parent` past the limits of the parent's blueprint (or the
    /// orchestrator's): the depth of the chain, the parent's children in all and at once.
    pub(crate) async fn check_child_limits(&self, parent: &Session) -> Result<(), OrchestratorError> {
        let limits = self
            .inner
            .blueprints
            .get(&parent.agent_name)
            .map_or(self.inner.limits, |b| b.limits.over(&self.inner.limits));
        // The parent's depth: itself and its ancestors.
        let mut depth: u32 = 1;
        let mut next = parent.parent_session_name.clone();
        while let Some(name) = next {
            depth += 1;
            if depth > limits.max_depth || depth as usize > MAX_CHAIN {
                break;
            }
            next = self.parent_of(&name).await?;
        }
        if depth + 1 > limits.max_depth {
            return Err(OrchestratorError::LimitReached(format!(
                "session `{}` is {depth} deep: a child would pass the depth limit of {} (max_depth); do the work \
                 in this run or return to the parent",
                parent.session_name, limits.max_depth
            )));
        }
        let (all, open) = self.inner.store.children(&parent.session_name).await?;
        if all >= u64::from(limits.max_children) {
            return Err(OrchestratorError::LimitReached(format!(
                "session `{}` has started {all} children, the limit (max_children): resume one of them instead",
                parent.session_name
            )));
        }
        if open >= u64::from(limits.max_running_children) {
            return Err(OrchestratorError::LimitReached(format!(
                "session `{}` has {open} children pending or running, the limit at once (max_running_children): \
                 wait for one with get_agent_session_status and wait_seconds",
                parent.session_name
            )));
        }
        Ok(())
    }

    /// The parent of the session `name` (`None`: no parent, or no such session).
    pub(crate) async fn parent_of(&self, name: &str) -> Result<Option<String>, OrchestratorError> {
        let session = self.inner.store.get_session_by_name(name).await?;
        Ok(session.and_then(|s| s.parent_session_name))
    }

    /// `dir` resolved (symlinks too) when it is a folder inside the projects root; relative
    /// folders are read under the orchestrator's own folder.
    pub fn confine(&self, dir: &Path) -> Result<PathBuf, OrchestratorError> {
        let dir = self.inner.project_dir.join(dir);
        let resolved = match std::fs::canonicalize(&dir) {
            Ok(resolved) if resolved.is_dir() => resolved,
            Ok(_) => {
                return Err(OrchestratorError::Invalid(format!(
                    "project_dir `{}` is not a directory",
                    dir.display()
                )));
            }
            Err(e) => {
                return Err(OrchestratorError::Invalid(format!(
                    "project_dir `{}`: {e}",
                    dir.display()
                )));
            }
        };
        if !resolved.starts_with(&self.inner.projects_root) {
            return Err(OrchestratorError::OutsideRoot {
                dir: resolved.display().to_string(),
                root: self.inner.projects_root.display().to_string(),
            });
        }
        Ok(resolved)
    }

    /// The projects root every session's folder is inside.
    pub fn projects_root(&self) -> &Path {
        &self.inner.projects_root
    }
}

impl Orchestrator {
    /// Refuses a start or resume in the tree of `session_name` once that tree spent its budget.
    pub(crate) async fn check_tree_budget(&self, session_name: &str) -> Result<(), OrchestratorError> {
        match tree_budget(&self.inner, session_name).await? {
            Some(budget) if budget.is_spent() => Err(OrchestratorError::LimitReached(budget.message())),
            _ => Ok(()),
        }
    }
}

impl Orchestrator {
    /// The session of `scope`, while it is the one the token was issued for; `out_of_scope`
    /// once it was deleted (even when a session of its name was started since).
    pub(crate) async fn scope_session(&self, scope: &Scope) -> Result<Session, OrchestratorError> {
        match self.inner.store.get_session(&scope.session_id).await? {
            Some(session) if session.session_name == scope.session_name => Ok(session),
            _ => Err(OrchestratorError::OutOfScope(format!(
                "this token belongs to the session `{}`, which no longer exists: it reaches no session now",
                scope.session_name
            ))),
        }
    }

    /// Refuses a call of `scope` naming the session `name` unless `name` is the scope's
    /// session or below it, as [`OrchestratorError::SessionNotFound`] (the answer for a
    /// session that does not exist). Without a scope, any session.
    pub(crate) async fn check_scope(&self, scope: Option<&Scope>, name: &str) -> Result<(), OrchestratorError> {
        let Some(scope) = scope else {
            return Ok(());
        };
        self.scope_session(scope).await?;
        let mut next = Some(name.to_owned());
        let mut steps = 0;
        while let Some(current) = next {
            if current == scope.session_name {
                return Ok(());
            }
            steps += 1;
            if steps > MAX_CHAIN {
                break;
            }
            next = self.parent_of(&current).await?;
        }
        Err(OrchestratorError::SessionNotFound(name.to_owned()))
    }
}
