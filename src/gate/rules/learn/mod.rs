//! How fast a server that publishes no quota lets a key go, learned from what it accepted and
//! refused, by one law for one process and a fleet. Pure and generic over the clock: callers
//! pass the time.
//!
//! **The law.** Between the server's closures (hard where it named them; where it named
//! nothing, the layer's guess ends by the law's next reset, if sooner), requests go by a
//! bucket of at most `burst` tokens, never with more than `burst` out, refilled by `rate`
//! tokens a second and whole at each reset: the end of a refusal's closure, and, while the
//! rate gives less than a burst a `period` (the server keeps windows), a period after a
//! round's first answer. A reset the server did not name is a guess, probed by one request
//! alone where the server never named one. Each round, from a reset to the next, is judged
//! once its answers are in:
//!
//! 1. **A refusal lowers what let the refused request go**, or undoes the raise on trial if
//!    only that raise let it go (to what was accepted, short of the raise, where that is
//!    more than the value kept: the server held it): the burst to what of it was accepted
//!    (counted, as answers come back in any order, and by half at most in one round), the
//!    rate by [`BETA`] of its value (a raise on trial's, if one is: a cut that leaves that no
//!    lower than the value kept undoes the raise), the most out to one less than were out. A
//!    rate tried from zero is refused as such, however many were out: its question is whether
//!    the server keeps windows. A rate refused again before a round went unrefused since its
//!    last cut is that cut's debt (what the overshoot drained or counted lands on the
//!    requests after it): it is cut again and its cost repaid from then, but the least value
//!    refused and the step stay where the cut set them (3). A burst refused again so falls
//!    to what was accepted, [`BETA`] of its value at most: a second count says the first
//!    overstated what the server holds (arrivals spread over a cap in flight are accepted
//!    nearly whole).
//! 2. **A round that held calls back unrefused raises what held them**: the rate where they
//!    waited for its tokens, the burst where they waited for requests out or for a window's
//!    reset. While no burst was refused since it was last above its value, the burst climbs:
//!    the server's ceiling is not found yet. Once one was, calls that waited for a reset with
//!    no rate known raise the rate from zero first (one more than a burst a period, tried
//!    right after the burst, where a refusal costs least): it asks what no burst can, whether
//!    the server keeps windows at all.
//! 3. **Raises search like BIC**: halfway to the least value refused; beyond it by a step
//!    that doubles while kept. A value kept past the least refused forgets it (the limit
//!    rose); while the key keeps windows, raises then double the value until one is
//!    refused, as a slow start does: a refused raise costs a window no time, as the key
//!    waits for its reset anyway. Every refusal the search learns from halves the step and
//!    sets the least value refused (a raise undone and a value lowered alike), and the next
//!    raise beyond the least refused waits at least 2ⁿ periods after n raises undone in a row
//!    (n at most 6), and until the step has repaid what the refusal cost, twice over for each
//!    of them (step × waited ≥ 2ⁿ × value × cost); the cost is how much later than planned
//!    the key could send again.
//! 4. **The period is measured never early**: from when the window a round counts against
//!    began (its first send; a probe's round, the window it probes) to the end of the
//!    earliest instruction its refusals carried (each bounds the same reset), or to the send
//!    of the first request accepted after a refusal without one (which the next round counts
//!    as its first: it took one of the window's requests, and, where it took the last and no
//!    rate refills them, the round ends a period after its answer); the shortest seen is the
//!    tightest. Where the server names no reset, the next is tried halfway between the
//!    longest a refused window was seen to run and the period, while they are more than a
//!    sixteenth of the period apart; a window refused later than the period it went by
//!    lengthens the period past that, by an eighth. The slow start's round is no window (its
//!    ramp can run across several): how long it ran before its refusal counts only while
//!    shorter than the period, and lengthens nothing.
//!
//! Before the first refusal that follows an acceptance nothing binds (the gate's slow start
//! and probes ramp the cold key up); it makes what the key accepted the burst (counted again
//! once its round's answers are in, unless a later round was judged first: what that one
//! taught stands) and tries the rate as in 2. While no rate was refused since the rate was
//! last above it, and no raise of it undone, a round under a rate lasts two bursts' worth of
//! sends (a slow start).

