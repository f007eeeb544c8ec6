//! What processes sharing one credential share about a key, through a store they all reach:
//! until when the server closed it, its window's quota, and what of that quota each of them
//! has reserved. Waiting calls stay in each process (they are local by nature). The gates ask
//! the store off the poll path, each question within a deadline (see `shared`).

pub(crate) mod ledger;
pub(crate) mod memory;
pub(crate) mod shared;

#[cfg(feature = "redis")]
pub(crate) use ledger::Ledger;
pub use memory::MemoryStore;
pub(crate) use shared::Reserving;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::SystemTime;

use crate::gate::key::report::Report;
use crate::gate::rules::quota::Quota;
use crate::gate::time::Anchor;
use crate::key::Key;
use crate::throttled::HeldBy;

/// What the server said about a key's window, in wall-clock time so that it means the same in
/// every process.
///
/// # Example
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use tower_retry_after::store::Window;
///
/// let now = SystemTime::now();
/// let spent = Window {
///     closed_until: None,
///     quota: Some((0, now + Duration::from_secs(30))),
///     limit: Some(5_000),
///     guessed: false,
///     reset_second: None,
///     spent_by_server: true,
/// };
/// assert!(spent.is_current(now));
/// assert!(!spent.is_current(now + Duration::from_secs(30)), "over at its reset");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Window {
    /// No request before this time.
    pub closed_until: Option<SystemTime>,
    /// The quota left, and when its window resets.
    pub quota: Option<(u64, SystemTime)>,
    /// The whole quota a window, where the server gave it.
    pub limit: Option<u64>,
    /// The server named no time: `closed_until` is the layer's guess, which the law that
    /// learns an unpublished limit may end sooner, at its next reset (as a gate does).
    pub guessed: bool,
    /// The second on the server's clock (since the Unix epoch) the quota's reset was written
    /// as, where it was (an epoch second, a date): the window may end up to a second before
    /// it, and the store sends a window's last request early to find out, as a gate does;
    /// readings of one second keep the tightest, and a later second says the reset moved.
    pub reset_second: Option<u64>,
    /// The server itself said none of its quota is left until the reset: where `quota` tells
    /// none, that is an instruction, as a spent meter is to a gate, and a reset beyond a
    /// call's cap turns the call away. `false` where what is left was taken by the fleet's
    /// requests out (their answers may give some back: a call waits for them).
    pub spent_by_server: bool,
}

impl Window {
    /// Whether the window still says anything at `now`.
    pub fn is_current(&self, now: SystemTime) -> bool {
        self.closed_until.is_some_and(|until| until > now)
            || self.quota.is_some_and(|(_, reset)| reset > now)
    }

    /// A window with none left until `reset`: the tests' commonest.
    #[cfg(test)]
    pub(crate) fn spent(reset: SystemTime) -> Window {
        Window {
            quota: Some((0, reset)),
            ..Window::default()
        }
    }

    /// What a response said, on the wall clock, to share. A closure this process keeps is
    /// shared as the server named it, without this process's spread: the store's
    /// reservations keep the processes from stampeding, and the fleet measures windows by it.
    /// An instruction this process does not keep (beyond its horizon, or on an answer that
    /// closes nothing) is not shared.
    pub(crate) fn from_report(report: Report, clocks: &Anchor) -> Window {
        let closed_until = report.closed_until.map(|closed| {
            report
                .instructed_until
                .filter(|instructed| *instructed <= closed)
                .unwrap_or(closed)
        });
        Window {
            closed_until: closed_until.map(|at| clocks.wall(at)),
            quota: report
                .quota
                .map(|quota| (quota.remaining, clocks.wall(quota.reset_at))),
            limit: report.limit,
            guessed: matches!(report.closed_by, Some(HeldBy::Guess { .. })),
            reset_second: report.quota.and_then(|quota| quota.second),
            spent_by_server: report.quota.is_some_and(|quota| quota.is_spent()),
        }
    }

