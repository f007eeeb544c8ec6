//! How fast a server that publishes no quota lets a key go, learned from what it accepted and
//! refused, by one law for one process and a fleet. Pure and generic over the clock: callers
//! pass the time.
//!
//! **The law.** Between the server's closures (hard: what it named, or a guess where it named
//! nothing), requests go by a bucket of at most `burst` tokens, never with more than `burst`
//! out, refilled by `rate` tokens a second and whole at each reset: the end of a refusal's
//! closure, and, while the rate gives less than a burst a `period` (the server keeps windows),
//! a period after a round's first answer. A reset the server did not name is a guess, probed
//! by one request alone where the server never named one. Each round, from a reset to the
//! next, is judged once its answers are in:
//!
//! 1. **A refusal lowers what let the refused request go**, or undoes the raise on trial if
//!    only that raise let it go: the burst to what of it was accepted (counted, as answers
//!    come back in any order, and by half at most in one round), the rate by [`BETA`] (to
//!    zero if none beyond the burst was ever accepted: a window its burst spent), the most
//!    out to one less than were out.
//! 2. **A round that held calls back unrefused raises what held them**: the rate where they
//!    waited for its tokens, the burst where they waited for requests out or for a window's
//!    reset; a rate from zero (one more than a burst a period, tried right after the burst,
//!    where a refusal costs least) where that costs less than raising the burst did.
//! 3. **Raises search like BIC**: halfway to the least value refused; beyond it by a step
//!    that doubles while kept. A raise undone halves the step, and the next one beyond the
//!    least refused waits at least a period, and until the step has repaid what the refusal
//!    cost, twice over for each raise undone in a row (step × waited ≥ 2ⁿ × value × cost);
//!    the cost is how much later than planned the key could send again.
//! 4. **The period is measured never early**: from a round's first send to the end of the
//!    earliest instruction its refusals carried (each bounds the same reset), or to the send
//!    of the first request accepted after a refusal without one; the shortest seen is the
//!    tightest. Where the server names no
//!    reset, the next is tried halfway between the longest a refused window was seen to run
//!    and the period.
//!
//! Before the first refusal that follows an acceptance nothing binds (the gate's slow start
//! and probes ramp the cold key up); it makes what the key accepted the burst and tries the
//! rate as in 2. Until the rate is
//! refused, a round under a rate lasts two bursts' worth of sends (a slow start).

use std::collections::VecDeque;
use std::time::Duration;

use crate::gate::time::Moment;

/// What a refusal of a request the kept rate let go leaves of the rate.
pub(crate) const BETA: f64 = 0.7;
/// The shortest period or wait the law names: no wait is ever empty.
const TICK: Duration = Duration::from_millis(1);
/// How long a call held for an answer waits before it looks again (an answer wakes it sooner).
const ANSWER: Duration = Duration::from_secs(1);
/// The most ended rounds awaiting their answers: an older one is judged on those it has.
const AWAITED: usize = 16;

/// What let a request go, as its answer is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tag<T> {
    round: u64,
    /// It took one of the tokens its round began with.
    burst: bool,
    /// Only a raise on trial let it go: of the burst, or of the rate.
    trial: Option<Quantity>,
    /// How many were out when it went, itself included; whether as many as the burst allows.
    out: u64,
    crowded: bool,
    at: T,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Quantity {
    Burst,
    Rate,
}

/// One learned quantity, and the search that raises it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Search<T> {
    value: f64,
    /// The value before the raise on trial, which is on while `trying`.
    kept: f64,
    trying: bool,
    /// The least value refused since the value was last above it.
    max: Option<f64>,
    step: f64,
    least: f64,
    /// When it was last lowered, what that refusal cost (seconds), raises undone in a row.
    lowered: Option<T>,
    cost: f64,
    undone: u32,
}

