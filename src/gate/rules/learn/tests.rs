//! The law against servers of each shape, driven request by request on a simulated clock: a
//! client with calls always waiting sends whenever the law lets it, each answer coming a round
//! trip of 20–80 ms later (drawn from a seed), each wait a server names sent as `Retry-After`
//! does (whole seconds, rounded up, read from when the answer came) and kept as the gate keeps
//! it, and, until the law knows anything, one more out for each acceptance (the gate's slow
//! start stands in so). Each bound holds over seeds 1–10.

use std::time::{Duration, SystemTime};

use super::*;

const MS: Duration = Duration::from_millis(1);
const SECOND: Duration = Duration::from_secs(1);
const PATIENCE: Duration = Duration::from_secs(10);

fn start() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

/// What a server says of a request that arrives at `at` and, if accepted, is served until
/// `done`: `None` if accepted, else how long it names to wait, if it names a wait.
type Verdict = Option<Option<Duration>>;

trait Server {
    fn answer(&mut self, at: SystemTime, done: SystemTime) -> Verdict;
}

/// `limit` a window, windows of `window` from the start, the limit becoming `then` at `from`.
struct Windows {
    limit: u64,
    window: Duration,
    then: (SystemTime, u64),
    named: bool,
    counted: (u128, u64),
}

impl Windows {
    fn new(limit: u64, named: bool) -> Self {
        Windows {
            limit,
            window: SECOND,
            then: (start() + Duration::from_secs(3600), limit),
            named,
            counted: (0, 0),
        }
    }
}

impl Server for Windows {
    fn answer(&mut self, at: SystemTime, _: SystemTime) -> Verdict {
        let since = at.since(start());
        let index = since.as_nanos() / self.window.as_nanos();
        if self.counted.0 != index {
            self.counted = (index, 0);
        }
        let limit = if at >= self.then.0 {
            self.then.1
        } else {
            self.limit
        };
        if self.counted.1 < limit {
            self.counted.1 += 1;
            return None;
        }
        let end = start() + self.window * u32::try_from(index + 1).unwrap();
        Some(self.named.then_some(end.since(at)))
    }
}

/// A bucket of `burst` tokens refilled at `rate` a second; a refusal names nothing.
struct Bucket {
    burst: f64,
    rate: f64,
    level: f64,
    at: SystemTime,
}

impl Bucket {
    fn new(burst: f64, rate: f64) -> Self {
        Bucket {
            burst,
            rate,
            level: burst,
            at: start(),
        }
    }
}

impl Server for Bucket {
    fn answer(&mut self, at: SystemTime, _: SystemTime) -> Verdict {
        self.level = (self.level + at.since(self.at).as_secs_f64() * self.rate).min(self.burst);
        self.at = at;
        if self.level >= 1.0 {
            self.level -= 1.0;
            return None;
        }
        Some(None)
    }
}

/// At most `cap` requests being served at once; a refusal names nothing.
struct InFlight {
    cap: usize,
    serving: Vec<SystemTime>,
}

impl Server for InFlight {
    fn answer(&mut self, at: SystemTime, done: SystemTime) -> Verdict {
        self.serving.retain(|until| *until > at);
        if self.serving.len() < self.cap {
            self.serving.push(done);
            return None;
        }
        Some(None)
    }
}

/// What a run sent, and what of it was accepted and refused, counted from `from`.
#[derive(Debug, Default)]
struct Run {
    accepted: u64,
    refused: u64,
}

/// Drives `law` against `server` for `span`, counting from `from` on.
fn drive(
    law: &mut Learn<SystemTime>,
    server: &mut impl Server,
    seed: u64,
    span: Duration,
    from: Duration,
) -> Run {
    let mut draw = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut round_trip = move || {
        draw ^= draw << 13;
        draw ^= draw >> 7;
        draw ^= draw << 17;
        Duration::from_millis(20 + draw % 61)
    };
    let (mut now, end, counted) = (start(), start() + span, start() + from);
    let mut out: Vec<(SystemTime, SystemTime, Tag<SystemTime>, Verdict)> = Vec::new();
    let mut closed = start();
    let mut slow_start = 1;
    let mut run = Run::default();
    while now < end {
        out.sort_by_key(|(answered, ..)| *answered);
        while out.first().is_some_and(|(answered, ..)| *answered <= now) {
            let (answered, sent, tag, verdict) = out.remove(0);
            let tally = if answered >= counted { 1 } else { 0 };
            match verdict {
                None => {
                    slow_start += 1;
                    run.accepted += tally;
                    law.accepted(tag, sent, answered);
                }
                Some(wait) => {
                    let seconds = |wait: Duration| {
                        Duration::from_secs(wait.as_nanos().div_ceil(1_000_000_000) as u64)
                    };
                    let until = wait.map(|wait| answered + seconds(wait));
                    run.refused += tally;
                    closed = closed.max(until.unwrap_or(answered));
                    law.refused(tag, answered, until, until);
                }
            }
        }
        let mut held = None;
        while now >= closed && held.is_none() {
            let count = out.len() as u64;
            held = law.next(now, count, PATIENCE);
            if held.is_some() {
                break;
            }
            if !law.is_known() && count >= slow_start {
                break;
            }
            if let Some(known) = law.known {
                assert!(count < known.burst(), "no more out than the burst");
            }
            // Against limits of tens, a thousand out is a law that lost hold of the key.
            assert!(count < 1_000, "seed {seed}: {count} out at once");
            let tag = law.sent(now, count);
            let trip = round_trip();
            let verdict = server.answer(now + trip / 2, now + trip);
            out.push((now + trip, now, tag, verdict));
        }
        let next = [
            held,
            out.first().map(|(answered, ..)| *answered),
            Some(closed),
        ];
        let next = next.into_iter().flatten().filter(|at| *at > now).min();
        now = next.unwrap_or(now + MS);
    }
    run
}

fn each_seed(check: impl Fn(u64)) {
    (1..=10).for_each(check);
}

#[test]
fn on_fixed_windows_that_name_their_reset_it_sends_the_limit_each_window_and_seldom_more() {
    each_seed(|seed| {
        let mut law = Learn::default();
        let run = drive(
            &mut law,
            &mut Windows::new(10, true),
            seed,
            80 * SECOND,
            20 * SECOND,
        );
        // Of 60 windows of 10 from 20 s on: the wait named in whole seconds hides up to a
        // second of where each window ends, which the law measures never early. Its rounds
        // drift across the clock's windows: one that starts as a window ends is accepted
        // beyond the limit, which reads as a limit that rose, and the doubling after it
        // overshoots once, by up to the burst.
        assert!(run.accepted >= 450, "seed {seed}: {run:?}");
        assert!(run.refused <= 25, "seed {seed}: {run:?}");
    });
}

