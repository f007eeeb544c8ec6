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
        // second of where each window ends, which the law measures never early.
        assert!(run.accepted >= 450, "seed {seed}: {run:?}");
        assert!(run.refused <= 20, "seed {seed}: {run:?}");
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

#[test]
fn a_meter_makes_what_was_learned_moot() {
    let (mut law, reset) = learned_five();
    law.forget();
    assert!(!law.is_known());
    assert_eq!(law.next(reset - MS, 9, PATIENCE), None);
}
