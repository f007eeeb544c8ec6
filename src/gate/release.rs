//! How a gate reopens after a closure: a probe first, alone; then, once it came back healthy,
//! the calls that waited leave paced. Pure: callers pass `now` and what the gate knows.
//!
//! - After a closure the first request out is a probe: nobody else goes until it comes back,
//!   so the episode costs at most that one refusal if the server still refuses.
//! - The backlog is the calls waiting when the probe came back healthy. Where the server gave
//!   its quota, they leave at once up to it; where it gave its policy, at the policy's rate;
//!   where it gave nothing, one at a time, each after the previous came back healthy and never
//!   two in the same instant. The release ends when its backlog does: calls arriving meanwhile
//!   wait behind it, then the gate opens for everyone.
//! - A pace comes from a policy whose window is within the cap (a daily quota says how many
//!   in a day, not how far apart), and lasts as long as that window from the response that
//!   stated it: a pace never outlives what set it. A call is paced only if its layer respects
//!   the quota and its cap covers the pace's window.
//! - A probe out holds each waiter for that waiter's own `probe_timeout`, then it probes.
//! - The probe after a spent window (not a 429) holds only calls that respect the quota.

use std::time::Duration;

use tokio::time::Instant;

use super::terms::Terms;
use super::time::after;

/// The least spacing between two releases when the server's rate is unknown.
pub(crate) const SPACING: Duration = Duration::from_millis(1);

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Phase {
    /// Calls go as far as the quota allows.
    #[default]
    Open,
    /// The gate was closed: the next request out is a probe.
    Probe,
    /// A probe is out: nothing else goes until it comes back.
    Probing,
    /// The probe came back healthy: the backlog leaves, paced.
    Releasing,
}

/// The server's policy as a spacing between requests, and until when it stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pace {
    /// The policy's window divided by its quota.
    pub(crate) interval: Duration,
    /// The policy's window.
    pub(crate) window: Duration,
    /// The end of the window the policy was stated for.
    pub(crate) until: Instant,
}

/// Whether a request may go now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Release {
    /// Yes, as a probe or not.
    Go { probe: bool },
    /// Not before this instant (sooner, if a request out comes back).
    At(Instant),
}

/// The reopening of one gate: where it stands after its last closure.
#[derive(Debug, Default)]
pub(super) struct Reopening {
    phase: Phase,
    /// The probe owed or out follows a spent window, not a 429: calls that do not respect
    /// the quota are not held by it.
    for_meters: bool,
    /// Whether the probe after the last closure came back healthy: the release has begun.
    releasing: bool,
    /// The calls still to leave under the release's rules before the gate opens.
    backlog: usize,
    last_release: Option<Instant>,
    pace: Option<Pace>,
    /// How many probes have gone: the last of them is the one out while probing.
    probes: u64,
    /// When the last probe went.
    probe_sent: Option<Instant>,
    /// How long the last probe took to come back: the time each release takes when the rate
    /// is unknown.
    round_trip: Duration,
}

impl Reopening {
    /// A 429 closed the gate (again): the next request out probes.
    pub(super) fn closed(&mut self) {
        self.owe_probe(false);
    }

    /// A window the server said was spent has reset: unless a 429's reopening is under way,
    /// the next request that respects the quota probes the new window.
    pub(super) fn window_reset(&mut self) {
        if self.phase == Phase::Open || self.for_meters {
            self.owe_probe(true);
        }
    }

    fn owe_probe(&mut self, for_meters: bool) {
        self.phase = Phase::Probe;
        self.for_meters = for_meters;
        self.releasing = false;
        self.backlog = 0;
    }

    /// Whether the reopening holds a call with `terms` at all.
    fn holds(&self, terms: Terms) -> bool {
        terms.metered || !self.for_meters
    }

    /// Whether the next request of a call with `terms` may go, as far as the reopening is
    /// concerned; `quota_known`: the server said how much is left, and up to that, calls go
    /// at once.
    pub(super) fn next(&self, now: Instant, quota_known: bool, terms: Terms) -> Release {
        if !self.holds(terms) {
            return Release::Go { probe: false };
        }
        match self.phase {
            // Until the probe comes back, or the call's time for it is up: then it probes.
            Phase::Probing => match self.probe_deadline(terms) {
                Some(deadline) if deadline > now => Release::At(deadline),
                _ => Release::Go { probe: true },
            },
            Phase::Probe => Release::Go { probe: true },
            Phase::Open => Release::Go { probe: false },
            Phase::Releasing if quota_known => Release::Go { probe: false },
            Phase::Releasing => {
                // At its policy's rate; or, knowing nothing, one at a time.
                let pace = self.pace_for(now, terms);
                let spacing = pace.unwrap_or(SPACING);
                match self.last_release.map(|last| last + spacing) {
                    Some(at) if at > now => Release::At(at),
                    _ => Release::Go {
                        probe: pace.is_none(),
                    },
                }
            }
        }
    }

