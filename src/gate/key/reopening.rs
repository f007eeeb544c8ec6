//! How a gate reopens after a closure: a probe first, alone; then, once it came back healthy,
//! the calls that waited leave paced. Pure: callers pass `now` and what the gate knows.
//!
//! - After a closure the first request out is a probe: nobody else goes until it comes back,
//!   so the episode costs at most that one refusal if the server still refuses. The probes
//!   refused since the key's last healthy answer are counted: each doubles the guess that
//!   closes the key where the server names no time (`budget::closure`). Where the gate
//!   learned how fast a server that publishes no quota lets the key go (`rules::learn`), that
//!   law releases the calls it holds instead; the others still probe.
//! - The backlog is the calls waiting when the probe came back healthy. Where the server gave
//!   its quota, they leave at once up to it; where it gave its policy, at the policy's rate;
//!   where a fleet's law paces them (their gates share a store, they learn, and the closure
//!   followed an accepted answer, so the law knows the key), at once, the store holding them
//!   as the gate's own law would; where nothing is known, on a ramp: one more request out for
//!   each healthy answer (the burst doubles each round trip), never two in the same instant.
//!   A refusal on the ramp owes a probe again. The release lasts while calls wait: calls
//!   arriving meanwhile wait behind the backlog and leave as it does, so that no crowd leaves
//!   in one instant when it ends; the gate opens once a call leaves with none behind it.
//! - The first call to a key the gate knows nothing about probes too (slow start), holding
//!   only calls that take part in it, and its answer is released the same way.
//! - A pace comes from a policy whose window is within the cap (a daily quota says how many
//!   in a day, not how far apart), and lasts as long as that window from the response that
//!   stated it: a pace never outlives what set it. A call is paced only if its layer respects
//!   the quota and its cap covers the pace's window.
//! - A probe out holds each waiter for that waiter's own `probe_timeout`, then it probes. The
//!   probe out answers the reopening; so does a healthy answer to an earlier probe of it, one
//!   that outlived its timeout (a server slower than the timeout reopens with its first
//!   healthy answer, not one request a timeout). A window's reset while a probe is out leaves
//!   the probe its answer.
//! - Requests out longer than a probe may be hold nothing back on the ramp: sent before the
//!   closure and hung, they jam nothing.
//! - The probe after a spent window (not a 429) holds only calls that respect the quota.

use std::time::Duration;

use tokio::time::Instant;

use super::terms::Terms;
use crate::gate::time::after;

/// The least spacing between two releases when the server's rate is unknown.
pub(super) const SPACING: Duration = Duration::from_millis(1);

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Phase {
    /// Calls go as far as the quota allows.
    #[default]
    Open,
    /// The gate was closed: the next request out is a probe.
    Probe,
    /// A probe is out, sent at `sent`: nothing else goes until it comes back.
    Probing { sent: Instant },
    /// The probe came back healthy: the backlog leaves, paced; `backlog` calls are still to
    /// leave under the release's rules before the gate opens.
    Releasing { backlog: usize },
}

/// What the probe owed or out follows, which decides whom it holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Cause {
    /// A 429: every call.
    #[default]
    Refusal,
    /// A window the server said was spent has reset: calls that respect the quota.
    SpentWindow,
    /// Nothing is known of the key yet: calls that take part in the slow start.
    FirstCall,
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
    cause: Cause,
    /// With nothing known of the rate, how many requests may be out during the release.
    ramp: u32,
    last_release: Option<Instant>,
    pace: Option<Pace>,
    /// How many probes have gone: the last of them is the one out while probing.
    probes: u64,
    /// The first probe of this reopening: those before it answer an earlier one.
    first_probe: u64,
    /// How long the last probe took to come back: the time each release takes when the rate
    /// is unknown.
    round_trip: Duration,
    /// How many probes the server refused since the key last had a healthy answer.
    refused_probes: u32,
    /// The key has had a healthy answer.
    accepted: bool,
    /// The last closure followed a healthy answer: a law that learns from the key's answers
    /// knows it by then.
    closed_after_acceptance: bool,
}

impl Reopening {
    /// A 429 closed the gate (again): the next request out probes.
    pub(crate) fn closed(&mut self) {
        self.closed_after_acceptance = self.accepted;
        self.owe_probe(Cause::Refusal);
    }

