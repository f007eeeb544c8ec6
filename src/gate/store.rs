//! What processes sharing one credential would share about a key: until when the server closed
//! it, and the quota it last reported. Waiting calls and requests in flight stay in each
//! process (they are local by nature); this is the part a shared store holds.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use super::quota::{Quota, fold};
use super::report::Report;
use super::time::Anchor;
use crate::key::Key;

/// What the server said about a key's window, in wall-clock time so that it means the same in
/// every process.
///
/// # Example
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use tower_retry_after::Window;
///
/// let now = SystemTime::now();
/// let closed = Window { closed_until: Some(now + Duration::from_secs(10)), quota: None };
/// let shorter = Window { closed_until: Some(now + Duration::from_secs(2)), quota: None };
/// assert_eq!(closed.merged(shorter, now), closed, "a closure is never brought forward");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Window {
    /// No request before this time.
    pub closed_until: Option<SystemTime>,
    /// The quota left, and when its window resets.
    pub quota: Option<(u64, SystemTime)>,
}

impl Window {
    /// This window with `other` folded in, as of `now`: the later closure, and the quota by the
    /// gates' own rule (within one window the lowest count; a report of another window does
    /// not borrow its reset, nor lift a spent window before its reset).
    pub fn merged(self, other: Window, now: SystemTime) -> Window {
        let current = |quota: Option<(u64, SystemTime)>| {
            quota
                .filter(|(_, reset)| *reset > now)
                .map(|(remaining, reset_at)| Quota {
                    remaining,
                    reset_at,
                })
        };
        let quota = match (current(self.quota), current(other.quota)) {
            (Some(known), Some(reported)) => fold(known, reported, false).or(Some(known)),
            (known, None) => known,
            (None, reported) => reported,
        };
        Window {
            closed_until: self.closed_until.max(other.closed_until),
            quota: quota.map(|quota| (quota.remaining, quota.reset_at)),
        }
    }

    /// Whether the window still says anything at `now`.
    pub fn is_current(&self, now: SystemTime) -> bool {
        self.closed_until.is_some_and(|until| until > now)
            || self.quota.is_some_and(|(_, reset)| reset > now)
    }

    /// What a response said, on the wall clock, to share.
    pub(super) fn from_report(report: Report, clocks: &Anchor) -> Window {
        Window {
            closed_until: report.closed_until.map(|at| clocks.wall(at)),
            quota: report
                .quota
                .map(|quota| (quota.remaining, clocks.wall(quota.reset_at))),
        }
    }

    /// This window on this process's clock, as a report to take in.
    pub(super) fn to_report(self, clocks: &Anchor) -> Report {
        Report {
            refused: false,
            closed_until: self.closed_until.map(|at| clocks.instant(at)),
            instructed_until: None,
            limit: None,
            server_clock: None,
            quota: self.quota.map(|(remaining, reset)| Quota {
                remaining,
                reset_at: clocks.instant(reset),
            }),
            pace: None,
        }
    }
}

/// Where the gates share what the server said about each key with other processes that use
/// the same credential, so that a 429 one of them meets holds all of them.
///
/// [`MemoryStore`] is the implementation in this crate: it shares windows between the `Gates`
/// of one process. A store on a shared engine (Redis, say) implements the same two operations
/// against it.
///
/// # Example
///
/// ```
/// use tower_retry_after::{Gates, MemoryStore, RateLimitLayer};
///
/// // Two sets of gates, as two processes would have, sharing one store.
/// let store = std::sync::Arc::new(MemoryStore::new());
/// let first = RateLimitLayer::new().gates(Gates::with_store(store.clone()));
/// let second = RateLimitLayer::new().gates(Gates::with_store(store));
/// # let _ = (first, second);
/// ```
pub trait WindowStore: Send + Sync + 'static {
    /// What is known about `key`'s window; `None` if nothing is current.
    fn load(&self, key: &Key) -> Option<Window>;

    /// Folds `window` into what is known about `key`, as [`Window::merged`] does.
    fn merge(&self, key: &Key, window: Window);
}

impl<S: WindowStore + ?Sized> WindowStore for std::sync::Arc<S> {
    fn load(&self, key: &Key) -> Option<Window> {
        (**self).load(key)
    }

    fn merge(&self, key: &Key, window: Window) {
        (**self).merge(key, window);
    }
}