impl<T: Moment> Search<T> {
    fn new(value: f64, least: f64) -> Self {
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
        }
    }

    /// Whether it has closed in on the least value refused: a raise then goes beyond it.
    fn converged(&self) -> bool {
        // From zero there is nothing to halve: the one value tried is tried again, later.
        self.max.is_some_and(|max| {
            self.kept <= 0.0 || max - self.kept <= self.least.max(self.kept / 16.0)
        })
    }

    fn may_raise(&self, now: T, period: Duration) -> bool {
        let doubled = f64::from(1u32 << self.undone.min(16));
        let repaid = |lowered: T| {
            let waited = now.since(lowered);
            waited >= period * (1 << self.undone.min(6))
                && waited.as_secs_f64() * self.step.max(self.least)
                    >= doubled * self.value * self.cost
        };
        !self.trying && (!self.converged() || self.lowered.is_none_or(repaid))
    }

    fn raise(&mut self) {
        let to = match self.max {
            Some(max) if !self.converged() => (self.value + max) / 2.0,
            _ => self.value + self.step,
        };
        (self.kept, self.value, self.trying) = (self.value, to.max(self.value + self.least), true);
    }

    /// A raise to `to`, from which the search steps on.
    fn raise_to(&mut self, to: f64) {
        self.step = to - self.value;
        (self.kept, self.value, self.trying) = (self.value, to, true);
    }

    fn keep(&mut self) {
        (self.kept, self.trying, self.undone) = (self.value, false, 0);
        if self.max.is_some_and(|max| max <= self.value) {
            self.max = None;
        }
        if self.max.is_none() {
            self.step *= 2.0;
        }
    }

    /// The raise on trial showed nothing (it never bound): dropped.
    fn drop_trial(&mut self) {
        (self.value, self.trying) = (self.kept, false);
    }

    /// Refused at `refused`, of which `to` went: a raise on trial is undone if what went was
    /// no less than the value kept; otherwise the value falls to `to`, by half at most.
    fn refused(&mut self, refused: f64, to: f64, cost: f64, now: T) {
        let undo = self.trying && to >= self.kept;
        let value = if undo {
            self.kept
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
        (self.value, self.kept, self.trying) = (value, value, false);
        self.step = (self.step / 2.0).max(self.least);
        (self.lowered, self.cost) = (Some(now), cost);
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Known<T> {
    burst: Search<T>,
    /// Tokens a second between resets; zero where the server keeps windows.
    rate: Search<T>,
    /// A rate beyond the burst was accepted: a refusal beyond it then cuts it, not zeroes it.
    rate_proven: bool,
    /// `None` until a refusal without an instruction is followed by an acceptance.
    period: Option<Duration>,
    /// The server named a reset: the period is its, not a guess to probe.
    named: bool,
    /// The longest a window was seen to run, a request refused that long after it began.
    floor: Duration,
}

impl<T: Moment> Known<T> {
    fn burst(&self) -> u64 {
        self.burst.value.max(1.0) as u64
    }

    fn keeps_windows(&self) -> bool {
        self.period
            .is_none_or(|period| self.rate.value * period.as_secs_f64() < self.burst() as f64)
    }
}

/// What held calls back in a round.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Held {
    out: bool,
    token: bool,
    reset: bool,
}

/// One round of sends, from a reset (or, under a rate, the last round's end) to the next.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Round<T> {
    id: u64,
    began: Option<T>,
    /// When its first answer came: a window it counts against began by then.
    answered: Option<T>,
    sent: u64,
    out: u64,
    /// Tokens as of `at`; those it began with (that many go at once) and how many went.
    level: f64,
    at: Option<T>,
    burst: u64,
    burst_sent: u64,
    burst_accepted: u64,
    burst_refused: bool,
    paced_accepted: u64,
    paced_refused: bool,
    /// The fewest out at a refusal of a request that went with the burst's count out.
    crowded: Option<u64>,
    /// Requests only a raise on trial let go, and whether one was refused.
    trial_sent: u64,
    trial_refused: bool,
    /// The latest instruction its refusals named (`Some(None)`: refused, none named); when
    /// the first was heard; the latest refused send; what they cost.
    refused: Option<Option<T>>,
    /// The earliest instruction: each bounds the same window's end, never early.
    earliest: Option<T>,
    heard: Option<T>,
    refused_sent: Option<T>,
    cost: Duration,
    held: Held,
    /// The slow start's round, before the first refusal.
    cold: bool,
    /// Where its reset was a guess: when the window it probes began, and whether its probe
    /// (its first request, sent alone) was accepted.
    probing: Option<T>,
    probed: bool,
    last: Option<T>,
}