#[test]
fn on_fixed_windows_that_name_nothing_it_finds_the_limit_and_the_reset() {
    each_seed(|seed| {
        let mut law = Learn::default();
        let run = drive(
            &mut law,
            &mut Windows::new(10, false),
            seed,
            80 * SECOND,
            20 * SECOND,
        );
        assert!(run.accepted >= 470, "seed {seed}: {run:?}");
        assert!(run.refused <= 16, "seed {seed}: {run:?}");
    });
}

#[test]
fn on_a_token_bucket_it_paces_at_the_refill_rate() {
    each_seed(|seed| {
        let mut law = Learn::default();
        let run = drive(
            &mut law,
            &mut Bucket::new(5.0, 10.0),
            seed,
            80 * SECOND,
            20 * SECOND,
        );
        assert!(
            run.accepted >= 570,
            "seed {seed}: 0.95 of 10 a second: {run:?}"
        );
        assert!(run.refused <= 12, "seed {seed}: {run:?}");
    });
}

#[test]
fn on_a_leaky_bucket_without_burst_it_paces_one_at_a_time() {
    each_seed(|seed| {
        let mut law = Learn::default();
        let run = drive(
            &mut law,
            &mut Bucket::new(1.0, 10.0),
            seed,
            80 * SECOND,
            20 * SECOND,
        );
        // With no burst to spend, each refusal halts it a while: 0.4 of the rate at worst.
        assert!(run.accepted >= 240, "seed {seed}: {run:?}");
        assert!(run.refused <= 15, "seed {seed}: {run:?}");
    });
}

#[test]
fn under_a_cap_on_requests_in_flight_it_keeps_that_many_out() {
    each_seed(|seed| {
        let mut law = Learn::default();
        let mut cap = InFlight {
            cap: 3,
            serving: Vec::new(),
        };
        let run = drive(&mut law, &mut cap, seed, 80 * SECOND, 20 * SECOND);
        // Three served at once for half a round trip of 50 ms on average: 120 a second at
        // most, and 60 with three out.
        assert!(run.accepted >= 2_100, "seed {seed}: {run:?}");
        assert!(run.refused * 30 <= run.accepted, "seed {seed}: {run:?}");
    });
}

#[test]
fn a_limit_that_drops_is_followed_down() {
    each_seed(|seed| {
        let mut law = Learn::default();
        let mut server = Windows::new(20, true);
        server.then = (start() + 20 * SECOND, 5);
        let run = drive(&mut law, &mut server, seed, 60 * SECOND, 30 * SECOND);
        // Counted from 10 s after the drop: 30 windows of 5.
        assert!(run.accepted >= 110, "seed {seed}: {run:?}");
        assert!(run.refused <= 8, "seed {seed}: {run:?}");
    });
}

#[test]
fn a_limit_that_rises_is_followed_up() {
    each_seed(|seed| {
        let mut law = Learn::default();
        let mut server = Windows::new(5, true);
        server.then = (start() + 20 * SECOND, 40);
        let run = drive(&mut law, &mut server, seed, 80 * SECOND, 40 * SECOND);
        // Counted from 20 s after the rise: 40 windows of 40, the first 400 at the old limit.
        assert!(run.accepted >= 1_100, "seed {seed}: {run:?}");
        assert!(run.refused <= 100, "seed {seed}: {run:?}");
    });
}

/// `law` lets a request go at `now` with `out` out: what let it go.
fn go(law: &mut Learn<SystemTime>, now: SystemTime, out: u64) -> Tag<SystemTime> {
    assert_eq!(law.next(now, out, PATIENCE), None, "held with {out} out");
    law.sent(now, out)
}

/// A law that learned a burst of five: five accepted, the sixth refused until a second on.
fn learned_five() -> (Learn<SystemTime>, SystemTime) {
    let mut law = Learn::default();
    let now = start();
    let tags: Vec<_> = (0..6).map(|out| go(&mut law, now, out)).collect();
    for tag in &tags[..5] {
        law.accepted(*tag, now, now + 20 * MS);
    }
    law.refused(
        tags[5],
        now + 20 * MS,
        Some(now + SECOND),
        Some(now + SECOND),
    );
    (law, now + SECOND)
}

#[test]
fn nothing_binds_before_a_refusal_that_follows_an_acceptance() {
    let now = start();
    let mut law = Learn::default();
    let tag = go(&mut law, now, 0);
    law.refused(tag, now + 20 * MS, Some(now + SECOND), Some(now + SECOND));
    assert!(
        !law.is_known(),
        "refused from the first request: nothing learned"
    );
    assert_eq!(law.next(now + 2 * SECOND, 0, PATIENCE), None);
    let (law, _) = learned_five();
    assert!(law.is_known());
}

#[test]
fn a_round_ended_by_a_refusal_paces_the_key_until_the_instruction_ends_and_not_at_it() {
    let (law, reset) = learned_five();
    assert_eq!(law.current_until(reset - MS), Some(reset));
    assert!(law.is_current(reset - MS));
    assert!(!law.is_current(reset), "over at the instant it ends");
}

#[test]
fn the_learned_burst_goes_at_once_at_the_reset_and_no_more() {
    let (mut law, reset) = learned_five();
    for out in 0..5 {
        go(&mut law, reset, out);
    }
    assert!(law.next(reset, 5, PATIENCE).is_some(), "the sixth is held");
    assert_eq!(law.known.map(|known| known.period), Some(Some(SECOND)));
}

#[test]
fn a_refusal_of_the_burst_lowers_it_to_what_was_accepted() {
    let (mut law, reset) = learned_five();
    let tags: Vec<_> = (0..5).map(|out| go(&mut law, reset, out)).collect();
    let heard = reset + 20 * MS;
    for tag in &tags[..3] {
        law.accepted(*tag, reset, heard);
    }
    for tag in &tags[3..] {
        law.refused(*tag, heard, Some(reset + SECOND), Some(reset + SECOND));
    }
    let next = reset + SECOND;
    for out in 0..3 {
        go(&mut law, next, out);
    }
    assert!(law.next(next, 3, PATIENCE).is_some(), "the fourth is held");
}

#[test]
fn a_request_that_hangs_holds_nothing_beyond_patience() {
    let (mut law, reset) = learned_five();
    for out in 0..5 {
        go(&mut law, reset, out);
    }
    let held = law.next(reset + MS, 5, PATIENCE).unwrap();
    assert!(
        held <= reset + PATIENCE,
        "held for an answer at most the patience"
    );
    assert_eq!(
        law.next(reset + PATIENCE, 5, PATIENCE),
        None,
        "hung: they hold nothing"
    );
}

#[test]
fn a_round_ended_with_requests_out_is_judged_once_their_answers_are_in() {
    let (mut law, reset) = learned_five();
    let tags: Vec<_> = (0..5).map(|out| go(&mut law, reset, out)).collect();
    law.accepted(tags[0], reset, reset + 20 * MS);
    // The round ends a period after its first answer, four requests still out.
    let late = reset + 2 * SECOND;
    assert_eq!(law.next(late, 4, PATIENCE), None);
    law.accepted(tags[1], reset, late);
    law.refused(tags[2], late, None, None);
    law.refused(tags[3], late, None, None);
    assert_eq!(
        law.known.map(|known| known.burst()),
        Some(5),
        "one answer is still out"
    );
    law.abandoned(tags[4], late);
    // Two of the burst accepted: it falls by half at most.
    assert_eq!(law.known.map(|known| known.burst()), Some(2));
}