    /// A request of a call with `terms` went at `now`, as a probe or not. Which probe it is,
    /// if it is one.
    pub(super) fn admitted(&mut self, probe: bool, now: Instant, terms: Terms) -> Option<u64> {
        if self.phase == Phase::Open || !self.holds(terms) {
            return None;
        }
        self.last_release = Some(now);
        if self.releasing {
            self.backlog = self.backlog.saturating_sub(1);
        }
        if probe {
            self.phase = Phase::Probing;
            self.probes += 1;
            self.probe_sent = Some(now);
            return Some(self.probes);
        }
        if self.backlog == 0 {
            self.phase = Phase::Open;
        }
        None
    }

    /// Waiters left (dropped, or out of budget): `waiting` remain. The release ends when the
    /// calls it releases are gone, whichever way they went.
    pub(super) fn left(&mut self, waiting: usize) {
        self.backlog = self.backlog.min(waiting);
        if self.phase == Phase::Releasing && self.backlog == 0 {
            self.phase = Phase::Open;
        }
    }

    /// The probe out came back at `now`: refused, or healthy with `waiting` calls behind it.
    pub(super) fn probe_answered(&mut self, refused: bool, waiting: usize, now: Instant) {
        if let Some(sent) = self.probe_sent {
            self.round_trip = now.saturating_duration_since(sent);
        }
        if refused {
            self.phase = Phase::Probe;
            return;
        }
        if !self.releasing {
            // The first healthy answer after the closure: who waits now is the backlog.
            self.releasing = true;
            self.backlog = waiting;
        }
        self.phase = if self.backlog == 0 {
            Phase::Open
        } else {
            Phase::Releasing
        };
    }

    /// The probe out ended without an answer: that says nothing about the limit, so a probe
    /// is owed again.
    pub(super) fn probe_lost(&mut self) {
        self.phase = Phase::Probe;
    }

    /// Whether a probe is out.
    pub(super) fn is_probing(&self) -> bool {
        self.phase == Phase::Probing
    }

    /// Whether `probe` is the probe out: the last to go, still unanswered.
    pub(super) fn is_probe_out(&self, probe: u64) -> bool {
        self.is_probing() && probe == self.probes
    }

    /// Whether the next request out must probe.
    pub(super) fn owes_probe(&self) -> bool {
        self.phase == Phase::Probe
    }

    /// From `at` on, when the first call with `terms` waiting could go at the earliest, and how
    /// far apart those behind it follow: an estimate for a waiting call (it may go sooner, if
    /// an answer comes sooner). `quota_known` as for [`next`](Self::next).
    pub(super) fn schedule(
        &self,
        at: Instant,
        quota_known: bool,
        terms: Terms,
    ) -> (Instant, Duration) {
        if !self.holds(terms) {
            return (at, Duration::ZERO);
        }
        let pace = self.pace_for(at, terms);
        let one_at_a_time = self.round_trip.max(SPACING);
        let step = match pace {
            _ if quota_known => Duration::ZERO,
            Some(interval) => interval,
            None => one_at_a_time,
        };
        let after_last = |spacing| {
            self.last_release
                .map_or(at, |last| (last + spacing).max(at))
        };
        match self.phase {
            Phase::Open => (at, Duration::ZERO),
            Phase::Probe => (at, step),
            Phase::Probing => (
                self.probe_deadline(terms)
                    .map_or(at, |deadline| deadline.max(at)),
                step,
            ),
            Phase::Releasing if quota_known => (at, Duration::ZERO),
            Phase::Releasing => (after_last(pace.unwrap_or(SPACING)), step),
        }
    }

    /// The server's policy, as the latest response stated it.
    pub(super) fn pace(&mut self, pace: Pace) {
        self.pace = Some(pace);
    }

    /// The spacing the server's policy asks of a call with `terms` at `now`: none if its layer
    /// does not respect the quota, if its cap does not cover the policy's window, or if the
    /// window the policy was stated for is over.
    fn pace_for(&self, now: Instant, terms: Terms) -> Option<Duration> {
        self.pace
            .filter(|pace| terms.metered && pace.until > now && pace.window <= terms.cap)
            .map(|pace| pace.interval.max(SPACING))
    }

    /// When the probe out stops holding a call with `terms`.
    fn probe_deadline(&self, terms: Terms) -> Option<Instant> {
        self.probe_sent.map(|sent| after(sent, terms.probe_timeout))
    }
}