mod known;
mod round;
mod search;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::time::Duration;

use known::Known;
pub(crate) use round::Tag;
use round::{Quantity, Round};
pub(crate) use search::Searched;

use crate::gate::time::Moment;

/// What a refusal of a request the rate let go leaves of the rate's value (a raise on
/// trial's, if one is).
pub(crate) const BETA: f64 = 0.7;
/// The shortest period or wait the law names: no wait is ever empty.
const TICK: Duration = Duration::from_millis(1);
/// How long a call held for an answer waits before it looks again (an answer wakes it sooner);
/// also what a refusal is taken to cost where neither the server nor the layer named a wait,
/// and the patience the law starts with, until the gate passes its own.
const ANSWER: Duration = Duration::from_secs(1);
/// The most ended rounds awaiting their answers: an older one is judged on those it has.
const AWAITED: usize = 16;

/// A round the law judged, and what it left the key with: for the gate to tell (see
/// [`Learn::take_judged`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Judged {
    pub(crate) round: u64,
    pub(crate) sent: u64,
    pub(crate) accepted: u64,
    pub(crate) refused: bool,
    /// How many go at once, and are out at most, as it binds.
    pub(crate) burst: u64,
    pub(crate) burst_search: Searched,
    pub(crate) rate: Searched,
    /// The rate was cut and no round went unrefused since: its next refusal is the cut's debt.
    pub(crate) rate_owing: bool,
    /// The same of the burst.
    pub(crate) burst_owing: bool,
    pub(crate) period: Option<Duration>,
}

/// What one key learned of a server that publishes no quota.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "redis", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct Learn<T> {
    known: Option<Known<T>>,
    round: Round<T>,
    /// Rounds that ended with requests out, each judged once its answers are in.
    ended: VecDeque<Round<T>>,
    /// How long a request may hang before it holds nothing back: a round none of whose
    /// requests has answered by then runs from there.
    patience: Duration,
    /// The round judged last, until taken: what the gate tells, not what the law keeps.
    #[cfg_attr(feature = "redis", serde(skip))]
    judged: Option<Judged>,
}

impl<T: Moment> Default for Learn<T> {
    fn default() -> Self {
        Learn {
            known: None,
            round: Round::new(0, 0.0, None, None),
            ended: VecDeque::new(),
            patience: ANSWER,
            judged: None,
        }
    }
}

impl<T: Moment> Learn<T> {
    /// Whether anything is learned: until then the gate's slow start paces the key.
    pub(crate) fn is_known(&self) -> bool {
        self.known.is_some()
    }

    /// Whether what is learned still paces the key at `now`: a round under way has not ended.
    pub(crate) fn is_current(&self, now: T) -> bool {
        self.current_until(now).is_some()
    }

    /// When the round under way ends, if it has not by `now`.
    pub(crate) fn current_until(&self, now: T) -> Option<T> {
        self.round_end().filter(|end| *end > now)
    }

    /// The round judged last, if one was since this was last asked. (Where one answer
    /// completes several rounds, the last.)
    pub(crate) fn take_judged(&mut self) -> Option<Judged> {
        self.judged.take()
    }

    /// A response carried meters: what they say replaces anything learned.
    pub(crate) fn forget(&mut self) {
        // Rounds go on counting: an answer to a request sent before is no new round's.
        let next = self.round.id + 1;
        *self = Learn::default();
        self.round = Round::new(next, 0.0, None, None);
    }

