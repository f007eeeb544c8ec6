//! How a gate reopens after a closure: a probe first, alone; then, once it came back healthy,
//! the calls that waited leave paced. Pure: callers pass `now` and what the gate knows.
//!
//! - After a closure the first request out is a probe: nobody else goes until it comes back,
//!   so the episode costs at most that one refusal if the server still refuses.
//! - Where the server gave its policy, the backlog leaves at the policy's rate; where it gave
//!   nothing, one request at a time, each after the previous came back healthy and never two
//!   in the same instant, and then the gate opens for everyone.

use std::time::Duration;

use tokio::time::Instant;

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

/// Whether a request may go now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Release {
    /// Yes, as a probe or not.
    Go { probe: bool },
    /// Not before this instant.
    At(Instant),
    /// Not until a request out comes back.
    Blocked,
}

/// The reopening of one gate: where it stands after its last closure.
#[derive(Debug, Default)]
pub(super) struct Reopening {
    phase: Phase,
    /// Waiters still to leave one at a time before the gate opens, when the rate is unknown.
    backlog: usize,
    last_release: Option<Instant>,
    /// The server's policy as a spacing between requests (window / limit).
    interval: Option<Duration>,
}

impl Reopening {
    /// The gate was closed (again): the next request out probes.
    pub(super) fn closed(&mut self) {
        self.phase = Phase::Probe;
    }

    /// Whether the next request may go, as far as the reopening is concerned; `quota_known`:
    /// the server said how much is left, and up to that, calls go at once.
    pub(super) fn next(&self, now: Instant, quota_known: bool) -> Release {
        match self.phase {
            Phase::Probing => Release::Blocked,
            Phase::Probe => Release::Go { probe: true },
            Phase::Open => Release::Go { probe: false },
            Phase::Releasing if quota_known => Release::Go { probe: false },
            Phase::Releasing => match self.next_release().filter(|at| *at > now) {
                Some(at) => Release::At(at),
                // At its policy's rate; or, knowing nothing, one at a time.
                None => Release::Go {
                    probe: self.interval.is_none(),
                },
            },
        }
    }

    /// A request went at `now`, `waiting` calls behind it.
    pub(super) fn admitted(&mut self, probe: bool, now: Instant, waiting: usize) {
        if self.phase == Phase::Probe {
            // The first out after a closure: the backlog it leaves behind.
            self.backlog = waiting;
        } else if probe {
            self.backlog = self.backlog.saturating_sub(1);
        }
        if probe {
            self.phase = Phase::Probing;
        }
        if self.phase != Phase::Open {
            self.last_release = Some(now);
        }
        if waiting == 0 && self.phase == Phase::Releasing {
            self.phase = Phase::Open;
        }
    }

    /// The probe out came back: refused, or healthy with `waiting` calls behind it;
    /// `quota_known`: the server said how much is left.
    pub(super) fn probe_answered(&mut self, refused: bool, waiting: usize, quota_known: bool) {
        let rate_unknown = !quota_known && self.interval.is_none();
        self.phase = if refused {
            Phase::Probe
        } else if waiting == 0 || (rate_unknown && self.backlog == 0) {
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

    /// Whether the next request out must probe.
    pub(super) fn owes_probe(&self) -> bool {
        self.phase == Phase::Probe
    }

    /// The server's policy, as a spacing between requests.
    pub(super) fn pace(&mut self, interval: Duration) {
        self.interval = Some(interval);
    }

    /// The earliest the next paced release may go: the policy's spacing (or the least
    /// spacing) after the last one.
    fn next_release(&self) -> Option<Instant> {
        let spacing = self.interval.unwrap_or(SPACING).max(SPACING);
        self.last_release.map(|last| last + spacing)
    }
}