/// A request that ended without an answer (its call was dropped, a timeout cut it) says
/// nothing of when the server counted it, if it ever did: the round's window is bounded by its
/// first answer, never early.
#[test]
fn a_request_that_ends_unanswered_does_not_time_the_round() {
    let (mut law, reset) = learned_five();
    let tags: Vec<_> = (0..5).map(|out| go(&mut law, reset, out)).collect();
    law.abandoned(tags[0], reset + 10 * MS);
    let answered = reset + 500 * MS;
    for tag in &tags[1..] {
        law.accepted(*tag, reset, answered);
    }
    assert_eq!(law.current_until(answered), Some(answered + SECOND));
}

#[test]
fn a_meter_makes_what_was_learned_moot() {
    let (mut law, reset) = learned_five();
    law.forget();
    assert!(!law.is_known());
    assert_eq!(law.next(reset - MS, 9, PATIENCE), None);
}

/// After [`learned_five`], the round begun at its reset, with the burst raised to `burst` on
/// trial and the rate raised from `kept` to `to` on trial, where given (no rate otherwise: the
/// one the first refusal put on trial is dropped); the round's bucket holds the whole burst.
fn on_trial(burst: Option<f64>, rate: Option<(f64, f64)>) -> (Learn<SystemTime>, SystemTime) {
    let (mut law, reset) = learned_five();
    // Judges the first round, and begins the next at the reset.
    law.next(reset, 0, PATIENCE);
    let known = law.known.as_mut().expect("five learned");
    if let Some(to) = burst {
        known.burst.raise_to(to);
    }
    let (kept, to) = rate.unwrap_or_default();
    known.rate = super::search::Search::new(kept, 0.0);
    if rate.is_some() {
        known.rate.raise_to(to);
    }
    let whole = known.burst();
    (law.round.burst, law.round.level) = (whole, whole as f64);
    (law, reset)
}

/// A rate cut near zero (halved by refusal after refusal) gives a token so far off that it is
/// no time at all: the call waits for the round's reset, and nothing panics converting it.
#[test]
fn a_rate_near_zero_holds_a_call_to_the_reset_without_overflow() {
    let (mut law, reset) = on_trial(None, Some((1e-320, 1e-320)));
    for out in 0..5 {
        go(&mut law, reset, out);
    }
    let end = law.current_until(reset).expect("a round under way");
    assert_eq!(law.next(reset, 0, PATIENCE), Some(end));
}

#[test]
fn without_a_raise_on_trial_no_request_is_a_trial() {
    let (mut law, reset) = on_trial(None, None);
    let trials: Vec<_> = (0..6).map(|out| law.sent(reset, out).trial).collect();
    assert_eq!(trials, [None; 6]);
    assert!(!law.round.burst_tried && !law.round.rate_tried);
}

#[test]
fn a_raise_of_the_burst_on_trial_lets_go_what_is_beyond_the_burst_kept() {
    let expected = [None, None, None, None, None, Some(Quantity::Burst)];
    // Together: the sixth out.
    let (mut law, reset) = on_trial(Some(6.0), None);
    let together: Vec<_> = (0..6).map(|out| law.sent(reset, out).trial).collect();
    assert_eq!(together, expected);
    assert!(law.round.burst_tried);
    // One at a time: the sixth of the round.
    let (mut law, reset) = on_trial(Some(6.0), None);
    let one_by_one: Vec<_> = (0..6).map(|_| law.sent(reset, 0).trial).collect();
    assert_eq!(one_by_one, expected);
}

#[test]
fn a_raise_of_the_rate_on_trial_lets_go_what_comes_sooner_than_the_rate_kept_allows() {
    let (mut law, reset) = on_trial(None, Some((4.0, 8.0)));
    for out in 0..5 {
        assert_eq!(law.sent(reset, out).trial, None, "the burst");
    }
    // A token of the kept rate is a quarter of a second.
    let quarter = reset + 250 * MS;
    assert_eq!(law.sent(quarter, 0).trial, None, "as the kept rate allows");
    assert!(!law.round.rate_tried);
    let sooner = quarter + 100 * MS;
    assert_eq!(law.sent(sooner, 0).trial, Some(Quantity::Rate));
    assert!(law.round.rate_tried && !law.round.burst_tried);
}

#[test]
fn a_round_no_token_can_begin_ends_a_period_after_it_opened_and_no_other_does_unsent() {
    // A whole bucket, nothing sent: the round has no end till it sends and hears.
    let (mut law, reset) = on_trial(None, None);
    assert_eq!(law.current_until(reset), None);
    // A token left, no rate: the round can still begin.
    law.round.level = 1.0;
    assert_eq!(law.current_until(reset), None);
    // Less than a token and no rate: nothing could ever begin it.
    law.round.level = 0.5;
    assert_eq!(law.current_until(reset), Some(reset + SECOND));
}

/// How long after its first answer a round refused without an instruction ends, the period
/// a second, the longest a refused window ran `floor` and the slow start's `cold_floor`.
fn refused_round_ends(floor: Duration, cold_floor: Duration) -> Option<Duration> {
    let (mut law, reset) = on_trial(None, None);
    let known = law.known.as_mut().expect("five learned");
    (known.period, known.floor, known.cold_floor) = (Some(SECOND), floor, cold_floor);
    (law.round.refused, law.round.answered) = (Some(None), Some(reset));
    law.current_until(reset)
        .map(|end| end.duration_since(reset).unwrap())
}

#[test]
fn a_refusal_naming_no_reset_tries_the_next_halfway_from_the_longest_window_seen_if_far() {
    let end = |floor: Duration| refused_round_ends(floor, Duration::ZERO);
    assert_eq!(end(200 * MS), Some(600 * MS), "halfway from 0.2 s to 1 s");
    // Within a sixteenth of the period: the period itself.
    assert_eq!(end(960 * MS), Some(SECOND));
    assert_eq!(end(SECOND - SECOND / 16), Some(SECOND));
    assert_ne!(end(SECOND - SECOND / 16 - MS), Some(SECOND));
}

#[test]
fn the_slow_starts_round_seeds_the_halfway_try_only_while_shorter_than_the_period() {
    let end = |cold_floor: Duration| refused_round_ends(Duration::ZERO, cold_floor);
    assert_eq!(end(600 * MS), Some(800 * MS), "halfway from 0.6 s to 1 s");
    // It ran as long as the period or longer: across windows, so it says nothing of one.
    assert_eq!(end(SECOND), Some(500 * MS), "halfway from nothing");
    assert_eq!(end(1200 * MS), Some(500 * MS));
}