    /// Whether a request may go at `now` with `out` out: `None` if it may, or not before the
    /// instant returned (sooner, if an answer comes back). `None` while nothing is learned.
    /// Once nothing has been sent for `patience`, what is out holds nothing back: requests
    /// that hang jam the key no longer than that (while others go, each takes its place).
    pub(crate) fn next(&mut self, now: T, out: u64, patience: Duration) -> Option<T> {
        self.known?;
        self.patience = patience;
        self.roll(now);
        let known = self.known?;
        // Held for an answer: until one comes, or until what is out has hung `patience`.
        let hung = self.round.last.map(|last| last.later(patience));
        let out = if hung.is_some_and(|hung| hung <= now) {
            0
        } else {
            out
        };
        let answer = hung.map_or(now.later(ANSWER), |hung| hung.min(now.later(ANSWER)));
        let Some(period) = known.period else {
            // Refused without an instruction, no period known: one at a time till accepted.
            return (out > 0).then_some(answer);
        };
        let end = self.round_end();
        let reset = end.unwrap_or(now.later(period)).max(now.later(TICK));
        let round = &mut self.round;
        if round.refused.is_some() {
            return Some(reset);
        }
        if round.probing.is_some() && !round.probed && out > 0 {
            return Some(answer.min(reset));
        }
        let level = self.level(now);
        let held = &mut self.round.held;
        // What holds the call longest is what binds: an answer comes a round trip away.
        if out >= known.burst() {
            held.out = true;
            return Some(answer.min(reset));
        }
        if level < 1.0 {
            let rate = known.rate.value;
            // A token due a period away or more is none (a rate cut near zero gives one past
            // any clock): the round ends first.
            let due = |rate: f64| {
                Duration::try_from_secs_f64((1.0 - level) / rate)
                    .map_or(period, |due| due.min(period))
            };
            let token = (rate > 0.0)
                .then(|| now.later(due(rate).max(TICK)))
                // A round ends no later than a period after its first answer.
                .filter(|token| *token < reset.min(now.later(period)));
            held.token |= token.is_some();
            held.reset |= token.is_none();
            return Some(token.unwrap_or(reset));
        }
        None
    }

    /// A request goes at `now` with `out` others out: what let it go, for its answer.
    pub(crate) fn sent(&mut self, now: T, out: u64) -> Tag<T> {
        let level = self.level(now);
        let round = &mut self.round;
        round.began.get_or_insert(now);
        round.sent += 1;
        round.out += 1;
        let last = round.last.replace(now);
        let mut tag = Tag {
            round: round.id,
            burst: true,
            trial: None,
            out: out + 1,
            crowded: false,
            at: now,
        };
        let Some(known) = self.known else {
            return tag;
        };
        (round.level, round.at) = ((level - 1.0).max(0.0), Some(now));
        tag.burst = round.burst_sent < round.burst;
        round.burst_sent += u64::from(tag.burst);
        let kept_burst = known.burst.kept.max(1.0) as u64;
        let sooner = last.is_some_and(|last| now.since(last).as_secs_f64() * known.rate.kept < 1.0);
        tag.trial = if known.burst.trying && (out >= kept_burst || round.burst_sent > kept_burst) {
            Some(Quantity::Burst)
        } else if known.rate.trying && !tag.burst && sooner {
            Some(Quantity::Rate)
        } else {
            None
        };
        round.burst_tried |= tag.trial == Some(Quantity::Burst);
        round.rate_tried |= tag.trial == Some(Quantity::Rate);
        // A rate tried from zero asks whether the server keeps windows: a refusal answers
        // that, however many were out.
        let from_zero = tag.trial == Some(Quantity::Rate) && known.rate.kept <= 0.0;
        tag.crowded = !tag.burst && !from_zero && kept_burst > 1 && out + 1 >= kept_burst;
        tag
    }

