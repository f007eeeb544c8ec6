//! The settings of one layer, with their defaults: plain values every other module reads, so
//! this module imports nothing of the crate but the backoff schedule.
//!
//! Three of them are durations that depend on each other ([`Durations`]): the cap (the longest
//! instruction waited), `max_wait` (one call's whole budget) and the horizon (the longest
//! instruction remembered). What the user set is never overridden: each one left unset follows
//! the ones set, and settings at odds are refused when the layer is built, never adjusted.

use std::fmt;
use std::time::Duration;

use crate::backoff::Backoff;

/// The least time a probe is given to answer before the next waiter probes: zero would let
/// every waiter probe at once, and no probe would go alone.
const SHORTEST_PROBE_TIMEOUT: Duration = Duration::from_millis(1);

/// The default cap: an instruction longer than a minute is returned at once.
pub(crate) const DEFAULT_CAP: Duration = Duration::from_secs(60);
/// The default budget of one call.
pub(crate) const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(120);
/// The default horizon: two days, so that a daily quota (reset at a midnight up to a day away,
/// or a rolling 24 hours, and the skew between clocks) is remembered whole.
pub(crate) const DEFAULT_HORIZON: Duration = Duration::from_secs(2 * 86_400);

/// The settings of one layer, shared by every call through it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Settings {
    pub(crate) retry_on_rate_limit: bool,
    /// The longest instruction a call waits out; a longer one (up to the horizon) is
    /// remembered, and calls fail fast while more than the cap is left of it.
    pub(crate) retry_after_cap: Duration,
    pub(crate) max_wait: Duration,
    /// The longest instruction or spent window remembered; a longer one is absurd or hostile.
    pub(crate) horizon: Duration,
    pub(crate) transient_retries: u32,
    pub(crate) rate_limited_retries: u32,
    pub(crate) backoff: Backoff,
    pub(crate) respect_remaining: bool,
    pub(crate) probe_timeout: Duration,
    pub(crate) slow_start: bool,
    pub(crate) learn_limits: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            retry_on_rate_limit: true,
            retry_after_cap: DEFAULT_CAP,
            max_wait: DEFAULT_MAX_WAIT,
            horizon: DEFAULT_HORIZON,
            transient_retries: 3,
            rate_limited_retries: 10,
            backoff: Backoff::default(),
            respect_remaining: true,
            probe_timeout: Duration::from_secs(10),
            slow_start: true,
            learn_limits: true,
        }
    }
}

impl Settings {
    /// The settings in force: the probe timeout's floor applied, with one warning line if it
    /// was below it.
    pub(crate) fn effective(self) -> Self {
        if self.probe_timeout >= SHORTEST_PROBE_TIMEOUT {
            return self;
        }
        tracing::warn!(
            target: "tower_retry_after",
            "probe_timeout({:?}) is below its floor: {SHORTEST_PROBE_TIMEOUT:?} is in force",
            self.probe_timeout,
        );
        Settings {
            probe_timeout: SHORTEST_PROBE_TIMEOUT,
            ..self
        }
    }

    /// The longest a call waits out a closure of its gate: the cap, with the most spread an
    /// instruction of that length is given (so that a closure the cap allows is waited whole).
    pub(crate) fn longest_wait(&self) -> Duration {
        self.backoff.instructed(self.retry_after_cap, 1.0)
    }
}

/// The switches that hold calls as the user set them (`None`: left at their default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Switches {
    pub(crate) retry_on_rate_limit: Option<bool>,
    pub(crate) respect_remaining: Option<bool>,
    pub(crate) slow_start: Option<bool>,
    pub(crate) learn_limits: Option<bool>,
}

impl Switches {
    /// Why the switches set cannot stand together, if they cannot: one that holds calls
    /// turned on where `retry_on_rate_limit(false)` says the layer only observes, or where
    /// `respect_remaining(false)` says nothing but a 429 holds them, would do nothing, silently.
    pub(crate) fn at_odds(self) -> Option<AtOdds> {
        let turned_on = |switches: &[(&'static str, Option<bool>)]| {
            switches
                .iter()
                .find_map(|&(switch, on)| (on == Some(true)).then_some(switch))
        };
        let holding = [
            ("slow_start", self.slow_start),
            ("learn_limits", self.learn_limits),
        ];
        if self.retry_on_rate_limit == Some(false) {
            let gated = [("respect_remaining", self.respect_remaining)];
            if let Some(switch) = turned_on(&gated).or_else(|| turned_on(&holding)) {
                return Some(AtOdds::HeldWhileObserving { switch });
            }
        }
        if self.respect_remaining != Some(false) {
            return None;
        }
        turned_on(&holding).map(|switch| AtOdds::HeldWhereNothingHolds { switch })
    }
}

/// The cap, `max_wait` and horizon as the user set them (`None`: left to follow the others).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Durations {
    pub(crate) cap: Option<Duration>,
    pub(crate) max_wait: Option<Duration>,
    pub(crate) horizon: Option<Duration>,
}

