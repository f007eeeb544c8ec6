//! The settings of one layer, with their defaults and floors: plain values every other module
//! reads, so this module imports nothing of the crate but the backoff schedule.

use std::time::Duration;

use crate::backoff::Backoff;

/// The least time a probe is given to answer before the next waiter probes.
const SHORTEST_PROBE_TIMEOUT: Duration = Duration::from_millis(1);

/// The settings of one layer, shared by every call through it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Settings {
    pub(crate) retry_on_rate_limit: bool,
    pub(crate) retry_after_cap: Duration,
    pub(crate) max_wait: Duration,
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
            retry_after_cap: Duration::from_secs(60),
            max_wait: Duration::from_secs(120),
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
    /// The settings in force: each floor applied.
    pub(crate) fn effective(self) -> Self {
        let floored = Settings {
            // At parity with the cap, one wait could spend the whole budget.
            max_wait: self.max_wait.max(self.retry_after_cap.saturating_mul(2)),
            // Zero would silently turn retrying off; the policy is the way to do that.
            transient_retries: self.transient_retries.max(1),
            rate_limited_retries: self.rate_limited_retries.max(1),
            // Zero would let every waiter probe at once: no probe would go alone.
            probe_timeout: self.probe_timeout.max(SHORTEST_PROBE_TIMEOUT),
            ..self
        };
        if floored != self {
            tracing::warn!(
                target: "tower_retry_after",
                requested = ?self,
                in_force = ?floored,
                "rate-limit settings below their floors were raised",
            );
        }
        floored
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn the_defaults_are_the_documented_ones() {
        let settings = Settings::default();
        assert!(settings.retry_on_rate_limit);
        assert_eq!(settings.retry_after_cap, 60 * SECOND);
        assert_eq!(settings.max_wait, 120 * SECOND);
        assert_eq!(settings.transient_retries, 3);
        assert_eq!(settings.rate_limited_retries, 10);
        assert_eq!(settings.probe_timeout, 10 * SECOND);
        assert!(settings.slow_start && settings.learn_limits);
        assert_eq!(settings.effective(), settings);
    }

    #[test]
    fn the_budget_is_raised_to_twice_the_cap() {
        let tight = Settings {
            retry_after_cap: 100 * SECOND,
            max_wait: 150 * SECOND,
            ..Settings::default()
        };
        assert_eq!(tight.effective().max_wait, 200 * SECOND);
        let ample = Settings {
            max_wait: 300 * SECOND,
            ..Settings::default()
        };
        assert_eq!(ample.effective().max_wait, 300 * SECOND);
    }

    #[test]
    fn zero_counts_are_raised_to_one() {
        let zero = Settings {
            transient_retries: 0,
            rate_limited_retries: 0,
            probe_timeout: Duration::ZERO,
            ..Settings::default()
        };
        let settings = zero.effective();
        assert_eq!(settings.transient_retries, 1);
        assert_eq!(settings.rate_limited_retries, 1);
        assert_eq!(settings.probe_timeout, SHORTEST_PROBE_TIMEOUT);
    }
}
