//! One learned quantity of the law (`super`), and the search that raises it: like TCP's BIC,
//! halfway to the least value refused, and beyond it by a step that doubles while kept.

use std::time::Duration;

use crate::gate::time::Moment;

/// How many raises undone in a row double the wait before the next raise beyond the least
/// value refused, at most (rule 3's n).
const MOST_DOUBLINGS: u32 = 6;

/// Where one learned quantity's search stands, as a round judged left it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Searched {
    /// The value the key goes by.
    pub(crate) value: f64,
    /// The least value refused since it was last above it: what a raise goes halfway to.
    pub(crate) least_refused: Option<f64>,
    /// What a raise beyond that adds.
    pub(crate) step: f64,
    /// Raises undone in a row.
    pub(crate) undone: u32,
    /// Whether a raise is on trial.
    pub(crate) on_trial: bool,
}

/// One learned quantity, and the search that raises it.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "redis", derive(serde::Serialize, serde::Deserialize))]
pub(super) struct Search<T> {
    pub(super) value: f64,
    /// The value before the raise on trial, which is on while `trying`.
    pub(super) kept: f64,
    pub(super) trying: bool,
    /// The least value refused since the value was last above it.
    pub(super) max: Option<f64>,
    pub(super) step: f64,
    pub(super) least: f64,
    /// When it was last lowered, what that refusal cost (seconds), raises undone in a row.
    pub(super) lowered: Option<T>,
    pub(super) cost: f64,
    pub(super) undone: u32,
    /// Kept past the least value refused while the key keeps windows: raises double the
    /// value until one is refused, or the key keeps windows no more.
    #[cfg_attr(feature = "redis", serde(default))]
    pub(super) doubling: bool,
}

impl<T: Moment> Search<T> {
    pub(super) fn new(value: f64, least: f64) -> Self {
        Search {
            value,
            kept: value,
            trying: false,
            max: None,
            step: least.max(value / 16.0),
            least,
            lowered: None,
            cost: 0.0,
            undone: 0,
            doubling: false,
        }
    }

    /// Where its search stands now.
    pub(super) fn searched(&self) -> Searched {
        Searched {
            value: self.value,
            least_refused: self.max,
            step: self.step,
            undone: self.undone,
            on_trial: self.trying,
        }
    }

    /// Whether it has closed in on the least value refused: a raise then goes beyond it.
    pub(super) fn converged(&self) -> bool {
        // From zero there is nothing to halve: the one value tried is tried again, later.
        self.max.is_some_and(|max| {
            self.kept <= 0.0 || max - self.kept <= self.least.max(self.kept / 16.0)
        })
    }

    pub(super) fn may_raise(&self, now: T, period: Duration) -> bool {
        let doubled = 1u32 << self.undone.min(MOST_DOUBLINGS);
        let repaid = |lowered: T| {
            let waited = now.since(lowered);
            waited >= period * doubled
                && waited.as_secs_f64() * self.step.max(self.least)
                    >= f64::from(doubled) * self.value * self.cost
        };
        !self.trying && (!self.converged() || self.lowered.is_none_or(repaid))
    }

    pub(super) fn raise(&mut self) {
        let to = match self.max {
            Some(max) if !self.converged() => (self.value + max) / 2.0,
            _ if self.doubling => self.value * 2.0,
            _ => self.value + self.step,
        };
        (self.kept, self.value, self.trying) = (self.value, to.max(self.value + self.least), true);
    }

    /// A raise to `to`, from which the search steps on.
    pub(super) fn raise_to(&mut self, to: f64) {
        self.step = to - self.value;
        (self.kept, self.value, self.trying) = (self.value, to, true);
    }

    /// The raise on trial is kept. One that passed the least value refused forgets it (the
    /// limit rose), and while the key keeps `windows` raises double the value from then, as
    /// a slow start does, until one is refused: a raise refused there costs no more than the
    /// reset the key waits for anyway.
    pub(super) fn keep(&mut self, windows: bool) {
        (self.kept, self.trying, self.undone) = (self.value, false, 0);
        let passed = self.max.is_some_and(|max| max <= self.value);
        if passed {
            self.max = None;
        }
        self.doubling = windows && (passed || self.doubling);
        if self.max.is_none() {
            self.step *= 2.0;
        }
    }