#[test]
fn the_slow_starts_round_lengthens_no_period_however_long_it_ran() {
    let mut known = Known::new(5);
    // The slow start's ramp ran across windows: refused 3 s after its first send.
    let mut slow_start = round_of(5);
    (slow_start.cold, slow_start.began) = (true, Some(start()));
    (slow_start.refused, slow_start.refused_sent) = (Some(None), Some(start() + 3 * SECOND));
    known.judge(&slow_start, start() + 4 * SECOND);
    // The next round, refused at once, is told its window ends 1.5 s after its first send.
    let began = start() + 5 * SECOND;
    let mut told = Round::new(2, 5.0, Some(began), None);
    told.began = Some(began);
    let until = began + 1500 * MS;
    (told.refused, told.refused_sent) = (Some(Some(until)), Some(began));
    known.bounded(began, until);
    known.judge(&told, began + SECOND);
    assert_eq!(
        known.period,
        Some(1500 * MS),
        "the instruction's, not 3 s and an eighth"
    );
    assert_eq!(
        known.floor(),
        Duration::ZERO,
        "the slow start's 3 s counts for no window"
    );
}

#[test]
fn until_the_rate_is_refused_a_round_under_a_rate_lasts_two_bursts_of_sends() {
    let rounds = |refused: Option<f64>| {
        let (mut law, reset) = on_trial(None, None);
        let known = law.known.as_mut().expect("five learned");
        known.rate = super::search::Search::new(100.0, 0.0);
        known.rate.max = refused;
        let first = law.round.id;
        for _ in 0..10 {
            law.sent(reset, 0);
        }
        law.next(reset + MS, 0, PATIENCE);
        law.round.id - first
    };
    assert_eq!(rounds(None), 1, "slow start: ten sends end the round");
    assert_eq!(
        rounds(Some(200.0)),
        0,
        "the rate was refused once: no slow start"
    );
}

#[test]
fn at_most_awaited_rounds_wait_for_their_answers() {
    let (mut law, reset) = on_trial(None, None);
    // Each round sends one request that never answers; it ends a period after its patience.
    for round in 0..AWAITED as u32 + 4 {
        let now = reset + round * (PATIENCE + 2 * SECOND);
        law.next(now, 0, PATIENCE);
        law.sent(now, 0);
    }
    assert_eq!(law.ended.len(), AWAITED);
}

#[test]
fn a_token_due_a_period_away_holds_the_call_to_the_rounds_end() {
    let (mut law, reset) = on_trial(None, None);
    law.known.as_mut().expect("five learned").rate = super::search::Search::new(1.0, 0.0);
    for out in 0..5 {
        law.sent(reset, out);
    }
    // The next token is a second away, as far as the period: the round's end holds the call
    // (an answer wakes it sooner), not the token.
    let end = law.current_until(reset).expect("a round under way");
    assert_eq!(law.next(reset, 0, PATIENCE), Some(end));
    assert!(law.round.held.reset && !law.round.held.token);
}

/// A round of `id` 1 begun at the start with a bucket of `burst`, to be judged.
fn round_of(burst: u64) -> Round<SystemTime> {
    Round::new(1, burst as f64, Some(start()), None)
}

#[test]
fn a_refused_burst_falls_to_what_of_it_was_accepted_paced_or_not_but_no_more_than_went() {
    let judged = |accepted: u64, paced: u64| {
        let mut known = Known::new(8);
        let mut round = round_of(8);
        (round.burst_sent, round.burst_refused) = (6, true);
        (round.burst_accepted, round.paced_accepted) = (accepted, paced);
        known.judge(&round, start() + SECOND);
        (known.burst(), known.burst.max)
    };
    assert_eq!(
        judged(3, 2),
        (5, Some(6.0)),
        "the least refused: one more than went"
    );
    assert_eq!(judged(4, 4).0, 6, "no more than went of it");
}

#[test]
fn a_burst_refused_again_before_a_round_went_unrefused_falls_by_beta_at_most() {
    let mut known = Known::new(20);
    let burst_refused = |burst: u64, accepted: u64| {
        let mut round = round_of(burst);
        (round.burst_sent, round.burst_refused) = (burst, true);
        (round.burst_accepted, round.refused) = (accepted, Some(None));
        round
    };
    known.judge(&burst_refused(20, 19), start() + SECOND);
    assert_eq!(known.burst(), 19, "the first refusal: to what was accepted");
    // Refused again, nearly whole again: what is accepted of a burst overstates what the
    // server holds (arrivals spread over a cap in flight).
    known.judge(&burst_refused(19, 18), start() + 2 * SECOND);
    assert_eq!(
        known.burst(),
        (19.0 * BETA) as u64,
        "the debt: by β at most"
    );
    assert_eq!(
        known.burst.max,
        Some(19.0),
        "the least refused, as any refusal sets it"
    );
    // Less accepted than β of it: to what was.
    known.judge(&burst_refused(13, 8), start() + 3 * SECOND);
    assert_eq!(known.burst(), 8);
    // A round unrefused pays the debt: the next refusal falls to what was accepted.
    known.judge(&round_of(8), start() + 4 * SECOND);
    known.judge(&burst_refused(8, 7), start() + 5 * SECOND);
    assert_eq!(known.burst(), 7);
}

#[test]
fn a_raise_of_the_burst_that_bound_in_a_round_the_rate_got_refused_stays_on_trial() {
    let mut known = Known::new(5);
    known.burst.raise_to(6.0);
    let mut round = round_of(6);
    round.burst_tried = true;
    (round.refused, round.paced_refused) = (Some(Some(start() + SECOND)), true);
    known.judge(&round, start() + SECOND);
    assert!(known.burst.trying);
    assert_eq!(known.burst(), 6);
}

#[test]
fn a_rate_refused_again_before_a_round_went_unrefused_is_cut_again_and_teaches_nothing() {
    let mut known = Known::new(5);
    known.rate = super::search::Search::new(10.0, 0.0);
    let paced_refused = |at: u32| {
        let mut round = round_of(5);
        round.paced_accepted = 3;
        (round.refused, round.paced_refused) = (Some(None), true);
        (round, start() + at * SECOND)
    };
    let (round, at) = paced_refused(1);
    assert!(known.judge(&round, at).rate_owing, "told as owing");
    let first = known.rate;
    assert_eq!((first.value, first.max), (10.0 * BETA, Some(10.0)));
    // The next round refused too, before any went unrefused: the cut's debt.
    let (round, at) = paced_refused(2);
    known.judge(&round, at);
    assert_eq!(known.rate.value, 10.0 * BETA * BETA);
    assert_eq!(
        (known.rate.max, known.rate.step),
        (first.max, first.step),
        "the least rate refused and the step where the cut left them"
    );
    assert_eq!(known.rate.lowered, Some(at), "its cost repaid from now");
    // A round unrefused pays the debt: the next refusal is the server's again.
    assert!(!known.judge(&round_of(5), start() + 3 * SECOND).rate_owing);
    let (round, at) = paced_refused(4);
    let kept = known.rate.value;
    known.judge(&round, at);
    assert_eq!(known.rate.max, Some(kept));
    assert!(known.rate.step < first.step);
}