    /// The first call to a key known nothing of goes alone: it probes.
    pub(super) fn first_call(&mut self) {
        self.owe_probe(Cause::FirstCall);
    }

    /// A request let out during the release was refused: the next one probes again.
    pub(crate) fn refused(&mut self) {
        if matches!(self.phase, Phase::Releasing { .. }) {
            self.owe_probe(self.cause);
        }
    }

    /// A healthy answer came back: the ramp lets one more out.
    pub(crate) fn healthy(&mut self) {
        self.ramp = self.ramp.saturating_add(1);
        self.refused_probes = 0;
        self.accepted = true;
    }

    /// How many probes the server refused since the key last had a healthy answer.
    pub(super) fn refused_probes(&self) -> u32 {
        self.refused_probes
    }

    /// A window the server said was spent has reset: unless a 429's probe is owed or out, the
    /// next request that respects the quota probes the new window.
    pub(super) fn window_reset(&mut self) {
        let refusal_probe = self.cause == Cause::Refusal
            && matches!(self.phase, Phase::Probe | Phase::Probing { .. });
        if !refusal_probe {
            self.owe_probe(Cause::SpentWindow);
        }
    }

    fn owe_probe(&mut self, cause: Cause) {
        self.phase = Phase::Probe;
        self.cause = cause;
        self.first_probe = self.probes + 1;
        self.ramp = 1;
    }

    /// Whether the reopening holds a call with `terms` at all.
    fn holds(&self, terms: Terms) -> bool {
        match self.cause {
            Cause::Refusal => true,
            Cause::SpentWindow => terms.metered,
            Cause::FirstCall => terms.slow_start,
        }
    }

    /// Whether the next request of a call with `terms` may go, as far as the reopening is
    /// concerned, with `in_flight` requests out; `quota_known`: the server said how much is
    /// left, and up to that, calls go at once.
    pub(crate) fn next(
        &self,
        now: Instant,
        quota_known: bool,
        in_flight: u32,
        terms: Terms,
    ) -> Release {
        if !self.holds(terms) {
            return Release::Go { probe: false };
        }
        match self.phase {
            // Until the probe comes back, or the call's time for it is up: then it probes.
            Phase::Probing { sent } => match after(sent, terms.probe_timeout) {
                deadline if deadline > now => Release::At(deadline),
                _ => Release::Go { probe: true },
            },
            Phase::Probe => Release::Go { probe: true },
            Phase::Open => Release::Go { probe: false },
            Phase::Releasing { .. } if self.at_once(quota_known, terms) => {
                Release::Go { probe: false }
            }
            Phase::Releasing { .. } => {
                // At its policy's rate; or, knowing nothing, on the ramp: an answer lets the
                // next one out.
                let pace = self.pace_for(now, terms);
                match self
                    .last_release
                    .map(|last| after(last, pace.unwrap_or(SPACING)))
                {
                    Some(at) if at > now => Release::At(at),
                    // A request that hangs holds the ramp no longer than a probe would.
                    _ if pace.is_none() && in_flight >= self.ramp => {
                        match self
                            .last_release
                            .map(|last| after(last, terms.probe_timeout))
                        {
                            Some(deadline) if deadline > now => Release::At(deadline),
                            _ => Release::Go { probe: false },
                        }
                    }
                    _ => Release::Go { probe: false },
                }
            }
        }
    }

    /// A request of a call with `terms` went at `now`, as a probe or not, `waiting` calls
    /// behind it. Which probe it is, if it is one.
    pub(crate) fn admitted(
        &mut self,
        probe: bool,
        now: Instant,
        terms: Terms,
        waiting: usize,
    ) -> Option<u64> {
        if self.phase == Phase::Open || !self.holds(terms) {
            return None;
        }
        self.last_release = Some(now);
        if probe {
            self.phase = Phase::Probing { sent: now };
            self.probes += 1;
            return Some(self.probes);
        }
        // Calls that came during the release join it: let go at once when the backlog ends,
        // they would be the crowd the ramp spreads.
        self.phase = match self.phase {
            Phase::Releasing { backlog } if backlog > 1 || waiting > 0 => Phase::Releasing {
                backlog: (backlog - 1).max(waiting),
            },
            _ => Phase::Open,
        };
        None
    }

