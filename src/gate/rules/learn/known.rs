//! What the law (`super`) learned of a key, and what a round says of it once judged: rules 1
//! to 4 of the law.

use std::time::Duration;

use super::Judged;
use super::round::Round;
use super::search::Search;
use super::{ANSWER, BETA, TICK};
use crate::gate::time::Moment;

#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "redis", derive(serde::Serialize, serde::Deserialize))]
pub(super) struct Known<T> {
    pub(super) burst: Search<T>,
    /// Tokens a second between resets; zero until one is tried from zero and kept. The key
    /// keeps windows while it gives less than a burst a period ([`Known::keeps_windows`]).
    pub(super) rate: Search<T>,
    /// The rate was cut, and no round went unrefused since: a refusal now is the cut's debt.
    #[cfg_attr(feature = "redis", serde(default))]
    pub(super) rate_owing: bool,
    /// The burst was cut, and no round went unrefused since: a refusal now is the cut's debt.
    #[cfg_attr(feature = "redis", serde(default))]
    pub(super) burst_owing: bool,
    /// `None` until a round whose refusals named an instruction is judged, or a refusal
    /// without one is followed by an acceptance.
    pub(super) period: Option<Duration>,
    /// The server named a reset: the period is its, not a guess to probe.
    pub(super) named: bool,
    /// The longest a window was seen to run, a request refused that long after it began.
    pub(super) floor: Duration,
    /// The same in the slow start's round, which can run across windows: see [`floor`].
    ///
    /// [`floor`]: Known::floor
    #[cfg_attr(feature = "redis", serde(default))]
    pub(super) cold_floor: Duration,
    /// A round was judged: the slow start's, judged after it (its last answer came late),
    /// makes the burst anew no more, which would undo what those rounds taught.
    #[cfg_attr(feature = "redis", serde(default))]
    pub(super) judged: bool,
}

impl<T: Moment> Known<T> {
    /// What the first refusal that followed an acceptance teaches: the count `accepted` is the
    /// burst; nothing else yet.
    pub(super) fn new(accepted: u64) -> Self {
        Known {
            burst: Search::new(accepted.max(1) as f64, 1.0),
            rate: Search::new(0.0, 0.0),
            rate_owing: false,
            burst_owing: false,
            period: None,
            named: false,
            floor: Duration::ZERO,
            cold_floor: Duration::ZERO,
            judged: false,
        }
    }

    /// What `round`, ended and answered, says at `now`: of the period (rule 4) and of the
    /// burst and the rate (rules 1 to 3); what it was, and what it left.
    pub(super) fn judge(&mut self, round: &Round<T>, now: T) -> Judged {
        if let (Some(refused), Some(began)) = (round.refused_sent, round.window()) {
            let ran = refused.since(began);
            if round.cold {
                self.cold_floor = ran;
            } else {
                self.floor = self.floor.max(ran);
            }
            if self.period.is_some_and(|period| period <= self.floor) {
                // Refused later than the period it went by: the period was too short.
                self.period = Some(self.floor + self.floor / 8);
            }
        }
        if round.cold && !self.judged {
            self.burst = Search::new(round.burst_accepted.max(1) as f64, 1.0);
            if let Some(period) = self.period {
                let one_more = (self.burst() + 1) as f64 / period.as_secs_f64();
                self.rate.raise_to(one_more);
            }
        } else if !round.cold && (round.probing.is_none() || round.probed) {
            // (A probe refused says only that the window was still on.)
            judge(self, round, now);
        }
        self.judged = true;
        Judged {
            round: round.id,
            sent: round.sent,
            accepted: round.burst_accepted + round.paced_accepted,
            refused: round.refused.is_some(),
            burst: self.burst(),
            burst_search: self.burst.searched(),
            rate: self.rate.searched(),
            rate_owing: self.rate_owing,
            burst_owing: self.burst_owing,
            period: self.period,
        }
    }

    /// Rule 4: a refusal named `until`, which bounds the end of the window its round counts
    /// against, begun by `began`, never early.
    pub(super) fn bounded(&mut self, began: T, until: T) {
        let measured = until.since(began).max(TICK);
        self.period = Some(self.period.map_or(measured, |period| period.min(measured)));
        self.named = true;
    }

    /// The longest a refused window was seen to run: the slow start's round counts while it
    /// ran less than the period (one that ran as long ran across windows).
    pub(super) fn floor(&self) -> Duration {
        match self.period {
            Some(period) if self.cold_floor < period => self.floor.max(self.cold_floor),
            _ => self.floor,
        }
    }

    pub(super) fn burst(&self) -> u64 {
        self.burst.value.max(1.0) as u64
    }

    pub(super) fn keeps_windows(&self) -> bool {
        self.period
            .is_none_or(|period| self.rate.value * period.as_secs_f64() < self.burst() as f64)
    }
}

/// What a round that ended at `now` says of the burst and the rate, and what it raises.
fn judge<T: Moment>(known: &mut Known<T>, round: &Round<T>, now: T) {
    let (cost, held) = (round.cost.as_secs_f64(), round.held);
    let period = known.period.unwrap_or(ANSWER);
    let windows = known.keeps_windows();
    let burst_owing = known.burst_owing;
    let (burst, rate) = (&mut known.burst, &mut known.rate);
    if round.burst_refused || (round.burst_trial_refused && burst.trying) {
        let accepted = (round.burst_accepted + round.paced_accepted).min(round.burst_sent) as f64;
        // Refused again before a round went unrefused since its last cut: what was accepted
        // of it overstates what the server holds (arrivals spread over what it counts).
        let most = if burst_owing && !burst.trying {
            burst.value * BETA
        } else {
            burst.value
        };
        burst.refused(accepted + 1.0, accepted.max(1.0).min(most), cost, now);
        known.burst_owing = true;
    } else if let Some(out) = round.crowded {
        let out = out as f64;
        burst.refused(out, (out - 1.0).max(1.0).min(burst.value), cost, now);
    } else if burst.trying && round.burst_tried && round.refused.is_none() {
        burst.keep(windows);
    }
    if round.burst_refused || round.crowded.is_some() {
        // What the burst explains shows nothing of the rate. (A refused trial of the burst
        // does not count here: the rate is judged by its own requests' answers.)
        if rate.trying {
            rate.drop_trial();
        }
    } else if round.rate_trial_refused && rate.trying {
        rate.refused(rate.value, rate.kept, cost, now);
    } else if round.paced_refused {
        let to = rate.value * BETA;
        if known.rate_owing {
            rate.cut_again(to, cost, now);
        } else {
            rate.refused(rate.value, to, cost, now);
        }
        known.rate_owing = true;
    } else if rate.trying && round.rate_tried && round.refused.is_none() {
        rate.keep(windows);
    }
    // A refused round raises nothing; an unrefused one has decided every raise on trial.
    if round.refused.is_some() {
        return;
    }
    known.rate_owing = false;
    known.burst_owing = false;
    if held.token {
        if rate.may_raise(now, period) {
            rate.raise();
        }
    } else if held.out || held.reset {
        let from_zero =
            held.reset && rate.value <= 0.0 && burst.max.is_some() && rate.may_raise(now, period);
        if from_zero {
            let one_more = (burst.value.max(1.0).floor() + 1.0) / period.as_secs_f64();
            rate.raise_to(one_more);
        } else if burst.may_raise(now, period) {
            burst.raise();
        }
    }
}