    /// This window on this process's clock, as a report to take in: a closure the server
    /// named is its instruction still (one beyond the cap turns calls away), and so is a
    /// quota the server itself said is spent. A quota of none is not otherwise: what a store
    /// tells is left is what is left to reserve, which the fleet's requests out may have
    /// taken where the server said some are left.
    pub(crate) fn to_report(self, clocks: &Anchor) -> Report {
        let closed_until = self.closed_until.map(|at| clocks.instant(at));
        Report {
            refused: false,
            closed_until,
            closed_by: Some(HeldBy::Fleet),
            quota_by: Some(HeldBy::Fleet),
            instructed_until: closed_until.filter(|_| !self.guessed),
            server_spent: self.spent_by_server
                && self.quota.is_some_and(|(remaining, _)| remaining == 0),
            limit: self.limit,
            server_clock: None,
            quota: self.quota.map(|(remaining, reset)| Quota {
                remaining,
                reset_at: clocks.instant(reset),
                second: self.reset_second,
            }),
            pace: None,
        }
    }
}

/// A request's place in a key's count of reservations: its answer quotes it back, so that the
/// store counts the requests reserved after it as ones the server may not have counted yet.
///
/// # Example
///
/// ```
/// use tower_retry_after::store::Ticket;
///
/// assert_eq!(Ticket::new(7).get(), 7);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ticket(u64);

impl Ticket {
    /// The ticket numbered `number`.
    pub fn new(number: u64) -> Self {
        Ticket(number)
    }

    /// Its number.
    pub fn get(self) -> u64 {
        self.0
    }
}

/// What may hold a call about to be sent, besides the server's closures, as its layer was
/// set: the quota and pace the server reported
/// ([`respect_remaining`](crate::RateLimitLayer::respect_remaining)), and the pace learned
/// where the server reports none ([`learn_limits`](crate::RateLimitLayer::learn_limits),
/// which only a call that respects the quota does).
///
/// # Example
///
/// ```
/// use tower_retry_after::store::Respects;
///
/// assert!(Respects::ALL.quota() && Respects::ALL.learned());
/// assert!(Respects::REPORTED.quota() && !Respects::REPORTED.learned());
/// assert!(!Respects::CLOSURES.quota() && !Respects::CLOSURES.learned());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Respects {
    quota: bool,
    learned: bool,
}

impl Respects {
    /// The reported quota and pace, and the pace learned: the layer's defaults.
    pub const ALL: Respects = Respects {
        quota: true,
        learned: true,
    };
    /// The reported quota and pace alone (`learn_limits(false)`).
    pub const REPORTED: Respects = Respects {
        quota: true,
        learned: false,
    };
    /// Only the server's closures (`respect_remaining(false)`).
    pub const CLOSURES: Respects = Respects {
        quota: false,
        learned: false,
    };

    /// What a call's terms respect (they learn only where they respect the quota).
    pub(crate) fn new(quota: bool, learned: bool) -> Self {
        Respects { quota, learned }
    }

    /// Whether the call is held by the quota and pace the server reported.
    pub fn quota(self) -> bool {
        self.quota
    }

    /// Whether the call is held by the pace learned where the server reports none.
    pub fn learned(self) -> bool {
        self.learned
    }
}

/// What a store answers a call about to be sent.
///
/// # Example
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use tower_retry_after::store::{Reservation, Window};
///
/// let until = SystemTime::now() + Duration::from_secs(5);
/// let held = Reservation::NotBefore {
///     until,
///     window: Window { closed_until: Some(until), ..Window::default() },
/// };
/// assert!(matches!(held, Reservation::NotBefore { .. }));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reservation {
    /// The request may go: one unit of the window's quota is its own.
    Granted(Ticket),
    /// The request may not go before `until`: the key is closed, or nothing is left of its
    /// window to reserve. `window` is what the store knows of the key, for the process's own
    /// gate to hold its other calls by.
    NotBefore {
        /// When to ask again.
        until: SystemTime,
        /// What the store knows of the key.
        window: Window,
    },
}

