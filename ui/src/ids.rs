//! Message ids.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A new message id, `msg-` and 32 hex digits: unique within the process (a counter) and
/// unpredictable across processes (hashed with the standard library's random keys and the
/// time). Not a security token.
///
/// ```
/// let (a, b) = (patchbay_ui::generate_message_id(), patchbay_ui::generate_message_id());
/// assert!(a.starts_with("msg-") && a.len() == 36 && a != b);
/// ```
pub fn generate_message_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let hash = |salt: u64| {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u64(salt);
        hasher.write_u64(count);
        hasher.write_u128(nanos);
        hasher.finish()
    };
    format!("msg-{:016x}{:016x}", hash(0), hash(1))
}
