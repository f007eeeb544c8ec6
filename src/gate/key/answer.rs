//! What a gate answers a call: how its request was let through ([`Admission`]), what it met on
//! arriving ([`Arrival`]), what a retry meets that must wait ([`Hold`]), and what holds a
//! call back longer than it may wait ([`Closed`]).

use std::time::Duration;

use tokio::time::Instant;

use crate::gate::rules::learn::Tag;
use crate::gate::rules::quota::Quota;
use crate::gate::time::ServerClock;
use crate::throttled::HeldBy;

/// A turn in a key's episode of being rate limited, as an answer brought it about: what an
/// operator is told once per episode, not once per call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Episode {
    /// The key closed (a refusal, or a window the server said is spent), for this long, by
    /// this: nothing held it before.
    Closed(Closed),
    /// The probe after a closure, or the first answer after a spent window came back whole,
    /// was healthy: calls go again.
    Reopened,
}

/// What holds a call back at its gate: for how long from now, and what set it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Closed {
    pub(crate) left: Duration,
    pub(crate) by: HeldBy,
}

/// How a request was let through, as its response must be recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Admission {
    /// The gate's epoch when it went: its answer speaks of the window of that epoch.
    pub(crate) epoch: u64,
    /// A probe, and which: nothing else goes until it comes back, or its time is up.
    pub(crate) probe: Option<u64>,
    /// It counts in `in_flight` (the gate existed when it was let through).
    pub(crate) counted: bool,
    /// When it was let through.
    pub(crate) sent: Instant,
    /// The server's clock as the gate knew it then.
    pub(crate) server_clock: Option<ServerClock>,
    /// The cap of its call, where the call is held by quotas the gate learned.
    pub(crate) learns: Option<Duration>,
    /// What let it go, as far as the learned pace is concerned.
    pub(crate) learn: Option<Tag<Instant>>,
    /// It was the last request its window had, sent alone: the quota it went on.
    pub(crate) last: Option<Quota>,
    /// It went on a quota a reset restored, before any answer spoke of that window.
    pub(crate) restored: bool,
    /// How many of the window's reports its gate had taken in when it went.
    pub(crate) seen: u32,
}

impl Admission {
    /// Let through at `now` in `epoch` when its gate had taken in `seen` of the window's
    /// reports (as `probe`, if one), counted out by its gate, which knew the server's clock as
    /// `server_clock`; `learns`: the cap of a call held by quotas the gate learned.
    pub(crate) fn counted(
        (epoch, seen): (u64, u32),
        probe: Option<u64>,
        now: Instant,
        server_clock: Option<ServerClock>,
        learns: Option<Duration>,
    ) -> Admission {
        Admission {
            epoch,
            probe,
            counted: true,
            sent: now,
            server_clock,
            learns,
            learn: None,
            last: None,
            restored: false,
            seen,
        }
    }

    /// The epoch it went in, and how many of the window's reports its gate had taken in.
    pub(crate) fn went(self) -> (u64, Option<u32>) {
        (self.epoch, Some(self.seen))
    }

    /// Let through at `now` without a gate to count it.
    pub(crate) fn uncounted(now: Instant) -> Admission {
        Admission {
            epoch: 0,
            probe: None,
            counted: false,
            sent: now,
            server_clock: None,
            learns: None,
            learn: None,
            last: None,
            restored: false,
            seen: 0,
        }
    }
}

/// What a call meets on arriving at a gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// It goes now.
    Admitted(Admission),
    /// It waits in its queue, with this id.
    Queued(u64),
    /// The gate stays closed to it for longer than it may wait.
    Beyond(Closed),
    /// The gate would let it go, but the token meters lack what it declared it will spend,
    /// until then: it sleeps, and arrives again, if it may wait so long.
    Short { until: Instant, by: HeldBy },
}

/// Where a call stands whose next attempt must wait at least a given time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hold {
    /// The gate is closed at least that long: the call waits in the queue, with this id.
    Queued(u64),
    /// The gate is closed for longer than the call may still wait.
    Beyond(Closed),
    /// The gate does not hold the wait: the call sleeps it itself.
    Free,
}

/// What a waiting call hears when it asks whether it may go, and may not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Look {
    /// Ask again then (`None`: when woken).
    Again(Option<Instant>),
    /// The gate is now closed to it for longer than it may still wait: it gives up at once.
    Beyond(Closed),
    /// It has left the queue, to arrive at the gate of its route's limit instead.
    Reroute,
}
