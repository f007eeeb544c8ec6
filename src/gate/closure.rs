//! A key's closure: until when every call waits, and what set it. Pure.
//!
//! It only ever moves later: a shorter instruction arriving while a longer one is in force
//! changes nothing (never brought forward).

use tokio::time::Instant;

use crate::throttled::HeldBy;

/// Until when a key is closed, and by what.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Closure {
    until: Option<Instant>,
    by: Option<HeldBy>,
}

impl Closure {
    /// Closes until `until`, set by `by`, unless closed longer already: whether it moved the
    /// end later.
    pub(super) fn extend(&mut self, until: Instant, by: HeldBy) -> bool {
        let later = Some(until) > self.until;
        if later {
            self.until = Some(until);
            self.by = Some(by);
        }
        later
    }

    /// The end of the closure, past or not.
    pub(super) fn until(&self) -> Option<Instant> {
        self.until
    }

    /// The end of the closure, if it is in force at `now`.
    pub(super) fn in_force(&self, now: Instant) -> Option<Instant> {
        self.until.filter(|until| *until > now)
    }

    /// The end of the closure, past or not, and what set it.
    pub(super) fn held(&self) -> Option<(Instant, HeldBy)> {
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