    /// Waiters left (dropped, or out of budget): `waiting` remain. The release ends when the
    /// calls it releases are gone, whichever way they went.
    pub(crate) fn left(&mut self, waiting: usize) {
        if let Phase::Releasing { backlog } = self.phase {
            self.phase = match backlog.min(waiting) {
                0 => Phase::Open,
                backlog => Phase::Releasing { backlog },
            };
        }
    }

    /// The probe out came back at `now`: refused, or healthy with `waiting` calls behind it.
    pub(super) fn probe_answered(&mut self, refused: bool, waiting: usize, now: Instant) {
        if let Phase::Probing { sent } = self.phase {
            self.round_trip = now.saturating_duration_since(sent);
        }
        if refused {
            self.phase = Phase::Probe;
            self.refused_probes = self.refused_probes.saturating_add(1);
            return;
        }
        // The healthy answer the release waited for: who waits now is the backlog.
        self.phase = match waiting {
            0 => Phase::Open,
            backlog => Phase::Releasing { backlog },
        };
    }

    /// The probe out ended without an answer: that says nothing about the limit, so a probe
    /// is owed again.
    pub(super) fn probe_lost(&mut self) {
        self.phase = Phase::Probe;
    }

    /// Whether a probe is out.
    pub(super) fn is_probing(&self) -> bool {
        matches!(self.phase, Phase::Probing { .. })
    }

    /// Whether `probe` is the probe out: the last to go, still unanswered.
    pub(super) fn is_probe_out(&self, probe: u64) -> bool {
        self.is_probing() && probe == self.probes
    }

    /// Whether an answer to `probe`, `healthy` or not, answers this reopening: the probe
    /// out's; or, healthy, an earlier probe's of this reopening, which outlived its timeout
    /// while the next one probed. A server slower than the probe timeout still reopens the
    /// key with its first healthy answer, rather than letting one request go a timeout.
    pub(super) fn answers(&self, probe: u64, healthy: bool) -> bool {
        self.is_probe_out(probe) || (healthy && self.is_probing() && probe >= self.first_probe)
    }

    /// Whether the probe owed or out follows a closure or a spent window, as opposed to a key's
    /// first call: only then does its healthy answer reopen anything.
    pub(super) fn follows_closure(&self) -> bool {
        self.cause != Cause::FirstCall
    }

    /// Whether the next request out must probe.
    pub(super) fn owes_probe(&self) -> bool {
        self.phase == Phase::Probe
    }

    /// From `at` on, when the first call with `terms` waiting could go at the earliest, and how
    /// far apart those behind it follow: an estimate for a waiting call (it may go sooner, if
    /// an answer comes sooner). `quota_known` as for [`next`](Self::next).
    pub(crate) fn schedule(
        &self,
        at: Instant,
        quota_known: bool,
        terms: Terms,
    ) -> (Instant, Duration) {
        if !self.holds(terms) {
            return (at, Duration::ZERO);
        }
        let pace = self.pace_for(at, terms);
        // On the ramp, as many go each round trip as are out.
        let ramped = (self.round_trip / self.ramp.max(1)).max(SPACING);
        let step = match pace {
            _ if quota_known => Duration::ZERO,
            Some(interval) => interval,
            None => ramped,
        };
        let after_last = |spacing| {
            self.last_release
                .map_or(at, |last| after(last, spacing).max(at))
        };
        match self.phase {
            Phase::Open => (at, Duration::ZERO),
            Phase::Probe => (at, step),
            Phase::Probing { sent } => (after(sent, terms.probe_timeout).max(at), step),
            Phase::Releasing { .. } if self.at_once(quota_known, terms) => (at, Duration::ZERO),
            Phase::Releasing { .. } => (after_last(pace.unwrap_or(SPACING)), step),
        }
    }

    /// Whether the backlog leaves at once: the server said how much is left, or the fleet's
    /// law paces a call with `terms` after a closure it knows of.
    fn at_once(&self, quota_known: bool, terms: Terms) -> bool {
        let fleet_paces = terms.fleet && terms.learned && terms.metered;
        quota_known || (fleet_paces && self.cause == Cause::Refusal && self.closed_after_acceptance)
    }

    /// The server's policy, as the latest response stated it.
    pub(crate) fn pace(&mut self, pace: Pace) {
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
}
