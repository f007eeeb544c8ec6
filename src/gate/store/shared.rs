//! The gates' side of a shared store. Each question runs as a task of its own (off the poll
//! path and off the gates' lock), and a call waits for the answer within a deadline; past it,
//! or while the store is out, the gates go by what their process knows alone. An outage is told once, when it begins, and
//! once when the store answers again; meanwhile one call a second tries the store, the others
//! do not wait for it. What the tasks still owe the store can be awaited
//! ([`Shared::told`]), so that a process can tell the fleet everything before it exits.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, ready};
use std::time::{Duration, SystemTime};

use tokio::runtime::Handle;
use tokio::sync::{Notify, oneshot};
use tokio::time::{Instant, Timeout, timeout};

use super::{Reservation, Respects, StoreError, StoreFuture, Ticket, Window, WindowStore};
use crate::key::Key;

/// How long a call waits for the store by default: a store on the same network answers within
/// a millisecond or two; this leaves room for a slow moment, and is all a call pays for a store
/// that does not answer.
pub(crate) const DEADLINE: Duration = Duration::from_millis(50);

/// How often the store is tried while it is out.
const RETRY: Duration = Duration::from_secs(1);

/// How long the task asking the store waits for its answer (the call waits only the deadline):
/// a reservation answered after the call stopped waiting is given back, so that no request
/// counts as out that was never sent.
const LATE: Duration = Duration::from_secs(5);

/// A store, how long to wait for it, whether it is out, and what its tasks still owe it.
pub(crate) struct Shared {
    store: Arc<dyn WindowStore>,
    deadline: Duration,
    outage: Arc<Outage>,
    untold: Arc<Untold>,
}

impl Shared {
    pub(crate) fn new(store: Arc<dyn WindowStore>, deadline: Duration) -> Self {
        Shared {
            store,
            deadline,
            outage: Arc::default(),
            untold: Arc::default(),
        }
    }

    /// Resolves once every task asking the store has ended: answered, failed, or given up
    /// after [`LATE`] (twice that for a reservation no call waited for, given back).
    pub(crate) async fn told(&self) {
        self.untold.none_left().await;
    }

    /// Asks for a reservation for a request on `key` about to go at `now`; `None` when the
    /// store is not asked (it is out, or there is no runtime to ask it from).
    pub(crate) fn reserve(
        &self,
        key: &Key,
        respects: Respects,
        now: SystemTime,
    ) -> Option<Reserving> {
        let runtime = Handle::try_current().ok()?;
        if !self.outage.may_ask(Instant::now()) {
            return None;
        }
        let asked = self.store.reserve(key, respects, now);
        let (store, key, outage) = (self.store.clone(), key.clone(), self.outage.clone());
        let (answer, waiting) = oneshot::channel();
        let owed = self.untold.owe();
        runtime.spawn(async move {
            let _owed = owed;
            let reservation = outage.heard(timeout(LATE, asked).await);
            if let Err(Some(Reservation::Granted(ticket))) = answer.send(reservation) {
                // Nobody waits for it any more: the request it was for is not sent.
                let given_back = store.give_back(&key, ticket, now);
                outage.heard(timeout(LATE, given_back).await);
            }
        });
        Some(Reserving(Box::new(Asked {
            waiting: Box::pin(timeout(self.deadline, waiting)),
            outage: self.outage.clone(),
            asked: Instant::now(),
        })))
    }

    /// Shares what a response to a request on `key`, reserved with `ticket`, said at `now`.
    /// Nothing waits for it. An answer to a reserved request is told even while the store is
    /// out: it was reserved before, so they are bounded by the requests out then, and a
    /// reservation the store keeps counts as out, holding the fleet's quota, until it lapses.
    pub(crate) fn merge(&self, key: &Key, window: Window, ticket: Option<Ticket>, now: SystemTime) {
        if ticket.is_none() && !self.outage.may_ask(Instant::now()) {
            return;
        }
        self.tell(|store| store.merge(key, window, ticket, now));
    }

    /// Hands back the reservation `ticket` at `now`, on which no answer came: told even while
    /// the store is out, as an answer to a reserved request is. Nothing waits for it.
    pub(crate) fn give_back(&self, key: &Key, ticket: Ticket, now: SystemTime) {
        self.tell(|store| store.give_back(key, ticket, now));
    }

    /// Tells the store what `told` asks of it, without waiting.
    fn tell(&self, told: impl FnOnce(&dyn WindowStore) -> StoreFuture<()>) {
        let Ok(runtime) = Handle::try_current() else {
            return;
        };
        let told = told(&*self.store);
        let (outage, owed) = (self.outage.clone(), self.untold.owe());
        runtime.spawn(async move {
            let _owed = owed;
            outage.heard(timeout(LATE, told).await)
        });
    }
}

/// A reservation being asked for, as a call waits for it: the store's answer, or `None` past
/// the gates' deadline (or if the store could not answer). Boxed: a call's state stays small.
pub(crate) struct Reserving(Box<Asked>);

