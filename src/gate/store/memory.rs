//! [`MemoryStore`]: a shared store in this process's memory, keeping each key's ledger.

use std::collections::HashMap;
use std::future::ready;
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use super::ledger::Ledger;
use super::{Reservation, Respects, StoreFuture, Ticket, Window, WindowStore};
use crate::key::Key;

/// A [`WindowStore`] in this process's memory, bounded like the gates: it keeps at most its
/// capacity of keys, forgetting those whose windows are over first.
///
/// # Example
///
/// ```
/// use std::time::SystemTime;
/// use tower_retry_after::Key;
/// use tower_retry_after::store::{MemoryStore, Reservation, Respects, WindowStore};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let store = MemoryStore::new();
/// let api = Key::named("api");
/// let granted = store.reserve(&api, Respects::ALL, SystemTime::now()).await.unwrap();
/// assert!(matches!(granted, Reservation::Granted(_)));
/// # }
/// ```
#[derive(Debug)]
pub struct MemoryStore {
    ledgers: Mutex<HashMap<Key, Ledger>>,
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
            ledgers: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
        }
    }

    /// Applies `change` to `key`'s ledger, making one if there is room (a full store first
    /// forgets the keys whose windows are over); `None` if there is none.
    fn with_ledger<T>(
        &self,
        key: &Key,
        now: SystemTime,
        change: impl FnOnce(&mut Ledger) -> T,
    ) -> Option<T> {
        let mut ledgers = self.ledgers.lock().unwrap_or_else(PoisonError::into_inner);
        if !ledgers.contains_key(key) && ledgers.len() >= self.capacity {
            ledgers.retain(|_, ledger| ledger.is_current(now));
        }
        if !ledgers.contains_key(key) && ledgers.len() >= self.capacity {
            return None;
        }
        Some(change(ledgers.entry(key.clone()).or_default()))
    }
}

impl WindowStore for MemoryStore {
    fn reserve(&self, key: &Key, respects: Respects, now: SystemTime) -> StoreFuture<Reservation> {
        let reservation = self
            .with_ledger(key, now, |ledger| ledger.reserve(now, respects))
            // A full store reserves nothing and holds nothing back: the process's own gate
            // still does.
            .unwrap_or(Reservation::Granted(Ticket::new(0)));
        Box::pin(ready(Ok(reservation)))
    }

    fn merge(
        &self,
        key: &Key,
        window: Window,
        ticket: Option<Ticket>,
        now: SystemTime,
    ) -> StoreFuture<()> {
        self.with_ledger(key, now, |ledger| ledger.merge(window, ticket, now));
        Box::pin(ready(Ok(())))
    }

    fn give_back(&self, key: &Key, ticket: Ticket, now: SystemTime) -> StoreFuture<()> {
        self.with_ledger(key, now, |ledger| ledger.give_back(ticket, now));
        Box::pin(ready(Ok(())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const SECOND: Duration = Duration::from_secs(1);

    async fn reserve(store: &MemoryStore, name: &str) -> Reservation {
        store
            .reserve(&Key::named(name), Respects::ALL, SystemTime::now())
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn the_memory_store_shares_a_window_between_the_gates_given_it() {
        let store = MemoryStore::new();
        let now = SystemTime::now();
        let reset = now + 60 * SECOND;
        store
            .merge(&Key::named("a"), Window::spent(reset), None, now)
            .await
            .unwrap();
        assert!(matches!(
            reserve(&store, "a").await,
            Reservation::NotBefore { until, .. } if until == reset
        ));
        assert!(matches!(
            reserve(&store, "b").await,
            Reservation::Granted(_)
        ));
    }

    #[tokio::test]
    async fn a_full_memory_store_forgets_windows_that_are_over_to_take_a_new_key() {
        let store = MemoryStore::with_capacity(1);
        let now = SystemTime::now();
        store
            .merge(
                &Key::named("a"),
                Window::spent(now + 60 * SECOND),
                None,
                now,
            )
            .await
            .unwrap();
        store
            .merge(
                &Key::named("b"),
                Window::spent(now + 60 * SECOND),
                None,
                now,
            )
            .await
            .unwrap();
        assert!(
            matches!(reserve(&store, "b").await, Reservation::Granted(_)),
            "full of a current window: b is not remembered"
        );
        // Stored directly: a window that was current when stored and is over now.
        let mut over = Ledger::default();
        over.merge(Window::spent(now - SECOND / 2), None, now - SECOND);
        store.ledgers.lock().unwrap().insert(Key::named("a"), over);
        store
            .merge(
                &Key::named("b"),
                Window::spent(now + 60 * SECOND),
                None,
                now,
            )
            .await
            .unwrap();
        assert!(matches!(
            reserve(&store, "b").await,
            Reservation::NotBefore { .. }
        ));
    }

    #[tokio::test]
    async fn a_memory_store_with_room_keeps_a_key_whose_window_is_over_to_restore_it() {
        let store = MemoryStore::new();
        let api = Key::named("api");
        let now = SystemTime::now();
        let reset = now + SECOND;
        let spent_of_two = Window {
            limit: Some(2),
            ..Window::spent(reset)
        };
        store.merge(&api, spent_of_two, None, now).await.unwrap();
        // Another key comes after the reset, before any call on the first.
        store
            .reserve(&Key::named("other"), Respects::ALL, reset)
            .await
            .unwrap();
        for _ in 0..2 {
            let granted = store.reserve(&api, Respects::ALL, reset).await.unwrap();
            assert!(matches!(granted, Reservation::Granted(_)));
        }
        assert!(
            matches!(
                store.reserve(&api, Respects::ALL, reset).await.unwrap(),
                Reservation::NotBefore { .. }
            ),
            "the whole quota restored, and no more"
        );
    }
}