    /// The raise on trial showed nothing (what its round met is explained otherwise): dropped.
    pub(super) fn drop_trial(&mut self) {
        (self.value, self.trying) = (self.kept, false);
    }

    /// Refused at `refused`, of which `to` went: a raise on trial is undone if what went was
    /// no less than the value kept, to what went where that is more (the server held it),
    /// short of the raise by the least step; otherwise the value falls to `to`, by half at
    /// most.
    pub(super) fn refused(&mut self, refused: f64, to: f64, cost: f64, now: T) {
        let undo = self.trying && to >= self.kept;
        let value = if undo {
            // A raise goes a least step beyond the value kept: this is never below it.
            to.min(self.value - self.least)
        } else {
            to.max(self.kept / 2.0)
        };
        if !undo {
            self.max = Some(self.kept);
        }
        if undo || to >= self.kept / 2.0 {
            self.max = Some(self.max.map_or(refused, |max| max.min(refused)));
        }
        self.undone = if undo { self.undone + 1 } else { self.undone };
        self.step = (self.step / 2.0).max(self.least);
        self.lower(value, cost, now);
    }

    /// Refused again before anything was accepted unrefused since the last cut: that cut's
    /// debt (what the overshoot drained, or counted, lands on the requests after it). The
    /// value falls to `to`, by half at most, and this refusal's cost is the one to repay,
    /// from now; the least value refused and the step stay where the cut set them, as the
    /// server refused nothing new.
    pub(super) fn cut_again(&mut self, to: f64, cost: f64, now: T) {
        self.lower(to.max(self.kept / 2.0), cost, now);
    }