    /// A request let go as `tag`, at `sent`, was accepted at `now`.
    pub(crate) fn accepted(&mut self, tag: Tag<T>, sent: T, now: T) {
        if tag.round != self.round.id {
            return self.answered_ended(tag, Some(false), now);
        }
        let round = &mut self.round;
        let (Some(known), Some(began)) = (self.known.as_mut(), round.window()) else {
            round.answered.get_or_insert(now);
            return round.answered(tag, false);
        };
        if known.period.is_none() && round.heard.is_some_and(|heard| sent >= heard) {
            // The first acceptance after a refusal without an instruction: the window was
            // over by then, and this request is the first the next one counted.
            known.period = Some(sent.since(began).max(TICK));
            round.out = round.out.saturating_sub(1);
            round.sent = round.sent.saturating_sub(1);
            self.end_round(sent, true);
            self.round.opened_by(sent);
            // Where it took the round's last token and no rate refills the bucket, the round
            // sends nothing of its own to be answered: it is timed by this answer (its window
            // began by then: never early), not by the patience.
            let unrefilled = self.known.is_some_and(|known| known.rate.value <= 0.0);
            if unrefilled && self.level(now) < 1.0 {
                self.round.answered = Some(now);
            }
            return;
        }
        round.answered.get_or_insert(now);
        round.answered(tag, false);
        if round.probing.is_some() && !round.probed {
            // The probe of a guessed reset went through: the window was over by then.
            round.probed = true;
            known.period = known
                .period
                .map(|period| period.min(sent.since(began).max(TICK)));
        }
    }

    /// A request let go as `tag` was refused, heard at `now`, the server naming `until` as the
    /// end of its wait if it named one, the layer closing the key until `closed`. Returns until
    /// when the key stays closed: where the server named nothing, the layer's guess ends by the
    /// law's next reset, where it has one and that is sooner (both are guesses, and the law's
    /// is drawn from what the key accepted).
    pub(crate) fn refused(
        &mut self,
        tag: Tag<T>,
        now: T,
        until: Option<T>,
        closed: Option<T>,
    ) -> Option<T> {
        let windows = self
            .known
            .filter(|known| known.keeps_windows())
            .and_then(|known| known.period);
        // The first refusal teaches only after something was accepted: a key refused from its
        // first request has said nothing of what it accepts (the gate's probe and ramp go on).
        let first = self.known.is_none();
        if first && self.round.burst_accepted == 0 {
            return closed;
        }
        let Some(round) = self.round_mut(tag.round) else {
            return closed;
        };
        round.refused = Some(round.refused.map_or(until, |named| named.max(until)));
        round.heard.get_or_insert(now);
        round.answered.get_or_insert(now);
        round.refused_sent = round.refused_sent.max(Some(tag.at));
        // Where the key keeps windows, the next send was planned for the window's end anyway.
        let planned = windows
            .zip(round.answered)
            .map_or(now, |(period, from)| from.later(period).max(now));
        let reset = self
            .current_until(now)
            .filter(|_| until.is_none() && !first);
        let kept = closed.map(|closed| reset.map_or(closed, |reset| closed.min(reset)));
        let cost = kept.or(until).unwrap_or(now.later(ANSWER)).since(planned);
        if let Some(round) = self.round_mut(tag.round) {
            round.cost = round.cost.max(cost);
            round.cold |= first;
            let (accepted, bound) = (round.burst_accepted, round.window().zip(until));
            if first {
                self.known = Some(Known::new(accepted));
            }
            // Rule 4, at once: a round ended by this instruction may wait long for its last
            // answers, and the key goes by the period meanwhile. (An answer heard before its
            // round began says a wall clock stepped back: the instruction is placed from it.)
            if let (Some(known), Some((began, until))) = (self.known.as_mut(), bound) {
                known.bounded(began.min(now), until);
            }
        }
        if tag.round == self.round.id {
            self.round.answered(tag, true);
        } else {
            self.answered_ended(tag, Some(true), now);
        }
        kept
    }

    /// A request let go as `tag` ended at `now` without an answer: it says nothing of the
    /// limit, nor of when the server counted it, if it did (its round is timed by answers),
    /// but it is no longer out.
    pub(crate) fn abandoned(&mut self, tag: Tag<T>, now: T) {
        if tag.round == self.round.id {
            self.round.out = self.round.out.saturating_sub(1);
        } else {
            self.answered_ended(tag, None, now);
        }
    }

