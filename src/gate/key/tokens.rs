//! A key's token meters as its gate knows them: what the server last said of each (tokens,
//! input tokens, output tokens), less what calls that declared their cost ([`TokenCost`]) and
//! are still out have spent. Pure.
//!
//! What the server says folds in by the one rule of `quota::fold`: within one window the lower
//! figure stands, which is never early. What a call spends is counted out from when it leaves
//! the gate until its answer, so that calls in flight together never spend one count twice, and
//! a figure the server gave before it counted them (another call's answer, or a meter whose
//! reset moves as it is spent, read as a new window) leaves them spent all the same. Its answer
//! counted it where it reports the meter; where it does not, or no answer came, the server may
//! have counted it all the same: the figure loses it.

use tokio::time::Instant;

use crate::gate::rules::quota::{Quota, fold};
use crate::headers::Unit;
use crate::tokens::TokenCost;

/// The unit of each slot of [`TokenMeters`].
const UNITS: [Unit; 3] = [Unit::Tokens, Unit::InputTokens, Unit::OutputTokens];

/// The token meters of one response or one gate, by unit: tokens, input tokens, output tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TokenMeters([Option<Quota>; 3]);

impl TokenMeters {
    /// No meter known.
    pub(crate) const NONE: TokenMeters = TokenMeters([None; 3]);

    fn slot(unit: Unit) -> Option<usize> {
        UNITS.iter().position(|known| *known == unit)
    }

    /// What `cost` spends of the meter in `slot`.
    fn spent_by(slot: usize, cost: TokenCost) -> u64 {
        match slot {
            0 => cost.total(),
            1 => cost.input(),
            _ => cost.output(),
        }
    }

    /// Adds a reading of a meter of `unit`: of several of one unit, the one closest to
    /// running out, and of those left alike the one that resets later, which is never early
    /// (as the quota of requests is chosen).
    pub(crate) fn add(&mut self, unit: Unit, quota: Quota) {
        let Some(slot) = Self::slot(unit) else { return };
        let known = &mut self.0[slot];
        let binding = |quota: Quota| (quota.remaining, std::cmp::Reverse(quota.reset_at));
        if known.is_none_or(|known| binding(quota) < binding(known)) {
            *known = Some(quota);
        }
    }

    /// Folds in what a response said of each meter, dropping meters whose window is over.
    pub(super) fn take_in(&mut self, reported: TokenMeters, now: Instant) {
        // Most keys have no token meter, and most responses report none.
        if reported == TokenMeters::NONE && *self == TokenMeters::NONE {
            return;
        }
        for (known, reported) in self.0.iter_mut().zip(reported.0) {
            if known.is_some_and(|quota| quota.reset_at <= now) {
                *known = None;
            }
            let Some(reported) = reported.filter(|quota| quota.reset_at > now) else {
                continue;
            };
            *known = match *known {
                None => Some(reported),
                Some(current) => fold(current, reported, false).or(Some(current)),
            };
        }
    }
}

impl Default for TokenMeters {
    fn default() -> Self {
        TokenMeters::NONE
    }
}

/// A key's token meters as its gate knows them, and what the calls still out spend of each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct KnownTokens {
    meters: TokenMeters,
    out: [u64; 3],
}

impl KnownTokens {
    /// Folds in what a response said of each meter, dropping meters whose window is over.
    pub(super) fn take_in(&mut self, reported: TokenMeters, now: Instant) {
        self.meters.take_in(reported, now);
    }

    /// Spends `cost` if every meter it draws on has that much left, less what the calls out
    /// spend of it; otherwise spends nothing and says when the last meter lacking it resets,
    /// and that meter's unit.
    pub(crate) fn spend(&mut self, cost: TokenCost, now: Instant) -> Result<(), (Instant, Unit)> {
        for known in &mut self.meters.0 {
            if known.is_some_and(|quota| quota.reset_at <= now) {
                *known = None;
            }
        }
        let short = self
            .meters
            .0
            .iter()
            .zip(self.out)
            .enumerate()
            .filter_map(|(slot, (known, out))| Some((slot, (*known)?, out)))
            .filter(|(slot, quota, out)| {
                TokenMeters::spent_by(*slot, cost) > quota.remaining.saturating_sub(*out)
            })
            .map(|(slot, quota, _)| (quota.reset_at, UNITS[slot]))
            .max_by_key(|(reset_at, _)| *reset_at);
        if let Some(short) = short {
            return Err(short);
        }
        for (slot, out) in self.out.iter_mut().enumerate() {
            *out = out.saturating_add(TokenMeters::spent_by(slot, cost));
        }
        Ok(())
    }

    /// Whether what the meters reported leaves too little for `cost` before any call out
    /// spends of it: a meter spent for this call as the server said, not by this process's
    /// calls out (which may spend less than they declared).
    pub(crate) fn short_as_reported(&self, cost: TokenCost) -> bool {
        self.meters.0.iter().enumerate().any(|(slot, known)| {
            known.is_some_and(|quota| TokenMeters::spent_by(slot, cost) > quota.remaining)
        })
    }