/// A raise of the rate from `kept` to 8 on trial, its request sent right after a burst of
/// five with all of it out and refused, the rest accepted: what the law then knows.
fn trial_refused_with_the_burst_out(kept: f64) -> Known<SystemTime> {
    let (mut law, reset) = on_trial(None, Some((kept, 8.0)));
    let burst: Vec<_> = (0..5).map(|out| go(&mut law, reset, out)).collect();
    let trial = law.sent(reset + 10 * MS, 5);
    assert_eq!(trial.trial, Some(Quantity::Rate));
    let heard = reset + 150 * MS;
    for tag in &burst {
        law.accepted(*tag, reset, heard);
    }
    law.refused(trial, heard, None, None);
    law.next(reset + 10 * SECOND, 0, PATIENCE);
    law.known.expect("learned")
}

#[test]
fn a_refused_trial_of_a_rate_from_zero_is_that_trials_however_many_were_out() {
    let known = trial_refused_with_the_burst_out(0.0);
    assert_eq!(
        (known.rate.value, known.rate.undone, known.rate.max),
        (0.0, 1, Some(8.0)),
        "the rate from zero undone, and waits to be tried again"
    );
    assert_eq!(
        (known.burst(), known.burst.max),
        (5, None),
        "the burst untouched"
    );
    // From a rate kept, the same refusal is of how many were out (rule 1's most out).
    let known = trial_refused_with_the_burst_out(4.0);
    assert_eq!((known.burst(), known.burst.max), (5, Some(5.0)));
    assert_eq!(
        (known.rate.value, known.rate.undone, known.rate.max),
        (4.0, 0, None),
        "what the burst explains shows nothing of the rate"
    );
}

#[test]
fn a_key_keeps_windows_while_its_rate_gives_less_than_a_burst_a_period() {
    let keeps = |rate: f64| {
        let mut known = Known::<SystemTime>::new(5);
        (known.rate, known.period) = (super::search::Search::new(rate, 0.0), Some(SECOND));
        known.keeps_windows()
    };
    assert!(keeps(4.9));
    assert!(!keeps(5.0), "a burst a period: the rate refills it");
}

#[test]
fn a_burst_kept_past_the_least_refused_doubles_where_the_key_keeps_windows() {
    // The burst went to the least value refused and was accepted whole, with calls held for
    // requests out: the limit rose.
    let climbed = |rate: f64| {
        let mut known = Known::new(5);
        (known.rate, known.period) = (super::search::Search::new(rate, 0.0), Some(SECOND));
        known.burst.max = Some(6.0);
        known.burst.raise_to(6.0);
        let mut round = round_of(6);
        (round.burst_tried, round.held.out) = (true, true);
        known.judge(&round, start() + SECOND);
        assert!(known.burst.trying, "the next raise is on trial");
        known.burst.value
    };
    assert_eq!(climbed(0.0), 12.0, "a refused raise costs a window no time");
    assert_eq!(
        climbed(6.0),
        8.0,
        "no windows: the step doubles from the last"
    );
}

#[test]
fn a_raise_of_the_rate_is_kept_where_it_paced_unrefused_and_stays_on_trial_till_it_paces() {
    let judged = |tried: bool| {
        let mut known = Known::new(5);
        known.rate = super::search::Search::new(2.0, 0.0);
        known.rate.raise_to(4.0);
        let mut round = round_of(5);
        round.rate_tried = tried;
        known.judge(&round, start() + SECOND);
        (known.rate.value, known.rate.trying)
    };
    assert_eq!(judged(true), (4.0, false));
    assert_eq!(
        judged(false),
        (4.0, true),
        "a raise that never bound showed nothing yet"
    );
}

#[test]
fn a_round_held_to_its_reset_tries_a_rate_from_zero_once_the_burst_met_a_refusal() {
    let raised = |burst_refused: bool, rate_lowered: Option<Duration>| {
        let mut known = Known::new(5);
        known.period = Some(SECOND);
        if burst_refused {
            known.burst.max = Some(6.0);
        }
        let now = start() + 10 * SECOND;
        if let Some(ago) = rate_lowered {
            // A rate from zero refused that long ago, its raise undone.
            (known.rate.max, known.rate.undone) = (Some(6.0), 1);
            (known.rate.lowered, known.rate.cost) = (Some(now - ago), 1.0);
        }
        let mut round = round_of(5);
        round.held.reset = true;
        known.judge(&round, now);
        (known.burst.trying, known.rate.trying)
    };
    let (burst, rate) = ((true, false), (false, true));
    assert_eq!(
        raised(false, None),
        burst,
        "a burst that met no refusal climbs on: the server's ceiling is not found yet"
    );
    assert_eq!(
        raised(true, None),
        rate,
        "a burst's refusal would cost less"
    );
    assert_eq!(
        raised(true, Some(SECOND)),
        burst,
        "the rate refused a second ago may not be raised yet"
    );
    assert_eq!(
        raised(true, Some(100 * SECOND)),
        rate,
        "repaid: the rate again"
    );
}

#[test]
fn a_round_counts_what_it_paced_apart_from_its_burst_and_refusals_apart_from_both() {
    let mut round = round_of(5);
    let tag = |burst| Tag {
        round: 1,
        burst,
        trial: None,
        out: 1,
        crowded: false,
        at: start(),
    };
    round.out = 4;
    for (burst, refused) in [(false, false), (false, false), (false, true), (true, false)] {
        round.answered(tag(burst), refused);
    }
    assert_eq!((round.burst_accepted, round.paced_accepted), (1, 2));
    assert!(round.paced_refused && !round.burst_refused);
    assert_eq!(round.out, 0);
}

#[test]
fn the_request_that_shows_a_window_over_is_the_next_windows_first() {
    let mut law = Learn::default();
    let now = start();
    let tags: Vec<_> = (0..6).map(|out| go(&mut law, now, out)).collect();
    for tag in &tags[..5] {
        law.accepted(*tag, now, now + 20 * MS);
    }
    law.refused(tags[5], now + 20 * MS, None, None);
    // Refused without an instruction: one at a time until one is accepted.
    let later = now + SECOND;
    let opener = go(&mut law, later, 0);
    law.accepted(opener, later, later + 20 * MS);
    // The window it opened holds five, and it was one of them: the probe and three more go.
    let after = later + 20 * MS;
    let probe = go(&mut law, after, 0);
    law.accepted(probe, after, after + 20 * MS);
    let after = after + 20 * MS;
    let mut sent = 0;
    // (At most ten: a law that held nothing back would let every call go.)
    while sent < 10 && law.next(after, sent, PATIENCE).is_none() {
        law.sent(after, sent);
        sent += 1;
    }
    assert_eq!(sent, 3, "the opener and the probe took two of the five");
}