impl<T: Moment> Round<T> {
    fn new(id: u64, level: f64, at: Option<T>, last: Option<T>) -> Self {
        Round {
            id,
            began: None,
            answered: None,
            sent: 0,
            out: 0,
            level,
            at,
            burst: level as u64,
            burst_sent: 0,
            burst_accepted: 0,
            burst_refused: false,
            paced_accepted: 0,
            paced_refused: false,
            crowded: None,
            trial_sent: 0,
            trial_refused: false,
            refused: None,
            earliest: None,
            heard: None,
            refused_sent: None,
            cost: Duration::ZERO,
            held: Held::default(),
            cold: false,
            probing: None,
            probed: false,
            last,
        }
    }

    fn answered(&mut self, tag: Tag<T>, refused: bool) {
        self.out = self.out.saturating_sub(1);
        let trial = tag.trial.is_some();
        self.trial_refused |= trial && refused;
        if tag.burst {
            self.burst_accepted += u64::from(!refused);
            self.burst_refused |= refused && !trial;
        } else if refused && tag.crowded {
            self.crowded = Some(self.crowded.map_or(tag.out, |out| out.min(tag.out)));
        } else {
            self.paced_accepted += u64::from(!refused);
            self.paced_refused |= refused && !trial;
        }
    }

    /// When the window it counts against began, at the latest it can tell.
    fn window(&self) -> Option<T> {
        self.probing.filter(|_| !self.probed).or(self.began)
    }
}

/// What one key learned of a server that publishes no quota.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Learn<T> {
    known: Option<Known<T>>,
    round: Round<T>,
    /// Rounds that ended with requests out, each judged once its answers are in.
    ended: VecDeque<Round<T>>,
    /// How long a request may hang before it holds nothing back: a round none of whose
    /// requests has answered by then runs from there.
    patience: Duration,
}