    /// The answer to a request of a round that ended (`None`: none came), which is judged
    /// once all are in.
    fn answered_ended(&mut self, tag: Tag<T>, refused: Option<bool>, now: T) {
        let Some(index) = self.ended.iter().position(|round| round.id == tag.round) else {
            return;
        };
        match refused {
            Some(refused) => self.ended[index].answered(tag, refused),
            None => self.ended[index].out = self.ended[index].out.saturating_sub(1),
        }
        if self.ended[index].out == 0 {
            if let Some(round) = self.ended.remove(index) {
                self.judge(round, now);
            }
        }
    }

    /// The round `id`, under way or ended and awaiting its answers.
    fn round_mut(&mut self, id: u64) -> Option<&mut Round<T>> {
        if id == self.round.id {
            return Some(&mut self.round);
        }
        self.ended.iter_mut().find(|round| round.id == id)
    }

    /// Tokens in the bucket at `now`.
    fn level(&self, now: T) -> f64 {
        let Some(known) = self.known else {
            return 0.0;
        };
        let since = self.round.at.map_or(0.0, |at| now.since(at).as_secs_f64());
        (self.round.level + since * known.rate.value).min(known.burst() as f64)
    }

    /// When the round under way ends: `None` before its first send and answer (but for a
    /// round no token can begin: a period after it opened), or while a refusal without an
    /// instruction waits for an acceptance to measure the period.
    fn round_end(&self) -> Option<T> {
        let known = self.known?;
        if let Some(Some(until)) = self.round.refused {
            return Some(until);
        }
        let round = &self.round;
        let stalled = round.sent == 0 && round.level < 1.0 && known.rate.value <= 0.0;
        let from = round
            .answered
            .or_else(|| round.began.map(|began| began.later(self.patience)))
            .or(round.at.filter(|_| stalled))?;
        let period = known.period?;
        Some(match self.round.refused {
            // No reset named: tried halfway from the longest a window ran, while far apart.
            Some(None) if period.saturating_sub(known.floor()) > period / 16 => {
                from.later((known.floor() + period) / 2)
            }
            _ => from.later(period),
        })
    }

    fn roll(&mut self, now: T) {
        let Some(known) = self.known else {
            return;
        };
        let slow_start = known.rate.max.is_none() && known.rate.undone == 0;
        match self.round_end() {
            Some(end) if end <= now => {
                let refill = self.round.refused.is_some() || known.keeps_windows();
                self.end_round(end, refill);
            }
            _ if slow_start
                && !known.keeps_windows()
                && self.round.refused.is_none()
                && self.round.sent >= 2 * known.burst() =>
            {
                self.end_round(now, false);
            }
            _ => {}
        }
    }

    /// Ends the round under way at `end` and begins the next, with a whole bucket if
    /// `refill`; the round is judged at once if its answers are in, or once they are.
    fn end_round(&mut self, end: T, refill: bool) {
        let round = self.round;
        if round.out == 0 {
            self.judge(round, end);
        }
        let level = match self.known {
            Some(known) if refill => known.burst() as f64,
            _ => self.level(end),
        };
        self.round = Round::new(round.id + 1, level, Some(end), round.last);
        let guessed = !matches!(round.refused, Some(Some(_)));
        if refill && guessed && self.known.is_some_and(|known| !known.named) {
            self.round.probing = round.window();
        }
        if round.out > 0 {
            self.ended.push_back(round);
            if self.ended.len() > AWAITED {
                if let Some(oldest) = self.ended.pop_front() {
                    self.judge(oldest, end);
                }
            }
        }
    }

    fn judge(&mut self, round: Round<T>, now: T) {
        if let Some(known) = self.known.as_mut() {
            self.judged = Some(known.judge(&round, now));
        }
    }
}