#[test]
fn a_reset_the_server_never_named_is_probed_by_one_request_alone() {
    let (mut law, reset) = on_trial(None, None);
    // The period is the law's guess: the server never named a reset.
    law.known.as_mut().expect("five learned").named = false;
    let tags: Vec<_> = (0..5).map(|out| go(&mut law, reset, out)).collect();
    let heard = reset + 20 * MS;
    for tag in tags {
        law.accepted(tag, reset, heard);
    }
    let guessed = law.current_until(heard).expect("a reset guessed");
    let probe = go(&mut law, guessed, 0);
    assert_eq!(
        law.next(guessed, 1, PATIENCE),
        Some(guessed + SECOND),
        "the burst waits for the probe's answer"
    );
    let answered = guessed + 20 * MS;
    law.accepted(probe, guessed, answered);
    assert_eq!(law.next(answered, 1, PATIENCE), None, "then goes");
}

#[test]
fn a_probe_refused_with_an_instruction_measures_the_window_from_when_it_began() {
    // A window began at `window`; where the server named nothing, the law tried its reset
    // halfway through what it had seen and sent a probe 620 ms in. The server refuses the
    // probe, naming the window's end a second after it began: that window lasted a second,
    // not the 380 ms from the probe's send.
    let window = start();
    let mut known = Known::<SystemTime>::new(5);
    (known.period, known.named) = (Some(SECOND), false);
    let probe = window + 620 * MS;
    let mut round = Round::new(3, 5.0, Some(probe), None);
    (round.probing, round.began) = (Some(window), Some(probe));
    let until = window + SECOND;
    (round.refused, round.refused_sent) = (Some(Some(until)), Some(probe));
    known.bounded(round.window().expect("probing"), until);
    known.judge(&round, probe + 20 * MS);
    assert_eq!(
        known.period,
        Some(SECOND),
        "never shorter than the window named"
    );
    assert!(known.named);
}

#[test]
fn each_round_judged_is_handed_out_once_with_what_it_left_the_key_at() {
    let (mut law, reset) = learned_five();
    assert_eq!(law.take_judged(), None, "nothing judged yet");
    law.next(reset, 0, PATIENCE);
    let first = law
        .take_judged()
        .expect("the first round judged at its reset");
    assert_eq!((first.round, first.sent, first.accepted), (0, 6, 5));
    assert!(first.refused);
    assert_eq!((first.burst, first.period), (5, Some(SECOND)));
    assert!(first.rate.on_trial, "the rate from zero tried at once");
    assert_eq!(law.take_judged(), None, "handed out once");
    // The burst accepted; one more, sooner than no rate allows, refused: only the rate's
    // raise let it go, so the raise is undone.
    let burst: Vec<_> = (0..5).map(|out| go(&mut law, reset, out)).collect();
    for tag in &burst {
        law.accepted(*tag, reset, reset + 20 * MS);
    }
    let trial = law.sent(reset + 30 * MS, 0);
    assert_eq!(trial.trial, Some(Quantity::Rate));
    law.refused(trial, reset + 50 * MS, None, None);
    law.next(reset + 10 * SECOND, 0, PATIENCE);
    let second = law.take_judged().expect("the second round judged");
    assert_eq!((second.round, second.sent, second.accepted), (1, 6, 5));
    assert_eq!((second.burst, second.burst_search.least_refused), (5, None));
    let rate = second.rate;
    assert_eq!(
        (rate.value, rate.least_refused, rate.undone, rate.on_trial),
        (0.0, Some(first.rate.value), 1, false)
    );
}

#[test]
fn the_request_that_opens_a_window_after_a_refusal_without_an_instruction_is_the_next_rounds() {
    let mut law = Learn::default();
    let now = start();
    let tags: Vec<_> = (0..6).map(|out| go(&mut law, now, out)).collect();
    let heard = now + 20 * MS;
    for tag in &tags[..5] {
        law.accepted(*tag, now, heard);
    }
    law.refused(tags[5], heard, None, None);
    assert_eq!(
        law.take_judged(),
        None,
        "judged once the window's end shows"
    );
    let opener = law.sent(now + 600 * MS, 0);
    law.accepted(opener, now + 600 * MS, now + 620 * MS);
    let ended = law.take_judged().expect("the refused round judged");
    assert_eq!((ended.round, ended.sent, ended.accepted), (0, 6, 5));
    assert_eq!(ended.period, Some(600 * MS));
    assert_eq!(
        law.round.sent, 1,
        "the opener counts in the round it opened"
    );
}

/// Where the request that opens a window after a refusal without an instruction takes its
/// round's last token, and no rate refills the bucket, the round sends nothing of its own to be
/// answered: it ends a period after the opener's answer, not a period after its patience.
#[test]
fn a_window_whose_last_token_the_opener_took_ends_a_period_after_the_openers_answer() {
    let mut law = Learn::default();
    let now = start();
    let tags: Vec<_> = (0..3).map(|out| go(&mut law, now, out)).collect();
    let heard = now + 20 * MS;
    law.accepted(tags[0], now, heard);
    law.refused(tags[1], heard, None, None);
    // The third hangs (its round, unanswered, is not judged: no rate is tried); once it has
    // hung the patience, the opener goes, and measures the period from the window's first send.
    let later = now + PATIENCE;
    let opener = go(&mut law, later, 1);
    let answered = later + 20 * MS;
    law.accepted(opener, later, answered);
    let period = later.since(now);
    assert_eq!(law.current_until(answered), Some(answered + period));
}

/// Where the opener leaves its round a token, the round sends a request of its own: that
/// request's answer is its first, and times it.
#[test]
fn a_window_the_opener_left_a_token_is_timed_by_its_own_first_answer() {
    let mut law = Learn::default();
    let now = start();
    let tags: Vec<_> = (0..4).map(|out| go(&mut law, now, out)).collect();
    let heard = now + 20 * MS;
    for tag in &tags[..2] {
        law.accepted(*tag, now, heard);
    }
    law.refused(tags[2], heard, None, None);
    // The fourth hangs until the opener's answer is in, then is dropped.
    let later = now + PATIENCE;
    let opener = go(&mut law, later, 1);
    law.accepted(opener, later, later + 20 * MS);
    law.abandoned(tags[3], later + 30 * MS);
    let after = later + 40 * MS;
    let own = go(&mut law, after, 0);
    let answered = after + 20 * MS;
    law.accepted(own, after, answered);
    let period = later.since(now);
    assert_eq!(law.current_until(answered), Some(answered + period));
}