struct Asked {
    waiting: Pin<Box<Timeout<oneshot::Receiver<Option<Reservation>>>>>,
    outage: Arc<Outage>,
    asked: Instant,
}

impl Reserving {
    /// When the call asked the store: a hold it answers runs from then.
    pub(crate) fn asked(&self) -> Instant {
        self.0.asked
    }

    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Option<Reservation>> {
        let asked = &mut *self.0;
        Poll::Ready(match ready!(asked.waiting.as_mut().poll(cx)) {
            Ok(Ok(Some(reservation))) => {
                asked.outage.answered();
                Some(reservation)
            }
            // The store could not answer: the task noted why.
            Ok(_) => None,
            Err(_) => {
                asked.outage.failed(&"no answer within the deadline");
                None
            }
        })
    }
}

/// The tasks asking the store that have not ended, and a way to wait until none is left.
#[derive(Default)]
struct Untold {
    tasks: AtomicUsize,
    none_left: Notify,
}

impl Untold {
    /// Counts a task until what it returns is dropped: when the task ends, or with the runtime
    /// that would have run it.
    fn owe(self: &Arc<Self>) -> Owed {
        self.tasks.fetch_add(1, Ordering::AcqRel);
        Owed(self.clone())
    }

    async fn none_left(&self) {
        loop {
            // Registered before the count is read, so an end between the two still wakes it.
            let ended = self.none_left.notified();
            let mut ended = std::pin::pin!(ended);
            ended.as_mut().enable();
            if self.tasks.load(Ordering::Acquire) == 0 {
                return;
            }
            ended.await;
        }
    }
}

/// One task's debt to the store, paid when dropped.
struct Owed(Arc<Untold>);

impl Drop for Owed {
    fn drop(&mut self) {
        if self.0.tasks.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.none_left.notify_waiters();
        }
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

    /// The store's answer, or why there was none: the answer, a failure noted. Only an
    /// answer a call had in time says the store is back (`answered`).
    fn heard<T>(
        &self,
        answer: Result<Result<T, StoreError>, tokio::time::error::Elapsed>,
    ) -> Option<T> {
        match answer {
            Ok(Ok(answer)) => Some(answer),
            Ok(Err(error)) => {
                self.failed(&error);
                None
            }
            Err(_) => {
                self.failed(&"no answer");
                None
            }
        }
    }

