//! Usage as runs spend it: each step's tokens stored on the run's job and session
//! ([`UsageMeter`]), and the token budget of a session tree (`max_tree_tokens`, see
//! [`crate::limits`]) checked after every step of a run (and, through [`tree_budget`], by the
//! guards before every start and resume).

use patchbay::{Event, Signal};

use crate::runtime::Inner;
use crate::store::{StoreError, UsageTotals};

/// A tree's budget and what it spent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TreeBudget {
    /// The tree's root session.
    pub(crate) root: String,
    /// Tokens spent by every session of the tree.
    pub(crate) spent: u64,
    /// The budget (`max_tree_tokens` of the root's blueprint, else the orchestrator's).
    pub(crate) max: u64,
}

impl TreeBudget {
    /// Whether the tree spent its budget.
    pub(crate) fn is_spent(&self) -> bool {
        self.spent >= self.max
    }

    /// Why a start, resume or run in the tree is refused or ended.
    pub(crate) fn message(&self) -> String {
        format!(
            "token budget spent: the session tree of `{}` used {} of its {} tokens (max_tree_tokens)",
            self.root, self.spent, self.max
        )
    }
}

/// The budget of the tree of session `session_name` (`None`: no budget applies, or no such
/// session).
pub(crate) async fn tree_budget(inner: &Inner, session_name: &str) -> Result<Option<TreeBudget>, StoreError> {
    if inner.limits.max_tree_tokens.is_none() && !inner.blueprints.all().any(|b| b.limits.max_tree_tokens.is_some()) {
        return Ok(None);
    }
    let tree = inner.store.tree_usage(session_name).await?;
    let Some(root) = tree.root_session_name else {
        return Ok(None);
    };
    let limits = match inner.store.get_session_by_name(&root).await? {
        Some(session) => inner
            .blueprints
            .get(&session.agent_name)
            .map_or(inner.limits, |b| b.limits.over(&inner.limits)),
        None => inner.limits,
    };
    Ok(limits.max_tree_tokens.map(|max| TreeBudget {
        root,
        spent: tree.usage.total_tokens(),
        max,
    }))
}

/// Follows a run's events and stores its usage on its job (and session) at the end of each
/// step, then checks the tree's budget: a spent budget cancels the run.
pub(crate) struct UsageMeter {
    /// Stored so far.
    recorded: UsageTotals,
    /// The current step's cumulative usage (from `Usage` events), not stored yet.
    step: UsageTotals,
    /// Why the meter cancelled the run.
    pub(crate) spent: Option<String>,
}

impl UsageMeter {
    /// A meter with nothing recorded.
    pub(crate) fn new() -> Self {
        Self {
            recorded: UsageTotals::default(),
            step: UsageTotals::default(),
            spent: None,
        }
    }

    /// What `event` adds to store now: a step's usage when it ends, the rest of the run's
    /// total at its finish.
    fn delta(&mut self, event: &Event) -> Option<UsageTotals> {
        let delta = match event {
            Event::Usage(usage) => {
                self.step = UsageTotals::from(usage);
                return None;
            }
            Event::StepFinished { usage, .. } => UsageTotals::from(usage),
            Event::Finish { usage, .. } => UsageTotals::from(usage).since(&self.recorded),
            _ => return None,
        };
        self.step = UsageTotals::default();
        self.recorded.add(&delta);
        Some(delta).filter(|d| !d.is_empty())
    }

    /// Notes `event` of job `job_id` (of session `session_name`); stores what it spent and
    /// cancels `signal` when the tree's budget is spent.
    pub(crate) async fn note(
        &mut self,
        inner: &Inner,
        job_id: &str,
        session_name: &str,
        event: &Event,
        signal: &Signal,
    ) {
        let Some(delta) = self.delta(event) else {
            return;
        };
        self.store(inner, job_id, &delta).await;
        if self.spent.is_some() || matches!(event, Event::Finish { .. }) {
            return;
        }
        match tree_budget(inner, session_name).await {
            Ok(Some(budget)) if budget.is_spent() => {
                tracing::warn!(session = %session_name, root = %budget.root, "token budget spent: cancelling the run");
                self.spent = Some(budget.message());
                signal.cancel();
            }
            Ok(_) => {}
            Err(error) => tracing::error!(%error, session = %session_name, "cannot read the tree's usage"),
        }
    }

    /// At the run's end without a finish (an error, a cancel): stores the unfinished step's
    /// usage.
    pub(crate) async fn close(&mut self, inner: &Inner, job_id: &str) {
        let rest = std::mem::take(&mut self.step);
        if !rest.is_empty() {
            self.recorded.add(&rest);
            self.store(inner, job_id, &rest).await;
        }
    }

    async fn store(&self, inner: &Inner, job_id: &str, delta: &UsageTotals) {
        if let Err(error) = inner.store.add_usage(job_id, delta).await {
            tracing::error!(%error, job = %job_id, "cannot store the run's usage");
        }
    }
}