/// Why a store could not answer. The gates then go by what their process knows alone.
///
/// # Example
///
/// ```
/// use tower_retry_after::store::StoreError;
///
/// let error = StoreError::new("connection refused");
/// assert_eq!(error.to_string(), "shared store: connection refused");
/// ```
#[derive(Clone, Debug)]
pub struct StoreError(std::sync::Arc<dyn std::error::Error + Send + Sync>);

impl StoreError {
    /// An error for `cause`.
    pub fn new(cause: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        StoreError(cause.into().into())
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "shared store: {}", self.0)
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

/// What a store's operation returns: it runs off the gates' lock and off the poll path, as a
/// task of its own, within the deadline the gates give it.
pub type StoreFuture<T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'static>>;

/// Where the gates share what servers say about each key with other processes that use the
/// same credential, so that a 429 one of them meets holds all of them and together they spend
/// no more of a window than the server reported.
///
/// A call the process's own gate lets through asks the store for a [`Reservation`] before it
/// is sent: it must be answered before the request goes (within the gates' deadline, past
/// which the call goes by its own gate alone). What a response said is merged in afterwards,
/// and may be answered late: nothing waits for it.
///
/// Two implementations: [`MemoryStore`](super::MemoryStore) shares between the `Gates` of one
/// process; with the `redis` feature, `RedisStore` shares across processes and machines.
///
/// # Example
///
/// ```
/// use tower_retry_after::store::MemoryStore;
/// use tower_retry_after::{Gates, RateLimitLayer};
///
/// // Two sets of gates, as two processes would have, sharing one store.
/// let store = std::sync::Arc::new(MemoryStore::new());
/// let first = RateLimitLayer::new().gates(Gates::with_store(store.clone()));
/// let second = RateLimitLayer::new().gates(Gates::with_store(store));
/// # let _ = (first, second);
/// ```
pub trait WindowStore: Send + Sync + 'static {
    /// Reserves one request of `key`'s window at `now` (the asking process's clock): granted
    /// unless the key is closed or, as far as the call `respects` them, nothing of the
    /// window is left to reserve or the pace the fleet learned holds it.
    fn reserve(&self, key: &Key, respects: Respects, now: SystemTime) -> StoreFuture<Reservation>;

    /// Folds `window`, what the answer to a request reserved with `ticket` said at `now`, into
    /// what is known about `key`: the later closure stands; within a window the lower count.
    fn merge(
        &self,
        key: &Key,
        window: Window,
        ticket: Option<Ticket>,
        now: SystemTime,
    ) -> StoreFuture<()>;

    /// Hands back the reservation `ticket` at `now`, on which no answer came (its call was
    /// dropped, or no call took it): it is no longer out, and says nothing of the limit (a
    /// store whose ledger learns an unpublished limit takes no acceptance from it). By
    /// default, a [`merge`](WindowStore::merge) of a window that says nothing.
    fn give_back(&self, key: &Key, ticket: Ticket, now: SystemTime) -> StoreFuture<()> {
        self.merge(key, Window::default(), Some(ticket), now)
    }
}

impl<S: WindowStore + ?Sized> WindowStore for std::sync::Arc<S> {
    fn reserve(&self, key: &Key, respects: Respects, now: SystemTime) -> StoreFuture<Reservation> {
        (**self).reserve(key, respects, now)
    }

    fn merge(
        &self,
        key: &Key,
        window: Window,
        ticket: Option<Ticket>,
        now: SystemTime,
    ) -> StoreFuture<()> {
        (**self).merge(key, window, ticket, now)
    }