#[test]
fn a_guess_of_the_layers_holds_no_longer_than_the_laws_reset_and_costs_no_more() {
    let (mut law, reset) = on_trial(None, None);
    let tags: Vec<_> = (0..5).map(|out| go(&mut law, reset, out)).collect();
    let heard = reset + 20 * MS;
    for tag in &tags[..4] {
        law.accepted(*tag, reset, heard);
    }
    let guess = heard + 20 * SECOND;
    let kept = law.refused(tags[4], heard, None, Some(guess));
    let end = law.current_until(heard).expect("a reset guessed");
    assert_eq!(kept, Some(end));
    assert!(end < guess);
    // Judged at its end, the refusal cost what the key lost, not the layer's guess.
    law.next(end, 0, PATIENCE);
    let known = law.known.expect("learned");
    assert!(known.burst.cost < 1.0, "cost {} s", known.burst.cost);
    // A time the server named is kept as the layer keeps it, its spread and all.
    let (mut law, reset) = on_trial(None, None);
    let tag = go(&mut law, reset, 0);
    let (named, spread) = (reset + 20 * SECOND, SECOND);
    let kept = law.refused(tag, heard, Some(named), Some(named + spread));
    assert_eq!(kept, Some(named + spread));
}

/// Rule 1: a refusal undoes "the raise on trial if only that raise let it go". With the
/// burst (5, raised to 6) and the rate (10 a second, raised to 20) both on trial, in a round
/// begun with two tokens (a key paced by its rate: rounds roll on without a whole bucket),
/// a request that only the RATE's raise let go is refused; both of the burst's were accepted.
/// Nothing of the burst let the refused request go: it must stay as it was.
#[test]
fn a_refused_trial_of_the_rate_does_not_cut_the_burst() {
    let (mut law, reset) = on_trial(Some(6.0), Some((10.0, 20.0)));
    assert!(
        !law.known.expect("learned").keeps_windows(),
        "paced by its rate"
    );
    (law.round.burst, law.round.level) = (2, 2.0);
    let burst: Vec<_> = (0..2).map(|out| law.sent(reset, out)).collect();
    let trial = law.sent(reset, 2);
    assert_eq!(
        trial.trial,
        Some(Quantity::Rate),
        "only the rate's raise let it go"
    );
    assert!(!trial.crowded && !law.round.burst_tried);
    let heard = reset + 20 * MS;
    for tag in &burst {
        law.accepted(*tag, reset, heard);
    }
    law.refused(trial, heard, None, None);
    law.next(reset + 10 * SECOND, 0, PATIENCE);
    let known = law.known.expect("learned");
    assert_eq!(
        (known.rate.value, known.rate.undone),
        (10.0, 1),
        "the rate's raise undone"
    );
    assert_eq!(
        (known.burst.value, known.burst.trying, known.burst.undone),
        (6.0, true, 0),
        "the burst let nothing refused go"
    );
}

/// known.rs says: "(A refused trial of the burst does not count here: the rate is judged by
/// its own requests' answers.)" With both raised on trial, the burst's trial request is
/// refused; no request went on the rate's raise. The rate's raise must stay on trial.
#[test]
fn a_refused_trial_of_the_burst_does_not_undo_the_rates_raise() {
    let (mut law, reset) = on_trial(Some(6.0), Some((2.0, 4.0)));
    let burst: Vec<_> = (0..6).map(|out| law.sent(reset, out)).collect();
    assert_eq!(burst[5].trial, Some(Quantity::Burst));
    assert!(!law.round.rate_tried, "nothing went on the rate's raise");
    let heard = reset + 20 * MS;
    for tag in &burst[..5] {
        law.accepted(*tag, reset, heard);
    }
    law.refused(burst[5], heard, None, None);
    law.next(reset + 10 * SECOND, 0, PATIENCE);
    let known = law.known.expect("learned");
    assert_eq!(
        (known.burst(), known.burst.undone),
        (5, 1),
        "the burst's raise undone"
    );
    assert_eq!(
        (known.rate.value, known.rate.trying, known.rate.undone),
        (4.0, true, 0),
        "the rate's raise showed nothing: still on trial"
    );
}

/// The same where the answer comes during the law's first round learned anew: taken for one
/// of that round's, it would count a sixth acceptance where five were.
#[test]
fn an_answer_to_a_request_sent_before_forget_counts_in_no_round_learned_anew() {
    let (mut law, reset) = learned_five();
    law.next(reset, 0, PATIENCE);
    let stale = go(&mut law, reset, 0);
    law.forget();
    let again = reset + SECOND;
    let tags: Vec<_> = (0..6).map(|out| go(&mut law, again, out)).collect();
    law.accepted(stale, reset, again + 10 * MS);
    for tag in &tags[..5] {
        law.accepted(*tag, again, again + 20 * MS);
    }
    law.refused(
        tags[5],
        again + 20 * MS,
        Some(again + SECOND),
        Some(again + SECOND),
    );
    law.next(again + SECOND, 0, PATIENCE);
    assert_eq!(law.known.expect("learned").burst(), 5);
}

/// An answer to a request let go before `forget` is no round's of the law learned anew: were
/// it taken as one (its round's number counted again), it would take that round's one
/// request out off its count, the round would be judged before that request answered, and
/// its refusal would be lost.
#[test]
fn an_answer_to_a_request_sent_before_forget_is_not_taken_as_a_new_rounds() {
    let (mut law, reset) = learned_five();
    law.next(reset, 0, PATIENCE);
    let stale = go(&mut law, reset, 0);
    // A response with meters: what is learned is forgotten.
    law.forget();
    // The meters are gone again; the law learns anew, to a burst of five.
    let again = reset + SECOND;
    let tags: Vec<_> = (0..6).map(|out| go(&mut law, again, out)).collect();
    for tag in &tags[..5] {
        law.accepted(*tag, again, again + 20 * MS);
    }
    law.refused(
        tags[5],
        again + 20 * MS,
        Some(again + SECOND),
        Some(again + SECOND),
    );
    let reset = again + SECOND;
    law.next(reset, 0, PATIENCE);
    let fresh = go(&mut law, reset, 0);
    // The request sent before the meter is answered now.
    law.accepted(stale, reset - 5 * SECOND, reset + 10 * MS);
    // Its own request, the only one of the round, is refused: the burst falls.
    law.next(reset + 2 * SECOND, 1, PATIENCE);
    law.refused(fresh, reset + 2 * SECOND, None, None);
    law.next(reset + 20 * SECOND, 0, PATIENCE);
    assert!(
        law.known.expect("learned").burst() < 5,
        "the refusal of the round's only request was lost"
    );
}

/// The slow start's round: seven sent at `now`, five accepted, the sixth refused until a
/// second later; the seventh, returned, is still out.
fn slow_start_refused_with_one_out(
    law: &mut Learn<SystemTime>,
    now: SystemTime,
) -> Tag<SystemTime> {
    let tags: Vec<_> = (0..7).map(|out| go(law, now, out)).collect();
    for tag in &tags[..5] {
        law.accepted(*tag, now, now + 20 * MS);
    }
    let until = now + SECOND;
    law.refused(tags[5], now + 20 * MS, Some(until), Some(until));
    tags[6]
}

