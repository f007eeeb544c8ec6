//! A key's closure: until when every call waits, and what set it. Pure, generic over the clock:
//! a gate's monotonic one, a shared store's wall clock.
//!
//! It only ever moves later: a shorter instruction arriving while a longer one is in force
//! changes nothing (never brought forward).

use tokio::time::Instant;

use crate::throttled::HeldBy;

/// Until when a key is closed (an instant on the clock `T`), and by what.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "redis", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct Closure<T = Instant> {
    until: Option<T>,
    /// (A shared store's closures are all the fleet's: it keeps no cause.)
    #[cfg_attr(feature = "redis", serde(skip))]
    by: Option<HeldBy>,
}

impl<T> Default for Closure<T> {
    fn default() -> Self {
        Closure {
            until: None,
            by: None,
        }
    }
}

impl<T: Copy + Ord> Closure<T> {
    /// Closes until `until`, set by `by`, unless closed longer already: whether it moved the
    /// end later.
    pub(crate) fn extend(&mut self, until: T, by: HeldBy) -> bool {
        let later = Some(until) > self.until;
        if later {
            self.until = Some(until);
            self.by = Some(by);
        }
        later
    }

    /// The end of the closure, past or not.
    pub(crate) fn until(&self) -> Option<T> {
        self.until
    }

    /// The end of the closure, if it is in force at `now`.
    pub(crate) fn in_force(&self, now: T) -> Option<T> {
        self.until.filter(|until| *until > now)
    }

    /// The end of the closure, past or not, and what set it.
    pub(crate) fn held(&self) -> Option<(T, HeldBy)> {
        self.until
            .map(|until| (until, self.by.unwrap_or(HeldBy::Queue)))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_closure_moves_only_later_and_keeps_what_set_the_later_end() {
        let now = Instant::now();
        let mut closure = Closure::default();
        assert!(closure.extend(now + Duration::from_secs(5), HeldBy::Queue));
        assert!(!closure.extend(now + Duration::from_secs(1), HeldBy::Fleet));
        assert!(!closure.extend(now + Duration::from_secs(5), HeldBy::Fleet));
        assert_eq!(
            closure.held(),
            Some((now + Duration::from_secs(5), HeldBy::Queue))
        );
        assert!(closure.extend(now + Duration::from_secs(6), HeldBy::Fleet));
        assert_eq!(
            closure.held(),
            Some((now + Duration::from_secs(6), HeldBy::Fleet))
        );
        assert_eq!(closure.in_force(now + Duration::from_secs(6)), None);
    }
}
