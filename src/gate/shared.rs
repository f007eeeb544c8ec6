//! The gates' side of a shared store. Each question runs as a task of its own (off the poll
//! path and off the gates' lock) within a deadline; past it, or while the store is out, the
//! gates go by what their process knows alone. An outage is told once, when it begins, and
//! once when the store answers again; meanwhile one call a second tries the store, the others
//! do not wait for it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use tokio::runtime::Handle;
use tokio::task::JoinHandle;
use tokio::time::{Instant, timeout};

use super::store::{Reservation, StoreError, Ticket, Window, WindowStore};
use crate::key::Key;

/// How long a call waits for the store by default: a store on the same network answers within
/// a millisecond or two; this leaves room for a slow moment, and is all a call pays for a store
/// that does not answer.
pub(crate) const DEADLINE: Duration = Duration::from_millis(50);

/// How often the store is tried while it is out.
const RETRY: Duration = Duration::from_secs(1);

/// A store, how long to wait for it, and whether it is out.
pub(super) struct Shared {
    store: Arc<dyn WindowStore>,
    deadline: Duration,
    outage: Arc<Outage>,
}

impl Shared {
    pub(super) fn new(store: Arc<dyn WindowStore>, deadline: Duration) -> Self {
        Shared {
            store,
            deadline,
            outage: Arc::default(),
        }
    }

    /// Asks for a reservation for a request on `key` about to go; `None` when the store is not
    /// asked (it is out, or there is no runtime to ask it from). The task's answer is `None`
    /// when the store did not answer in time.
    pub(super) fn reserve(
        &self,
        key: &Key,
        metered: bool,
        now: SystemTime,
    ) -> Option<JoinHandle<Option<Reservation>>> {
        let runtime = Handle::try_current().ok()?;
        if !self.outage.may_ask(Instant::now()) {
            return None;
        }
        let asked = self.store.reserve(key, metered, now);
        let (deadline, outage) = (self.deadline, self.outage.clone());
        Some(runtime.spawn(async move { outage.heard(timeout(deadline, asked).await) }))
    }

    /// Shares what a response to a request on `key`, reserved with `ticket`, said. Nothing
    /// waits for it.
    pub(super) fn merge(&self, key: &Key, window: Window, ticket: Option<Ticket>, now: SystemTime) {
        let Ok(runtime) = Handle::try_current() else {
            return;
        };
        if !self.outage.may_ask(Instant::now()) {
            return;
        }
        let merged = self.store.merge(key, window, ticket, now);
        let (deadline, outage) = (self.deadline, self.outage.clone());
        runtime.spawn(async move { outage.heard(timeout(deadline, merged).await) });
    }
}

/// Whether the store is out, and when to try it again.
#[derive(Default)]
struct Outage {
    down: AtomicBool,
    next_try: Mutex<Option<Instant>>,
}

impl Outage {
    /// Whether to ask the store at `now`: always while it answers; while it is out, once a
    /// [`RETRY`].
    fn may_ask(&self, now: Instant) -> bool {
        if !self.down.load(Ordering::Relaxed) {
            return true;
        }
        let mut next_try = self.next_try.lock().unwrap_or_else(PoisonError::into_inner);
        match *next_try {
            Some(at) if at > now => false,
            _ => {
                *next_try = Some(now + RETRY);
                true
            }
        }
    }

    /// The store's answer, or why there was none, noted: the answer if it came in time.
    fn heard<T>(
        &self,
        answer: Result<Result<T, StoreError>, tokio::time::error::Elapsed>,
    ) -> Option<T> {
        match answer {
            Ok(Ok(answer)) => {
                if self.down.swap(false, Ordering::Relaxed) {
                    tracing::info!("shared store answers again: gates share what servers say");
                }
                Some(answer)
            }
            Ok(Err(error)) => {
                self.failed(&error);
                None
            }
            Err(_) => {
                self.failed(&"no answer within the deadline");
                None
            }
        }
    }

    fn failed(&self, why: &dyn std::fmt::Display) {
        *self.next_try.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(Instant::now() + RETRY);
        if !self.down.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                error = %why,
                "shared store out: each process's gates go by what they know alone until it answers"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::store::StoreFuture;
    use std::sync::atomic::AtomicUsize;

    /// A store that never answers, counting the questions it was asked.
    #[derive(Default)]
    struct Silent(AtomicUsize);

    impl WindowStore for Silent {
        fn reserve(&self, _: &Key, _: bool, _: SystemTime) -> StoreFuture<Reservation> {
            self.0.fetch_add(1, Ordering::Relaxed);
            Box::pin(std::future::pending())
        }

        fn merge(&self, _: &Key, _: Window, _: Option<Ticket>, _: SystemTime) -> StoreFuture<()> {
            self.0.fetch_add(1, Ordering::Relaxed);
            Box::pin(std::future::pending())
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_store_that_does_not_answer_costs_a_call_the_deadline_then_one_try_a_second() {
        let silent = Arc::new(Silent::default());
        let shared = Shared::new(silent.clone(), DEADLINE);
        let key = Key::named("api");
        let started = Instant::now();
        let asked = shared
            .reserve(&key, true, SystemTime::now())
            .expect("asked");
        assert_eq!(asked.await.unwrap(), None);
        assert_eq!(started.elapsed(), DEADLINE);
        for _ in 0..100 {
            assert!(
                shared.reserve(&key, true, SystemTime::now()).is_none(),
                "not asked while out"
            );
        }
        shared.merge(&key, Window::default(), None, SystemTime::now());
        assert_eq!(silent.0.load(Ordering::Relaxed), 1);
        tokio::time::sleep(RETRY).await;
        assert!(
            shared.reserve(&key, true, SystemTime::now()).is_some(),
            "tried again"
        );
        assert!(
            shared.reserve(&key, true, SystemTime::now()).is_none(),
            "once"
        );
        assert_eq!(silent.0.load(Ordering::Relaxed), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_store_that_answers_again_is_asked_by_every_call() {
        let shared = Shared::new(Arc::new(crate::gate::MemoryStore::new()), DEADLINE);
        shared.outage.failed(&"refused");
        let key = Key::named("api");
        assert!(
            shared.reserve(&key, true, SystemTime::now()).is_none(),
            "out"
        );
        tokio::time::sleep(RETRY).await;
        let answered = shared
            .reserve(&key, true, SystemTime::now())
            .unwrap()
            .await
            .unwrap();
        assert!(matches!(answered, Some(Reservation::Granted(_))));
        assert!(shared.reserve(&key, true, SystemTime::now()).is_some());
        assert!(
            shared.reserve(&key, true, SystemTime::now()).is_some(),
            "every call asks again"
        );
    }
}