    fn lower(&mut self, value: f64, cost: f64, now: T) {
        (self.value, self.kept, self.trying, self.doubling) = (value, value, false, false);
        (self.lowered, self.cost) = (Some(now), cost);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    const SECOND: Duration = Duration::from_secs(1);

    fn search(value: f64) -> Search<SystemTime> {
        Search::new(value, 1.0)
    }

    #[test]
    fn a_raise_goes_halfway_to_the_least_value_refused() {
        let now = SystemTime::UNIX_EPOCH;
        let mut burst = search(20.0);
        burst.refused(21.0, 10.0, 0.0, now);
        assert_eq!(
            (burst.value, burst.max),
            (10.0, Some(20.0)),
            "to what went, a half"
        );
        burst.raise();
        assert_eq!((burst.value, burst.kept, burst.trying), (15.0, 10.0, true));
        burst.keep(false);
        burst.raise();
        assert_eq!(burst.value, 17.5);
    }

    #[test]
    fn a_refusal_lowers_by_half_at_most() {
        let now = SystemTime::UNIX_EPOCH;
        let mut burst = search(20.0);
        burst.refused(21.0, 2.0, 0.0, now);
        assert_eq!(burst.value, 10.0);
        let mut near = search(20.0);
        near.refused(21.0, 18.0, 0.0, now);
        assert_eq!((near.value, near.max), (18.0, Some(20.0)));
    }

    #[test]
    fn a_cut_again_lowers_by_half_at_most_and_keeps_what_the_search_learned() {
        let now = SystemTime::UNIX_EPOCH;
        let mut rate = search(16.0);
        rate.refused(16.0, 12.0, 1.0, now);
        let (max, step) = (rate.max, rate.step);
        rate.cut_again(0.0, 2.0, now + SECOND);
        assert_eq!((rate.value, rate.kept, rate.trying), (6.0, 6.0, false));
        assert_eq!((rate.max, rate.step, rate.undone), (max, step, 0));
        assert_eq!((rate.lowered, rate.cost), (Some(now + SECOND), 2.0));
    }

    #[test]
    fn a_value_lowered_halves_the_step_as_a_raise_undone_does() {
        let mut rate = search(64.0);
        assert_eq!(rate.step, 4.0);
        rate.refused(64.0, 40.0, 0.0, SystemTime::UNIX_EPOCH);
        assert_eq!((rate.value, rate.undone, rate.step), (40.0, 0, 2.0));
    }

    #[test]
    fn beyond_the_least_value_refused_the_step_doubles_while_kept() {
        let mut rate = search(16.0);
        assert_eq!(
            rate.step, 1.0,
            "a sixteenth of the value, at least the least"
        );
        for expected in [17.0, 19.0, 23.0] {
            rate.raise();
            assert_eq!(rate.value, expected);
            rate.keep(false);
        }
        assert_eq!(rate.step, 8.0);
    }

    #[test]
    fn an_undone_raise_goes_back_halves_the_step_and_counts() {
        let now = SystemTime::UNIX_EPOCH;
        let mut burst = search(16.0);
        burst.step = 4.0;
        burst.raise();
        assert_eq!(burst.value, 20.0);
        // Refused with no fewer than the kept value gone: only the raise let it go.
        burst.refused(20.0, 16.0, 0.5, now);
        assert_eq!((burst.value, burst.trying, burst.undone), (16.0, false, 1));
        assert_eq!((burst.step, burst.max), (2.0, Some(20.0)));
        assert_eq!((burst.lowered, burst.cost), (Some(now), 0.5));
    }

    #[test]
    fn an_undone_raise_keeps_what_the_server_held_beyond_the_value_kept_short_of_the_raise() {
        let now = SystemTime::UNIX_EPOCH;
        // A limit that rose: the raise to 68 went beyond it, and 40 of it were accepted.
        let mut burst = search(36.0);
        burst.raise_to(68.0);
        burst.refused(41.0, 40.0, 0.0, now);
        assert_eq!(
            (
                burst.value,
                burst.kept,
                burst.trying,
                burst.undone,
                burst.max
            ),
            (40.0, 40.0, false, 1, Some(41.0))
        );
        // All of a raise went, and still it was refused: it falls short of it.
        let mut most_out = search(1.0);
        most_out.raise();
        assert_eq!(most_out.value, 2.0);
        most_out.refused(3.0, 2.0, 0.0, now);
        assert_eq!((most_out.value, most_out.undone), (1.0, 1));
    }

    #[test]
    fn a_raise_beyond_the_least_value_refused_waits_until_it_repaid_the_refusal() {
        let now = SystemTime::UNIX_EPOCH;
        let mut burst = search(16.0);
        burst.raise();
        // Undone at a cost of a second: the step (1 after halving) times the wait must reach
        // twice the value (16) times the cost, and the wait two periods.
        burst.refused(17.0, 16.0, 1.0, now);
        assert!(burst.converged());
        let period = SECOND;
        assert!(!burst.may_raise(now + 31 * SECOND, period));
        assert!(burst.may_raise(now + 32 * SECOND, period));
        let mut cheap = search(16.0);
        cheap.raise();
        cheap.refused(17.0, 16.0, 0.0, now);
        assert!(
            !cheap.may_raise(now + period, period),
            "two periods at least"
        );
        assert!(cheap.may_raise(now + 2 * period, period));
    }

    #[test]
    fn the_repayment_doubles_for_six_raises_undone_at_most() {
        let now = SystemTime::UNIX_EPOCH;
        let mut burst = search(16.0);
        (burst.max, burst.step, burst.undone) = (Some(17.0), 1.0, 10);
        (burst.lowered, burst.cost) = (Some(now), 1.0);
        assert!(burst.converged());
        // step × waited ≥ 2⁶ × value × cost: 1 × waited ≥ 64 × 16 × 1 s.
        let waited = 64 * 16 * SECOND;
        assert!(!burst.may_raise(now + waited - SECOND, SECOND));
        assert!(burst.may_raise(now + waited, SECOND));
    }

    #[test]
    fn a_larger_step_repays_a_refusal_sooner() {
        let now = SystemTime::UNIX_EPOCH;
        let mut burst = search(16.0);
        (burst.max, burst.step, burst.undone) = (Some(17.0), 4.0, 1);
        (burst.lowered, burst.cost) = (Some(now), 1.0);
        // step × waited ≥ 2¹ × value × cost: 4 × waited ≥ 2 × 16 × 1 s.
        assert!(!burst.may_raise(now + 8 * SECOND - Duration::from_millis(1), SECOND));
        assert!(burst.may_raise(now + 8 * SECOND, SECOND));
    }

    #[test]
    fn short_of_the_least_value_refused_a_raise_need_not_wait() {
        let now = SystemTime::UNIX_EPOCH;
        let mut burst = search(16.0);
        burst.refused(30.0, 8.0, 5.0, now);
        assert!(!burst.converged());
        assert!(burst.may_raise(now, SECOND));
        burst.raise();
        assert!(
            !burst.may_raise(now, SECOND),
            "one raise on trial at a time"
        );
    }

    #[test]
    fn a_trial_that_showed_nothing_is_dropped_and_a_raise_from_zero_steps_by_itself() {
        let mut rate = Search::<SystemTime>::new(0.0, 0.0);
        rate.raise_to(6.0);
        assert_eq!((rate.value, rate.kept, rate.step), (6.0, 0.0, 6.0));
        rate.drop_trial();
        assert_eq!((rate.value, rate.trying), (0.0, false));
        rate.raise_to(6.0);
        rate.keep(false);
        rate.raise();
        assert_eq!(rate.value, 18.0, "the step doubled on keeping");
    }

    #[test]
    fn a_refusal_of_less_than_the_value_is_the_least_refused_unless_most_of_it_was_refused() {
        let now = SystemTime::UNIX_EPOCH;
        let mut burst = search(10.0);
        burst.refused(8.0, 7.0, 0.0, now);
        assert_eq!(burst.max, Some(8.0));
        // Less than half of it went: the refusal says little of where the limit is.
        let mut burst = search(10.0);
        burst.refused(4.0, 3.0, 0.0, now);
        assert_eq!(burst.max, Some(10.0));
    }

    #[test]
    fn a_raise_to_a_value_steps_on_by_what_it_added() {
        let mut rate = Search::<SystemTime>::new(4.0, 0.0);
        rate.raise_to(5.0);
        assert_eq!(rate.step, 1.0);
        rate.keep(false);
        rate.raise();
        assert_eq!(rate.value, 7.0, "five, and the step doubled");
    }

    #[test]
    fn where_the_key_keeps_windows_a_value_past_the_least_refused_climbs_by_doubling() {
        let now = SystemTime::UNIX_EPOCH;
        let climbs = |windows: bool| {
            let mut burst = search(5.0);
            burst.refused(6.0, 5.0, 0.0, now);
            burst.raise();
            assert_eq!(burst.value, 6.0, "a least step beyond the least refused");
            burst.keep(windows);
            let mut values = vec![];
            for _ in 0..3 {
                burst.raise();
                values.push(burst.value);
                burst.keep(windows);
            }
            values
        };
        assert_eq!(climbs(true), [12.0, 24.0, 48.0], "a slow start");
        let mut burst = search(5.0);
        burst.refused(6.0, 5.0, 0.0, now);
        burst.raise();
        burst.keep(true);
        burst.raise();
        burst.refused(11.0, 10.0, 0.0, now);
        burst.raise();
        assert_eq!(
            burst.value, 11.0,
            "a refusal ends the doubling: the step goes on"
        );
        assert_eq!(
            climbs(false),
            [8.0, 12.0, 20.0],
            "a step doubling from the least"
        );
        // Short of the least refused, a raise kept goes on halving the distance.
        let mut burst = search(20.0);
        burst.refused(21.0, 10.0, 0.0, now);
        burst.raise_to(12.0);
        burst.keep(true);
        burst.raise();
        assert_eq!(burst.value, 16.0);
    }

    #[test]
    fn a_kept_value_above_the_least_refused_forgets_it() {
        let now = SystemTime::UNIX_EPOCH;
        let mut burst = search(10.0);
        burst.refused(12.0, 9.0, 0.0, now);
        assert_eq!(burst.max, Some(10.0));
        burst.raise_to(11.0);
        burst.keep(false);
        assert_eq!(burst.max, None);
    }
}