    fn give_back(&self, key: &Key, ticket: Ticket, now: SystemTime) -> StoreFuture<()> {
        (**self).give_back(key, ticket, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn a_window_is_over_at_the_instant_it_names() {
        let now = SystemTime::now();
        let closed = Window {
            closed_until: Some(now),
            ..Window::default()
        };
        assert!(!closed.is_current(now));
        assert!(!Window::spent(now).is_current(now));
        assert!(Window::spent(now + SECOND).is_current(now));
        let closed_later = Window {
            closed_until: Some(now + SECOND),
            ..Window::default()
        };
        assert!(closed_later.is_current(now));
    }

    #[test]
    fn a_window_is_shared_as_the_server_named_it_and_taken_back_on_the_same_clock() {
        let clocks = Anchor::now();
        let now = tokio::time::Instant::now();
        let quota = Quota {
            remaining: 4,
            reset_at: now + 5 * SECOND,
            second: Some(1_700_000_005),
        };
        // This process keeps the closure a spread after the server's instruction; the spread
        // is its own, each process draws another.
        let kept = Report {
            refused: true,
            closed_until: Some(now + 3 * SECOND),
            instructed_until: Some(now + 2 * SECOND),
            quota: Some(quota),
            limit: Some(10),
            ..Report::default()
        };
        // What set them is this process's to say: taken back, they were set by another; the
        // closure the server named is still its instruction.
        let taken = Report {
            closed_until: Some(now + 2 * SECOND),
            closed_by: Some(HeldBy::Fleet),
            instructed_until: Some(now + 2 * SECOND),
            quota: Some(quota),
            quota_by: Some(HeldBy::Fleet),
            limit: Some(10),
            ..Report::default()
        };
        assert_eq!(Window::from_report(kept, &clocks).to_report(&clocks), taken);
    }

    #[test]
    fn a_closure_is_shared_as_a_guess_only_where_the_server_named_no_time() {
        let clocks = Anchor::now();
        let now = tokio::time::Instant::now();
        let closed_by = |by| Report {
            refused: true,
            closed_until: Some(now + SECOND),
            closed_by: Some(by),
            ..Report::default()
        };
        let status = http::StatusCode::TOO_MANY_REQUESTS;
        let guess = closed_by(HeldBy::Guess { status });
        assert!(Window::from_report(guess, &clocks).guessed);
        let taken = Window::from_report(guess, &clocks).to_report(&clocks);
        assert_eq!(taken.instructed_until, None, "a guess is no instruction");
        let named = Report {
            instructed_until: Some(now + SECOND),
            ..closed_by(HeldBy::RetryAfter { status })
        };
        assert!(!Window::from_report(named, &clocks).guessed);
    }

    /// A quota of none is an instruction, its reset the end, only where the server itself
    /// said so: what the fleet's requests out took may come back with their answers.
    #[test]
    fn a_quota_of_none_is_an_instruction_only_where_the_server_spent_it() {
        let clocks = Anchor::now();
        let now = tokio::time::Instant::now();
        let reset = now + 40 * SECOND;
        let read = Report {
            quota: Some(Quota {
                remaining: 0,
                reset_at: reset,
                second: None,
            }),
            server_spent: true,
            ..Report::default()
        };
        let told = Window::from_report(read, &clocks);
        assert!(told.spent_by_server, "as the server read it");
        assert!(told.to_report(&clocks).server_spent);
        let taken = Window {
            spent_by_server: false,
            ..told
        };
        assert!(!taken.to_report(&clocks).server_spent);
        let left = Window {
            quota: Some((1, clocks.wall(reset))),
            ..told
        };
        assert!(!left.to_report(&clocks).server_spent, "one left");
        let closed = Window {
            closed_until: Some(clocks.wall(now + 10 * SECOND)),
            ..told
        };
        let taken_back = closed.to_report(&clocks);
        assert_eq!(
            (taken_back.instructed_until, taken_back.server_spent),
            (Some(now + 10 * SECOND), true),
            "each its own: the closure's for every call, the window's for those it holds"
        );
    }

    #[test]
    fn a_store_error_gives_its_cause_as_its_source() {
        use std::error::Error;
        let error = StoreError::new("connection refused");
        let cause = error.source().map(ToString::to_string);
        assert_eq!(cause.as_deref(), Some("connection refused"));
    }
}