    /// The call that spent `cost` is no longer out: answered with `reported` (its answer's
    /// meters, [`TokenMeters::NONE`] where it reported none or none came). A meter its answer
    /// reported counted it; any other figure may not have, and loses it.
    pub(super) fn settle(&mut self, cost: TokenCost, reported: &TokenMeters) {
        for (slot, (out, known)) in self.out.iter_mut().zip(&mut self.meters.0).enumerate() {
            let spent = TokenMeters::spent_by(slot, cost);
            *out = out.saturating_sub(spent);
            if reported.0[slot].is_none() {
                if let Some(quota) = known {
                    quota.remaining = quota.remaining.saturating_sub(spent);
                }
            }
        }
    }

    /// Whether any meter's window is still current.
    pub(super) fn is_known(&self, now: Instant) -> bool {
        self.meters
            .0
            .iter()
            .flatten()
            .any(|quota| quota.reset_at > now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const SECOND: Duration = Duration::from_secs(1);

    fn meters(now: Instant, readings: &[(Unit, u64, u64)]) -> TokenMeters {
        let mut meters = TokenMeters::default();
        for (unit, remaining, reset_in) in readings {
            meters.add(
                *unit,
                Quota {
                    remaining: *remaining,
                    reset_at: now + Duration::from_secs(*reset_in),
                    second: None,
                },
            );
        }
        meters
    }

    #[test]
    fn calls_spend_what_they_declare_until_a_meter_lacks_it() {
        let now = Instant::now();
        let mut known = KnownTokens::default();
        known.take_in(meters(now, &[(Unit::Tokens, 1_000, 10)]), now);
        assert_eq!(known.spend(TokenCost::new(300, 300), now), Ok(()));
        assert_eq!(known.spend(TokenCost::new(200, 200), now), Ok(()));
        assert_eq!(
            known.spend(TokenCost::new(1, 0), now),
            Err((now + 10 * SECOND, Unit::Tokens)),
            "exactly spent: the next waits for the reset"
        );
        assert_eq!(
            known.spend(TokenCost::default(), now),
            Ok(()),
            "a zero cost goes"
        );
        let after_reset = now + 10 * SECOND;
        assert_eq!(
            known.spend(TokenCost::new(5_000, 0), after_reset),
            Ok(()),
            "unknown again"
        );
        assert!(!known.is_known(after_reset));
    }

    #[test]
    fn input_and_output_meters_are_spent_by_their_own_part_and_the_later_reset_binds() {
        let now = Instant::now();
        let mut known = KnownTokens::default();
        let readings = [(Unit::InputTokens, 1_000, 5), (Unit::OutputTokens, 100, 20)];
        known.take_in(meters(now, &readings), now);
        assert_eq!(known.spend(TokenCost::new(900, 100), now), Ok(()));
        assert_eq!(
            known.spend(TokenCost::new(200, 1), now),
            Err((now + 20 * SECOND, Unit::OutputTokens)),
            "both lack it: the later reset"
        );
        assert_eq!(
            known.spend(TokenCost::new(100, 0), now),
            Ok(()),
            "nothing was spent"
        );
    }

    #[test]
    fn a_meter_is_short_as_reported_only_where_its_own_count_cannot_pay_the_cost() {
        let now = Instant::now();
        let mut known = KnownTokens::default();
        let readings = [(Unit::InputTokens, 1_000, 5), (Unit::OutputTokens, 100, 20)];
        known.take_in(meters(now, &readings), now);
        assert!(
            !known.short_as_reported(TokenCost::new(1_000, 100)),
            "exactly"
        );
        assert!(
            known.short_as_reported(TokenCost::new(1_000, 101)),
            "one short"
        );
        // Calls out spend of the meters, but not of what the server reported.
        known.spend(TokenCost::new(900, 100), now).unwrap();
        assert!(known.spend(TokenCost::new(200, 0), now).is_err());
        assert!(!known.short_as_reported(TokenCost::new(200, 0)));
    }

    #[test]
    fn a_higher_count_within_the_window_does_not_undo_what_calls_spent() {
        let now = Instant::now();
        let mut known = KnownTokens::default();
        known.take_in(meters(now, &[(Unit::Tokens, 1_000, 10)]), now);
        let cost = TokenCost::new(900, 0);
        known.spend(cost, now).unwrap();
        known.take_in(meters(now, &[(Unit::Tokens, 1_000, 10)]), now);
        assert!(known.spend(TokenCost::new(200, 0), now).is_err());
        // A later reset is the next window (or a bucket's reset that moves as it is spent):
        // its count stands, less what the call still out spends of it.
        let next = meters(now, &[(Unit::Tokens, 1_000, 30)]);
        known.take_in(next, now);
        assert!(known.spend(TokenCost::new(200, 0), now).is_err());
        // Its answer reports the meter: it counted the call, which is no longer out.
        known.settle(cost, &next);
        assert_eq!(known.spend(TokenCost::new(200, 0), now), Ok(()));
    }

    /// A call spent 9 000 of 10 000 and is still out; another call's answer then says 9 500
    /// are left: the server counted 500 of someone else's and not yet the 9 000 out, so 500
    /// are left for new calls, not 1 000.
    #[test]
    fn a_lower_count_that_has_not_seen_the_calls_out_leaves_them_spent_from_it() {
        let now = Instant::now();
        let mut known = KnownTokens::default();
        known.take_in(meters(now, &[(Unit::Tokens, 10_000, 60)]), now);
        assert_eq!(known.spend(TokenCost::new(9_000, 0), now), Ok(()));
        known.take_in(meters(now, &[(Unit::Tokens, 9_500, 60)]), now);
        assert_eq!(
            known.spend(TokenCost::new(1_000, 0), now),
            Err((now + 60 * SECOND, Unit::Tokens)),
            "9 500 left less the 9 000 out is 500"
        );
        assert_eq!(known.spend(TokenCost::new(500, 0), now), Ok(()));
    }

    /// A call answered without the meter, or never answered, may have been counted all the
    /// same: the figure it was not counted in loses what it spent; a meter its answer did
    /// report counted it.
    #[test]
    fn a_call_settled_without_its_meter_reported_is_taken_off_the_figure() {
        let now = Instant::now();
        let readings = [
            (Unit::InputTokens, 1_000, 60),
            (Unit::OutputTokens, 1_000, 60),
        ];
        let mut known = KnownTokens::default();
        known.take_in(meters(now, &readings), now);
        let cost = TokenCost::new(600, 600);
        known.spend(cost, now).unwrap();
        // Its answer reported the input meter only (as counted: 400 left).
        let answer = meters(now, &[(Unit::InputTokens, 400, 60)]);
        known.take_in(answer, now);
        known.settle(cost, &answer);
        assert_eq!(known.spend(TokenCost::new(400, 400), now), Ok(()));
        assert!(
            known.spend(TokenCost::new(1, 0), now).is_err(),
            "input spent"
        );
        assert!(
            known.spend(TokenCost::new(0, 1), now).is_err(),
            "output spent"
        );
    }

    #[test]
    fn of_several_readings_of_one_unit_the_lowest_stands_and_other_units_are_ignored() {
        let now = Instant::now();
        let readings = [
            (Unit::Tokens, 500, 10),
            (Unit::Tokens, 50, 10),
            (Unit::Requests, 1, 10),
            (Unit::Other, 0, 10),
        ];
        let mut known = KnownTokens::default();
        known.take_in(meters(now, &readings), now);
        assert!(known.spend(TokenCost::new(51, 0), now).is_err());
        assert_eq!(known.spend(TokenCost::new(50, 0), now), Ok(()));
    }

    #[test]
    fn each_token_meter_is_spent_by_its_own_part_of_the_cost_alone() {
        let now = Instant::now();
        let readings = [(Unit::InputTokens, 100, 5), (Unit::OutputTokens, 100, 20)];
        let mut known = KnownTokens::default();
        known.take_in(meters(now, &readings), now);
        assert_eq!(
            known.spend(TokenCost::new(150, 0), now),
            Err((now + 5 * SECOND, Unit::InputTokens)),
            "the input lacks it"
        );
        assert_eq!(
            known.spend(TokenCost::new(0, 150), now),
            Err((now + 20 * SECOND, Unit::OutputTokens)),
            "the output lacks it"
        );
        assert_eq!(known.spend(TokenCost::new(100, 100), now), Ok(()));
    }

    #[test]
    fn a_meter_is_known_until_its_reset() {
        let now = Instant::now();
        let mut known = KnownTokens::default();
        assert!(!known.is_known(now));
        known.take_in(meters(now, &[(Unit::Tokens, 0, 10)]), now);
        assert!(known.is_known(now));
        assert!(known.is_known(now + 10 * SECOND - Duration::from_millis(1)));
        assert!(!known.is_known(now + 10 * SECOND), "its window is over");
    }

    #[test]
    fn a_report_whose_window_ends_now_leaves_the_current_meter_as_it_is() {
        let now = Instant::now();
        let mut known = KnownTokens::default();
        known.take_in(meters(now, &[(Unit::Tokens, 100, 10)]), now);
        known.take_in(meters(now, &[(Unit::Tokens, 0, 0)]), now);
        assert_eq!(
            known.spend(TokenCost::new(150, 0), now),
            Err((now + 10 * SECOND, Unit::Tokens)),
            "the meter of the current window still holds the call"
        );
    }

    #[test]
    fn of_two_readings_of_one_unit_left_alike_the_later_reset_stands() {
        let now = Instant::now();
        for readings in [
            [(Unit::Tokens, 0, 10), (Unit::Tokens, 0, 60)],
            [(Unit::Tokens, 0, 60), (Unit::Tokens, 0, 10)],
        ] {
            let mut known = KnownTokens::default();
            known.take_in(meters(now, &readings), now);
            assert_eq!(
                known.spend(TokenCost::new(1, 0), now),
                Err((now + 60 * SECOND, Unit::Tokens)),
                "{readings:?}"
            );
        }
    }
}