/// The durations in force: (cap, `max_wait`, horizon).
pub(crate) type Resolved = (Duration, Duration, Duration);

impl Durations {
    /// The durations in force, or why the ones set cannot stand together.
    ///
    /// Each one left unset follows the ones set: the cap is at most half of `max_wait` (at
    /// parity one wait of the cap's length could spend the whole budget) and at most the
    /// horizon (an instruction not remembered is not waited either); `max_wait` is at least
    /// twice the cap; the horizon at least the cap.
    pub(crate) fn resolve(self) -> Result<Resolved, AtOdds> {
        let cap = self.cap.unwrap_or_else(|| {
            let half_budget = self.max_wait.map_or(Duration::MAX, |budget| budget / 2);
            DEFAULT_CAP
                .min(half_budget)
                .min(self.horizon.unwrap_or(Duration::MAX))
        });
        let max_wait = self
            .max_wait
            .unwrap_or_else(|| DEFAULT_MAX_WAIT.max(cap.saturating_mul(2)));
        let horizon = self.horizon.unwrap_or_else(|| DEFAULT_HORIZON.max(cap));
        // Doubled rather than halved, so that a cap and budget both at `Duration::MAX` agree.
        if cap.saturating_mul(2) > max_wait {
            return Err(AtOdds::CapOverHalfTheBudget { cap, max_wait });
        }
        if cap > horizon {
            return Err(AtOdds::CapBeyondTheHorizon { cap, horizon });
        }
        Ok((cap, max_wait, horizon))
    }
}