impl<T: Moment> Default for Learn<T> {
    fn default() -> Self {
        Learn {
            known: None,
            round: Round::new(0, 0.0, None, None),
            ended: VecDeque::new(),
            patience: ANSWER,
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
        self.round_end().is_some_and(|end| end > now)
    }

    /// A response carried meters: what they say replaces anything learned.
    pub(crate) fn forget(&mut self) {
        *self = Learn::default();
    }

    /// Whether a request may go at `now` with `out` out: `None` if it may, or not before the
    /// instant returned (sooner, if an answer comes back). `None` while nothing is learned. A
    /// request out longer than `patience` holds no other back: one that hangs jams nothing.
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
        if level < 1.0 {
            let rate = known.rate.value;
            let token = (rate > 0.0)
                .then(|| now.later(Duration::from_secs_f64((1.0 - level) / rate).max(TICK)))
                .filter(|token| end.is_none_or(|end| *token < end));
            held.token |= token.is_some();
            held.reset |= token.is_none();
            return Some(token.unwrap_or(reset));
        }
        if out >= known.burst() {
            held.out = true;
            return Some(answer.min(reset));
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
        round.trial_sent += u64::from(tag.trial.is_some());
        tag.crowded = !tag.burst && kept_burst > 1 && out + 1 >= kept_burst;
        tag
    }

    /// A request let go as `tag`, at `sent`, was accepted at `now`.
    pub(crate) fn accepted(&mut self, tag: Tag<T>, sent: T, now: T) {
        if tag.round != self.round.id {
            return self.answered_ended(tag, false, now);
        }
        let round = &mut self.round;
        round.answered.get_or_insert(now);
        round.answered(tag, false);
        let (Some(known), Some(began)) = (self.known.as_mut(), round.window()) else {
            return;
        };
        if round.probing.is_some() && !round.probed {
            // The probe of a guessed reset went through: the window was over by then.
            round.probed = true;
            known.period = known
                .period
                .map(|period| period.min(sent.since(began).max(TICK)));
        }
        if known.period.is_none() && round.heard.is_some_and(|heard| sent >= heard) {
            // The first acceptance after a refusal without an instruction: likewise.
            known.period = Some(sent.since(began).max(TICK));
            self.end_round(sent, true);
        }
    }

    /// A request let go as `tag` was refused, heard at `now`, the server naming `until` as the
    /// end of its wait if it named one, the key closed until `closed`.
    pub(crate) fn refused(&mut self, tag: Tag<T>, now: T, until: Option<T>, closed: Option<T>) {
        let windows = self
            .known
            .filter(|known| known.keeps_windows())
            .and_then(|known| known.period);
        // The first refusal teaches only after something was accepted: a key refused from its
        // first request has said nothing of what it accepts (the gate's probe and ramp go on).
        let first = self.known.is_none();
        if first && self.round.burst_accepted == 0 {
            return;
        }
        let round = if tag.round == self.round.id {
            &mut self.round
        } else if let Some(round) = self.ended.iter_mut().find(|round| round.id == tag.round) {
            round
        } else {
            return;
        };
        round.refused = Some(round.refused.map_or(until, |named| named.max(until)));
        if let Some(until) = until {
            round.earliest = Some(round.earliest.map_or(until, |earliest| earliest.min(until)));
        }
        round.heard.get_or_insert(now);
        round.answered.get_or_insert(now);
        round.refused_sent = round.refused_sent.max(Some(tag.at));
        // Where the key keeps windows, the next send was planned for the window's end anyway.
        let planned = windows
            .zip(round.answered)
            .map_or(now, |(period, from)| from.later(period).max(now));
        let closed = closed.or(until).unwrap_or(now.later(ANSWER));
        round.cost = round.cost.max(closed.since(planned));
        if first {
            round.cold = true;
            self.known = Some(Known {
                burst: Search::new(round.burst_accepted.max(1) as f64, 1.0),
                rate: Search::new(0.0, 0.0),
                rate_proven: false,
                period: None,
                named: false,
                floor: Duration::ZERO,
            });
        }
        if tag.round == self.round.id {
            self.round.answered(tag, true);
        } else {
            self.answered_ended(tag, true, now);
        }
    }

    /// A request let go as `tag` ended at `now` without an answer: it says nothing of the
    /// limit, but it is no longer out.
    pub(crate) fn abandoned(&mut self, tag: Tag<T>, now: T) {
        if tag.round == self.round.id {
            self.round.out = self.round.out.saturating_sub(1);
            self.round.answered.get_or_insert(now);
        } else if let Some(index) = self.ended.iter().position(|round| round.id == tag.round) {
            self.ended[index].out = self.ended[index].out.saturating_sub(1);
            if self.ended[index].out == 0 {
                if let Some(round) = self.ended.remove(index) {
                    self.judge(round, now);
                }
            }
        }
    }

    fn answered_ended(&mut self, tag: Tag<T>, refused: bool, now: T) {
        let Some(index) = self.ended.iter().position(|round| round.id == tag.round) else {
            return;
        };
        self.ended[index].answered(tag, refused);
        if self.ended[index].out == 0 {
            if let Some(round) = self.ended.remove(index) {
                self.judge(round, now);
            }
        }
    }

    /// Tokens in the bucket at `now`.
    fn level(&self, now: T) -> f64 {
        let Some(known) = self.known else {
            return 0.0;
        };
        let since = self.round.at.map_or(0.0, |at| now.since(at).as_secs_f64());
        (self.round.level + since * known.rate.value).min(known.burst() as f64)
    }

    /// When the round under way ends: `None` before its first send and answer, or while a
    /// refusal without an instruction waits for an acceptance to measure the period.
    fn round_end(&self) -> Option<T> {
        let known = self.known?;
        if let Some(Some(until)) = self.round.refused {
            return Some(until);
        }
        let from = self
            .round
            .answered
            .or_else(|| self.round.began.map(|began| began.later(self.patience)))?;
        let period = known.period?;
        Some(match self.round.refused {
            // No reset named: tried halfway from the longest a window ran, while far apart.
            Some(None) if period.saturating_sub(known.floor) > period / 16 => {
                from.later((known.floor + period) / 2)
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
        let Some(known) = self.known.as_mut() else {
            return;
        };
        if let (Some(until), Some(began)) = (round.earliest, round.began) {
            let measured = until.since(began).max(TICK);
            known.period = Some(known.period.map_or(measured, |period| period.min(measured)));
            known.named = true;
        }
        if let (Some(refused), Some(began)) = (round.refused_sent, round.window()) {
            known.floor = known.floor.max(refused.since(began));
            if known.period.is_some_and(|period| period <= known.floor) {
                // Refused later than the period it went by: the period was too short.
                known.period = Some(known.floor + known.floor / 8);
            }
        }
        if round.cold {
            known.burst = Search::new(round.burst_accepted.max(1) as f64, 1.0);
            if let Some(period) = known.period {
                known
                    .rate
                    .raise_to((known.burst() + 1) as f64 / period.as_secs_f64());
            }
        } else if round.probing.is_none() || round.probed {
            // (A probe refused says only that the window was still on.)
            judge(known, &round, now);
        }
    }
}

/// What a round that ended at `now` says of the burst and the rate, and what it raises.
fn judge<T: Moment>(known: &mut Known<T>, round: &Round<T>, now: T) {
    let (cost, held) = (round.cost.as_secs_f64(), round.held);
    let period = known.period.unwrap_or(ANSWER);
    let (burst, rate) = (&mut known.burst, &mut known.rate);
    let tried = round.trial_sent > 0;
    if round.burst_refused || (round.trial_refused && burst.trying) {
        let accepted = (round.burst_accepted + round.paced_accepted).min(round.burst_sent) as f64;
        burst.refused(
            accepted + 1.0,
            accepted.max(1.0).min(burst.value),
            cost,
            now,
        );
    } else if let Some(out) = round.crowded {
        let out = out as f64;
        burst.refused(out, (out - 1.0).max(1.0).min(burst.value), cost, now);
    } else if burst.trying && tried && round.refused.is_none() {
        burst.keep();
    }
    if round.burst_refused || round.crowded.is_some() || (round.trial_refused && burst.trying) {
        // What the burst explains shows nothing of the rate.
        if rate.trying {
            rate.drop_trial();
        }
    } else if round.trial_refused && rate.trying {
        rate.refused(rate.value, rate.kept, cost, now);
    } else if round.paced_refused {
        let to = if known.rate_proven {
            rate.value * BETA
        } else {
            0.0
        };
        rate.refused(rate.value, to, cost, now);
    } else if rate.trying && tried && round.refused.is_none() {
        rate.keep();
    }
    known.rate_proven |= round.paced_accepted > 0 && rate.value > 0.0 && !rate.trying;
    // A raise that never bound showed nothing: what did bind may be raised instead.
    if burst.trying && !tried && held.token {
        burst.drop_trial();
    }
    if rate.trying && !tried && !held.token && (held.out || held.reset) {
        rate.drop_trial();
    }
    if round.refused.is_some() || burst.trying || rate.trying {
        return;
    }
    if held.token {
        if rate.may_raise(now, period) {
            rate.raise();
        }
    } else if held.out || held.reset {
        let from_zero = held.reset && rate.value <= 0.0 && rate.may_raise(now, period);
        if burst.may_raise(now, period) && !(from_zero && burst.cost > rate.cost) {
            burst.raise();
        } else if from_zero {
            let one_more = (burst.value.max(1.0).floor() + 1.0) / period.as_secs_f64();
            rate.raise_to(one_more);
        }
    }
}