/// The bucket is whole at the end of a refusal's closure, by the period its instruction
/// named, though a request of the slow start's round is still out: that round is judged only
/// once it answers, and where it never does (a fleet's reservation that lapsed) the key must
/// not go one request at a time, as it does while no period is known.
#[test]
fn a_hung_request_of_the_slow_start_does_not_hold_the_key_to_one_at_a_time() {
    let (mut law, now) = (Learn::default(), start());
    // Its answer never comes.
    slow_start_refused_with_one_out(&mut law, now);
    let reset = now + SECOND;
    let at_reset = law.next(reset, 1, PATIENCE);
    // A server that now accepts every request; the hung one is gone (out counts 0).
    let mut at = reset + PATIENCE;
    let mut most_out = 0;
    for _ in 0..100 {
        let mut sent = Vec::new();
        while law.next(at, sent.len() as u64, PATIENCE).is_none() && sent.len() < 10 {
            sent.push(law.sent(at, sent.len() as u64));
        }
        most_out = most_out.max(sent.len());
        for tag in sent {
            law.accepted(tag, at, at + 20 * MS);
        }
        at += SECOND;
    }
    assert_eq!(
        (at_reset, law.known.and_then(|known| known.period)),
        (None, Some(SECOND)),
        "at the closure's end the burst goes, by the period named"
    );
    assert!(
        most_out >= 5,
        "the burst at once, not one at a time: {most_out}"
    );
}

/// Rounds are judged as their answers come in, in any order. The slow start's round, ended
/// with a request out, is judged after a later round whose refusal lowered the burst and set
/// the least value refused (rules 1 and 3): judging the slow start then makes the burst
/// anew (`Search::new`), and what the later refusal taught is gone.
#[test]
fn a_late_answer_to_the_slow_start_does_not_erase_a_later_rounds_refusal() {
    let (mut law, now) = (Learn::default(), start());
    let hung = slow_start_refused_with_one_out(&mut law, now);
    // Past the patience, one goes, and is refused with an instruction.
    let later = now + PATIENCE;
    let one = go(&mut law, later, 1);
    law.refused(
        one,
        later + 20 * MS,
        Some(later + SECOND),
        Some(later + SECOND),
    );
    law.next(later + SECOND, 1, PATIENCE);
    let after_refusal = law.known.expect("learned").burst;
    assert_eq!((after_refusal.value, after_refusal.max), (2.5, Some(5.0)));
    // The slow start's last answer comes in.
    law.accepted(hung, now, later + 2 * SECOND);
    let burst = law.known.expect("learned").burst;
    assert_eq!(
        (burst.value, burst.max),
        (after_refusal.value, after_refusal.max),
        "the later refusal's lesson stands"
    );
}

/// The Redis store keeps a ledger's law as JSON, read and written back whole: every state a
/// run passes through must read back as it was written.
#[cfg(feature = "redis")]
#[test]
fn every_state_of_a_run_reads_back_from_json_as_written() {
    let check = |law: &mut Learn<SystemTime>| {
        law.take_judged();
        let json = serde_json::to_string(&*law).expect("written");
        let read: Learn<SystemTime> = serde_json::from_str(&json).expect("read");
        assert_eq!(&read, &*law, "{json}");
    };
    let servers: Vec<Box<dyn Server>> = vec![
        Box::new(Windows::new(10, true)),
        Box::new(Windows::new(10, false)),
        Box::new(Bucket::new(5.0, 10.0)),
        Box::new(InFlight {
            cap: 3,
            serving: Vec::new(),
        }),
    ];
    for mut server in servers {
        let mut law = Learn::default();
        let mut now = start();
        let end = now + 40 * SECOND;
        let mut out: Vec<(SystemTime, SystemTime, Tag<SystemTime>, Verdict)> = Vec::new();
        let mut closed = now;
        while now < end {
            out.sort_by_key(|(at, ..)| *at);
            while out.first().is_some_and(|(at, ..)| *at <= now) {
                let (at, sent, tag, verdict) = out.remove(0);
                match verdict {
                    None => law.accepted(tag, sent, at),
                    Some(wait) => {
                        let until = wait.map(|wait| at + wait + SECOND);
                        closed = closed.max(until.unwrap_or(at));
                        law.refused(tag, at, until, until);
                    }
                }
                check(&mut law);
            }
            let mut held = None;
            while now >= closed && out.len() < 40 {
                let n = out.len() as u64;
                held = law.next(now, n, PATIENCE);
                check(&mut law);
                if held.is_some() {
                    break;
                }
                let tag = law.sent(now, n);
                check(&mut law);
                let verdict = server.answer(now + 15 * MS, now + 30 * MS);
                out.push((now + 30 * MS, now, tag, verdict));
            }
            let next = [held, out.first().map(|(at, ..)| *at), Some(closed)];
            now = next
                .into_iter()
                .flatten()
                .filter(|at| *at > now)
                .min()
                .unwrap_or(now + MS);
        }
    }
}

/// Rule 4 never measures a period shorter than the instruction it is told: on a wall clock
/// (a fleet's ledger goes by the store's) stepped back 2 s between a round's sends and a
/// refusal naming a wait of a second, the instruction still bounds a second, not a
/// millisecond kept as the shortest seen.
#[test]
fn a_clock_stepped_back_does_not_measure_a_period_of_a_millisecond() {
    let mut law = Learn::<SystemTime>::default();
    let now = start();
    let tags: Vec<_> = (0..6).map(|out| go(&mut law, now, out)).collect();
    for tag in &tags[..5] {
        law.accepted(*tag, now, now + 20 * MS);
    }
    let heard = now - 2 * SECOND;
    let until = heard + SECOND;
    law.refused(tags[5], heard, Some(until), Some(until));
    law.next(until, 0, PATIENCE);
    assert_eq!(law.known.and_then(|known| known.period), Some(SECOND));
}

/// A rate kept past its least refused doubles while the key keeps windows; once it
/// gives a burst a period, a raise is the step again.
#[test]
fn a_rate_doubles_only_while_the_key_keeps_windows() {
    let mut known = Known::new(10);
    (known.rate, known.period) = (super::search::Search::new(2.0, 0.0), Some(SECOND));
    known.rate.max = Some(3.0);
    known.rate.raise_to(3.0);
    let mut raised = vec![];
    for n in 1..=3 {
        let windows = known.keeps_windows();
        let mut round = round_of(10);
        (round.rate_tried, round.held.token) = (true, true);
        known.judge(&round, start() + 10 * n * SECOND);
        raised.push((windows, known.rate.value));
    }
    // 3 → 6 → 12 while under the burst of 10 a second; at 12 the key keeps windows no more:
    // 12 + the step (8), not 24.
    assert_eq!(raised, [(true, 6.0), (true, 12.0), (false, 20.0)]);
}