/// Settings that cannot stand together, and which one to change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AtOdds {
    CapOverHalfTheBudget { cap: Duration, max_wait: Duration },
    CapBeyondTheHorizon { cap: Duration, horizon: Duration },
    HeldWhereNothingHolds { switch: &'static str },
    HeldWhileObserving { switch: &'static str },
}

impl fmt::Display for AtOdds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AtOdds::CapOverHalfTheBudget { cap, max_wait } => write!(
                f,
                "retry_after_cap({cap:?}) is more than half of max_wait({max_wait:?}): one wait \
                 of the cap's length could spend the whole budget; lower retry_after_cap or \
                 raise max_wait to at least {:?}",
                cap.saturating_mul(2)
            ),
            AtOdds::CapBeyondTheHorizon { cap, horizon } => write!(
                f,
                "retry_after_cap({cap:?}) is beyond retry_after_horizon({horizon:?}): an \
                 instruction longer than the horizon is neither remembered nor waited; lower \
                 retry_after_cap or raise retry_after_horizon to at least {cap:?}"
            ),
            AtOdds::HeldWhereNothingHolds { switch } => write!(
                f,
                "{switch}(true) holds calls that respect the quota, and respect_remaining(false) \
                 says only a 429 holds this layer's calls: it would do nothing; drop \
                 {switch}(true) (it is the default where calls respect the quota) or \
                 respect_remaining(false)"
            ),
            AtOdds::HeldWhileObserving { switch } => write!(
                f,
                "{switch}(true) holds calls at the key's gate, and retry_on_rate_limit(false) \
                 says this layer only observes, holding none: it would do nothing; drop \
                 {switch}(true) (it is the default where the layer retries) or \
                 retry_on_rate_limit(false)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);
    const DAY: Duration = Duration::from_secs(86_400);

    fn set(cap: Option<u64>, max_wait: Option<u64>, horizon: Option<u64>) -> Durations {
        let secs = |value: Option<u64>| value.map(Duration::from_secs);
        Durations {
            cap: secs(cap),
            max_wait: secs(max_wait),
            horizon: secs(horizon),
        }
    }

    #[test]
    fn the_defaults_are_the_documented_ones() {
        let settings = Settings::default();
        assert!(settings.retry_on_rate_limit);
        assert_eq!(settings.retry_after_cap, 60 * SECOND);
        assert_eq!(settings.max_wait, 120 * SECOND);
        assert_eq!(settings.horizon, 2 * DAY);
        assert_eq!(settings.transient_retries, 3);
        assert_eq!(settings.rate_limited_retries, 10);
        assert_eq!(settings.probe_timeout, 10 * SECOND);
        assert!(settings.slow_start && settings.learn_limits);
        assert_eq!(settings.effective(), settings);
        let resolved = Durations::default().resolve().unwrap();
        assert_eq!(resolved, (60 * SECOND, 120 * SECOND, 2 * DAY));
    }

    #[test]
    fn the_one_left_unset_follows_the_one_set() {
        // A raised cap raises the budget to twice it, and the horizon to it.
        assert_eq!(
            set(Some(300), None, None).resolve(),
            Ok((300 * SECOND, 600 * SECOND, 2 * DAY))
        );
        assert_eq!(
            set(Some(3 * 86_400), None, None).resolve(),
            Ok((3 * DAY, 6 * DAY, 3 * DAY))
        );
        // A lowered cap leaves the default budget, which is more than twice it.
        assert_eq!(
            set(Some(2), None, None).resolve(),
            Ok((2 * SECOND, 120 * SECOND, 2 * DAY))
        );
        // A lowered budget lowers the cap to half of it; a raised one leaves the default cap.
        assert_eq!(
            set(None, Some(5), None).resolve(),
            Ok((SECOND * 5 / 2, 5 * SECOND, 2 * DAY))
        );
        assert_eq!(
            set(None, Some(600), None).resolve(),
            Ok((60 * SECOND, 600 * SECOND, 2 * DAY))
        );
        // A short horizon lowers the cap to it.
        assert_eq!(
            set(None, None, Some(30)).resolve(),
            Ok((30 * SECOND, 120 * SECOND, 30 * SECOND))
        );
    }

    #[test]
    fn settings_set_at_odds_are_refused_with_the_setting_to_change() {
        let over_half = set(Some(100), Some(150), None).resolve().unwrap_err();
        assert_eq!(
            over_half,
            AtOdds::CapOverHalfTheBudget {
                cap: 100 * SECOND,
                max_wait: 150 * SECOND
            }
        );
        let message = over_half.to_string();
        assert!(message.contains("lower retry_after_cap or raise max_wait to at least 200s"));
        let beyond = set(Some(100), None, Some(50)).resolve().unwrap_err();
        assert!(beyond.to_string().contains("raise retry_after_horizon"));
        assert_eq!(
            set(Some(60), Some(120), Some(60)).resolve().map(|_| ()),
            Ok(())
        );
    }

    #[test]
    fn extreme_values_have_a_meaning() {
        // The cap at its most: every instruction is waited, however long; the rest follow.
        assert_eq!(
            Durations {
                cap: Some(Duration::MAX),
                ..Durations::default()
            }
            .resolve(),
            Ok((Duration::MAX, Duration::MAX, Duration::MAX))
        );
        // No waiting at all: the cap follows the budget down to zero.
        assert_eq!(
            set(None, Some(0), None).resolve(),
            Ok((Duration::ZERO, Duration::ZERO, 2 * DAY))
        );
        // A cap of zero waits no instruction, and keeps the default budget for guesses.
        assert_eq!(
            set(Some(0), None, None).resolve(),
            Ok((Duration::ZERO, 120 * SECOND, 2 * DAY))
        );
        // Nothing remembered: the cap follows the horizon down to zero.
        assert_eq!(
            set(None, None, Some(0)).resolve(),
            Ok((Duration::ZERO, 120 * SECOND, Duration::ZERO))
        );
        // The budget at its most: it never runs out (the counts still bind).
        assert_eq!(
            Durations {
                max_wait: Some(Duration::MAX),
                ..Durations::default()
            }
            .resolve(),
            Ok((60 * SECOND, Duration::MAX, 2 * DAY))
        );
    }

    #[test]
    fn a_probe_timeout_of_zero_is_raised_to_its_floor() {
        let zero = Settings {
            probe_timeout: Duration::ZERO,
            ..Settings::default()
        };
        assert_eq!(zero.effective().probe_timeout, SHORTEST_PROBE_TIMEOUT);
    }

    #[test]
    fn the_longest_wait_is_the_cap_with_its_whole_spread() {
        let settings = Settings::default();
        assert_eq!(settings.longest_wait(), 61 * SECOND);
    }
}