/// A [`WindowStore`] in this process's memory, bounded like the gates: it keeps at most its
/// capacity of keys, forgetting windows that are over first.
#[derive(Debug)]
pub struct MemoryStore {
    windows: Mutex<HashMap<Key, Window>>,
    capacity: usize,
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::with_capacity(10_000)
    }
}

impl MemoryStore {
    /// An empty store keeping at most 10,000 keys.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store keeping at most `capacity` keys (at least 1).
    pub fn with_capacity(capacity: usize) -> Self {
        MemoryStore {
            windows: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
        }
    }
}

impl WindowStore for MemoryStore {
    fn load(&self, key: &Key) -> Option<Window> {
        let now = SystemTime::now();
        let windows = self.windows.lock().unwrap_or_else(PoisonError::into_inner);
        windows
            .get(key)
            .copied()
            .filter(|window| window.is_current(now))
    }

    fn merge(&self, key: &Key, window: Window) {
        let now = SystemTime::now();
        let mut windows = self.windows.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(known) = windows.get_mut(key) {
            *known = known.merged(window, now);
            return;
        }
        if windows.len() >= self.capacity {
            windows.retain(|_, window| window.is_current(now));
        }
        if windows.len() < self.capacity {
            windows.insert(key.clone(), Window::default().merged(window, now));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const SECOND: Duration = Duration::from_secs(1);

    fn quota(remaining: u64, reset: SystemTime) -> Window {
        Window {
            closed_until: None,
            quota: Some((remaining, reset)),
        }
    }

    #[test]
    fn merging_keeps_the_later_closure_and_the_lower_count() {
        let now = SystemTime::now();
        let window = quota(5, now + 10 * SECOND).merged(quota(7, now + 10 * SECOND), now);
        assert_eq!(window.quota, Some((5, now + 10 * SECOND)));
        let closed = Window {
            closed_until: Some(now + SECOND),
            quota: None,
        };
        assert_eq!(
            window.merged(closed, now).quota,
            window.quota,
            "absence erases nothing"
        );
        assert_eq!(window.merged(closed, now).closed_until, Some(now + SECOND));
    }

    #[test]
    fn a_new_quota_window_replaces_one_that_is_over() {
        let now = SystemTime::now();
        let over = quota(0, now - SECOND);
        assert_eq!(
            over.merged(quota(9, now + SECOND), now).quota,
            Some((9, now + SECOND))
        );
        assert!(!over.is_current(now));
    }

    #[test]
    fn the_memory_store_shares_windows_and_stays_bounded() {
        let store = MemoryStore::with_capacity(2);
        let now = SystemTime::now();
        let current = quota(1, now + 60 * SECOND);
        for name in ["a", "b", "c"] {
            store.merge(&Key::named(name), current);
        }
        assert_eq!(store.load(&Key::named("a")), Some(current));
        assert_eq!(
            store.load(&Key::named("c")),
            None,
            "full of current windows"
        );
        store.merge(&Key::named("a"), quota(0, now + 60 * SECOND));
        assert_eq!(store.load(&Key::named("a")).unwrap().quota.unwrap().0, 0);
    }

    #[test]
    fn a_window_is_over_at_the_instant_it_names() {
        let now = SystemTime::now();
        let closed = Window {
            closed_until: Some(now),
            quota: None,
        };
        assert!(!closed.is_current(now));
        assert!(!quota(3, now).is_current(now));
        assert!(quota(3, now + SECOND).is_current(now));
        assert_eq!(
            quota(0, now).merged(quota(5, now + SECOND), now).quota,
            Some((5, now + SECOND)),
            "a spent window ending now does not hold the next one"
        );
    }

    #[test]
    fn a_full_memory_store_forgets_windows_that_are_over_to_take_a_new_key() {
        let store = MemoryStore::with_capacity(1);
        let now = SystemTime::now();
        store.merge(&Key::named("a"), quota(1, now + 60 * SECOND));
        // Stored directly: a window that was current when stored and is over now.
        store
            .windows
            .lock()
            .unwrap()
            .insert(Key::named("a"), quota(1, now - SECOND));
        store.merge(&Key::named("b"), quota(2, now + 60 * SECOND));
        assert_eq!(store.load(&Key::named("b")).unwrap().quota.unwrap().0, 2);
    }
}