    /// A call had the store's answer in time.
    fn answered(&self) {
        if self.down.swap(false, Ordering::Relaxed) {
            tracing::info!("shared store answers again: gates share what servers say");
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
    use crate::gate::MemoryStore;

    /// A store that never answers, counting the questions it was asked.
    #[derive(Default)]
    struct Silent(AtomicUsize);

    impl WindowStore for Silent {
        fn reserve(&self, _: &Key, _: Respects, _: SystemTime) -> StoreFuture<Reservation> {
            self.0.fetch_add(1, Ordering::Relaxed);
            Box::pin(std::future::pending())
        }

        fn merge(&self, _: &Key, _: Window, _: Option<Ticket>, _: SystemTime) -> StoreFuture<()> {
            self.0.fetch_add(1, Ordering::Relaxed);
            Box::pin(std::future::pending())
        }
    }

    /// Counts the warnings emitted.
    struct Warnings(Arc<AtomicUsize>);

    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Warnings {
        fn on_event(
            &self,
            event: &tracing::Event<'_>,
            _: tracing_subscriber::layer::Context<'_, S>,
        ) {
            if *event.metadata().level() == tracing::Level::WARN {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    async fn answer(mut reserving: Reserving) -> Option<Reservation> {
        std::future::poll_fn(|cx| reserving.poll(cx)).await
    }

    fn ask(shared: &Shared) -> Option<Reserving> {
        shared.reserve(&Key::named("api"), Respects::ALL, SystemTime::now())
    }

    #[tokio::test(start_paused = true)]
    async fn a_store_that_does_not_answer_costs_a_call_the_deadline_then_one_try_a_second() {
        let silent = Arc::new(Silent::default());
        let shared = Shared::new(silent.clone(), DEADLINE);
        let started = Instant::now();
        assert_eq!(answer(ask(&shared).expect("asked")).await, None);
        assert_eq!(started.elapsed(), DEADLINE);
        for _ in 0..100 {
            assert!(ask(&shared).is_none(), "not asked while out");
        }
        shared.merge(
            &Key::named("api"),
            Window::default(),
            None,
            SystemTime::now(),
        );
        assert_eq!(silent.0.load(Ordering::Relaxed), 1);
        tokio::time::sleep(RETRY).await;
        assert!(ask(&shared).is_some(), "tried again");
        assert!(ask(&shared).is_none(), "once");
        assert_eq!(silent.0.load(Ordering::Relaxed), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn an_outage_is_told_once_when_it_begins() {
        use tracing_subscriber::layer::SubscriberExt;
        let warnings = Arc::new(AtomicUsize::new(0));
        let subscriber = tracing_subscriber::registry().with(Warnings(warnings.clone()));
        let _told = tracing::subscriber::set_default(subscriber);
        // tracing decides once, process-wide, whether a call site's events are wanted, on the
        // thread that first reaches it: a test running beside this one with no subscriber
        // would decide "never". Reached here first, then decided again on this thread.
        Outage::default().failed(&"reached");
        tracing::callsite::rebuild_interest_cache();
        warnings.store(0, Ordering::Relaxed);
        let shared = Shared::new(Arc::new(Silent::default()), DEADLINE);
        // Three tries a second apart, none answered: one outage, told once, not once a try.
        for _ in 0..3 {
            assert_eq!(answer(ask(&shared).expect("asked")).await, None);
            tokio::time::sleep(RETRY).await;
        }
        assert_eq!(warnings.load(Ordering::Relaxed), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_store_that_answers_again_is_asked_by_every_call() {
        let shared = Shared::new(Arc::new(MemoryStore::new()), DEADLINE);
        shared.outage.failed(&"refused");
        assert!(ask(&shared).is_none(), "out");
        tokio::time::sleep(RETRY).await;
        let answered = answer(ask(&shared).unwrap()).await;
        assert!(matches!(answered, Some(Reservation::Granted(_))));
        assert!(ask(&shared).is_some());
        assert!(ask(&shared).is_some(), "every call asks again");
    }

    #[tokio::test(start_paused = true)]
    async fn what_a_process_owes_the_store_is_awaited_until_the_store_is_given_up_on() {
        let shared = Shared::new(Arc::new(Silent::default()), DEADLINE);
        // Told within twice the give-up, or the test fails rather than hangs.
        let told = || async {
            let bounded = timeout(2 * LATE, shared.told()).await;
            bounded.expect("told within the store's give-up");
        };
        let started = Instant::now();
        told().await;
        assert_eq!(started.elapsed(), Duration::ZERO, "nothing owed");
        drop(ask(&shared));
        told().await;
        assert_eq!(started.elapsed(), LATE, "the reservation given up on");
        told().await;
        assert_eq!(started.elapsed(), LATE, "owed nothing more");
        // The store is out now: tried again a second later, with what a response said.
        tokio::time::sleep(RETRY).await;
        let key = Key::named("api");
        shared.merge(&key, Window::default(), None, SystemTime::now());
        told().await;
        assert_eq!(started.elapsed(), 2 * LATE + RETRY, "the merge given up on");
    }

    /// A store whose key `api` has two requests left for a minute, shared; the key and when.
    async fn two_left() -> (Arc<MemoryStore>, Shared, Key, SystemTime) {
        let store = Arc::new(MemoryStore::new());
        let shared = Shared::new(store.clone(), DEADLINE);
        let key = Key::named("api");
        let now = SystemTime::now();
        let two_left = Window {
            quota: Some((2, now + RETRY * 60)),
            ..Window::default()
        };
        store.merge(&key, two_left, None, now).await.unwrap();
        (store, shared, key, now)
    }

    /// How many requests of `key` the store grants at `now`, of the first three asked.
    async fn left(store: &MemoryStore, key: &Key, now: SystemTime) -> usize {
        let mut granted = 0;
        for _ in 0..3 {
            let reservation = store.reserve(key, Respects::ALL, now).await.unwrap();
            granted += usize::from(matches!(reservation, Reservation::Granted(_)));
        }
        granted
    }

    /// A slow moment (one answer past the deadline) marks the store out for a second; an
    /// answer to a request reserved before it, told in that second, still gives its
    /// reservation back: the store is up, and a reservation it keeps counts a request out
    /// that is not, holding the whole fleet's quota for a minute.
    #[tokio::test(start_paused = true)]
    async fn a_reservation_answered_in_a_slow_moment_is_still_given_back() {
        let (store, shared, key, now) = two_left().await;
        let Some(Reservation::Granted(ticket)) = answer(ask(&shared).unwrap()).await else {
            panic!("not granted");
        };
        // Another call's question is answered past the deadline.
        shared.outage.failed(&"no answer within the deadline");
        // The reserved request's answer comes, and says nothing but that it is no longer out.
        shared.merge(&key, Window::default(), Some(ticket), SystemTime::now());
        tokio::time::sleep(RETRY).await;
        assert_eq!(
            left(&store, &key, now).await,
            2,
            "the answered request still counts as out"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_reservation_no_call_waits_for_any_more_is_given_back() {
        let (store, shared, key, now) = two_left().await;
        // The call is dropped before its reservation comes back.
        drop(ask(&shared));
        tokio::task::yield_now().await;
        tokio::task::yield_now().await;
        assert_eq!(left(&store, &key, now).await, 2, "both still left");
    }
}
