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
//!   stated it: a pace never outlives what set it.

use std::time::Duration;

use tokio::time::Instant;

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
    /// Whether the probe after the last closure came back healthy: the release has begun.
    releasing: bool,
    /// The calls still to leave under the release's rules before the gate opens.
    backlog: usize,
    last_release: Option<Instant>,
    pace: Option<Pace>,
    /// How many probes have gone: the last of them is the one out while probing.
    probes: u64,
    /// When the last probe went, and when it stops holding the others back.
    probe_sent: Option<Instant>,
    probe_deadline: Option<Instant>,
    /// How long the last probe took to come back: the time each release takes when the rate
    /// is unknown.
    round_trip: Duration,
}

impl Reopening {
    /// The gate was closed (again): the next request out probes.
    pub(super) fn closed(&mut self) {
        self.phase = Phase::Probe;
        self.releasing = false;
        self.backlog = 0;
    }

    /// Whether the next request may go, as far as the reopening is concerned; `quota_known`:
    /// the server said how much is left, and up to that, calls go at once; `paced`: the call
    /// follows the server's policy (its layer respects what the server reports).
    pub(super) fn next(&self, now: Instant, quota_known: bool, paced: bool) -> Release {
        match self.phase {
            // Until the probe comes back, or its time is up: then the next one probes.
            Phase::Probing => match self.probe_deadline {
                Some(deadline) if deadline > now => Release::At(deadline),
                _ => Release::Go { probe: true },
            },
            Phase::Probe => Release::Go { probe: true },
            Phase::Open => Release::Go { probe: false },
            Phase::Releasing if quota_known => Release::Go { probe: false },
            Phase::Releasing => {
                // At its policy's rate; or, knowing nothing, one at a time.
                let pace = self.pace.filter(|pace| paced && pace.until > now);
                let spacing = pace.map_or(SPACING, |pace| pace.interval.max(SPACING));
                match self.last_release.map(|last| last + spacing) {
                    Some(at) if at > now => Release::At(at),
                    _ => Release::Go {
                        probe: pace.is_none(),
                    },
                }
            }
        }
    }

    /// A request went at `now`, as a probe or not; a probe may stay unanswered for `timeout`
    /// before the next one goes. Which probe it is, if it is one.
    pub(super) fn admitted(&mut self, probe: bool, now: Instant, timeout: Duration) -> Option<u64> {
        if self.phase == Phase::Open {
            return None;
        }
        self.last_release = Some(now);
        if self.phase == Phase::Releasing {
            self.backlog = self.backlog.saturating_sub(1);
        }
        if probe {
            self.phase = Phase::Probing;
            self.probes += 1;
            self.probe_sent = Some(now);
            self.probe_deadline = Some(after(now, timeout));
            return Some(self.probes);
        }
        if self.backlog == 0 {
            self.phase = Phase::Open;
        }
        None
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

    /// From `at` on, when the first call waiting could go at the earliest, and how far apart
    /// those behind it follow: an estimate for a waiting call (it may go sooner, if an answer
    /// comes sooner). `quota_known` and `paced` as for [`next`](Self::next).
    pub(super) fn schedule(
        &self,
        at: Instant,
        quota_known: bool,
        paced: bool,
    ) -> (Instant, Duration) {
        let pace = self
            .pace
            .filter(|pace| paced && pace.until > at)
            .map(|pace| pace.interval.max(SPACING));
        let one_at_a_time = self.round_trip.max(SPACING);
        let step = if quota_known {
            Duration::ZERO
        } else {
            pace.unwrap_or(one_at_a_time)
        };
        match self.phase {
            Phase::Open => (at, Duration::ZERO),
            Phase::Probe => (at, step),
            Phase::Probing => (
                self.probe_deadline.map_or(at, |deadline| deadline.max(at)),
                step,
            ),
            Phase::Releasing => {
                let after_last = |spacing| {
                    self.last_release
                        .map_or(at, |last| (last + spacing).max(at))
                };
                match pace {
                    _ if quota_known => (at, Duration::ZERO),
                    Some(interval) => (after_last(interval), interval),
                    None => (after_last(SPACING), one_at_a_time),
                }
            }
        }
    }

    /// The server's policy, as the latest response stated it.
    pub(super) fn pace(&mut self, pace: Pace) {
        self.pace = Some(pace);
    }
}
